"""Many sketches at once against a :class:`~whileai_ray.search.novelty.NoveltyIndex` (issue 32).

``NoveltyIndex.similarity`` walks each of the 16 band chains ``bucket_cap`` steps in Python,
then compares the candidates in numpy: ~32 us a prompt, most of it interpreter time. When the
archive does not change between the calls (the planner keeps it frozen during a round:
``search/round_novelty.py``), the walks of many sketches can go step by step together, as
(sketches, bands) arrays, and the candidates be compared in one (sketches, candidates, K) pass:

* :func:`similarity_many`: row for row what ``similarity`` answers (the same candidate sets,
  ties to the smallest id, ``(-1, 0.0)`` with no candidate; an index that keeps text keys
  answers an exact copy with its first id and 1.0, as ``similarity`` does);
* :func:`add_many`: appends many sketches and builds exactly the bucket heads and chain links
  that one ``add`` each, in order, would have built (a table rebuild included, where the archive
  crosses its table size), with one stable sort per stretch instead of a Python call a prompt.

Both only read or write the index's own tables; ``novelty.py`` keeps the single-prompt path.
"""
from __future__ import annotations

import numpy as np

from .novelty import BANDS, K, MAX_BITS, NoveltyIndex, _BAND, _bits_for, _slots, _stored, _text_key

__all__ = ["similarity_many", "add_many", "equal_counts", "most_equal_into"]

_BYTES = np.uint64(0x0101010101010101)
_CHUNK = 2048                  # sketches compared at once at most


def similarity_many(index: NoveltyIndex, sketches, texts: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, sims)``: ``index.similarity(texts[i], sketches[i])`` for every row ``i``.

    ``sketches`` are MinHash sketches (``novelty.sketch``, uint32) or stored ones (uint16).
    ``texts`` are needed only by an index that keeps text keys (its exact copies)."""
    index.ready()
    sks = np.asarray(sketches)
    stored = sks if sks.dtype == np.uint16 else _stored(sks)
    stored = np.ascontiguousarray(stored.reshape(-1, K))
    n = len(stored)
    if n > _CHUNK:                      # (a chunk's compare holds ~6 KB a sketch: memory stays bounded)
        parts = [similarity_many(index, stored[i:i + _CHUNK], None if texts is None else texts[i:i + _CHUNK])
                 for i in range(0, n, _CHUNK)]
        return np.concatenate([a for a, _ in parts]), np.concatenate([b for _, b in parts])
    ids, sims = np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.float64)
    if n == 0:
        return ids, sims
    bits = index._bits
    cur = index._heads[(_BAND << bits) + _slots(stored, bits)].astype(np.int64)    # (n, BANDS)
    links = index._next._a.reshape(-1)                   # id * BANDS + band -> the one before
    steps = []
    for _ in range(index.bucket_cap):
        live = cur >= 0
        if not live.any():
            break
        steps.append(cur)
        cur = np.where(live, np.take(links, np.where(live, cur, 0) * BANDS + _BAND), -1)
    if steps:
        cands = np.concatenate(steps, axis=1)                                   # (n, BANDS * steps)
        valid = cands >= 0
        # (n, BANDS * steps, K) bool; ``np.take`` gathers whole rows ~4x faster than ``a[idx]``
        same = np.take(index._sk._a, np.where(valid, cands, 0), axis=0) == stored[:, None, :]
        eq = equal_counts(same)
        # the most equal values, then the smallest id (``similarity`` takes the first of its sorted ids)
        score = np.where(valid, (eq << 32) - cands, np.iinfo(np.int64).min)
        best = score.argmax(axis=1)
        rows = np.flatnonzero(valid.any(axis=1))
        ids[rows] = cands[rows, best[rows]]
        sims[rows] = eq[rows, best[rows]] / K
    if index._exact is not None:
        if texts is None or len(texts) != n:
            raise ValueError("similarity_many: an index that keeps text keys needs one text a sketch (texts=)")
        assert index._keys is not None
        for i, text in enumerate(texts):
            key = _text_key(text)
            if key in index._exact:
                ids[i], sims[i] = int(np.flatnonzero(index._keys.view() == np.uint64(key))[0]), 1.0
    return ids, sims


def equal_counts(same: np.ndarray) -> np.ndarray:
    """The True flags of each last-axis row of ``same`` (K bools), as int64: the K one-byte flags
    read as K/8 uint64 words. With numpy's ``bitwise_count`` (numpy 2), each word's set bits are
    its True flags: the K/8 one-byte counts of a row (at most 8 each) are read as one integer and
    added by one multiply (its top byte is the sum of its bytes), ~40% less than the fallback's
    passes; otherwise the words are added lane by lane (a byte lane holds at most K/8: no carry)
    and the bytes of the sum added the same way. Either is ~8x faster than a reduce over the words."""
    words = same.view(np.uint64)
    if _POPCOUNT is not None and words.shape[-1] == 4:            # (K = 32: four counts, one uint32)
        counts = _POPCOUNT(words).view(np.uint32)[..., 0]
        counts *= _BYTES32
        counts >>= np.uint32(24)
        return counts.astype(np.int64)
    total = words[..., 0].copy()
    for j in range(1, words.shape[-1]):
        total += words[..., j]
    return ((total * _BYTES) >> np.uint64(56)).astype(np.int64)


_POPCOUNT = getattr(np, "bitwise_count", None)     # numpy >= 2.0 (the project runs on 1.26 too)
_BYTES32 = np.uint32(0x01010101)

# from this many rows equal_counts beats a bool sum (64 rows: 4.7 us against 3.8; 1,024: 12 against 31;
# with bitwise_count, 60 rows: 2.0 against 1.9, 142 rows: 2.1 against 3.5)
EQUAL_COUNTS_ROWS = 96 if _POPCOUNT is None else 64


def most_equal_into(most: np.ndarray, batch: np.ndarray, stored: np.ndarray) -> None:
    """``most[i] = max(most[i], equal values of batch[i] and stored)``, in place, for every row."""
    same = batch == stored
    np.maximum(most, equal_counts(same) if len(batch) >= EQUAL_COUNTS_ROWS else same.sum(axis=1), out=most)


def add_many(index: NoveltyIndex, sketches, texts: list[str] | None = None) -> list[int]:
    """Archive many prompts in order (their sketches, uint32 or stored uint16); returns their ids.
    The tables come out as ``index.add`` one at a time would leave them."""
    index.ready()
    sks = np.asarray(sketches)
    stored = sks if sks.dtype == np.uint16 else _stored(sks)
    stored = np.ascontiguousarray(stored.reshape(-1, K))
    n = len(stored)
    if index._exact is not None and (texts is None or len(texts) != n):
        raise ValueError("add_many: an index that keeps text keys needs one text a sketch (texts=)")
    first = len(index)
    pos = 0
    while pos < n:
        i = len(index._sk)
        if i >= (1 << index._bits) and index._bits < MAX_BITS:
            index._rebuild(_bits_for(i + 1))         # where ``add`` would rebuild: before id i goes in
        end = n if index._bits >= MAX_BITS else min(n, pos + max(1, (1 << index._bits) - i))
        _append(index, stored[pos:end])
        pos = end
    if index._exact is not None:
        assert texts is not None and index._keys is not None
        for text in texts:
            key = _text_key(text)
            index._exact.add(key)
            index._keys.append(key)
    return list(range(first, first + n))


def _append(index: NoveltyIndex, stored: np.ndarray) -> None:
    """Append ``stored`` rows (no table rebuild falls among them): each new id links to the
    bucket's member before it (an earlier row of this stretch, else the bucket's old head), and
    each bucket's head becomes its newest member."""
    m, bits = len(stored), index._bits
    first = len(index._sk)
    where = ((_BAND << bits) + _slots(stored, bits)).reshape(-1)                 # id-major, (m * BANDS)
    order = np.argsort(where, kind="stable")                                   # a slot's members, oldest first
    ws = where[order]
    same = ws[1:] == ws[:-1]
    prev = index._heads[ws].astype(np.int64)                                   # the old head, for a slot's first
    ids = first + order // BANDS
    prev[1:][same] = ids[:-1][same]
    links = np.empty(m * BANDS, dtype=np.int32)
    links[order] = prev
    last = np.append(~same, True)
    index._sk.extend(stored)
    index._next.extend(links.reshape(m, BANDS))
    index._heads[ws[last]] = ids[last]
