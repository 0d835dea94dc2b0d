"""The one normal form of a value a row holds: exactly what its JSON line reads back as.

Agents return what their libraries hand them: ``datetime``, numpy scalars and arrays,
``bytes``, ``set``, tuples, ``NaN``, dicts keyed by ints, pydantic models, replies cut in the
middle of an emoji (a lone surrogate). A row that kept them would differ from the same row read
back from the checkpoint (which holds their JSON form), so a fresh result and its resume would
disagree, and code that expects text (the HTML report, Parquet) would fail on one and not the
other. ``json_value`` turns a value into plain JSON data once, where the row is built
(``agents/row_builder.py``); ``strict_json.dumps`` uses the same conversions, so encoding a
normal row and decoding it again gives an equal row (``json.loads(dumps(v)) == v``).

The conversions (a value that already is plain JSON data comes back as the same object):

* ``str`` subclasses -> ``str``; a lone surrogate -> U+FFFD (repaired);
* ``int``/``float`` subclasses (numpy, ``IntEnum``) -> ``int``/``float``; ``NaN``/``Infinity``
  -> ``None`` (repaired); ``Decimal`` -> ``int`` or ``float``;
* ``tuple`` -> ``list``; ``set``/``frozenset`` -> a sorted list; numpy arrays -> lists;
* dict keys -> ``str`` as the JSON encoder writes them (``1`` -> ``"1"``, ``True`` -> ``"true"``,
  ``None`` -> ``"null"``), any other key -> the text of its normal form;
* ``datetime``/``date``/``time`` -> ISO 8601 text; ``timedelta`` -> seconds;
* ``bytes`` -> its UTF-8 text (bytes that are not UTF-8: ``\\x..`` escapes, repaired);
* ``Enum`` -> its value; pydantic models -> ``model_dump()``; dataclasses -> their fields;
* anything else -> ``str(value)`` (what the checkpoint always wrote for it).

"Repaired" values are listed in ``repairs`` (``{dotted path: what}``), which the row keeps as
``json_repairs`` so a reader sees that a value was changed and why. A circular value raises
``ValueError("Circular reference detected")`` and a value nested past Python's recursion limit
raises ``RecursionError``, as the JSON encoder does (the rollout is then lost as unserializable).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import math
from decimal import Decimal
from enum import Enum
from typing import Any, Iterable

__all__ = ["json_value", "json_default", "json_key", "clean_str"]

_NONE = type(None)


def clean_str(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (valid UTF-8 afterwards); two code
    points that form a surrogate pair become the character they encode."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _lone(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def _where(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _float(value: float, path: str, repairs: dict[str, str]) -> float | None:
    if math.isfinite(value):
        return value
    repairs[path or "."] = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    return None


def json_key(key: Any) -> str:
    """A dict key as the JSON encoder writes it (str kept, ``1`` -> ``"1"``, ``1.5`` -> ``"1.5"``,
    ``True`` -> ``"true"``, ``None`` -> ``"null"``); any other key: the text of its normal form."""
    kind = type(key)
    if kind is str:
        text: str = key
        return text
    if key is True or key is False:
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, str):
        return str.__str__(key)
    if isinstance(key, int) and not isinstance(key, Enum):
        return int.__repr__(key)
    if isinstance(key, float):
        value = float(key)
        return float.__repr__(value) if math.isfinite(value) else \
            ("NaN" if value != value else "Infinity" if value > 0 else "-Infinity")
    value = json_value(key)[0]
    return value if isinstance(value, str) else _compact(value)


def _compact(value: Any) -> str:
    import json
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _sorted(items: list[Any]) -> list[Any]:
    try:
        return sorted(items)
    except TypeError:           # mixed kinds: order by their JSON text, still the same every run
        return sorted(items, key=_compact)


def json_default(value: Any) -> Any:
    """One step of ``json_value`` for a value that is no JSON type (the JSON encoder's ``default``)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, (set, frozenset)):
        return _sorted([json_value(v)[0] for v in value])
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        if value.is_finite() and value == value.to_integral_value():
            return int(value)
        return float(value)
    kind = type(value)
    if kind.__module__ == "numpy" and hasattr(value, "tolist"):
        return value.tolist()                  # a numpy scalar or array: Python numbers, lists
    if not isinstance(value, type):
        dump = getattr(value, "model_dump", None)
        try:
            if callable(dump):                 # pydantic 2 (openai's usage objects, ...)
                return dump()
            if dataclasses.is_dataclass(value):
                return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            if hasattr(value, "__fields__") and callable(getattr(value, "dict", None)):
                return value.dict()            # pydantic 1
        except Exception:                      # a model that cannot dump itself: its text
            pass
    return str(value)


def json_value(value: Any) -> tuple[Any, dict[str, str]]:
    """``(normal form, repairs)`` of ``value`` (see the module docstring); ``value`` itself when
    it already is plain JSON data with nothing to repair."""
    try:
        if _plain(value):
            return value, {}
    except RecursionError:      # circular or very deep: the full walk says which
        pass
    repairs: dict[str, str] = {}
    return _norm(value, "", repairs, set()), repairs


def _text_ok(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _plain(value: Any) -> bool:
    """Is ``value`` plain JSON data already (exact JSON types, str keys, finite floats, no lone
    surrogate)? A scan without copies or paths: the common case costs little (a row is checked
    on every rollout)."""
    kind = type(value)
    if kind is dict:
        for k in value:
            if type(k) is not str or not (k.isascii() or _text_ok(k)):
                return False
        return _plain_items(value.values())
    if kind is list:
        return _plain_items(value)
    if kind is str:
        return _text_ok(value)
    if kind is float:
        finite: bool = value - value == 0.0
        return finite
    return kind is int or kind is bool or value is None


def _plain_items(values: Iterable[Any]) -> bool:
    """``_plain`` over a container's values, the scalar cases inline (one call a container)."""
    for v in values:
        t = type(v)
        if t is str:
            if not (v.isascii() or _text_ok(v)):
                return False
        elif t is int or t is bool or v is None:
            continue
        elif t is float:
            if v - v != 0.0:
                return False
        elif not _plain(v):
            return False
    return True


def _norm(value: Any, path: str, repairs: dict[str, str], seen: set[int]) -> Any:
    kind = type(value)
    if kind is str:
        if _lone(value):
            repairs[path or "."] = "lone surrogate"
            return clean_str(value)
        return value
    if kind is int or kind is bool or kind is _NONE:
        return value
    if kind is float:
        return _float(value, path, repairs)
    if kind is dict:
        return _norm_dict(value, path, repairs, seen)
    if kind is list:
        return _norm_list(value, path, repairs, seen, False)
    if kind is tuple:
        return _norm_list(value, path, repairs, seen, True)
    if isinstance(value, str):
        return _norm(str.__str__(value), path, repairs, seen)
    if isinstance(value, int) and not isinstance(value, Enum):
        return int(value)
    if isinstance(value, float) and not isinstance(value, Enum):
        return _float(float(value), path, repairs)
    if isinstance(value, dict):
        return _norm_dict(dict(value), path, repairs, seen)
    if isinstance(value, (list, tuple)):
        return _norm_list(value, path, repairs, seen, True)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return _norm(raw.decode("utf-8"), path, repairs, seen)
        except UnicodeDecodeError:
            repairs[path or "."] = "bytes not UTF-8"
            return raw.decode("utf-8", "backslashreplace")
    mark = id(value)
    if mark in seen:
        raise ValueError("Circular reference detected")
    seen.add(mark)
    try:
        return _norm(json_default(value), path, repairs, seen)
    finally:
        seen.discard(mark)


def _norm_dict(value: dict[Any, Any], path: str, repairs: dict[str, str], seen: set[int]) -> dict[Any, Any]:
    mark = id(value)
    if mark in seen:
        raise ValueError("Circular reference detected")
    seen.add(mark)
    out: dict[Any, Any] | None = None
    for i, (k, v) in enumerate(value.items()):
        key = k if type(k) is str else json_key(k)
        if _lone(key):
            repairs[_where(path, clean_str(key))] = "lone surrogate in key"
            key = clean_str(key)
        new = _norm(v, _where(path, key), repairs, seen)
        if out is None and (new is not v or key is not k):
            out = dict(list(value.items())[:i]) if i else {}
        if out is not None:
            out[key] = new
    seen.discard(mark)
    return value if out is None else out


def _norm_list(value: list[Any] | tuple[Any, ...], path: str, repairs: dict[str, str], seen: set[int],
               copy: bool) -> list[Any] | tuple[Any, ...]:
    mark = id(value)
    if mark in seen:
        raise ValueError("Circular reference detected")
    seen.add(mark)
    out = list(value) if copy else None
    for i, v in enumerate(value):
        new = _norm(v, _where(path, i), repairs, seen)
        if new is not v:
            if out is None:
                out = list(value)
            out[i] = new
    seen.discard(mark)
    return value if out is None else out
