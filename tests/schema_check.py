"""``schema_validator(schema)``: jsonschema's own validator for a tool's parameters (draft 7 when its
``$schema`` says so, else 2020-12), with format checks, date-time included (jsonschema's checker
needs an extra package for it; RFC 3339 = an ISO date, 'T', a time and an offset). The tests check
the world's arguments with it, independently of ``world/validation.py``. Imported as ``from
schema_check import schema_validator`` (pytest puts ``tests/`` on the path for its conftest)."""
import re
from datetime import datetime

import jsonschema


def format_checker() -> jsonschema.FormatChecker:
    fc = jsonschema.FormatChecker()

    @fc.checks("date-time", raises=ValueError)
    def _dt(value):
        if isinstance(value, str):
            if not re.fullmatch(r"\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)", value):
                raise ValueError("not RFC 3339")
            datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
        return True
    return fc


def schema_validator(schema: dict):
    cls = jsonschema.Draft7Validator if "draft-07" in str(schema.get("$schema", "")) else \
        jsonschema.Draft202012Validator
    return cls(schema, format_checker=format_checker())
