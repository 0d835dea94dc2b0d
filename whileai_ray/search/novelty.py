"""Novelty of a prompt against every prompt already run, at a cost that does not grow with the archive.

The reference scores novelty as the minimum cosine distance to *every* prompt already run,
so selection costs 32 ms a row at 1,000 rows and keeps growing. Here each text becomes a
MinHash sketch over its word unigrams and bigrams (``K`` = 32 values), and the sketch is cut
into ``BANDS`` bands of ``ROWS`` values (locality-sensitive hashing). Two texts that share a
band are candidates; the similarity of a candidate is the share of equal sketch values (an
estimate of the Jaccard similarity of the shingle sets). Only candidates are compared, and
only a bucket's ``bucket_cap`` most recent members are looked at, so a call touches at most
``BANDS * bucket_cap`` sketches whatever the archive size.

* ``add(text) -> id`` archives a prompt (ids count from 0 in add order);
* ``similarity(text) -> (id, s)``: the nearest archived prompt found and its estimated
  Jaccard similarity (``(-1, 0.0)`` when nothing shares a band);
* ``novelty(text) = 1 - s``; an exact copy of an archived prompt scores 0.0;
* many at once, vectorised, for an archive that holds still meanwhile: ``novelty_batch.py``;
* ``near_copy(text, threshold)``; ``select(candidates, n, seed)``: the ``n`` most novel
  candidates, greedily, each one also scored against the ones already picked.

With 16 bands of 2 values, a pair at Jaccard 0.5 shares a band 99% of the time, at 0.3 78%,
at 0.2 48%: texts further apart than that read as fully novel, which is what selection needs.
"""
from __future__ import annotations

import hashlib
import re
from concurrent.futures import Future, ThreadPoolExecutor
from typing import cast

import numpy as np

from ..core.rng import draw
from ..core.columns import Column, State, prompt_digest
from ..core.digest_table import DigestTable

__all__ = ["NoveltyIndex", "sketch"]

K = 32
ROWS = 2
BANDS = K // ROWS
_WORD = re.compile(r"[a-z0-9$@.'\-]+")


def _params() -> tuple[np.ndarray, np.ndarray]:
    """K fixed odd multipliers and offsets for the multiply-shift permutations (from sha256)."""
    a, b = [], []
    for i in range(K):
        d = hashlib.sha256(f"whileai_ray-minhash-{i}".encode()).digest()
        a.append(int.from_bytes(d[:8], "big") | 1)
        b.append(int.from_bytes(d[8:16], "big"))
    return np.array(a, dtype=np.uint64)[:, None], np.array(b, dtype=np.uint64)[:, None]


_A, _B = _params()
_BIGRAM = np.uint64(0x9E3779B97F4A7C15)


class _WordHashes:
    """Word -> 64-bit blake2b hash, cached (cleared past ``limit`` entries to bound memory).

    Known words are looked up in one C-level pass (``map(dict.get)``); only the misses run the
    Python loop, each found by a C scan that goes on from the last one. (Scanning the whole list
    again for each miss, ``None in out``, cost a lane's sketch of 16 asks ~50 us: half of its
    word hashing.) The hashes are a function of the word alone, so the cache never changes them."""

    def __init__(self, limit: int = 50_000):
        self.limit = limit
        self.cache: dict[str, int] = {}

    def __call__(self, words: list[str]) -> list[int]:
        cache = self.cache
        out = list(map(cache.get, words))
        find = out.index
        i = -1
        while True:
            try:
                i = find(None, i + 1)      # the next miss, a C scan from the last one (each word looked at once)
            except ValueError:
                return cast("list[int]", out)     # (every None was filled)
            w = words[i]
            h = cache.get(w)               # (a word seen twice in this text)
            if h is None:
                if len(cache) >= self.limit:
                    cache.clear()
                h = cache[w] = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "big")
            out[i] = h


_WORDS = _WordHashes()


def sketch(text: str) -> np.ndarray:
    """The MinHash sketch of ``text``: K uint32 values over its word unigrams and bigrams.

    All K permutations of all shingles in one (K, shingles) product, mod 2**64 (numpy's uint64
    arithmetic wraps), reduced to each permutation's minimum; its top 32 bits are the value."""
    words = _WORD.findall(str(text).lower()) or ["<empty>"]
    h = np.array(_WORDS(words), dtype=np.uint64)
    if len(h) > 1:
        h = np.concatenate((h, h[:-1] * _BIGRAM + h[1:]))
    mixed = np.multiply(_A, h)                          # (K, shingles), wraps mod 2**64
    mixed += _B
    low = np.minimum.reduce(mixed, axis=1)
    low >>= _HIGH
    return low.astype(np.uint32)


_HIGH = np.uint64(32)


def _text_key(text: str) -> int:
    return prompt_digest(str(text))


def _stored(sk: np.ndarray) -> np.ndarray:
    """What the archive keeps of a sketch: the top 16 bits of each value (two equal 16-bit values
    from different shingles come once in 65,536 draws: the estimate moves by 1/K that rarely)."""
    return (np.asarray(sk, dtype=np.uint32) >> np.uint32(16)).astype(np.uint16)


def _slots(stored: np.ndarray, bits: int, dtype=np.int64) -> np.ndarray:
    """Bucket slot per band (one row per sketch, ``BANDS`` columns) in a table of ``2**bits``:
    the band's ROWS 16-bit values read as one little-endian 32-bit key, mixed with the band
    number (Fibonacci hashing)."""
    key = np.ascontiguousarray(stored, dtype="<u2").reshape(-1, K).view("<u4")
    mixed = key ^ _BAND_SALT           # arrays: uint32 products wrap mod 2**32 without a warning
    mixed *= _FIB
    mixed >>= np.uint32(32 - bits)
    return mixed.astype(dtype)


_FIB = np.uint32(0x9E3779B1)


_BAND_SALT = (np.arange(BANDS, dtype=np.uint32) * np.uint32(0x85EBCA77))
_BAND = np.arange(BANDS, dtype=np.int64)
MIN_BITS, MAX_BITS = 10, 22


def _bits_for(n: int) -> int:
    """Bucket table size (log2) for ``n`` archived prompts: at least one slot a prompt per band."""
    bits = MIN_BITS
    while (1 << bits) < n and bits < MAX_BITS:
        bits += 1
    return bits


class NoveltyIndex:
    """An LSH archive of prompts; see the module docstring for the scoring.

    Storage, about 200 bytes a prompt whatever the archive's size: the stored sketch (K 16-bit
    values), per band a table of bucket heads (``2**bits`` int32 slots, a slot at least per
    prompt; two buckets sharing a slot just share a chain, and the sketches tell their members
    apart), the chain link of each prompt in each band (int32), its text key (uint64) and the
    set of distinct text keys (a :class:`DigestTable`). No Python object per prompt."""

    def __init__(self, bucket_cap: int = 6, capacity: int = 1024, exact: bool = True):
        # the bucket tables start at 2**MIN_BITS slots a band and double, rebuilt from the sketches,
        # when the archive outgrows them: their size is a function of its length alone, so a run's
        # novelty figures do not depend on its budget (capacity only reserves the columns)
        self.bucket_cap = int(bucket_cap)
        self._sk = Column(np.uint16, width=K, capacity=max(16, int(capacity)))
        self._bits = MIN_BITS
        self._heads = np.full(BANDS << self._bits, -1, dtype=np.int32)   # band * 2**bits + slot -> newest id
        self._next = Column(np.int32, width=BANDS, capacity=max(16, int(capacity)))  # id, band -> the one before
        # exact copies: the text keys archived (a set: an exact hit's first id is looked up in the key
        # column). ``exact=False`` keeps neither (24 bytes a prompt): for a caller that already knows
        # which texts it archived (the planner scores unseen prompts only); an exact copy then scores
        # by its sketch like any other text (1.0 while it is within its buckets' reach)
        self._exact = DigestTable() if exact else None
        self._keys = Column(np.uint64) if exact else None
        self._building: Future | None = None      # a restore's tables, built on a thread (load_state)
        self._last_where: tuple[int, bytes, np.ndarray] | None = None     # (bits, stored sketch, _where)

    def __len__(self) -> int:
        return len(self._sk)

    def _where(self, stored: np.ndarray) -> np.ndarray:
        """The head slot of each band's bucket for one stored sketch. The last answer is kept: the
        planner scores a prompt (``similarity``) and then archives the same sketch (``add``)."""
        bits, raw = self._bits, stored.tobytes()
        last = getattr(self, "_last_where", None)     # (an index pickled before it kept one has none)
        if last is not None and last[0] == bits and last[1] == raw:
            return last[2]
        where = (_BAND << bits) + _slots(stored, bits)[0]
        self._last_where = (bits, raw, where)
        return where

    def add(self, text: str, sk: np.ndarray | None = None) -> int:
        """Archive ``text`` (pass its ``sketch`` if already computed); returns its id."""
        self.ready()
        if sk is None:
            sk = sketch(text)
        stored = _stored(sk)
        i = len(self._sk)
        if i >= (1 << self._bits) and self._bits < MAX_BITS:
            self._rebuild(_bits_for(i + 1))
        self._sk.append(stored)
        if self._exact is not None:
            assert self._keys is not None          # the text keys are kept beside the exact table
            key = _text_key(text)
            self._exact.add(key)
            self._keys.append(key)
        where = self._where(stored)
        self._next.append(self._heads[where])
        self._heads[where] = i
        return i

    def _rebuild(self, bits: int) -> None:
        self._bits = bits
        del self._heads, self._next                # (let the outgrown tables go before the new ones are built)
        self._heads, nxt = _buckets(self._sk.view(), bits)
        self._next = Column.of(nxt, np.int32, width=BANDS)

    def _candidates(self, stored: np.ndarray) -> list[int]:
        """The ids met walking each band's bucket chain ``bucket_cap`` steps from its head, sorted
        and distinct. The links are read through a flat memoryview (``id * BANDS + band``): a
        Python int per step, without ``ndarray.item``'s cost."""
        found: set[int] = set()
        add, steps = found.add, range(self.bucket_cap)
        links = self._next._a.reshape(-1).data     # a memoryview (the column is C-contiguous: no copy)
        for b, j in enumerate(self._heads[self._where(stored)].tolist()):
            for _ in steps:
                if j < 0:
                    break
                add(j)
                j = links[j * BANDS + b]
        return sorted(found)

    def similarity(self, text: str, sk: np.ndarray | None = None) -> tuple[int, float]:
        """``(id, s)`` of the most similar archived prompt found; ``(-1, 0.0)`` when none."""
        self.ready()
        if self._exact is not None:
            key = _text_key(text)
            if key in self._exact:         # rare (the planner only scores unseen prompts): the first id, by a scan
                assert self._keys is not None      # the text keys are kept beside the exact table
                return int(np.flatnonzero(self._keys.view() == np.uint64(key))[0]), 1.0
        if sk is None:
            sk = sketch(text)
        stored = _stored(sk)
        cands = self._candidates(stored)
        if not cands:
            return -1, 0.0
        eq = (self._sk._a[cands] == stored).sum(axis=1)
        best = int(eq.argmax())
        return cands[best], float(eq[best]) / K

    def novelty(self, text: str, sk: np.ndarray | None = None) -> float:
        """1 - the similarity to the nearest archived prompt: 1.0 new, 0.0 an exact copy."""
        return 1.0 - self.similarity(text, sk)[1]

    def near_copy(self, text: str, threshold: float = 0.8) -> bool:
        """True when some archived prompt has estimated Jaccard similarity >= ``threshold``."""
        return self.similarity(text)[1] >= threshold

    def select(self, candidates: list[str], n: int, seed: int = 0) -> list[tuple[int, float]]:
        """Pick up to ``n`` candidates, most novel first; returns ``[(candidate index, novelty)]``.

        Greedy: a candidate's score is its novelty against the archive *and* the candidates
        picked before it, so a batch does not spend two slots on near-copies of each other.
        Ties break by a seeded draw on the text. Nothing is archived: call :meth:`add` for the
        prompts actually scheduled.
        """
        n = max(0, min(int(n), len(candidates)))
        if n == 0:
            return []
        sks = np.stack([sketch(t) for t in candidates])
        score = np.array([self.novelty(t, sk) for t, sk in zip(candidates, sks)])
        tie = np.array([draw(seed, "novelty-tie", t) for t in candidates])
        alive = np.ones(len(candidates), dtype=bool)
        out: list[tuple[int, float]] = []
        for _ in range(n):
            masked = np.where(alive, score, -1.0)
            top = masked.max()
            pool = np.flatnonzero(alive & (masked >= top - 1e-12))
            pick = int(pool[tie[pool].argmin()])
            out.append((pick, round(float(score[pick]), 4)))
            alive[pick] = False
            near = 1.0 - (sks == sks[pick]).sum(axis=1) / K
            score = np.minimum(score, near)
        return out

    # ------------------------------------------------------------------ snapshot
    def state(self, keys: bool = True) -> State:
        """The stored sketches and (unless the caller keeps them: ``keys=False``) the text keys,
        the ``prompt_digest`` of each text, in id order (views: rows once written never change).
        The buckets are not kept: :meth:`load_state` rebuilds them from the sketches."""
        self.ready()
        logs = {"sk16": self._sk.view()}
        if keys and self._keys is not None:
            logs["key"] = self._keys.view()
        return State(meta={"bucket_cap": self.bucket_cap, "bits": self._bits}, logs=logs)

    def load_state(self, state: State, keys: np.ndarray | None = None) -> None:
        sk = state.array("sk16", np.uint16, width=K)
        if self._exact is None:
            keys = None                     # (kept by the caller, not here)
        else:
            keys = state.array("key", np.uint64) if keys is None else np.asarray(keys, dtype=np.uint64)
            if len(keys) != len(sk):
                raise ValueError("snapshot novelty: one text key per sketch")
        n = len(sk)
        self.ready()
        self.bucket_cap = int(state.meta["bucket_cap"])
        self._sk = Column.of(sk, np.uint16, width=K)
        self._keys = Column.of(keys, np.uint64) if keys is not None else None
        bits = max(int(state.meta.get("bits", MIN_BITS)), _bits_for(n))
        if n < _THREADED_FROM:
            self._tables(keys, bits)
            return
        # a large archive's tables (a second or two at a million prompts) are built on a thread
        # while the caller restores the rest; every method that reads them waits (ready())
        pool = ThreadPoolExecutor(1, thread_name_prefix="novelty-restore")
        self._building = pool.submit(self._tables, keys, bits)
        pool.shutdown(wait=False)           # (the thread ends with its one task)

    def _tables(self, keys: np.ndarray | None, bits: int) -> None:
        if keys is not None:
            self._exact = DigestTable.of(keys)
        self._rebuild(bits)

    def ready(self) -> "NoveltyIndex":
        """Wait for the tables a restore is building (raises what building them raised)."""
        if self._building is not None:
            building, self._building = self._building, None
            building.result()
        return self


def _buckets(stored: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """The bucket heads and chain links ``add`` would have built, adding ``stored``'s rows in order.

    Per band, each id's slot and the id itself are packed in one int64 (slot high, id low) and
    sorted as plain values: equal slots come out oldest id first, and a value sort is several
    times cheaper than a stable argsort. The bands are independent: a large archive (a
    million-prompt restore) builds them on two threads (numpy lets go of the GIL in the sorts).
    Memory beside the result: a band's slots and sort at a time per thread (the links are written
    in place, id-major as ``add`` keeps them), not every band's slots at once."""
    n = len(stored)
    heads = np.full(BANDS << bits, -1, dtype=np.int32)
    links = np.full((n, BANDS), -1, dtype=np.int32)
    if not n:
        return heads, links
    keys = np.ascontiguousarray(stored, dtype="<u2").reshape(-1, K).view("<u4")    # (n, BANDS)
    ids = np.arange(n, dtype=np.int64)

    def band(b: int) -> None:
        with np.errstate(over="ignore"):
            slot = (keys[:, b] ^ _BAND_SALT[b]) * np.uint32(0x9E3779B1)    # _slots, one band
        slot >>= np.uint32(32 - bits)
        packed = (slot.astype(np.int64) << 32) | ids
        del slot
        packed.sort()
        order = (packed & 0xFFFFFFFF).astype(np.int32)
        ks = packed >> 32
        del packed
        same = ks[1:] == ks[:-1]
        links[order[1:][same], b] = order[:-1][same]       # each member points at the one before it
        last = np.append(~same, True)
        heads[(b << bits) + ks[last]] = order[last]

    if n < _THREADED_FROM:
        for b in range(BANDS):
            band(b)
    else:
        with ThreadPoolExecutor(2, thread_name_prefix="novelty-buckets") as pool:
            list(pool.map(band, range(BANDS)))
    return heads, links


_THREADED_FROM = 100_000
