"""The three forms a caller's callable takes, and how a rollout actor turns each into something to call.

``agent=``, ``grader=`` and ``execute=`` each accept:

* a **function** (or any callable object): called as is, once per rollout (per row for a grader,
  per tool call for ``execute=``);
* an **async function** (``async def``, or an object whose ``__call__`` is ``async def``): awaited
  on the rollout actor's own event loop, so one client (``openai.AsyncOpenAI``) serves every
  rollout of the actor and thousands can be in flight;
* a **class** (Ray Data's callable-class convention): built once per actor,
  ``MyAgent(*args, **kwargs)``, then its ``__call__`` runs per rollout. This is where a model is
  loaded or a client is opened: in ``__init__``, once, on the machine that uses it. Constructor
  arguments come from ``advanced={"agent_args": (...), "agent_kwargs": {...}}`` (``grader_args``,
  ``execute_args`` ... likewise) or from ``functools.partial(MyAgent, ...)``.

Everything here is plain Python (no Ray): config checks a class form before any budget is spent
(:func:`check_class_form`), the caller binds the constructor arguments (:func:`bind_class_form`),
and the actor builds the instance (:func:`build_role`) and asks whether to await it
(:func:`is_async_callable`).
"""
from __future__ import annotations

import functools
import inspect
import traceback
from typing import Any

__all__ = ["ROLE_NAMES", "RoleBuildError", "callable_class", "is_class_form", "is_async_callable",
           "check_class_form", "check_role_forms", "bind_class_form", "bound_role", "build_role", "form_name"]

ROLE_NAMES = ("agent", "grader", "execute")


class RoleBuildError(RuntimeError):
    """A class given as ``agent=``/``grader=``/``execute=`` raised in its ``__init__`` on an actor."""


def callable_class(obj: Any) -> type | None:
    """The class when ``obj`` is a class or a ``functools.partial`` of one, else None."""
    while isinstance(obj, functools.partial):
        obj = obj.func
    return obj if inspect.isclass(obj) else None


def is_class_form(obj: Any) -> bool:
    return callable_class(obj) is not None


def _defines_call(cls: type) -> bool:
    return any("__call__" in vars(k) for k in cls.__mro__ if k is not object)


def form_name(obj: Any) -> str:
    """How messages name the callable: ``MyAgent``, ``agent_fn``, ``partial(MyAgent)``."""
    if isinstance(obj, functools.partial):
        return f"partial({form_name(obj.func)})"
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return name if isinstance(name, str) else type(obj).__name__


def is_async_callable(obj: Any) -> bool:
    """Whether calling ``obj`` (or an instance of a class form) gives a coroutine to await."""
    while isinstance(obj, functools.partial):
        obj = obj.func
    if inspect.isclass(obj):
        call = next((vars(k)["__call__"] for k in obj.__mro__ if "__call__" in vars(k)), None)
        return call is not None and inspect.iscoroutinefunction(call)
    if inspect.iscoroutinefunction(obj):
        return True
    call = getattr(type(obj), "__call__", None)
    return call is not None and not inspect.isfunction(obj) and inspect.iscoroutinefunction(call)


def check_class_form(obj: Any, role: str, args: tuple = (), kwargs: dict | None = None,
                     args_label: str | None = None) -> None:
    """Raise (TypeError, naming the fix) when a class form cannot be built with these arguments.

    Checked in the caller, before any budget is spent: the class defines ``__call__`` and its
    constructor accepts ``args``/``kwargs`` (``inspect.signature(...).bind``)."""
    cls = callable_class(obj)
    if cls is None:
        return
    label = args_label or f"advanced['{role}_args'] / advanced['{role}_kwargs']"
    if not _defines_call(cls):
        raise TypeError(f"{role}={cls.__name__} is a class without __call__: a class given as {role}= is "
                        f"built once per rollout actor and its instances are called per "
                        f"{'row' if role == 'grader' else 'rollout'}; define __call__(self, "
                        f"{'row' if role == 'grader' else 'tool, arguments' if role == 'execute' else 'message'})")
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):    # a builtin or C class: nothing to check here
        return
    try:
        signature.bind(*args, **(kwargs or {}))
    except TypeError as exc:
        raise TypeError(f"{role}={form_name(obj)} cannot be built with {label} "
                        f"(args={tuple(args)!r}, kwargs={dict(kwargs or {})!r}): {exc}. Its constructor is "
                        f"{cls.__name__}{signature}; pass what it needs in advanced={{'{role}_args': (...), "
                        f"'{role}_kwargs': {{...}}}} or as functools.partial({cls.__name__}, ...)") from None


def check_role_forms(roles: dict, arguments: dict[str, tuple[tuple, dict]]) -> None:
    """Config's check of ``{"agent": ..., "grader": ..., "execute": ...}`` (None: not the caller's
    callable) against ``arguments``: role -> (``advanced['<role>_args']``, ``['<role>_kwargs']``)
    (``Knobs.role_arguments()``), before any budget is spent:
    a class form can be built with them (it has ``__call__``, the arguments bind); arguments for a
    role that is not a class are a mistake worth naming; ``execute=`` is not async."""
    if roles.get("execute") is not None and is_async_callable(roles["execute"]):
        raise TypeError("execute= is async; the world answers a tool call synchronously, from inside the "
                        "agent's call (current_rollout.call / wai.world), so pass a plain function or a class "
                        "with a plain __call__(self, tool, arguments); an async agent can await its own tools")
    for role in ROLE_NAMES:
        args_key, kwargs_key = f"{role}_args", f"{role}_kwargs"
        args, kwargs = arguments.get(role, ((), {}))
        value = roles.get(role)
        if not is_class_form(value):
            if args or kwargs:
                given = args_key if args else kwargs_key
                what = "not set" if value is None else f"{form_name(value)}, not a class"
                raise ValueError(f"advanced['{given}'] holds constructor arguments for a class given as "
                                 f"{role}= (built once per rollout actor); {role}= is {what}. Pass the class "
                                 f"({role}=MyClass) or drop advanced['{given}']")
            continue
        check_class_form(value, role, args, kwargs,
                         args_label=f"advanced['{args_key}'] and advanced['{kwargs_key}']")


def bind_class_form(obj: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
    """A class form with its constructor arguments folded in (a partial), or ``obj`` unchanged."""
    if not is_class_form(obj) or (not args and not kwargs):
        return obj
    return functools.partial(obj, *args, **(kwargs or {}))


def bound_role(obj: Any, arguments: tuple[tuple, dict]) -> Any:
    """``obj`` with its role's ``(advanced['<role>_args'], ['<role>_kwargs'])`` folded in when it is
    a class form (what travels to an actor, or to the caller's pool, and is built there)."""
    args, kwargs = arguments
    return bind_class_form(obj, args, kwargs)


def build_role(obj: Any, role: str) -> Any:
    """What an actor calls: ``obj`` itself, or, for a class form, the instance built now.

    A constructor that raises becomes a :class:`RoleBuildError` naming the class, the error and
    the line of the caller's code it came from."""
    if obj is None or not is_class_form(obj):
        return obj
    try:
        instance = obj()
    except Exception as exc:   # the caller's __init__: say which class and where, without Ray's wrapping
        where = ""
        frames = traceback.extract_tb(exc.__traceback__)
        if frames:
            last = frames[-1]
            where = f" (at {last.filename}:{last.lineno}, in {last.name})"
        raise RoleBuildError(f"{role}={form_name(obj)}: building it on a rollout actor raised "
                             f"{type(exc).__name__}: {exc}{where}. A class given as {role}= is built "
                             f"once per actor; its constructor arguments come from advanced="
                             f"{{'{role}_args': ..., '{role}_kwargs': ...}} or functools.partial") from None
    if not callable(instance):
        raise RoleBuildError(f"{role}={form_name(obj)} built an instance that is not callable; define __call__")
    return instance
