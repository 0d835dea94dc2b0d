"""Value rules for simulate() arguments: counts, shares, choices, patience, seeds, tasks.

Each helper takes the raw value a caller passed and the label to name it by (``"budget="``,
``"advanced['probe']"``), and returns the normalized value or raises with a message that names
the argument and says what to pass instead. The exception types follow the reference product:
a bad *value* is a ``ValueError``, a thing of the wrong *kind* where a callable or a schema is
expected is a ``TypeError``.
"""
from __future__ import annotations

import math
import os
from numbers import Integral, Real
from typing import Any

__all__ = [
    "MODE_PRESETS", "REPEAT_POLICIES", "UNTIL_CHOICES", "STRATEGIES", "PATIENCE_LEVELS",
    "as_count", "as_int", "as_number", "as_share", "choice", "as_patience", "as_logprobs",
    "as_text_list", "as_path", "as_text", "check_tasks", "check_traces", "is_number",
]

# mode -> (phrasings n, repeats k, repeat_policy, unique_situations); reference section 2.5.
MODE_PRESETS: dict[str, tuple[int, int, str, bool]] = {
    "explore": (1, 1, "none", True),
    "sft": (3, 4, "adaptive", False),
    "rl": (1, 8, "successive", False),
    "adaptive": (3, 3, "adaptive", False),
}
REPEAT_POLICIES = ("none", "adaptive", "successive", "fixed", "unique")
UNTIL_CHOICES = ("compute", "saturation", "first", "budget_only")
STRATEGIES = ("auto", "broad", "trace", "targeted")
# walk-away odds at the second question and at each later one (seed doc: patience).
PATIENCE_LEVELS: dict[str, tuple[float, float]] = {
    "normal": (0.35, 0.60), "short": (0.60, 0.90), "endless": (0.0, 0.0),
}


def is_number(value: Any) -> bool:
    """A real number that is not a bool (True is not a count or a share here)."""
    return isinstance(value, Real) and not isinstance(value, bool)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def as_count(value: Any, label: str, what: str, *, floor: int | None = None,
             fix: str = "") -> int:
    """An int count. Ints, floats (truncated, as int() does) and digit strings pass.

    ``what`` completes "<label> is <what>, an int". Values below ``floor`` are clamped up to it
    (the reference clamps repeats/situations/concurrency to 1 rather than failing). ``fix``
    is appended to the error message.
    """
    number = _to_int(value, truncate=True)
    if number is None:
        tail = f"; {fix}" if fix else ""
        raise ValueError(f"{label} is {what}, an int; got {_show(value)}{tail}")
    if floor is not None and number < floor:
        return floor
    return number


def as_int(value: Any, label: str, what: str) -> int:
    """A whole number; a float must be integral (seed=1.5 is refused, not truncated)."""
    number = _to_int(value, truncate=False)
    if number is None:
        raise ValueError(f"{label} is {what}, an int; got {_show(value)}")
    return number


def _to_int(value: Any, *, truncate: bool) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        as_float = float(value)
        if not math.isfinite(as_float) or (not truncate and not as_float.is_integer()):
            return None
        return int(as_float)
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("+-").isdigit():
            return int(text)
    return None


def as_number(value: Any, label: str, what: str, *, low: float | None = None,
              high: float | None = None) -> float:
    """A finite float within ``[low, high]`` (either bound optional)."""
    if not is_number(value) or not math.isfinite(float(value)):
        raise ValueError(f"{label} is {what}; got {_show(value)}")
    number = float(value)
    if low is not None and number < low:
        raise ValueError(f"{label} is {what}; {number:g} is below its floor {low:g}")
    if high is not None and number > high:
        raise ValueError(f"{label} is {what}; {number:g} is above its ceiling {high:g}")
    return number


def as_share(value: Any, label: str) -> float:
    """A share in [0, 1]: a fraction of rows, never a count."""
    if not is_number(value) or not math.isfinite(float(value)):
        raise ValueError(f"{label} is a fraction between 0 and 1, e.g. 0.4; got {_show(value)}")
    number = float(value)
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{label} got {number:g}, outside 0..1; it is a share, not a count "
                         f"(pass e.g. 0.4 for 40%)")
    return number


def choice(value: Any, label: str, options: tuple[str, ...]) -> str:
    """One of ``options``, case-insensitive; the lower-case form is returned."""
    if isinstance(value, str) and value.strip().lower() in options:
        return value.strip().lower()
    listed = ", ".join(options[:-1]) + f", or {options[-1]}"
    raise ValueError(f"{label} must be {listed}; got {_show(value)}")


def as_patience(value: Any) -> dict:
    """None / a level name / {"second": p, "later": q} -> {"level", "second", "later"}."""
    if value is None:
        value = "normal"
    if isinstance(value, str) and value.strip().lower() in PATIENCE_LEVELS:
        level = value.strip().lower()
        second, later = PATIENCE_LEVELS[level]
        return {"level": level, "second": second, "later": later}
    if isinstance(value, dict) and set(value) == {"second", "later"}:
        odds = {}
        for key in ("second", "later"):
            odd = value[key]
            if not is_number(odd) or not 0.0 <= float(odd) <= 1.0:
                raise ValueError(f"patience['{key}'] is a walk-away chance between 0 and 1; "
                                 f"got {_show(odd)}")
            odds[key] = float(odd)
        return {"level": "custom", **odds}
    raise ValueError(f"patience={_show(value)} is not a level; pass 'short', 'normal' or "
                     f"'endless', or {{'second': p, 'later': q}} with walk-away chances in [0, 1]")


def as_logprobs(value: Any) -> bool | str | None:
    if value is None or value is True or value is False:
        return value
    if value == "tokens":
        return "tokens"
    raise ValueError(f"logprobs= must be False, True, or 'tokens'; got {_show(value)}")


def as_text_list(value: Any, label: str, what: str) -> list[str]:
    """A list of non-empty strings (a bare string is refused: wrap it in a list)."""
    if value is None:
        return []
    if isinstance(value, str):
        raise ValueError(f"{label} is a list of {what}; wrap one in a list: "
                         f"{label}[{_show(value)}]")
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{label} is a list of {what}; got {type(value).__name__}")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"{label} item {index} is {_show(item)}; each one is a non-empty "
                             f"string ({what})")
    return list(value)


def as_path(value: Any, label: str, what: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, (str, os.PathLike)):
        text = os.fspath(value)
        if isinstance(text, str) and text:
            return text
    raise TypeError(f"{label} is {what}, a file path (str); got {_show(value)}")


def as_text(value: Any, label: str, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{label} is {what}, a str; got {type(value).__name__}")


def _row_prompts(rows: Any) -> int:
    """How many rows carry a non-empty prompt (dict key or attribute)."""
    count = 0
    for row in rows:
        prompt = row.get("prompt") if isinstance(row, dict) else getattr(row, "prompt", None)
        if isinstance(prompt, str) and prompt.strip():
            count += 1
    return count


def check_tasks(tasks: Any) -> None:
    """tasks= is a SimulationData, its rows, or a JSONL path; it must name at least one prompt."""
    if tasks is None:
        return
    if isinstance(tasks, (str, os.PathLike)):
        if not os.path.exists(os.fspath(tasks)):
            raise ValueError(f"tasks={_show(tasks)} names no file; pass an existing JSONL path, "
                             f"a SimulationData, or its rows()")
        return
    rows = tasks.rows() if callable(getattr(tasks, "rows", None)) else tasks
    if isinstance(rows, dict) or not isinstance(rows, (list, tuple)):
        raise TypeError(f"tasks= takes a SimulationData, a list of rows, or a JSONL path; "
                        f"got {type(tasks).__name__}")
    if _row_prompts(rows) == 0:
        raise ValueError("tasks= has no rows with a prompt; pass a previous run (its "
                         "SimulationData, rows() or JSONL path) whose rows carry 'prompt'")


def check_traces(traces: Any) -> None:
    """traces= is rows, a SimulationData, or a JSONL path of production traces."""
    if traces is None or isinstance(traces, (str, os.PathLike)):
        return
    rows = traces.rows() if callable(getattr(traces, "rows", None)) else traces
    if isinstance(rows, dict) or not isinstance(rows, (list, tuple)):
        raise TypeError(f"traces= takes rows (a list of dicts), a SimulationData, or a JSONL "
                        f"path; got {type(traces).__name__}")
    if not rows:
        raise ValueError("traces= is empty; pass the rows or JSONL path of production traces, "
                         "or leave traces= unset for a cold start")
