"""The call a situation asks for: which record it names and the arguments a good agent sends.

The template writer names an id the rollout's world holds (``world/entities.py``: same run
seed, same scenario id, so the world finds it), or, for an "entity missing" ask, one in the
same format that it does not hold. It draws the rest of the arguments from the tool's JSON
Schema (``world/schema_values.py``), filling every other record id from the world's pool, so
the call validates and its ids resolve. A situation that aims at bad arguments
(``tool_condition="invalid_arguments"``) breaks one schema rule on purpose
(``world/schema_breaks.py``) and carries the label.

What the writer keeps in ``Situation.extra``: ``{"call": {"tool", "arguments"}}`` and, for a
bad-argument ask, ``"broken": {"keyword", "path"}``. The seeded agent plays that call.
"""
from __future__ import annotations

from ..world.entities import EntityBook
from ..world.schema_breaks import break_arguments
from ..world.schema_values import draw_value

__all__ = ["CallPlanner", "BAD_ARGUMENTS"]

BAD_ARGUMENTS = "invalid_arguments"


class CallPlanner:
    """Per tool set, once: the entity book and each tool's parameters and key kind."""

    def __init__(self, tools, intents):
        self.book = EntityBook(tools)
        self.params: dict = {}
        for t in tools or ():
            fn = t.get("function", t) if isinstance(t, dict) else {}
            if isinstance(fn, dict) and isinstance(fn.get("parameters"), dict):
                self.params[str(fn.get("name"))] = fn["parameters"]
        self.key_kind = {i.name: self.book.kind_of(i.key_param) if i.key_param else None for i in intents}
        self._validators: dict = {}

    def ref_id(self, intent, seed: int, sid: str, w, missing: bool):
        """The id an ask names for ``intent`` (None when its key is not a record kind)."""
        kind = self.key_kind.get(intent.name)
        if kind is None:
            return None
        if missing:
            return self.book.invent(seed, sid, kind, 0)
        pool = self.book.pool(seed, sid, kind)
        return pool[int(w() * len(pool))]

    def arguments(self, intent, rnd, seed: int, sid: str, ref) -> dict | None:
        """Valid arguments for ``intent``'s tool, naming ``ref`` in its key parameter."""
        params = self.params.get(intent.name)
        if params is None:
            return None
        book, key = self.book, intent.key_param

        def pick_id(name, schema, path):
            if ref is not None and name == key and len(path) == 1 and not _is_array(schema):
                return ref
            kind = book.kind_of(name)
            if kind is None or _is_array(schema):
                return None
            pool = book.pool(seed, sid, kind)
            return pool[int(rnd.random() * len(pool))]
        return draw_value(params, rnd, params, "", pick_id, (), 0.5)

    def broken(self, intent, args: dict, rnd) -> tuple[dict, dict] | None:
        """``args`` with one rule of the tool's schema broken, and the label; None if none can be."""
        params = self.params.get(intent.name)
        if params is None:
            return None
        if intent.name not in self._validators:
            from ..world.validation import validator_for
            self._validators[intent.name] = validator_for(params)
        return break_arguments(params, args, rnd, validator=self._validators[intent.name])


def _is_array(schema) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "array"


def say_value(value) -> str:
    """A broken value as a user would type it in the ask."""
    if isinstance(value, str):
        return f'"{value}"' if value else "nothing"
    if isinstance(value, list):
        return "none at all" if not value else ", ".join(map(str, value[:6]))
    return str(value)
