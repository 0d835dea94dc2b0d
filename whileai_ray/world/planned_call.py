"""The arguments of the call a situation asks for, drawn where they are used.

The template writer decides a situation's call: the tool, its key parameter and the id it names
(``situations/call_plan.py``), ``Situation.extra["call"] = {"tool", "key", "ref"}``. The rest
of the arguments is a pure function of that call, the run seed and the scenario id, so it is
drawn here, by whoever plays the call (the seeded agent), not in every ``write()``: the writer
stays as fast as it was, and every wording and rollout of a situation sends the same call. A
bad-argument ask carries its (broken) ``"arguments"`` itself: its words name the broken value.

Every other record id comes from the ids the rollout's world holds (``entities.py``), so the
call's ids resolve; the values validate against the tool's schema (``schema_values.py``).
"""
from __future__ import annotations

from .entities import POOL_SIZE
from .schema_values import LazyRandom, draw_value

__all__ = ["planned_arguments"]

_PLAIN = frozenset(("type", "properties", "required", "description"))


def planned_arguments(book, params: dict, call: dict, seed, scenario_id, rnd=None) -> dict:
    """Valid arguments for ``call`` (``{"tool", "key", "ref"}``) in the world of ``(seed, scenario_id)``
    (``rnd``: the caller's own keyed generator, else one keyed by the call)."""
    key, ref = call.get("key"), call.get("ref")
    props = params.get("properties")
    if ref is not None and isinstance(props, dict) and list(props) == [key] and set(params) <= _PLAIN \
            and set(props[key]) <= {"type", "description"} and props[key].get("type", "string") == "string":
        return {key: ref}                # the one-parameter tool: nothing to draw
    rnd = rnd if rnd is not None else LazyRandom(seed or 0, "call", scenario_id, call.get("tool"))

    def pick_id(name, schema, path):
        array = schema.get("type") == "array"
        if ref is not None and name == key and len(path) == 1 and not array:
            return ref
        kind = book.kind_of(name)
        if kind is None or array:
            return None
        return book.pool_id(seed or 0, scenario_id, kind, int(rnd.random() * POOL_SIZE))
    return draw_value(params, rnd, params, "", pick_id, (), 0.5)
