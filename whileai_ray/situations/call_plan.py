"""The call a situation asks for: which record it names and the arguments a good agent sends.

The template writer names an id the rollout's world holds (``world/entities.py``: same run
seed, same scenario id, so the world finds it), or, for an "entity missing" ask, one in the
same format that it does not hold. It draws the rest of the arguments from the tool's JSON
Schema (``world/schema_values.py``), filling every other record id from the world's pool, so
the call validates and its ids resolve. A situation that aims at bad arguments
(``tool_condition="invalid_arguments"``) breaks one schema rule on purpose
(``world/schema_breaks.py``) and carries the label.

What the writer keeps in ``Situation.extra``: ``{"call": {"tool", "key", "ref"}}``, whose
arguments ``world/planned_call.py`` draws where the call is played (the seeded agent), and, for a
bad-argument ask, the broken ``"arguments"`` in the call and ``"broken": {"keyword", "path"}``.
"""
from __future__ import annotations

from ..world.entities import POOL_SIZE, EntityBook
from ..world.schema_breaks import break_arguments
from ..world.planned_call import planned_arguments

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
        if missing:                  # the world state answers not_found: no look at the pool needed
            return self.book.invent(seed, sid, kind, 0, check=False)
        return self.book.pool_id(seed, sid, kind, int(w() * POOL_SIZE))

    def call(self, intent, ref) -> dict:
        """The situation's call as the writer keeps it: tool, key parameter, the id it names."""
        return {"tool": intent.name, "key": intent.key_param, "ref": ref}

    def arguments(self, call: dict, seed: int, sid: str, rnd=None) -> dict | None:
        """Valid arguments for ``call`` in the world of ``(seed, sid)`` (``world/planned_call.py``)."""
        params = self.params.get(call["tool"])
        if params is None:
            return None
        return planned_arguments(self.book, params, call, seed, sid, rnd)

    def broken(self, intent, args: dict, rnd) -> tuple[dict, dict] | None:
        """``args`` with one rule of the tool's schema broken, and the label; None if none can be."""
        params = self.params.get(intent.name)
        if params is None:
            return None
        return break_arguments(params, args, rnd, validator=lambda: self._validator(intent.name, params))

    def _validator(self, name: str, params: dict):
        if name not in self._validators:              # built the first time a break needs checking
            from ..world.validation import validator_for
            self._validators[name] = validator_for(params)
        return self._validators[name]


def say_value(value) -> str:
    """A broken value as a user would type it in the ask."""
    if isinstance(value, str):
        return f'"{value}"' if value else "nothing"
    if isinstance(value, list):
        return "none at all" if not value else ", ".join(map(str, value[:6]))
    return str(value)
