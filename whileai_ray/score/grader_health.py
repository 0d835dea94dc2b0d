"""Did the grader work at all? One plain-words note for ``data.warnings``.

A grader that raises is marked per row (``judge_status="error"``, ``reward=None``, never a 0),
which is right for one bad row and invisible for a broken grader: every ``pass_at`` is then
empty and nothing says why. ``grader_failure_note(rows)`` returns a warning when every graded
row failed (error or timeout), naming the count, the statuses and the first reason, or None.
"""
from __future__ import annotations

from collections import Counter

from ..core.run_warning import RunWarning, code_of

__all__ = ["grader_failure_note", "add_grader_note", "GRADER_FAILED"]

_PREFIX = "the grader failed on every row"
GRADER_FAILED = "grader_failed"          # the RunWarning code of the note


def grader_failure_note(rows) -> str | None:
    """One pass over ``rows`` (any iterable: a result on disk streams), stopping at the first ok row."""
    statuses: Counter = Counter()
    first = name = None
    for r in rows:
        status = r.get("judge_status") if isinstance(r, dict) else None
        if status is None:
            continue
        if status == "ok":
            return None
        statuses[str(status)] += 1
        if first is None and r.get("reason"):
            first = str(r.get("reason"))
        if name is None and r.get("judge_name"):
            name = r.get("judge_name")
    if not statuses:
        return None
    graded = sum(statuses.values())
    first, name = first or "no reason given", name or "the grader"
    detail = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    return (f"{_PREFIX} ({graded} of {graded} rows: {detail}; {name} first said: {first[:200]}); "
            "every reward is None and pass_at has nothing to count: fix the grader and grade again "
            "with data.grade(grader)")


def add_grader_note(warnings: list, rows) -> None:
    """Replace any earlier note of this kind in ``warnings`` with the current one (if any).

    An earlier note is known by its code; one read back from a saved run is a plain string (the
    file keeps only the text), known by its opening words."""
    warnings[:] = [w for w in warnings if not (code_of(w) == GRADER_FAILED or
                                               (code_of(w) is None and isinstance(w, str) and w.startswith(_PREFIX)))]
    note = grader_failure_note(rows)
    if note:
        warnings.append(RunWarning(note, GRADER_FAILED))
