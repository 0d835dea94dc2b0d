"""The world refuses what a real API refuses: arguments checked against the tool's JSON Schema.

A real endpoint answers a call whose arguments break its schema with a 400, not with the
record; the mock world does the same, so an agent that sends ``"quantity": "two"`` or a cabin
class outside the enum is not scored as if it had done the job. The answer is structured::

    {"status": "invalid_arguments", "errors": [{"path": "items/0/quantity", "message": "..."}]}

Validation is ``jsonschema``'s: ``Draft7Validator`` when the schema's ``$schema`` names draft 7
(or 6/4), ``Draft202012Validator`` otherwise (what OpenAI's tools are written in), with the
``format`` keyword checked (``date``, ``date-time``, ``email``, ``uuid``...). A schema jsonschema
itself calls broken is not used to refuse calls (the caller's tool still plays).
"""
from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache
from typing import Any

from .hand_check import flat_ok, flat_rules

__all__ = ["argument_errors", "validator_for", "refusal", "ToolValidator", "INVALID"]

INVALID = "invalid_arguments"
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)")
_MAX_ERRORS = 8


def _checker():
    import jsonschema
    fc = jsonschema.FormatChecker()
    if "date-time" not in fc.checkers:      # needs rfc3339-validator; RFC 3339 itself is short enough

        @fc.checks("date-time", raises=ValueError)
        def _date_time(value) -> bool:
            if not isinstance(value, str):
                return True
            if not _RFC3339.fullmatch(value):
                raise ValueError("a date-time is YYYY-MM-DDTHH:MM:SS with an offset (Z or +HH:MM)")
            datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
            return True
    return fc


@lru_cache(maxsize=1)
def _format_checker():
    return _checker()


class ToolValidator:
    """One tool's check. A flat schema (typed properties, required, maybe closed, each property's
    rules among those real tools write: ``hand_check.py``) is checked by hand, in a microsecond
    (jsonschema: 10-18 us a call on the retail tools); anything else, and every call the hand
    check doubts, goes to jsonschema, built on first need (its errors are the answer)."""
    __slots__ = ("parameters", "flat", "_full")
    _full: Any          # jsonschema's validator (an untyped package) once built; False: none can be; None: not yet

    def __init__(self, parameters: dict):
        self.parameters = parameters
        self.flat = flat_rules(parameters)
        self._full = None

    def __getstate__(self):          # picklable: jsonschema's validator is rebuilt where it is needed
        return self.parameters

    def __setstate__(self, parameters):
        self.parameters, self.flat, self._full = parameters, flat_rules(parameters), None

    def full(self):
        if self._full is None:
            self._full = _jsonschema_validator(self.parameters) or False
        return self._full or None

    def is_valid(self, arguments) -> bool:
        return not self.errors(arguments, 1)

    def errors(self, arguments, limit: int) -> list:
        """jsonschema's errors (at most ``limit``); a schema it cannot follow (a ``$ref`` to
        nothing) refuses nothing, from then on."""
        if self.flat is not None and flat_ok(self.flat, arguments):
            return []
        full = self.full()
        out: list = []
        if full is None:
            return out
        try:
            for err in full.iter_errors(arguments):
                out.append(err)
                if len(out) >= limit:
                    break
        except Exception:  # noqa: BLE001 - jsonschema's referencing errors: the schema, not the call
            self._full = False
            return []
        return out


def validator_for(parameters):
    """The tool's :class:`ToolValidator` (None when there is no schema to check against)."""
    if not isinstance(parameters, dict) or not parameters:
        return None
    return ToolValidator(parameters)


def _jsonschema_validator(parameters):
    """jsonschema's validator for ``parameters`` (None for a schema jsonschema calls broken, or one
    that points outside itself: a ``$ref`` to a URL is never fetched, the world makes no request)."""
    if _remote_ref(parameters):
        return None
    import jsonschema
    dialect = str(parameters.get("$schema") or "")
    cls = jsonschema.Draft202012Validator
    for tag, name in (("draft-07", "Draft7Validator"), ("draft-06", "Draft6Validator"),
                      ("draft-04", "Draft4Validator")):
        if tag in dialect:
            cls = getattr(jsonschema, name)
    try:
        cls.check_schema(parameters)
    except jsonschema.exceptions.SchemaError:
        return None
    return cls(parameters, format_checker=_format_checker())


def refusal(tool: str, errors: list[dict]) -> dict:
    """The world's answer to a call that breaks the schema; ``fields``: the top-level parameters
    involved (a missing required one by name), so an agent can say what it needs."""
    fields = []
    for e in errors:
        name = e["path"].split("/", 1)[0] if e["path"] else e.get("field", "")
        if name and name not in fields:
            fields.append(name)
    return {"status": INVALID, "tool": tool, "fields": fields, "errors": errors}


def _path(error) -> str:
    return "/".join(str(p) for p in error.absolute_path)


def _remote_ref(node, depth: int = 0) -> bool:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            return True
        return depth < 32 and any(_remote_ref(v, depth + 1) for v in node.values())
    if isinstance(node, list):
        return depth < 32 and any(_remote_ref(v, depth + 1) for v in node)
    return False


def argument_errors(validator, arguments) -> list[dict]:
    """``[{"path", "message", "keyword"}]`` for every way ``arguments`` break the schema; [] when valid."""
    if validator is None:
        return []
    out = []
    for err in sorted(validator.errors(arguments, 64), key=lambda e: (list(map(str, e.absolute_path)), e.validator)):
        item = {"path": _path(err), "message": err.message[:300], "keyword": str(err.validator)}
        if err.validator == "required" and not err.absolute_path:
            missing = [r for r in err.validator_value if isinstance(err.instance, dict) and r not in err.instance]
            if missing:
                item["field"] = missing[0]
        out.append(item)
        if len(out) >= _MAX_ERRORS:
            break
    return out
