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
* ``precount`` (the arguments changed): the rows on disk count toward the budget up front,
  their prompts are never drawn again, and they are kept in the result.

The rows on disk come as ``DiskRows`` (keys known, rows decoded when used): only the rows a
replay settles are decoded while the run goes; the rest are decoded once, at the end.
"""
from __future__ import annotations

from ..core.identity import unit_row_key
from .disk_rows import DiskRows, gc_paused


class ResumeIndex:
    def __init__(self, loaded, header: dict | None, plan_fingerprint: str | None):
        rows = loaded if isinstance(loaded, DiskRows) else DiskRows.of(loaded)
        self._rows = rows
        self.total = len(rows)
        self._by_key = {key: i for i, key in enumerate(rows.keys)}
        self._claimed: dict = {}
        stored = ((header or {}).get("fingerprint") or {}).get("plan")
        self.mode = "exact" if (not self.total or (plan_fingerprint and stored == plan_fingerprint)) else "precount"

    def planner_overrides(self) -> dict:
        if self.mode == "exact" or not self.total:
            return {}
        return {"precounted": self.total,
                "avoid_prompt_shas": frozenset(key[1] for key in self._by_key)}

    def take(self, unit) -> dict | None:
        if not self._by_key:
            return None
        i = self._by_key.pop(unit_row_key(unit), None)
        return None if i is None else self._rows[i]

    def take_key(self, key: tuple) -> dict | None:
        """The row on disk with this ``row_key`` (now settled), or None."""
        i = self._by_key.pop(tuple(key), None)
        return None if i is None else self._rows[i]

    def claim(self, keys) -> bool:
        """Settle these keys at once (a planner snapshot's rows), rows left undecoded; False,
        and nothing claimed, unless every key is on disk and unclaimed."""
        keys = [tuple(k) for k in keys]
        if len(set(keys)) != len(keys) or any(k not in self._by_key for k in keys):
            return False
        for k in keys:
            self._claimed[k] = self._by_key.pop(k)
        return True

    def on_disk(self, keys) -> int:
        """How many of ``keys``, from the first, are on disk and unclaimed (each once)."""
        seen = set()
        for i, key in enumerate(keys):
            key = tuple(key)
            if key in seen or key not in self._by_key:
                return i
            seen.add(key)
        return len(keys)

    def claimed_row(self, key) -> dict:
        return self._rows[self._claimed[tuple(key)]]

    def leftover(self) -> list:
        """Rows on disk no planned unit matched (kept in precount mode, left out in exact mode)."""
        with gc_paused():
            return [self._rows[i] for i in sorted(self._by_key.values())]

    def leftover_count(self) -> int:
        return len(self._by_key) if self.mode == "precount" else 0

    def summary(self) -> dict:
        return {"loaded": self.total, "matched": self.total - len(self._by_key),
                "unmatched": len(self._by_key), "mode": self.mode}
