"""Resume, exactly once: which planned units already have their row on disk.

A resumed run replays its plan from the seed. Each unit the planner decides is looked up by
its on-disk key (``row_key``): a hit is settled from the row on disk (marked
``lineage.resumed``) instead of being played, a miss is played. Units that were in flight
when the run died were never written, so they miss and are played again; nothing is played
twice, and nothing lands twice (the checkpoint also refuses duplicate keys).

Two modes, chosen by the plan fingerprint stored in the checkpoint header:

* ``exact`` (same seed and planning arguments): the replay decides the same units, so every
  row on disk is matched where it was; with a deterministic agent the result equals an
  uninterrupted run. Rows on disk the plan never reaches are left out (and said so).
* ``precount`` (the arguments changed, or the run is not reproducible: ``reproducible=False`` or
  a clock, whose plan is not a function of the seed: ``replays=False``): the rows on disk count
  toward the budget up front, their prompts are never drawn again, and they are kept in the result.

The rows on disk come as ``DiskRows`` (key digests known, rows decoded when used): only the rows
a replay settles are decoded while the run goes; the rest are decoded once, at the end. The
index is arrays: the rows' 128-bit key digests in a ``DigestTable`` (first 64 bits -> row) and a
flag a row, so a million rows on disk cost no Python object each and a snapshot's settled rows
are claimed at once (``claim``, ``on_disk``: vectorised over the keys' digests).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from ...core.digest_table import DigestTable
from ...core.identity import key_digest, unit_row_key
from ...core.strict_json import gc_paused
from ...core.unit import Unit
from .disk_rows import DiskRows
from ..row_key_set import digest_arrays


def _distinct(at: np.ndarray, size: int) -> bool:
    """Whether the rows ``at`` (each in ``range(size)``) are all different (a mark a row: no sort)."""
    marks = np.zeros(size, dtype=bool)
    marks[at] = True
    return int(np.count_nonzero(marks)) == len(at)


class ResumeIndex:
    def __init__(self, loaded: DiskRows | list[dict], header: dict | None, plan_fingerprint: str | None,
                 replays: bool = True) -> None:
        """``replays``: whether the run's plan is a function of its seed (False: ``reproducible=False``
        or a clock, and no pinned tasks), without which no resume is ``exact``."""
        rows = loaded if isinstance(loaded, DiskRows) else DiskRows.of(loaded)
        self._rows = rows
        self.total = len(rows)
        a, self._b = rows.digests
        self._table = DigestTable.of(a, np.arange(self.total, dtype=np.int64))
        # rows whose first 64 bits another row shares (about once in 10^7 million-row runs): by all 128
        self._shared: dict[tuple[int, int], int] = {}
        if len(self._table) < self.total:
            uniq, counts = np.unique(a, return_counts=True)
            for i in np.flatnonzero(np.isin(a, uniq[counts > 1])).tolist():
                self._shared.setdefault((int(a[i]), int(self._b[i])), i)
        self._free = np.ones(self.total, dtype=bool)      # on disk and not yet settled
        self._left = self.total
        self._claimed: np.ndarray = np.zeros(0, dtype=np.int64)
        stored = ((header or {}).get("fingerprint") or {}).get("plan")
        same_plan = replays and plan_fingerprint and stored == plan_fingerprint
        self.mode = "exact" if (not self.total or same_plan) else "precount"

    # ------------------------------------------------------------------ lookups
    def _index(self, key: Sequence[object]) -> int | None:
        a, b, _ = key_digest(tuple(key))
        if self._shared and (a, b) in self._shared:
            return self._shared[(a, b)]
        i = self._table.get(a)
        return None if i is None or int(self._b[i]) != b else i

    def _at(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The row of each digest (-1 when not on disk), vectorised."""
        a, b = np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.int64)
        if not self.total:
            return np.full(len(a), -1, dtype=np.int64)
        found, values = self._table.find(a)
        assert values is not None                # a map (built with values): find gives them
        at = np.where(found, values, 0)
        out = np.where(found & (self._b[at] == b), at, -1)
        if self._shared:
            for j, pair in enumerate(zip(a.tolist(), b.tolist())):
                if pair in self._shared:
                    out[j] = self._shared[pair]
        return out

    def _settle(self, i: int | None) -> dict | None:
        if i is None or not self._free[i]:
            return None
        self._free[i] = False
        self._left -= 1
        return self._rows[i]

    # ------------------------------------------------------------------ the run's questions
    def planner_overrides(self) -> dict:
        if self.mode == "exact" or not self.total:
            return {}
        return {"precounted": self.total,
                "avoid_prompt_shas": frozenset(self._rows.key_of(i)[1] for i in np.flatnonzero(self._free).tolist())}

    def take(self, unit: Unit) -> dict | None:
        if not self._left:
            return None
        return self._settle(self._index(unit_row_key(unit)))

    def take_key(self, key: tuple) -> dict | None:
        """The row on disk with this ``row_key`` (now settled), or None."""
        if not self._left:
            return None
        return self._settle(self._index(key))

    def claim(self, keys: Iterable[Sequence[object]]) -> bool:
        """Settle these keys at once (a planner snapshot's rows), rows left undecoded; False,
        and nothing claimed, unless every key is on disk and unclaimed."""
        return self.claim_digests(*digest_arrays([tuple(k) for k in keys]))

    def claim_digests(self, a: np.ndarray, b: np.ndarray) -> bool:
        """``claim`` of keys given by their digests (``identity.key_digest``, two arrays)."""
        at = self._at(a, b)
        if len(at) and ((at < 0).any() or not self._free[at].all() or not _distinct(at, self.total)):
            return False
        self._free[at] = False
        self._left -= len(at)
        self._claimed = at
        return True

    def on_disk(self, keys: Iterable[Sequence[object]]) -> int:
        """How many of ``keys``, from the first, are on disk and unclaimed (each once)."""
        return self.on_disk_digests(*digest_arrays([tuple(k) for k in keys]))

    def on_disk_digests(self, a: np.ndarray, b: np.ndarray) -> int:
        """``on_disk`` of keys given by their digests (two arrays)."""
        at = self._at(a, b)
        if not len(at):
            return 0
        ok = at >= 0
        ok[ok] = self._free[at[ok]]
        repeat = np.ones(len(at), dtype=bool)
        repeat[np.unique(at, return_index=True)[1]] = False
        bad = np.flatnonzero(~ok | repeat)
        return int(bad[0]) if len(bad) else len(at)

    def claimed_row(self, key: Sequence[object]) -> dict:
        i = self._index(key)
        if i is None:
            raise KeyError(key)
        return self._rows[i]

    def claimed_rows(self) -> Iterator[dict]:
        """The rows ``claim`` settled, decoded one at a time, in the order of its keys."""
        for i in self._claimed.tolist():
            yield self._rows[i]

    def claimed_lines(self) -> Iterator[tuple[dict, bytes]]:
        """``(row, line)`` of each row ``claim`` settled, in the order of its keys: the row decoded,
        and its line as on disk (``b""`` for rows that were never on disk)."""
        rows = self._rows
        for start in range(0, len(self._claimed), 8192):      # (a million indices never held as ints)
            for i in self._claimed[start:start + 8192].tolist():
                yield rows.row_and_line(i)

    def leftover(self) -> list[dict]:
        """Rows on disk no planned unit matched (kept in precount mode, left out in exact mode)."""
        with gc_paused():
            return list(self.iter_leftover())

    def iter_leftover(self) -> Iterator[dict]:
        """``leftover()`` decoded one at a time (a changed plan's resume keeps every row on disk:
        a million of them are never held at once)."""
        for i in np.flatnonzero(self._free).tolist():
            yield self._rows[i]

    def leftover_count(self) -> int:
        return self._left if self.mode == "precount" else 0

    def summary(self) -> dict:
        return {"loaded": self.total, "matched": self.total - self._left,
                "unmatched": self._left, "mode": self.mode}
