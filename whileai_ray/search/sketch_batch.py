"""Many MinHash sketches at once: ``sketch_many(texts)`` is ``novelty.sketch`` row for row (issue 32).

A rollout lane writes the planner's next asks in batches (``search/edge_asks.py``), and sketching
them one ``sketch`` call each was a fifth of the lane's CPU: a dozen numpy calls per text, each
on ~100 shingles. Here a batch's word hashes are looked up in one pass and every shingle of every
text is permuted in one (K, shingles) product; each text's minimum is one ``reduceat`` over its
own stretch of unigrams and one over its bigrams (a bigram never spans two texts).

The values are exactly ``sketch``'s: the same shingles (unigrams, then bigrams of neighbouring
words; a text of one word has no bigram, a text of no word is ``"<empty>"``), the same
permutations, the same minimum and top 32 bits.

Texts go ``_CHUNK`` at a time: the lane writes asks on a thread beside the loop that plays its
units, and a batch of 192 texts held the GIL long enough at once to cost a 50 ms agent's warm run
2 points of C/L (89.0-89.6% vs 91.2%); 16 at a time is 10.9 us a text (one at a time 15.7, 192 at
a time 8.5) and measured as one at a time (90.7-90.8% vs 90.8-91.2%).
"""
from __future__ import annotations

import numpy as np

from .novelty import _A, _B, _BIGRAM, _HIGH, _WORD, _WORDS, K

__all__ = ["sketch_many"]

_CHUNK = 16                    # texts permuted at once at most (see the module docstring)
_NONE = np.iinfo(np.uint64).max


def sketch_many(texts: list[str]) -> np.ndarray:
    """``np.stack([sketch(t) for t in texts])`` (shape ``(len(texts), K)``, uint32), at batch cost."""
    out = np.empty((len(texts), K), dtype=np.uint32)
    for start in range(0, len(texts), _CHUNK):
        out[start:start + _CHUNK] = _chunk(texts[start:start + _CHUNK])
    return out


def _chunk(texts: list[str]) -> np.ndarray:
    if not texts:
        return np.empty((0, K), dtype=np.uint32)
    words: list[str] = []
    starts = []
    for text in texts:
        starts.append(len(words))
        words.extend(_WORD.findall(str(text).lower()) or ["<empty>"])
    h = np.array(_WORDS(words), dtype=np.uint64)
    first = np.array(starts, dtype=np.int64)
    ends = np.append(first[1:], len(h))                     # each text's words: h[first[i]:ends[i]]
    low = _min_over(h, first)                               # unigrams: every text has one at least
    pair = h[:-1] * _BIGRAM + h[1:]                         # neighbours, across text borders too
    inside = np.ones(len(pair), dtype=bool)
    inside[ends[:-1] - 1] = False                           # (the pairs that would span two texts)
    bigrams = pair[inside]
    counts = (ends - first) - 1                             # a text's bigrams
    if len(bigrams):
        some = counts > 0                                   # (a text of one word has none)
        b_first = np.concatenate(([0], np.cumsum(counts)[:-1]))[some]
        b_low = np.full_like(low, _NONE)
        b_low[:, some] = _min_over(bigrams, b_first)        # (stretches that are not empty: increasing)
        np.minimum(low, b_low, out=low)
    low >>= _HIGH
    return low.astype(np.uint32).T


def _min_over(shingles: np.ndarray, first: np.ndarray) -> np.ndarray:
    """(K, texts): each permutation's minimum over each text's stretch of ``shingles``."""
    mixed = np.multiply(_A, shingles)                       # (K, shingles), wraps mod 2**64
    mixed += _B
    return np.minimum.reduceat(mixed, first, axis=1)
