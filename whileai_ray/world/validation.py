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

__all__ = ["argument_errors", "validator_for", "refusal", "INVALID"]

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


def validator_for(parameters):
    """A jsonschema validator for a tool's ``parameters`` (None when there is no usable schema)."""
    if not isinstance(parameters, dict) or not parameters:
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


def argument_errors(validator, arguments) -> list[dict]:
    """``[{"path", "message", "keyword"}]`` for every way ``arguments`` break the schema; [] when valid."""
    if validator is None:
        return []
    out = []
    for err in sorted(validator.iter_errors(arguments), key=lambda e: (list(map(str, e.absolute_path)), e.validator)):
        item = {"path": _path(err), "message": err.message[:300], "keyword": str(err.validator)}
        if err.validator == "required" and not err.absolute_path:
            missing = [r for r in err.validator_value if isinstance(err.instance, dict) and r not in err.instance]
            if missing:
                item["field"] = missing[0]
        out.append(item)
        if len(out) >= _MAX_ERRORS:
            break
    return out
