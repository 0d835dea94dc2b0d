"""Many sketches at once (search/novelty_batch.py, issue 32): ``similarity_many`` answers, row for
row, what ``similarity`` answers, and ``add_many`` leaves the very tables that one ``add`` each,
in order, leaves, on varied archives: empty, tiny, grown past a table rebuild (in one batch, too),
near-copies, random texts, buckets past ``bucket_cap``, an index that keeps text keys."""
import random

import numpy as np
import pytest

from whileai_ray.search.novelty import MIN_BITS, NoveltyIndex, sketch
from whileai_ray.search.novelty_batch import add_many, similarity_many

WORDS = ("refund order cancel shipping address card late missing damaged return label invoice "
         "coupon account password email delivery warehouse tracking number customer agent").split()


def _texts(n: int, seed: int, kind: str) -> list[str]:
    rnd = random.Random(seed)
    if kind == "random":
        return [" ".join(rnd.choice(WORDS) + str(rnd.randrange(50)) for _ in range(rnd.randrange(1, 14)))
                for _ in range(n)]
    if kind == "near":              # near-copies of a few asks: long, full bucket chains
        bases = [" ".join(rnd.choice(WORDS) for _ in range(12)) for _ in range(5)]
        return [rnd.choice(bases) + f" {rnd.choice(WORDS)} {i % 7}" for i in range(n)]
    if kind == "same":              # one text over and over: every band's bucket is one chain
        return ["please refund order 42 now"] * n
    raise ValueError(kind)


def _probes(seed: int) -> list[str]:
    return (_texts(40, seed + 1, "random") + _texts(40, seed + 2, "near") + ["please refund order 42 now", "",
            "😀 ¿dónde está mi pedido?", "refund"])


def _index(n: int, kind: str, seed: int = 0, **kw) -> NoveltyIndex:
    ix = NoveltyIndex(**kw)
    for t in _texts(n, seed, kind):
        ix.add(t)
    return ix


@pytest.mark.parametrize("n,kind,kw", [
    (0, "random", {}), (3, "random", {}), (300, "random", {}), (1500, "random", {}), (2600, "near", {}),
    (400, "near", {"bucket_cap": 2}), (200, "same", {}), (60, "same", {"bucket_cap": 1}),
    (700, "near", {"bucket_cap": 0}), (1200, "random", {"exact": False}), (500, "near", {"exact": False})])
def test_similarity_many_is_similarity_row_by_row(n, kind, kw):
    ix = _index(n, kind, **kw)
    probes = _probes(n) + _texts(20, 0, kind)            # (the last ones: archived texts, exact copies)
    sks = np.stack([sketch(t) for t in probes])
    ids, sims = similarity_many(ix, sks, probes if ix._exact is not None else None)
    expected = [ix.similarity(t, sk) for t, sk in zip(probes, sks)]
    assert [(int(i), float(s)) for i, s in zip(ids, sims)] == expected
    assert ids.dtype.kind == "i" and len(ids) == len(probes)
    if n:
        assert any(s > 0.5 for _, s in expected)          # the cases do compare something
    empty_ids, empty_sims = similarity_many(ix, np.zeros((0, sks.shape[1]), dtype=np.uint32), [])
    assert len(empty_ids) == len(empty_sims) == 0


def test_similarity_many_answers_a_batch_larger_than_its_chunk_alike(monkeypatch):
    import whileai_ray.search.novelty_batch as nb
    ix = _index(1500, "near")
    probes = _probes(9) + _texts(30, 5, "near")
    sks = np.stack([sketch(t) for t in probes])
    whole = similarity_many(ix, sks, probes)
    monkeypatch.setattr(nb, "_CHUNK", 7)
    ids, sims = similarity_many(ix, sks, probes)
    assert ids.tolist() == whole[0].tolist() and sims.tolist() == whole[1].tolist()
    assert [(int(i), float(s)) for i, s in zip(ids, sims)] == [ix.similarity(t, sk) for t, sk in zip(probes, sks)]


def test_similarity_many_takes_stored_sketches_too_and_asks_an_exact_index_for_texts():
    ix = _index(300, "near", exact=False)
    probes = _probes(3)
    sks = np.stack([sketch(t) for t in probes])
    stored = (sks >> np.uint32(16)).astype(np.uint16)
    a, b = similarity_many(ix, sks), similarity_many(ix, stored)
    assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
    with pytest.raises(ValueError, match="texts="):
        similarity_many(_index(10, "random"), sks)


def _tables(ix: NoveltyIndex):
    st = ix.state()
    return (ix._bits, ix._heads.tolist(), ix._next.view().tolist(), st.meta,
            {k: v.tolist() for k, v in st.logs.items()})


@pytest.mark.parametrize("start,sizes,kind,exact", [
    (0, [1], "random", True), (0, [7, 1, 30], "near", True), (1000, [50], "random", False),
    (1020, [4, 1, 1, 3], "near", False), (0, [1024, 1, 1200, 3000], "random", False),
    (900, [3000], "near", True), (2047, [2], "same", False)])
def test_add_many_builds_the_tables_sequential_adds_build(start, sizes, kind, exact):
    texts = _texts(start + sum(sizes), 5, kind)
    one, many = NoveltyIndex(exact=exact), NoveltyIndex(exact=exact)
    for t in texts[:start]:
        one.add(t)
        many.add(t)
    pos = start
    for size in sizes:
        batch = texts[pos:pos + size]
        ids = add_many(many, np.stack([sketch(t) for t in batch]), batch if exact else None)
        assert ids == [one.add(t) for t in batch]
        pos += size
        assert _tables(many) == _tables(one)
    assert many._bits > MIN_BITS or pos < 1 << MIN_BITS
    probes = _probes(7)
    sks = np.stack([sketch(t) for t in probes])
    assert [many.similarity(t, s) for t, s in zip(probes, sks)] == [one.similarity(t, s) for t, s in zip(probes, sks)]


def test_add_many_of_nothing_changes_nothing_and_an_exact_index_needs_texts():
    ix = _index(30, "random")
    before = _tables(ix)
    assert add_many(ix, np.zeros((0, 32), dtype=np.uint32), []) == []
    assert _tables(ix) == before
    with pytest.raises(ValueError, match="texts="):
        add_many(ix, np.stack([sketch("a b c")]))


@pytest.mark.parametrize("popcount", [None, getattr(np, "bitwise_count", None)], ids=["words", "bitwise_count"])
def test_most_equal_into_counts_as_a_plain_sum_on_either_side_of_its_threshold(popcount, monkeypatch):
    """A round's batch keeps, per candidate, its most equal values with any pick
    (``RoundNovelty.add``); from ``EQUAL_COUNTS_ROWS`` rows that count is read as packed words
    (their bits counted by numpy 2's ``bitwise_count``, or the words added: numpy 1.26),
    below it as a bool sum: the same numbers either way, up to all K equal."""
    import whileai_ray.search.novelty_batch as nb
    from whileai_ray.search.novelty import K
    from whileai_ray.search.novelty_batch import EQUAL_COUNTS_ROWS, equal_counts, most_equal_into
    monkeypatch.setattr(nb, "_POPCOUNT", popcount)
    rng = np.random.default_rng(7)
    for shape in ((1, K), (5, 96, K), (300, K)):          # a batch's picks, similarity_many's candidates
        same = rng.random(shape) < 0.5
        same[0, ...] = True
        got = equal_counts(same)
        assert got.dtype == np.int64 and (got == same.sum(axis=-1)).all() and got.reshape(-1)[0] == K
    for rows in (1, EQUAL_COUNTS_ROWS - 1, EQUAL_COUNTS_ROWS, 700):
        batch = rng.integers(0, 4, (rows, K)).astype(np.uint16)      # (few values: many equal)
        batch[0] = 9
        most = np.zeros(rows, dtype=np.int64)
        for stored in (batch[rows // 2].copy(), rng.integers(0, 4, K).astype(np.uint16), np.full(K, 9, np.uint16)):
            want = np.maximum(most, (batch == stored).sum(axis=1))
            most_equal_into(most, batch, stored)
            assert (most == want).all()
        assert most[0] == K and most[rows // 2] == K
