"""The notes and the ``config`` block that travel with a ``PassAt``.

Notes are the text after ``k=`` in the printed line. Each one says why a number is missing
or should not be read as is, and what call changes it. The order is fixed: unanimous
scores, judge failures / nothing graded, k and group sizes, missing interval, partial
rewards, token-cap share, unanswered share. Wording follows reference section 5.1.
"""
from __future__ import annotations

from collections import Counter

__all__ = ["build_notes", "build_config", "percent"]


def percent(share: float) -> str:
    """A share as a whole percent that never rounds a non-zero share to 0 or a partial one to 100."""
    if 0 < share < 0.005:
        return "<1%"
    if 0.995 <= share < 1:
        return ">99%"
    return f"{round(100 * share)}%"


def _score_text(value) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _statuses(unjudged: Counter) -> str:
    items = sorted(unjudged.items(), key=lambda kv: (-kv[1], kv[0]))
    if len(items) == 1:
        return items[0][0]
    return ", ".join(f"{name} {count}" for name, count in items)


def _k_notes(k, k_given, min_k, multi_sizes, sizes, n_at_k, n_imputed=0) -> list[str]:
    uneven = bool(multi_sizes) and multi_sizes[0] != multi_sizes[-1]
    lo, hi = (multi_sizes[0], multi_sizes[-1]) if multi_sizes else (0, 0)
    spread = f"groups are uneven ({lo} to {hi} repeats)"
    if k < min_k:
        if uneven and not k_given:
            reached = sum(1 for s in sizes if s >= hi)
            return [f"{spread}; k defaults to the smallest, so pass k={hi} to score the "
                    f"{reached} group(s) that reached it, or finish the cut groups"]
        return [f"set repeats>={min_k} for pass^k and pass@k"]
    notes = []
    if uneven:
        if k == lo:
            notes.append(f"{spread}; k is the smallest")
        elif k > lo:
            used = f"{spread}; pass^k and pass@k use the {n_at_k} group(s) with at least {k}"
            if n_imputed:
                used += (f" and {n_imputed} unanimous group(s) cut short, counted as all-pass or "
                         f"all-fail")
            notes.append(used)
        else:
            notes.append(spread)
    if n_at_k + n_imputed == 0:
        largest = max(sizes) if sizes else 0
        notes.append(f"no group has k={k} graded rows (largest has {largest}); "
                     f"pass a smaller k or run more repeats")
    return notes


def build_notes(tally, *, n_groups, k, k_given, min_k, multi_sizes, sizes, n_at_k, has_interval,
                min_tasks, n_imputed=0) -> list[str]:
    """The notes of a ``PassAt`` from its tally (``pass_at_tally.PassTally``)."""
    notes: list[str] = []
    n_rows, unjudged = tally.n_rows, tally.unjudged
    if tally.n_graded >= 2 and tally.graded_all_equal:
        notes.append(f"every row scored {_score_text(tally.graded_first)} "
                     f"({tally.n_graded} of {n_rows}); check the judge before reading this number")
    n_failed = sum(unjudged.values())
    all_failed = n_failed and n_failed == n_rows
    if all_failed:
        notes.append(f"the judge failed on all {n_rows} rows ({_statuses(unjudged)}); re-run the judge")
    elif n_failed:
        notes.append(f"the judge failed on {n_failed} of {n_rows} rows ({_statuses(unjudged)}); "
                     f"they are not in this number; re-run the judge on them")
    if n_groups == 0:
        if not all_failed:
            notes.append("no binary rewards; grade first")
    else:
        notes.extend(_k_notes(k, k_given, min_k, multi_sizes, sizes, n_at_k, n_imputed))
        if not has_interval:
            word = "task" if n_groups == 1 else "tasks"
            notes.append(f"no interval on pass@1: {n_groups} {word}, and a bootstrap needs {min_tasks}; "
                         f"it resamples tasks, so run more tasks, or give each row its own task_id "
                         f"when the rows are separate items")
        if tally.n_partial:
            notes.append(f"{tally.n_partial} row(s) carried a reward that is not 0 or 1 and are not in this "
                         f"number; give each Criterion kind='hard' for a 0/1 verdict")
    if n_rows:
        cut = tally.n_cut / n_rows
        if cut > 0:
            notes.append(f"{percent(cut)} of rows cut by the token cap")
        silent = tally.n_silent / n_rows
        if silent > 0:
            notes.append(f"{percent(silent)} of rows have no spoken reply")
    return notes


def build_config(tally, *, n_tasks: int, k: int) -> dict:
    """What the number was measured under; a key with several values is None and listed in ``mixed``."""
    config: dict = {"n_tasks": n_tasks, "k": k}
    mixed = []
    for name, seen in tally.config_seen.items():
        config[name] = seen[0] if len(seen) == 1 else None
        if len(seen) > 1:
            mixed.append(name)
    config["mixed"] = mixed
    n = tally.n_rows
    config["truncated_share"] = (tally.n_cut / n) if n else None
    config["answered_share"] = ((n - tally.n_silent) / n) if n else None
    config["unclosed_think_share"] = (tally.n_think / n) if n else None
    config["graded_share"] = (tally.n_graded / n) if n else None
    return config
