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
    graded = [r for r in rows if isinstance(r, dict) and r.get("judge_status") is not None]
    if not graded or any(r.get("judge_status") == "ok" for r in graded):
        return None
    statuses = Counter(str(r.get("judge_status")) for r in graded)
    first = next((str(r.get("reason")) for r in graded if r.get("reason")), "no reason given")
    name = next((r.get("judge_name") for r in graded if r.get("judge_name")), "the grader")
    detail = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    return (f"{_PREFIX} ({len(graded)} of {len(graded)} rows: {detail}; {name} first said: {first[:200]}); "
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
