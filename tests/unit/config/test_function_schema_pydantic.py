"""function_schema (tools=[a_plain_function]) writes the types as OpenAI's own helper does
(issue 29, item 5): for 12 signatures, strict=True equals ``openai.pydantic_function_tool(Model)``'s
parameters exactly, where Model is the pydantic model with the same fields; the default form is
the same schema without name-derived titles and with only the parameters lacking a default
required (what the function accepts)."""
from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal, Optional

import jsonschema
import openai
import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from whileai_ray.config.tools import function_schema, normalize_tools


class Address(BaseModel):
    street: str
    city: str
    zip: Optional[str] = None


class Passenger(BaseModel):
    name: str
    age: int = Field(ge=0)
    seat: Literal["window", "aisle", "middle"] | None = None


class Prefs(TypedDict):
    newsletter: bool
    language: str


class Cabin(str, Enum):
    economy = "economy"
    business = "business"


# ---- the functions a user hands to tools= --------------------------------------------------
def lookup(order_id: str, note: Optional[str] = None): ...
def page(limit: int | None, cursor: str | None = None): ...
def set_priority(ticket_id: str, level: Literal["low", "medium", "high"] = "medium"): ...
def restock(item_ids: list[int], quantities: list[float] | None = None): ...
def ship(order_id: str, address: Address): ...
def add_passengers(reservation_id: str, passengers: list[Passenger]): ...
def search(query: str, limit: int = 10, exact: bool = False, min_price: float = 0.0): ...
def update_profile(user_id: str, prefs: Prefs): ...
def refund(order_id: str, amount: Annotated[float, Field(gt=0, description="In dollars")]): ...
def upgrade(reservation_id: str, cabin: Cabin, stock: dict[str, int] | None = None): ...
def bump(counts: tuple[int, ...], tags: set[str] = set()): ...


def book(flight: str, seats: int = 1):
    """Book seats on a flight.

    Args:
        flight: The flight number, e.g. HAT001.
        seats (int): How many seats,
            at most 9.
    """


class Models:
    """The pydantic model of each signature, as a user of openai.pydantic_function_tool writes it."""
    class lookup(BaseModel):
        order_id: str
        note: Optional[str] = None

    class page(BaseModel):
        limit: int | None
        cursor: str | None = None

    class set_priority(BaseModel):
        ticket_id: str
        level: Literal["low", "medium", "high"] = "medium"

    class restock(BaseModel):
        item_ids: list[int]
        quantities: list[float] | None = None

    class ship(BaseModel):
        order_id: str
        address: Address

    class add_passengers(BaseModel):
        reservation_id: str
        passengers: list[Passenger]

    class search(BaseModel):
        query: str
        limit: int = 10
        exact: bool = False
        min_price: float = 0.0

    class update_profile(BaseModel):
        user_id: str
        prefs: Prefs

    class refund(BaseModel):
        order_id: str
        amount: Annotated[float, Field(gt=0, description="In dollars")]

    class upgrade(BaseModel):
        reservation_id: str
        cabin: Cabin
        stock: dict[str, int] | None = None

    class bump(BaseModel):
        counts: tuple[int, ...]
        tags: set[str] = set()

    class book(BaseModel):
        flight: str = Field(description="The flight number, e.g. HAT001.")
        seats: int = Field(1, description="How many seats, at most 9.")


FUNCTIONS = [lookup, page, set_priority, restock, ship, add_passengers, search, update_profile, refund, upgrade,
             bump, book]


def _untitled(schema):
    if isinstance(schema, dict):
        return {k: _untitled(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_untitled(v) for v in schema]
    return schema


@pytest.mark.parametrize("fn", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_strict_equals_openai_pydantic_function_tool(fn):
    model = getattr(Models, fn.__name__)
    ours = function_schema(fn, strict=True)["function"]
    theirs = openai.pydantic_function_tool(model)["function"]
    assert ours["parameters"] == theirs["parameters"]
    assert ours["name"] == fn.__name__ and ours["strict"] is True


@pytest.mark.parametrize("fn", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_the_default_form_is_the_same_schema_with_optional_defaults(fn):
    model = getattr(Models, fn.__name__)
    params = function_schema(fn)["function"]["parameters"]
    assert params == _untitled(model.model_json_schema())
    assert "title" not in params and all("title" not in p for p in params["properties"].values())
    jsonschema.Draft202012Validator.check_schema(params)


def test_the_types_the_old_map_lost():
    props = function_schema(page)["function"]["parameters"]["properties"]
    assert props["limit"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}          # not "string"
    assert function_schema(lookup)["function"]["parameters"]["properties"]["note"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    level = function_schema(set_priority)["function"]["parameters"]["properties"]["level"]
    assert level["enum"] == ["low", "medium", "high"] and level["default"] == "medium"
    assert function_schema(restock)["function"]["parameters"]["properties"]["item_ids"] == {
        "type": "array", "items": {"type": "integer"}}
    ship_params = function_schema(ship)["function"]["parameters"]
    assert ship_params["properties"]["address"] == {"$ref": "#/$defs/Address"}
    assert ship_params["$defs"]["Address"]["required"] == ["street", "city"]
    book_fn = function_schema(book)["function"]
    assert book_fn["description"] == "Book seats on a flight."
    assert book_fn["parameters"]["properties"]["seats"] == {"type": "integer", "default": 1,
                                                             "description": "How many seats, at most 9."}
    assert book_fn["parameters"]["required"] == ["flight"]


def test_a_valid_call_validates_and_a_bad_one_does_not():
    params = function_schema(add_passengers)["function"]["parameters"]
    good = {"reservation_id": "R1", "passengers": [{"name": "Ada", "age": 36, "seat": "aisle"}]}
    jsonschema.validate(good, params)
    for bad in ({"reservation_id": "R1", "passengers": "Ada"},
                {"reservation_id": "R1", "passengers": [{"name": "Ada", "age": 36, "seat": "roof"}]},
                {"reservation_id": "R1", "passengers": [{"name": "Ada", "age": -1}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, params)


def test_names_pydantic_reserves_and_untyped_parameters_keep_their_names():
    def odd(json: str, model_id: int, _private: bool = False, limit=10, *args, **kwargs):
        """Odd names."""

    params = function_schema(odd)["function"]["parameters"]
    assert list(params["properties"]) == ["json", "model_id", "_private", "limit"]
    assert params["required"] == ["json", "model_id"]
    assert params["properties"]["limit"] == {"type": "integer", "default": 10}
    schemas, functions = normalize_tools([odd])
    assert schemas[0]["function"]["name"] == "odd" and functions == {"odd": odd}


def test_numpy_and_sphinx_parameter_sections_describe_parameters():
    def cancel(order_id: str, reason: str = "other"):
        """Cancel an order.

        Parameters
        ----------
        order_id : str
            The order to cancel,
            as shown on the receipt.
        reason : str, optional
            Why.

        Returns
        -------
        dict
        """

    def refund(order_id: str, amount: float):
        """Refund an order.

        :param order_id: The order.
        :param float amount: How much.
        :returns: the refund record
        """

    props = function_schema(cancel)["function"]["parameters"]["properties"]
    assert props["order_id"]["description"] == "The order to cancel, as shown on the receipt."
    assert props["reason"] == {"type": "string", "default": "other", "description": "Why."}
    props = function_schema(refund)["function"]["parameters"]["properties"]
    assert props["order_id"]["description"] == "The order." and props["amount"]["description"] == "How much."
    assert function_schema(refund)["function"]["description"] == "Refund an order."
