"""Outcome: what came back for one unit, as the planner hears it (a landed row, or why not).

The driver builds one per unit it lands (or settles from disk) and hands them to
``Planner.observe``; the planner counts, labels and steers the search with them.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...core.unit import Unit

__all__ = ["Outcome"]


@dataclass(slots=True)
class Outcome:
    """What came back for one unit: a row (landed) or the reason it is unusable."""
    unit: Unit
    row: dict | None
    unusable: str | None = None
    timed_out: bool = False
    label: object = None
    fault_parent: bool = False
    resumed: bool = False
    graded_failure: bool = False          # the judge scored it under the pass threshold
    failed_markers: tuple = ()
    key_digest: tuple | None = None       # the row's ``identity.key_digest`` as its lane made it, if it did
    marks: tuple | None = None            # the row's ``coverage.row_marks`` as its lane made them, if it did
