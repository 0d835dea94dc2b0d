"""A row's ``usage``: what the agent's model reported it spent, in the names the docs use.

Users pass their SDK's usage straight through (``{"final_text": ..., "usage": r.usage}``): an
openai ``CompletionUsage`` (``prompt_tokens``/``completion_tokens``/``total_tokens``), a
Responses API ``ResponseUsage`` (``input_tokens``/``output_tokens``/``total_tokens``), a dict
from a proxy whose ``cost`` is the text ``"0.002"``. ``normal_usage`` turns each into the row's
documented form, a dict with the numbers ``input_tokens``, ``output_tokens``, ``total_tokens``
and ``cost`` (the ones a run's metrics add up) beside whatever else it held (details, model
names: kept as data). A usage it cannot read that way (a string, a list, a ``cost`` of
``"cheap"``) is kept as it came (in its JSON form), never raises, and ``usage_problem`` says
why in a sentence: the run warns once and its metrics ignore the value.

``usage_number`` is how the metrics read one of those numbers: a finite number >= 0 or None,
whatever the value (defence in depth for rows that were not built here, such as an old file's).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .row_values import json_default, json_value

__all__ = ["normal_usage", "usage_problem", "usage_warning", "usage_number", "USAGE_NUMBERS"]

USAGE_NUMBERS = ("input_tokens", "output_tokens", "total_tokens", "cost")
# the OpenAI Chat Completions names -> the documented ones
_RENAMES = {"prompt_tokens": "input_tokens", "completion_tokens": "output_tokens"}


def _number(value: Any) -> int | float | None:
    """A number (int, float, numeric string) as an int or float, finite and >= 0; else None."""
    if isinstance(value, bool) or value is None:
        return None
    number: int | float
    if isinstance(value, str):
        text = value.strip().replace("_", "")
        try:
            number = int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                return None
    elif isinstance(value, int):
        number = int(value)
    else:
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            return None
    if isinstance(number, float) and not math.isfinite(number):
        return None
    return number if number >= 0 else None


def usage_number(value: object) -> int | float | None:
    """``value`` as a count or cost the metrics can add (a finite number >= 0), else None."""
    try:
        return _number(value)
    except Exception:           # whatever __float__ of a stranger does: not a number
        return None


def _as_mapping(usage: object) -> dict[Any, Any] | None:
    """``usage`` as a dict when it is one, a mapping or an object that dumps to one; else None."""
    if isinstance(usage, dict):
        return usage
    if isinstance(usage, Mapping):
        try:
            return dict(usage)
        except Exception:
            return None
    if isinstance(usage, (str, bytes, list, tuple, set, frozenset, int, float)) or usage is None:
        return None
    try:
        dump = getattr(usage, "model_dump", None)
        if callable(dump) and not isinstance(usage, type):
            dumped = dump(exclude_none=True)     # an SDK's usage object: its unset details left out
        else:
            dumped = json_default(usage)         # a dataclass's fields, pydantic 1's dict()
    except Exception:
        return None
    return dumped if isinstance(dumped, dict) else None


def normal_usage(usage: object) -> Any:
    """The row's ``usage`` for what an agent returned (see the module docstring): a dict in the
    documented names when it reads as one, else the value as data (its JSON form)."""
    mapping = _as_mapping(usage)
    if mapping is None:
        return json_value(usage)[0]
    mapping = json_value(mapping)[0]      # numpy counts, Decimal costs, int keys: JSON data first
    out: dict[str, Any] = {}
    for name, value in mapping.items():
        if value is None:
            continue                      # model_dump() of an SDK object: unset details
        target = _RENAMES.get(name)
        if target is not None and target not in mapping:
            name = target
        if name in USAGE_NUMBERS:
            number = usage_number(value)
            out[name] = number if number is not None else value
        else:
            out[name] = value
    first = {name: out.pop(name) for name in USAGE_NUMBERS if name in out}   # the documented order
    return {**first, **out}


def usage_problem(usage: object) -> str | None:
    """Why the metrics cannot read ``usage`` (a row's, after ``normal_usage``), or None when they
    can (or there is none). Never raises, whatever the value."""
    try:
        return _problem(usage)
    except Exception:
        return "usage could not be read; it is kept on the row as data and the run's metrics ignore it"


def usage_warning(rows: int, total: int, first: str) -> str:
    """The run's one warning about the usage its metrics could not read (``first``: one row's reason)."""
    return (f"{rows} of {total} row(s) carry a usage the token and cost metrics cannot read; the first: "
            f"{first}. Return usage as {{'input_tokens': int, 'output_tokens': int, 'cost': float}} (or the "
            "SDK's usage object, read as that)")


def _problem(usage: object) -> str | None:
    if usage is None:
        return None
    if not isinstance(usage, dict):
        return (f"usage was a {type(usage).__name__}, not a dict of token counts; it is kept on the "
                "row as data and the run's token and cost metrics ignore it")
    for name in USAGE_NUMBERS:
        if name in usage and usage_number(usage[name]) is None:
            return (f"usage['{name}'] was {str(usage[name])[:40]!r}, not a number >= 0; it is kept on "
                    "the row as data and the run's token and cost metrics ignore it")
    return None
