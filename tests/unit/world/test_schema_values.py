"""Arguments drawn from a tool's JSON Schema validate; ids take their description's format;
broken arguments are broken (issue 29, items 1-2). Checked with jsonschema itself."""
import json
import re
from pathlib import Path

import pytest

from whileai_ray.core.rng import unit_rng
from whileai_ray.world.entities import EntityBook, entity_kind
from whileai_ray.world.schema_breaks import break_arguments
from whileai_ray.world.schema_values import draw_value

from schema_check import schema_validator

DATA = Path(__file__).resolve().parents[2] / "data"
CORPUS = [t for name in ("retail", "airline", "support")
          for t in json.loads((DATA / f"tools_{name}.json").read_text())]


def _draws(schema, n=200, salt="t"):
    return [draw_value(schema, unit_rng(0, salt, i), schema) for i in range(n)]


def test_the_corpus_is_30_tools_in_three_domains_using_every_keyword():
    assert len(CORPUS) >= 30 and len({t["function"]["name"] for t in CORPUS}) >= 30
    text = json.dumps(CORPUS)
    for keyword in ('"enum"', '"minimum"', '"exclusiveMinimum"', '"maxLength"', '"pattern"', '"format": "date"',
                    '"format": "date-time"', '"format": "email"', '"format": "uuid"', '"minItems"', '"anyOf"',
                    '"oneOf"', '"const"', '"$ref"', '"$defs"', '"definitions"', '"additionalProperties": false',
                    '"type": ["string", "null"]'):
        assert keyword in text, keyword
    for t in CORPUS:
        schema_validator(t["function"]["parameters"]).check_schema(t["function"]["parameters"])


@pytest.mark.parametrize("tool", CORPUS, ids=lambda t: t["function"]["name"])
def test_every_draw_for_every_corpus_tool_validates(tool):
    params = tool["function"]["parameters"]
    v = schema_validator(params)
    for value in _draws(params, 150):
        assert not list(v.iter_errors(value)), (value, [e.message for e in v.iter_errors(value)])


KEYWORDS = {
    "enum": {"type": "string", "enum": ["economy", "business"]},
    "bounds": {"type": "integer", "minimum": 3, "maximum": 5},
    "exclusive": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "multiple": {"type": "integer", "minimum": 1, "maximum": 500, "multipleOf": 50},
    "length": {"type": "string", "minLength": 12, "maxLength": 14},
    "pattern": {"type": "string", "pattern": r"^[A-Z]{3}-\d{4}$"},
    "date": {"type": "string", "format": "date"},
    "date-time": {"type": "string", "format": "date-time"},
    "email": {"type": "string", "format": "email"},
    "uuid": {"type": "string", "format": "uuid"},
    "array of objects": {"type": "array", "minItems": 2, "maxItems": 3, "items": {
        "type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
        "required": ["sku", "qty"], "additionalProperties": False}},
    "const": {"const": "gift_card"},
    "type list": {"type": ["integer", "null"], "minimum": 7, "maximum": 7},
    "ref": {"$defs": {"d": {"type": "string", "format": "date"}}, "type": "object",
            "properties": {"when": {"$ref": "#/$defs/d"}}, "required": ["when"]},
}


@pytest.mark.parametrize("name", list(KEYWORDS))
def test_each_keyword_is_respected(name):
    schema = KEYWORDS[name]
    v = schema_validator(schema)
    values = _draws(schema, 100, name)
    assert all(v.is_valid(x) for x in values), [x for x in values if not v.is_valid(x)][:3]
    if name == "enum":
        assert set(values) == {"economy", "business"}
    if name == "array of objects":
        assert {len(x) for x in values} == {2, 3}


def test_required_always_optional_sometimes_and_no_undeclared_fields():
    schema = {"type": "object", "additionalProperties": False, "required": ["a"],
              "properties": {"a": {"type": "string"}, "b": {"type": "integer"},
                             "c": {"type": "object", "properties": {"d": {"type": "boolean"}}, "required": ["d"]}}}
    values = _draws(schema, 200)
    assert all("a" in x and set(x) <= {"a", "b", "c"} for x in values)
    assert 40 < sum("b" in x for x in values) < 160
    assert all(isinstance(x["c"]["d"], bool) for x in values if "c" in x)


def test_one_of_and_any_of_pick_every_branch():
    schema = {"oneOf": [{"type": "object", "properties": {"k": {"const": "x"}}, "required": ["k"],
                         "additionalProperties": False},
                        {"type": "object", "properties": {"k": {"const": "y"}, "n": {"type": "integer"}},
                         "required": ["k", "n"], "additionalProperties": False}]}
    values = _draws(schema, 60)
    assert {x["k"] for x in values} == {"x", "y"} and all(schema_validator(schema).is_valid(x) for x in values)
    any_of = {"anyOf": [{"type": "integer", "minimum": 10}, {"type": "string", "format": "email"}]}
    values = _draws(any_of, 60)
    assert {type(x) for x in values} == {int, str} and all(schema_validator(any_of).is_valid(x) for x in values)


def test_draws_are_keyed_not_global():
    schema = CORPUS[8]["function"]["parameters"]
    assert _draws(schema, 20) == _draws(schema, 20)
    assert _draws(schema, 20) != _draws(schema, 20, salt="other")


def test_entity_kinds_come_from_parameter_names():
    assert entity_kind("order_id") == "order" and entity_kind("item_ids") == "item"
    assert entity_kind("paymentMethodId") == "payment_method" and entity_kind("flight_number") == "flight"
    assert entity_kind("new_item_ids") == "item" and entity_kind("reason") is None
    assert entity_kind("phone_number") is None and entity_kind("zip") is None


def test_a_description_example_is_the_ids_format_not_its_value():
    tools = [{"type": "function", "function": {"name": "get_order", "parameters": {"type": "object", "properties": {
        "order_id": {"type": "string", "description": "The order id, such as '#W0000000'."},
        "reservation_id": {"type": "string", "description": "e.g. 8JX2WO"},
        "ticket_id": {"type": "string", "pattern": r"^TCK-\d{5}$", "description": "e.g. T-1"},
        "customer_id": {"type": "integer", "minimum": 1000, "maximum": 1999}}}}}]
    book = EntityBook(tools)
    orders = book.pool(3, "sc-1", "order")
    assert len(set(orders)) == len(orders) >= 5 and "#W0000000" not in orders
    assert all(re.fullmatch(r"#W\d{7}", o) for o in orders)
    assert all(re.fullmatch(r"[A-Z0-9]{6}", r) for r in book.pool(3, "sc-1", "reservation"))
    assert all(re.fullmatch(r"TCK-\d{5}", t) for t in book.pool(3, "sc-1", "ticket"))     # the pattern wins
    assert all(isinstance(c, int) and 1000 <= c <= 1999 for c in book.pool(3, "sc-1", "customer"))
    assert book.pool(3, "sc-1", "order") == orders and book.pool(3, "sc-2", "order") != orders
    missing = book.invent(3, "sc-1", "order", 0)
    assert re.fullmatch(r"#W\d{7}", missing) and missing not in orders


@pytest.mark.parametrize("tool", CORPUS, ids=lambda t: t["function"]["name"])
def test_broken_arguments_are_invalid_and_labelled(tool):
    params = tool["function"]["parameters"]
    v = schema_validator(params)
    keywords = set()
    for i in range(40):
        rnd = unit_rng(1, "break", i)
        good = draw_value(params, rnd, params)
        got = break_arguments(params, good, rnd)
        if not params.get("properties"):
            continue
        bad, label = got
        assert not v.is_valid(bad) and v.is_valid(good)
        assert set(label) == {"keyword", "path"} and label["path"]
        keywords.add(label["keyword"])
    assert not params.get("properties") or len(keywords) >= 2
