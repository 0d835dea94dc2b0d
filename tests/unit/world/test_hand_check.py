"""The world's hand check of a tool's arguments (``world/hand_check.py``) never lets
through what jsonschema refuses.

The hand check answers "valid" only when sure and leaves every doubt to jsonschema (whose
errors are the refusal), so a wrong answer could only ever be a call let through that the tool's
schema breaks: a wrong pass rate. It now reads the rules real tools put beside a property's type
(a pattern, an enum of strings, lengths, bounds, arrays of such items with item counts: most of
the retail and airline tool sets); here it meets, for every tool of the three tool sets in
``tests/data`` and for schemas made to sit on each rule's edge, the arguments the world's own
value drawer makes and thousands of broken ones, and every call it passes must be one jsonschema
passes too.
"""
import copy
import json
import random
from pathlib import Path

import pytest

from whileai_ray.world.schema_breaks import _apply, breaks_of
from whileai_ray.world.schema_values import draw_value
from whileai_ray.world.hand_check import flat_ok as _flat_ok, flat_rules as _flat
from whileai_ray.world.validation import ToolValidator, _jsonschema_validator

DATA = Path(__file__).resolve().parents[2] / "data"
TOOL_SETS = {name: json.loads((DATA / f"tools_{name}.json").read_text()) for name in ("retail", "airline", "support")}

EDGES = [
    {"type": "object", "properties": {
        "code": {"type": "string", "pattern": r"^#W\d{7}$"},
        "cabin": {"type": "string", "enum": ["economy", "business", "Economy"]},
        "note": {"type": "string", "minLength": 2, "maxLength": 5},
        "n": {"type": "integer", "minimum": 1, "maximum": 9},
        "x": {"type": "number", "minimum": -1.5, "maximum": 2.5},
        "ids": {"type": "array", "items": {"type": "string", "pattern": "^[0-9]{3}$"},
                "minItems": 1, "maxItems": 3, "uniqueItems": True},
        "any": {"type": "array"},
        "flag": {"type": "boolean"}},
     "required": ["code", "n"], "additionalProperties": False},
    {"type": "object", "properties": {"s": {"type": "string", "pattern": "a|b"}, "k": {"type": "integer", "maximum": 0}},
     "additionalProperties": True},
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
     "properties": {"v": {"type": "number", "minimum": 0}, "t": {"type": "string", "enum": ["1", "2"]}},
     "required": ["v"]},
]

ODD = [None, True, False, 0, 1, -1, 1.0, 1.5, float("inf"), "", "a", "#W1234567", "#W123456", "economy", "ECONOMY",
       "Economy", "123", "12a", ["123", "123"], ["456", "123", "456"], "ab", "abcdef", "x" * 300, [], ["123"], ["123", "456", "789", "012"], ["12"], [1],
       [None], {}, {"a": 1}, 10, 9, 0.0, -1.5, 2.5, 2.6, -2, 10 ** 20, "\u00e9\u00e9"]


def _odd(rnd):
    return copy.deepcopy(rnd.choice(ODD))     # (a list of ODD put in arguments may be changed there)


def _schemas():
    out = []
    for name, tools in TOOL_SETS.items():
        out += [(f"{name}:{t['function']['name']}", t["function"]["parameters"]) for t in tools]
    out += [(f"edge{i}", s) for i, s in enumerate(EDGES)]
    return out


def _arguments(params, rnd, flat, single=False):
    """Drawn arguments (the world's own drawer), then broken: a value swapped for an odd one, a
    property dropped, one added, list items changed. ``single``: from drawn arguments the hand
    check passes, each property given each odd value alone (so each rule meets each one)."""
    base = draw_value(params, rnd, params)
    for _ in range(50 if single else 0):
        if _flat_ok(flat, base):
            break
        base = draw_value(params, rnd, params)
    yield base
    if not isinstance(base, dict):
        return
    keys = list((params.get("properties") or {}).keys())
    if single:                                   # each property given each odd value, alone
        for key in keys:
            for value in ODD:
                yield {**base, key: copy.deepcopy(value)}
        for _keyword, path, new in breaks_of(params, base, params):     # and each break the world makes
            if path:
                yield _apply(copy.deepcopy(base), path, new)
    for _ in range(40):
        args = json.loads(json.dumps(base))
        for _ in range(rnd.randint(1, 3)):
            move = rnd.random()
            key = rnd.choice(keys) if keys else "k"
            if move < 0.6:
                args[key] = _odd(rnd)
            elif move < 0.75:
                args.pop(key, None)
            elif move < 0.85:
                args["unexpected_" + str(rnd.randint(0, 3))] = _odd(rnd)
            elif isinstance(args.get(key), list) and args[key]:
                args[key][rnd.randrange(len(args[key]))] = _odd(rnd)
            else:
                args[key] = [_odd(rnd) for _ in range(rnd.randint(0, 4))]
        yield args


@pytest.mark.parametrize("name,params", _schemas(), ids=[n for n, _ in _schemas()])
def test_what_the_hand_check_passes_jsonschema_passes(name, params):
    flat = _flat(params)
    full = _jsonschema_validator(params)
    if flat is None or full is None:
        return                                   # jsonschema alone decides: nothing to compare
    rnd = random.Random(name)
    passed = 0
    for i in range(25):
        for args in _arguments(params, rnd, flat, single=i < 3):
            if _flat_ok(flat, args):
                passed += 1
                assert not list(full.iter_errors(args)), (name, args)
    assert passed, name                          # the drawn arguments of a flat schema pass by hand


def test_most_tools_of_real_tool_sets_are_checked_by_hand_and_refusals_are_jsonschemas():
    flat = {name: sum(_flat(t["function"]["parameters"]) is not None for t in tools)
            for name, tools in TOOL_SETS.items()}
    assert flat["retail"] >= 8 and flat["airline"] >= 4, flat      # (3 and 1 with plain types only)
    v = ToolValidator(EDGES[0])
    bad = {"code": "#W12", "n": 0, "cabin": "first", "ids": ["1234"], "flag": 1}
    assert sorted(e.validator for e in v.errors(bad, 64)) == ["enum", "minimum", "pattern", "pattern", "type"]
    assert v.errors({"code": "#W1234567", "n": 3, "ids": ["123"], "any": [1, "x"]}, 64) == []
