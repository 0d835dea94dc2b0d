"""The cheaper MinHash, bucket slots and candidate walk give exactly what they gave before (issue 32).

Each rewritten piece of ``search/novelty.py`` is compared with the code it replaced (kept here,
as commit 50aa2a8 had it) on varied text: unicode, empty, very long, repeated words, and on an
index large enough for its bucket tables to have doubled (bits past ``MIN_BITS``).
"""
import hashlib
import random

import numpy as np

from whileai_ray.search import novelty as nv
from whileai_ray.search.novelty import BANDS, K, NoveltyIndex, sketch


class OldWordHashes:
    def __init__(self, limit=50_000):
        self.limit, self.cache = limit, {}

    def __call__(self, words):
        out = []
        for w in words:
            h = self.cache.get(w)
            if h is None:
                if len(self.cache) >= self.limit:
                    self.cache.clear()
                h = self.cache[w] = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "big")
            out.append(h)
        return out


_OLD_WORDS = OldWordHashes()


def old_sketch(text):
    words = nv._WORD.findall(str(text).lower()) or ["<empty>"]
    h = np.array(_OLD_WORDS(words), dtype=np.uint64)
    if len(h) > 1:
        h = np.concatenate((h, h[:-1] * nv._BIGRAM + h[1:]))
    mixed = nv._A * h[None, :] + nv._B
    return (mixed.min(axis=1) >> np.uint64(32)).astype(np.uint32)


def old_slots(stored, bits, dtype=np.int64):
    key = np.ascontiguousarray(stored, dtype="<u2").reshape(-1, K).view("<u4")
    with np.errstate(over="ignore"):
        mixed = (key ^ nv._BAND_SALT) * np.uint32(0x9E3779B1)
    mixed >>= np.uint32(32 - bits)
    return mixed.astype(dtype)


def old_candidates(index, stored):
    found = set()
    where = (nv._BAND << index._bits) + old_slots(stored, index._bits)[0]
    for b, j in enumerate(index._heads[where].tolist()):
        steps = 0
        while j >= 0 and steps < index.bucket_cap:
            found.add(j)
            j = index._next._a.item(j, b)
            steps += 1
    return sorted(found)


def old_similarity(index, sk):
    stored = nv._stored(sk)
    cands = old_candidates(index, stored)
    if not cands:
        return -1, 0.0
    eq = (index._sk._a[cands] == stored).sum(axis=1)
    best = int(eq.argmax())
    return cands[best], float(eq[best]) / K


def texts(n, seed=0):
    r = random.Random(seed)
    words = ["order", "ORD-1234", "refund", "the", "a", "please", "Maria", "$44", "é", "日本", "😀", "naïve",
             "it's", "e-mail", "x@y.com", "3.5", "can't", "\ud800", "ÄÖÜ", "ß", "İstanbul", "ſ", "-", "..."]
    fixed = ["", " ", "!!!", "the the the the the", "a" * 5000, " ".join(["word"] * 3000),
             " ".join(str(i) for i in range(4000)), "Ünïcödé ÅND ÇAPS", "\ud83d\ude00 \udfff"]
    out = list(fixed)
    while len(out) < n:
        out.append(" ".join(r.choice(words) for _ in range(r.randrange(1, 60))))
    return out


def test_sketch_is_the_old_minhash_bit_for_bit():
    for t in texts(1500):
        assert np.array_equal(sketch(t), old_sketch(t)), t[:80]
        assert sketch(t).dtype == np.uint32


def test_word_hashes_agree_across_a_cache_clear():
    new, old = nv._WordHashes(limit=50), OldWordHashes(limit=50)
    r = random.Random(1)
    for _ in range(400):
        words = [f"w{r.randrange(120)}" for _ in range(r.randrange(0, 30))]
        assert new(words) == old(words)
    assert len(new.cache) <= 50


def test_slots_are_the_old_slots_at_every_table_size():
    r = np.random.default_rng(2)
    stored = r.integers(0, 1 << 16, size=(500, K), dtype=np.uint16)
    for bits in range(nv.MIN_BITS, nv.MAX_BITS + 1):
        assert np.array_equal(nv._slots(stored, bits), old_slots(stored, bits))
        assert np.array_equal(nv._slots(stored, bits, np.int32), old_slots(stored, bits, np.int32))


def test_candidates_and_similarity_are_the_old_walk():
    index = NoveltyIndex(exact=False, bucket_cap=6)
    corpus = texts(3000, seed=3)
    r = random.Random(4)
    for i, t in enumerate(corpus):
        index.add(t + f" n{r.randrange(50)}")
        if i % 97 == 0:                          # interleaved: the kept last slots must not go stale
            q = corpus[r.randrange(i + 1)]
            assert index.similarity(q) == old_similarity(index, sketch(q))
    assert index._bits > nv.MIN_BITS                 # the tables doubled on the way
    for q in texts(600, seed=5):
        stored = nv._stored(sketch(q))
        assert index._candidates(stored) == old_candidates(index, stored)
        assert index.similarity(q) == old_similarity(index, sketch(q))
        assert index.novelty(q) == 1.0 - old_similarity(index, sketch(q))[1]


def test_scoring_then_adding_the_same_sketch_files_it_where_it_belongs():
    a, b = NoveltyIndex(), NoveltyIndex()
    for t in texts(1500, seed=6):
        sk = sketch(t)
        a.similarity(t, sk)                      # leaves its slots kept for add()
        a.add(t, sk)
        b.add(t, sk)
    assert np.array_equal(a._heads, b._heads)
    assert np.array_equal(a._next.view(), b._next.view())
    assert a._next.view().shape[1] == BANDS
