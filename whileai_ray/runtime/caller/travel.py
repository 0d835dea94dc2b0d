"""Why a callable cannot travel to the actors that would run it, said in a few lines (no Ray here).

A callable that plays on Ray actors (``pools/sizing.py``: any callable on a cluster of several
nodes or through Ray Client, and on one node when ``advanced={"ray": {...}}`` asks for actors) is
pickled (cloudpickle) and sent to them. The most common agent people bring cannot be: a function
closing over an ``openai.OpenAI()`` client, which holds an ``RLock`` deep inside its HTTP client.
Pickle's own message says only ``cannot pickle '_thread.RLock' object`` (and Ray wraps it in a
38,000-character report), which does not tell the caller *which* of their objects holds it.

:func:`unpicklable_path` walks the object the way cloudpickle does (a function's closure cells,
the globals its code names and its defaults; an object's attributes; a partial's function and
arguments; container items) and descends, at each level, into the first child that does not
pickle on its own, until no child fails: that object is the culprit. The result reads
``agent (function agent) -> closure 'client' (OpenAI) -> ._client (SyncHttpxClientWrapper) -> ...
-> ._cookies_lock (RLock)``. :func:`travel_message` puts it in a message of under 15 lines with
the two fixes: build the client inside (the function or a lazily set global), or pass a class
(built once per rollout actor). ``caller/run.py`` raises it before the Driver starts, so nothing of the
budget is spent; on a one-node Ray such callables never travel (they play in the caller's own
pool, ``pools/caller_pool.py``) and nothing is refused.

``dumps`` is passed in (``ray.cloudpickle.dumps`` from ``caller/run.py``), so this module is tested
without Ray.
"""
from __future__ import annotations

import functools
import types
from typing import Any, Callable, Iterator

__all__ = ["unpicklable_path", "travel_message", "format_path", "code_names"]

MAX_DEPTH = 16
MAX_CHILDREN = 256     # a huge dict or list: look at its first items only
_FIX_CALL = {"agent": "__call__(self, message)", "grader": "__call__(self, row)",
             "execute": "__call__(self, tool, arguments)"}


def _type_name(obj: Any) -> str:
    if isinstance(obj, types.FunctionType):
        return f"function {obj.__qualname__}"
    if isinstance(obj, type):
        return f"class {obj.__qualname__}"
    return type(obj).__name__


def code_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from code_names(const)


def _function_children(fn: types.FunctionType) -> Iterator[tuple[str, Any]]:
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            yield f"closure '{name}'", cell.cell_contents
        except ValueError:   # an empty cell
            continue
    seen = set()
    for name in code_names(fn.__code__):
        if name in seen or name not in fn.__globals__:
            continue
        seen.add(name)
        value = fn.__globals__[name]
        if not isinstance(value, types.ModuleType):
            yield f"global '{name}'", value
    for i, value in enumerate(fn.__defaults__ or ()):
        yield f"default {i}", value
    for name, value in (fn.__kwdefaults__ or {}).items():
        yield f"default '{name}'", value


def _children(obj: Any) -> Iterator[tuple[str, Any]]:
    """(label, child) pairs of what pickling ``obj`` pickles along."""
    if isinstance(obj, types.FunctionType):
        yield from _function_children(obj)
    elif isinstance(obj, types.MethodType):
        yield "self", obj.__self__
        yield "function", obj.__func__
    elif isinstance(obj, functools.partial):
        yield "partial.func", obj.func
        for i, value in enumerate(obj.args):
            yield f"argument {i}", value
        for name, value in obj.keywords.items():
            yield f"keyword '{name}'", value
    elif isinstance(obj, dict):
        for i, (key, value) in enumerate(obj.items()):
            if i >= MAX_CHILDREN:
                break
            yield f"[{key!r}]", value
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for i, value in enumerate(obj):
            if i >= MAX_CHILDREN:
                break
            yield f"[{i}]", value
    elif isinstance(obj, types.ModuleType):
        return
    elif isinstance(obj, type):
        for name, value in list(vars(obj).items()):
            if not (name.startswith("__") and name.endswith("__")):
                yield f".{name}", value
    else:
        state = getattr(obj, "__dict__", None)
        if isinstance(state, dict):
            for i, (name, value) in enumerate(list(state.items())):
                if i >= MAX_CHILDREN:
                    break
                yield f".{name}", value
        for klass in type(obj).__mro__:
            slots = vars(klass).get("__slots__", ())
            for name in ([slots] if isinstance(slots, str) else slots):
                if name in ("__dict__", "__weakref__"):
                    continue
                try:
                    yield f".{name}", getattr(obj, name)
                except AttributeError:
                    continue


def _error(dumps: Callable[[Any], Any], obj: Any) -> BaseException | None:
    try:
        dumps(obj)
    except Exception as exc:   # whatever pickling raises is the answer
        return exc
    return None


def unpicklable_path(obj: Any, dumps: Callable[[Any], Any], name: str = "agent"
                     ) -> tuple[list[str], BaseException] | None:
    """None when ``dumps(obj)`` works; else (the path to the culprit, the error pickling it raised).

    Each step is ``"label (type)"``; the first names ``obj`` itself, the last the culprit."""
    error = _error(dumps, obj)
    if error is None:
        return None
    steps = [f"{name} ({_type_name(obj)})"]
    current, seen = obj, {id(obj)}
    for _ in range(MAX_DEPTH):
        found = None
        for label, child in _children(current):
            if id(child) in seen:
                continue
            child_error = _error(dumps, child)
            if child_error is not None:
                found = (label, child, child_error)
                break
        if found is None:
            break
        label, current, error = found
        seen.add(id(current))
        steps.append(f"{label} ({_type_name(current)})")
    return steps, error


def format_path(steps: list[str], width: int = 8) -> str:
    """``a -> b -> c``; a path longer than ``width`` keeps its first two and last five steps."""
    if len(steps) > width:
        steps = steps[:2] + [f"... {len(steps) - 7} more ..."] + steps[-5:]
    return " -> ".join(steps)


def travel_message(role: str, steps: list[str], error: BaseException, where: str) -> str:
    """The error a caller sees (under 15 lines): which object, why, and the two fixes.

    ``where`` says why it must travel (``"this Ray cluster has 3 nodes"``)."""
    actors = "judge actors" if role == "grader" else "rollout actors"
    reason = f"{type(error).__name__}: {error}"
    if len(reason) > 200:
        reason = reason[:197] + "..."
    return "\n".join([
        f"{role}= cannot be sent to the {actors} ({where}): it does not pickle.",
        f"  {format_path(steps)}",
        f"  {reason}",
        "Two fixes:",
        f"  1. build the client inside: create it in the {role} function itself, or lazily in a global set",
        "     on the first call (one per actor process), instead of closing over one made here;",
        f"  2. pass a class: {role}=MyClass is built once per {actors[:-1]}; open clients or load models in",
        f"     __init__, play in {_FIX_CALL.get(role, '__call__')}; constructor arguments go in",
        f"     advanced={{'{role}_args': (...), '{role}_kwargs': {{...}}}} or functools.partial(MyClass, ...).",
    ])
