"""Strict JSON for every file the project writes: what jq, DuckDB, polars and serde read.

Python's ``json`` writes ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON) and escapes a lone
surrogate (``"\\ud800"``, which strict parsers refuse: it is no Unicode character). Agents and
graders produce both: a reward of ``float("nan")``, a reply cut in the middle of an emoji.

``dumps(obj)`` is the one encoder: ASCII JSON, compact. The fast path is the C encoder with
``allow_nan=False``; only when it refuses a number, or its output holds a surrogate escape that
is not half of a pair, is the value repaired: NaN and the infinities become ``null``, a lone
surrogate becomes U+FFFD, and a top-level dict gains ``"json_repairs": {path: what}`` (``path``
dotted, e.g. ``"steps.0.result.x"``) so a reader sees that a value was changed and why.
"""
from __future__ import annotations

import json
import math
import re

__all__ = ["dumps", "repaired", "clean_str", "REPAIRS_KEY"]

REPAIRS_KEY = "json_repairs"
_FAST = json.JSONEncoder(separators=(",", ":"), default=str, allow_nan=False).encode
# a high surrogate escape not followed by a low one, or a low one not preceded by a high one
_LONE = re.compile(r"\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f][0-9a-f]{2})|(?<!\\ud[89ab][0-9a-f]{2})\\ud[c-f][0-9a-f]{2}")


def clean_str(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (valid UTF-8 afterwards); two code
    points that form a surrogate pair become the character they encode."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _has_lone(text: str) -> bool:
    try:
        text.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def _fix(value, path: str, repairs: dict):
    kind = type(value)
    if kind is float:
        if math.isfinite(value):
            return value
        repairs[path or "."] = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
        return None
    if kind is str:
        if _has_lone(value):
            repairs[path or "."] = "lone surrogate"
            return clean_str(value)
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = k if isinstance(k, str) else str(k)
            if _has_lone(key):
                repairs[f"{path}.{key}" if path else key] = "lone surrogate in key"
                key = clean_str(key)
            out[key] = _fix(v, f"{path}.{key}" if path else key, repairs)
        return out
    if isinstance(value, (list, tuple)):
        return [_fix(v, f"{path}.{i}" if path else str(i), repairs) for i, v in enumerate(value)]
    if isinstance(value, float):                 # a float subclass (numpy.float64)
        return _fix(float(value), path, repairs)
    return value


def repaired(obj):
    """``(copy, repairs)``: ``obj`` with NaN/Infinity as None and lone surrogates as U+FFFD."""
    repairs: dict = {}
    return _fix(obj, "", repairs), repairs


def dumps(obj, indent: int | None = None) -> str:
    """ASCII JSON that strict parsers accept (see the module docstring); compact unless
    ``indent`` is given."""
    encode = _FAST if indent is None else json.JSONEncoder(indent=indent, default=str, allow_nan=False).encode
    try:
        text = encode(obj)
    except ValueError as exc:
        if "Circular reference" in str(exc):
            raise
        text = None
    if text is not None and ("\\ud" not in text or not _LONE.search(text)):
        return text
    fixed, repairs = repaired(obj)
    if repairs and isinstance(fixed, dict):
        fixed[REPAIRS_KEY] = {**(fixed.get(REPAIRS_KEY) or {}), **repairs} \
            if isinstance(fixed.get(REPAIRS_KEY), dict) else repairs
    return encode(fixed)
