"""What a running job says about itself: the Driver's progress snapshot, typed once.

The Driver answers each of the caller's polls (every 0.2 s) with a ``Poll``: a
``ProgressSnapshot`` of the run's counts, the *marks* noted since the last poll (the counts each
time the run's events passed a multiple of ``progress_every_rows``:
``runtime/driver/progress_marks.py``) and, while a run is small, the rows landed since
(``runtime/driver/run.py``). The caller's reporter turns each into a progress line and an
``on_progress`` call (``result/progress/lines.py``).

``on_progress`` receives the documented dict, not these records: ``ProgressSnapshot.as_dict()``
is the one place that dict is made, and ``ProgressDict`` says its keys and their types, so a
reader that asks for a key the Driver never sends is a type error (``mypy`` in CI).

Plain data in the bottom layer: the runtime builds these records, ``result/`` reads them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

__all__ = ["ProgressDict", "ProgressSnapshot", "Poll"]


class ProgressDict(TypedDict, total=False):
    """The ``on_progress`` dict (seeds' ``simulate.md``) and what the progress line reads."""
    rows: int                      # rows on hand: landed + resumed (+ rows a resume settled)
    cap: int                       # the budget
    landed: int                    # rows played and landed in this call
    resumed: int                   # rows already on disk (a resume)
    rerolled: int                  # units re-rolled (an agent error, an empty reply ...)
    rerolled_by: dict[str, int]
    timed_out: int                 # agent calls cut at timeout=
    lost: int                      # units that could not give a row
    lost_by: dict[str, int]
    inflight: int                  # units sent and not back
    situations: int                # situations written
    elapsed_s: float
    done: bool                     # the Driver's loop has ended
    stopped_because: str | None    # why it ended (the last line says it)
    marks: list[ProgressDict]      # count-driven snapshots since the last poll (the reporter takes them out)


@dataclass(frozen=True, slots=True)
class ProgressSnapshot:
    """The run's counts at one moment (see ``ProgressDict`` for each field)."""
    rows: int
    cap: int
    landed: int = 0
    resumed: int = 0
    rerolled: int = 0
    rerolled_by: dict[str, int] = field(default_factory=dict)
    timed_out: int = 0
    lost: int = 0
    lost_by: dict[str, int] = field(default_factory=dict)
    inflight: int = 0
    situations: int = 0
    elapsed_s: float = 0.0
    done: bool = False
    stopped_because: str | None = None

    def as_dict(self) -> ProgressDict:
        """The documented dict, fresh (a reader may change it)."""
        return ProgressDict(rows=self.rows, cap=self.cap, landed=self.landed, resumed=self.resumed,
                            rerolled=self.rerolled, rerolled_by=dict(self.rerolled_by), timed_out=self.timed_out,
                            lost=self.lost, lost_by=dict(self.lost_by), inflight=self.inflight,
                            situations=self.situations, elapsed_s=self.elapsed_s, done=self.done,
                            stopped_because=self.stopped_because)


@dataclass(frozen=True, slots=True)
class Poll:
    """The Driver's answer to one poll: the counts now, the marks since the last poll, and (a
    small run) the rows released since ``rows_from`` (``new_rows``), or ``rows_spilled`` when
    the run's rows go to disk instead and are read there at its end."""
    snapshot: ProgressSnapshot
    marks: tuple[ProgressSnapshot, ...] = ()
    new_rows: list[dict] | None = None
    rows_from: int | None = None
    rows_spilled: bool = False

    def progress(self) -> ProgressDict:
        """What the caller's reporter reads: the snapshot's dict with the marks' dicts in ``marks``."""
        out = self.snapshot.as_dict()
        out["marks"] = [m.as_dict() for m in self.marks]
        return out
