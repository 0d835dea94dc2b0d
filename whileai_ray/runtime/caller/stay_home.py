"""Which of the caller's callables must stay in the caller's process (on a one-node Ray).

A callable sent to a rollout or judge actor is a pickled *copy*. For a plain function whose
closure and globals hold only code and constants, the copy is the same thing, and an actor adds
what the caller's process cannot: a crash in the agent (``os._exit``, a segfault in native code)
kills the actor, not the caller, and the run goes on (``driver/chunk_retry.py``). For anything else the
copy is not the same thing:

* it does not pickle at all (a closure over ``openai.OpenAI()``, a lock, a socket);
* it holds the caller's data: an object with attributes (a class instance, a bound method), or a
  function whose own closure cells, referenced globals or defaults hold something other than code
  and constants (a list it appends to, a dict it caches in, a client, a notebook global). In an
  actor, its writes would land on the copy and silently vanish from the caller.

Objects of whileai_ray's own classes (``wai.seeded_agent(...)``, ``wai.world(...)``) are copies
by design: keyed and deterministic, they hold nothing of the caller's, so they travel.

:func:`why_home` names the first reason, or None when the callable may travel. ``pool_sizing``
keeps a role's pool in the caller's process when its callable must stay home and the Ray has one
node (on a cluster every callable travels; one that does not pickle is refused before the run,
in a few lines naming the object that holds it: ``caller/travel.py``).
Only the callable's *own* references are looked at, not those of the functions it calls: a
module-level agent that calls a stateful helper travels (the helper's state is copied along).

No Ray here: ``dumps`` is passed in (``ray.cloudpickle.dumps`` from ``caller/run.py``).
"""
from __future__ import annotations

import functools
import inspect
import types
from typing import Any, Callable

from .travel import code_names

__all__ = ["why_home", "ROLES"]

ROLES = ("agent", "execute", "grader")
_CONSTANTS = (type(None), bool, int, float, complex, str, bytes, range, type(Ellipsis))
_CODE = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
         types.WrapperDescriptorType, type, staticmethod, classmethod, property, functools.partial)


def _ours(value: Any) -> bool:
    return (getattr(type(value), "__module__", "") or "").startswith("whileai_ray.")


def _is_data(value: Any) -> bool:
    """Whether ``value`` is data a copy would detach from the caller (not code, not a constant)."""
    if isinstance(value, _CONSTANTS) or isinstance(value, _CODE) or _ours(value):
        return False
    if isinstance(value, (tuple, frozenset)):
        return any(_is_data(v) for v in value)
    return True


def _function_data(fn: types.FunctionType) -> str | None:
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:              # an empty cell
            continue
        if _is_data(value):
            return f"it closes over {name!r} ({type(value).__name__})"
    for name in dict.fromkeys(code_names(fn.__code__)):
        if name in fn.__globals__ and _is_data(fn.__globals__[name]):
            return f"it uses the global {name!r} ({type(fn.__globals__[name]).__name__})"
    for value in (*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()):
        if _is_data(value):
            return f"a default argument holds a {type(value).__name__}"
    return None


def _holds_data(obj: Any) -> str | None:
    if isinstance(obj, functools.partial):
        for value in (*obj.args, *obj.keywords.values()):
            if _is_data(value):
                return f"its partial arguments hold a {type(value).__name__}"
        return _holds_data(obj.func)
    if inspect.isclass(obj) or isinstance(obj, (types.BuiltinFunctionType, types.ModuleType)) or _ours(obj):
        return None                     # a class is built where it runs (once per actor)
    if isinstance(obj, types.FunctionType):
        return _function_data(obj)
    if isinstance(obj, types.MethodType):
        return f"it is a method of a {type(obj.__self__).__name__} object"
    return f"it is a {type(obj).__name__} object with state of its own"


def why_home(obj: Any, dumps: Callable[[Any], Any]) -> str | None:
    """Why ``obj`` must stay in the caller's process, or None when a pickled copy is the same thing."""
    if obj is None or isinstance(obj, str):
        return None
    try:
        dumps(obj)
    except Exception as exc:            # whatever pickling raises is the answer
        return f"it does not pickle ({type(exc).__name__}: {str(exc)[:120]})"
    return _holds_data(obj)
