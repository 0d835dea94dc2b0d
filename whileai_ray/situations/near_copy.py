"""When is a generated ask a near-copy of a source trace? One concrete, documented measure.

Both texts are normalized (lower case; every run of characters that is not a letter or a digit
becomes one space, so ``ORD-1234`` and ``ord 1234`` agree) and cut into word 3-shingles (every
three consecutive words; a text of fewer than three words is one shingle of all its words).
Their similarity is the Jaccard index of the two shingle sets, ``|A & B| / |A | B|``. A
generated ask is a **near-copy** when its similarity to some trace's ask is at least
:data:`NEAR_COPY_JACCARD` = 0.5: an ask with a greeting and a sign-off added to a trace
(``"Hi, where is my order ORD-1234? Thanks!"`` against ``"Where is my order ORD-1234?"``) scores
0.67 and is dropped; two asks that only share a template opener score well below it.

:class:`NearCopyGuard` holds the traces' shingle sets behind an inverted index (shingle ->
traces), so checking an ask compares it only with the traces it shares a shingle with.
"""
from __future__ import annotations

import re

__all__ = ["NEAR_COPY_JACCARD", "SHINGLE_WORDS", "normalize", "shingles", "jaccard", "NearCopyGuard"]

NEAR_COPY_JACCARD = 0.5
SHINGLE_WORDS = 3
_NON_WORD = re.compile(r"[^0-9a-z]+")


def normalize(text: str) -> str:
    return _NON_WORD.sub(" ", str(text or "").lower()).strip()


def shingles(text: str, n: int = SHINGLE_WORDS) -> frozenset:
    words = normalize(text).split()
    if not words:
        return frozenset()
    if len(words) < n:
        return frozenset([" ".join(words)])
    return frozenset(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))


def jaccard(a: frozenset, b: frozenset) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


class NearCopyGuard:
    """``near(text) -> (is_near_copy, similarity, trace_index)`` against a fixed set of asks."""

    def __init__(self, asks, threshold: float = NEAR_COPY_JACCARD):
        self.threshold = float(threshold)
        self._sets = [shingles(a) for a in asks]
        self._index: dict = {}
        for i, s in enumerate(self._sets):
            for sh in s:
                self._index.setdefault(sh, []).append(i)
        self.checked = 0
        self.hits = 0

    def __len__(self) -> int:
        return len(self._sets)

    def best(self, text: str) -> tuple[float, int]:
        mine = shingles(text)
        seen, best, at = set(), 0.0, -1
        for sh in mine:
            for i in self._index.get(sh, ()):
                if i in seen:
                    continue
                seen.add(i)
                s = jaccard(mine, self._sets[i])
                if s > best:
                    best, at = s, i
        return best, at

    def near(self, text: str) -> tuple[bool, float, int]:
        self.checked += 1
        best, at = self.best(text)
        hit = best >= self.threshold
        self.hits += hit
        return hit, best, at
