"""What a checkpoint's key index vouches for (``jsonl_lines._scan`` asks it while scanning).

``IndexTrust`` holds the ``.keys`` records as arrays by group: ``check`` verifies a run of
consecutive groups against the checkpoint's bytes at once (lines that follow one another, each
group's CRC over its bytes and digests), so a vouched group's lines are keyed without decoding
them; ``trusts`` says whether a line that had to be decoded may be used (its row CRC is one a
record holds, or the index cannot vouch at all: none, older, damaged). ``untrusted_warning``
names the rows it disowned. Split from ``checkpoint/lines.py``, which scans; this decides.
"""
from __future__ import annotations

import zlib
from collections import Counter
from typing import Literal

import numpy as np

from .key_index import digest_pairs, sound_groups

__all__ = ["IndexTrust", "untrusted_warning"]

_NL = ord("\n")


class IndexTrust:
    """The index's groups as arrays (where each starts and ends in the checkpoint, its records,
    its CRC) and by start offset; ``check(...)`` verifies a run of consecutive groups at once."""

    def __init__(self, recs: np.ndarray | None) -> None:
        self.recs = recs
        self.by_start: dict[int, int] = {}
        self.used = 0
        self.matched = 0                    # indexed rows found so far (in vouched groups or by their CRC)
        # Counter of (row CRC << 32 | length), built when first needed; False: the index is damaged
        self._known: Counter[int] | Literal[False] | None = None
        if recs is None or not len(recs):
            self.groups = 0
            return
        last = np.flatnonzero(recs["n"])
        first = np.concatenate([[0], last[:-1] + 1])
        st, en = recs["start"].astype(np.int64), recs["end"].astype(np.int64)
        self.first, self.last, self.ends = first, last, en
        self.gstart, self.gend = st[first], en[last]
        self.crc = recs["crc"][last].tolist()
        self.pairs = memoryview(digest_pairs(recs))
        # a group is well formed when its n is its size and its lines follow one another
        bad = (en < st).astype(np.int64)
        bad[1:] += st[1:] != en[:-1] + 1
        bad[first] = en[first] < st[first]
        self.formed = (np.add.reduceat(bad, first) == 0) & (recs["n"][last] == last - first + 1)
        self.joined = np.append(self.gstart[1:] == self.gend[:-1] + 1, False)   # next group follows
        self.by_start = dict(zip(self.gstart.tolist(), range(len(first))))
        self.groups = len(first)

    def check(self, view: memoryview, base: int, cut: int, k: int) -> int:
        """How many groups from group ``k`` (which starts at ``view``'s offset ``gstart[k] - base``)
        are what the checkpoint holds, one after another within ``view[:cut]``: lines that
        follow one another, each ending in a newline, each group's CRC over its bytes and
        digests equal (the CRC vouches for the bytes as written: lines of escaped JSON hold no
        newline)."""
        stop = int(np.searchsorted(self.gend, base + cut - 1, side="right"))    # groups ending inside
        if stop <= k:
            return 0
        gap = np.flatnonzero(~self.joined[k:stop - 1])
        stop = k + int(gap[0]) + 1 if len(gap) else stop
        lo, hi = int(self.first[k]), int(self.last[stop - 1]) + 1
        nl = np.frombuffer(view, dtype=np.uint8)[self.ends[lo:hi] - base] == _NL
        good = self.formed[k:stop] & (np.add.reduceat(~nl, self.first[k:stop] - lo) == 0)
        starts, ends = (self.gstart[k:stop] - base).tolist(), (self.gend[k:stop] - base + 1).tolist()
        firsts, lasts = (self.first[k:stop] * 16).tolist(), ((self.last[k:stop] + 1) * 16).tolist()
        crc32, pairs, crcs = zlib.crc32, self.pairs, self.crc
        for j, ok in enumerate(good.tolist()):
            if not ok or crc32(pairs[firsts[j]:lasts[j]], crc32(view[starts[j]:ends[j]])) != crcs[k + j]:
                self.matched += int(self.last[k + j - 1]) + 1 - lo if j else 0
                return j
        self.matched += hi - lo
        return stop - k

    def trusts(self, row_crc: int, length: int) -> bool:
        """Whether a decoded line (its CRC, its length with the newline) may be used: always when
        the index cannot vouch (none, older, damaged) or every indexed row was found already (a
        tail the index had not reached); else only when an index record holds its CRC."""
        recs = self.recs
        if recs is None or not len(recs) or self.matched >= len(recs):
            return True
        if self._known is None:
            if not sound_groups(recs):
                self._known = False
            else:
                lengths = (recs["end"] - recs["start"] + 1).astype(np.uint64) & np.uint64(0xFFFFFFFF)
                self._known = Counter(((recs["row"].astype(np.uint64) << np.uint64(32)) | lengths).tolist())
        if self._known is False:
            return True
        key = (int(row_crc) << 32) | (int(length) & 0xFFFFFFFF)
        if self._known.get(key, 0) > 0:
            self._known[key] -= 1
            self.matched += 1
            return True
        return False


def untrusted_warning(path: object, untrusted: list[tuple[int, tuple]], most: int = 10) -> str:
    """The warning naming the rows the key index disowns (``[(line number, row_key)]``)."""
    named = ", ".join(f"line {n} (scenario_id {k[0]!r}, rollout {k[2]})" for n, k in untrusted[:most])
    more = f" and {len(untrusted) - most} more" if len(untrusted) > most else ""
    return (f"{path}: {len(untrusted)} row(s) do not match the checksums the key index took when they were "
            f"written (edited or inserted since): {named}{more}. They are not trusted: left out of the resumed "
            "rows, their units are played again.")
