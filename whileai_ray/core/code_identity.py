"""What a callable *is*, as a digest that is the same in every process: the resume check's agent.

A checkpoint may only be continued by the run that wrote it (``store/checkpoint/fingerprint.py``). Names
are not enough: ``def agent(m)`` edited to answer differently keeps its ``__name__``, and a
resume would then mix two agents' rows (pass@1 taken over both). :func:`code_digest` reduces an
agent, a grader or an ``execute=`` function to a short hex digest of what decides its behaviour:

* a function of the caller's own code: its compiled code (bytecode, constants, names, nested
  code objects, recursively), its defaults, the values of its closure cells and of the globals
  its code names, and the functions and classes those hold (depth-limited);
* a class: its qualified name, its bases and every member of its body (methods by their code,
  class constants by value); an object given as the role itself (``agent=Bot()``, or the owner
  of a bound method): its class and its attributes; an object it holds (through a closure, a
  global, an attribute or an argument): its class only; ``functools.partial`` (a class form
  with its constructor arguments): its function and every argument, by value;
* code that is not the caller's (whileai_ray's own, installed packages, the standard library)
  counts by its dotted name: upgrading a package does not turn a resume into a refusal.

What counts and what does not (decided here, pinned by ``tests/unit/test_code_identity.py``):

* whitespace, comments and moving a function to other lines do not count (line numbers are left
  out); any change to what runs does, and so does an edited docstring (it is a constant);
* values count when they are immutable plain data (None, bool, numbers, str, bytes, tuples and
  frozensets of them). A mutable container (a cache a closure fills, a list an agent appends
  to) and any other object (an ``openai.OpenAI`` client, a lock, a socket) count by their type
  only, plus the ``base_url`` of an object that has one (without userinfo, query or port): what
  an agent accumulates while it runs must not make the same agent look like another one on
  resume. Constructor arguments of a class form (``partial`` arguments) count by value,
  containers too. One thing the rule cannot tell apart: a number attribute of an agent object
  that counts its calls looks like a setting (keep such state in a list or a dict);
* attributes whose name says secret (``api_key``, ``token``, ``password`` ...) never count: a
  rotated key is the same agent.

Nothing here uses ``id()`` (beyond a cycle guard that never reaches the digest), ``hash()`` or a
``repr`` with an address. Bytecode changes between Python versions, so the digest is prefixed
with its scheme and the interpreter's ``major.minor`` (:data:`SCHEME`); digests of two schemes
are not comparable (:func:`comparable`), and the resume check then does not compare them.
"""
from __future__ import annotations

import functools
import hashlib
import json
import re
import sys
import sysconfig
import types
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["code_digest", "data_digest", "describe", "comparable", "SCHEME", "redact_url"]

SCHEME = f"c1-py{sys.version_info[0]}.{sys.version_info[1]}"
MAX_DEPTH = 8                      # nested functions/classes/objects followed; deeper ones by name
MAX_ITEMS = 256                    # a long tuple or argument list: its first items, and its length
_SECRET = re.compile(r"key|secret|token|passw|auth|cred|cookie", re.IGNORECASE)
_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_STDLIB = tuple(p for p in {sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib")} if p)


def redact_url(url: Any) -> str:
    """``url`` as text without its userinfo, query and fragment (where keys hide) and without its
    port (a local model server restarted on a free port serves the same model)."""
    text = str(url)
    try:
        parts = urlsplit(text)
    except ValueError:
        return "<url>"
    return urlunsplit((parts.scheme, parts.hostname or "", parts.path.rstrip("/"), "", ""))


def _foreign(obj: Any) -> bool:
    """Whether ``obj`` (a function or class) is not the caller's code: whileai_ray's own, an
    installed package's, the standard library's or a builtin."""
    name = getattr(obj, "__module__", None) or ""
    if name == "whileai_ray" or name.startswith("whileai_ray."):
        return True
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if module is None or not path:
        return name not in ("__main__", "")      # builtins; __main__ of `python -c` is the caller's
    return ("site-packages" in path or "dist-packages" in path
            or any(path.startswith(root) for root in _STDLIB))


def _dotted(obj: Any) -> str:
    return f"{getattr(obj, '__module__', None) or '?'}.{getattr(obj, '__qualname__', None) or type(obj).__name__}"


def _plain(value: Any, containers: bool) -> Any:
    """JSON-able form of plain data; None when ``value`` is not plain data (``containers``: lists,
    dicts and sets count by value too)."""
    if isinstance(value, float):
        return {"float": repr(value)}
    if isinstance(value, complex):
        return {"complex": repr(value)}
    if isinstance(value, bytes):
        return {"bytes": hashlib.sha256(value).hexdigest()}
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, tuple) or (containers and isinstance(value, list)):
        items = [_plain(v, containers) for v in value[:MAX_ITEMS]]
        return None if any(i is None and v is not None for i, v in zip(items, value)) else \
            {type(value).__name__: items, "n": len(value)}
    if isinstance(value, frozenset) or (containers and isinstance(value, set)):
        items = [_plain(v, containers) for v in value]
        if any(i is None and v is not None for i, v in zip(items, value)):
            return None
        return {"set": sorted(json.dumps(i, sort_keys=True) for i in items)}
    if containers and isinstance(value, dict):
        out = {}
        for k, v in value.items():
            pv = _plain(v, containers)
            if pv is None and v is not None:
                return None
            out[json.dumps(_plain(k, True), sort_keys=True)] = pv
        return {"dict": out}
    return None


class _Describer:
    def __init__(self) -> None:
        self.seen: set[int] = set()        # cycle guard only: ids never reach the description

    def value(self, value: Any, depth: int, containers: bool = False) -> Any:
        plain = _plain(value, containers)
        if plain is not None or value is None:
            return plain
        if isinstance(value, tuple) or (containers and isinstance(value, list)):
            return {type(value).__name__: [self.value(v, depth, containers) for v in value[:MAX_ITEMS]],
                    "n": len(value)}
        if containers and isinstance(value, dict):
            return {"dict": {json.dumps(_plain(k, True) if _plain(k, True) is not None else _dotted(type(k)),
                                        sort_keys=True): self.value(v, depth, containers)
                             for k, v in value.items()}}
        if isinstance(value, (list, dict, set, bytearray)):
            return {"mutable": type(value).__name__}
        return self.thing(value, depth)

    def thing(self, obj: Any, depth: int) -> Any:
        if isinstance(obj, types.ModuleType):
            return {"module": obj.__name__}
        if isinstance(obj, (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)):
            return {"builtin": _dotted(obj)}
        if depth > MAX_DEPTH or id(obj) in self.seen:
            return {"ref": _dotted(obj) if isinstance(obj, (type, types.FunctionType)) else _dotted(type(obj))}
        self.seen.add(id(obj))
        try:
            return self._thing(obj, depth + 1)
        finally:
            self.seen.discard(id(obj))

    def _thing(self, obj: Any, depth: int) -> Any:
        if isinstance(obj, functools.partial):
            return {"partial": self.thing(obj.func, depth),
                    "args": [self.value(a, depth, True) for a in obj.args[:MAX_ITEMS]],
                    "keywords": {k: self.value(v, depth, True) for k, v in sorted(obj.keywords.items())}}
        if isinstance(obj, types.MethodType):
            owner = obj.__self__
            return {"method": self.thing(obj.__func__, depth),
                    "self": self.thing(owner, depth) if isinstance(owner, type) else self.instance(owner, depth, 1)}
        if isinstance(obj, (staticmethod, classmethod)):
            return {type(obj).__name__: self.thing(obj.__func__, depth)}
        if isinstance(obj, property):
            return {"property": [self.thing(f, depth) if f is not None else None
                                 for f in (obj.fget, obj.fset, obj.fdel)]}
        if isinstance(obj, types.FunctionType):
            return {"function": _dotted(obj)} if _foreign(obj) else self.function(obj, depth)
        if isinstance(obj, type):
            return {"class": _dotted(obj)} if _foreign(obj) else self.klass(obj, depth)
        return self.instance(obj, depth, depth)

    def code(self, code: types.CodeType) -> dict:
        """A code object without its file name and line numbers."""
        consts = [self.code(c) if isinstance(c, types.CodeType) else _plain(c, True) for c in code.co_consts]
        return {"name": code.co_name, "bytecode": code.co_code.hex(), "consts": consts,
                "names": list(code.co_names), "varnames": list(code.co_varnames),
                "freevars": list(code.co_freevars), "cellvars": list(code.co_cellvars),
                "args": [code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount],
                "flags": code.co_flags, "exceptions": getattr(code, "co_exceptiontable", b"").hex()}

    def function(self, fn: types.FunctionType, depth: int) -> dict:
        closure = {}
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                closure[name] = self.value(cell.cell_contents, depth)
            except ValueError:                     # an empty cell
                closure[name] = {"empty": True}
        names: list[str] = []
        used: set[str] = set()
        stack = [fn.__code__]
        while stack:                               # the globals its code (and nested code) names
            code = stack.pop()
            names.extend(code.co_names)
            stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        g = {}
        for name in names:
            if name in used or name not in fn.__globals__:
                continue
            used.add(name)
            g[name] = self.value(fn.__globals__[name], depth)
        return {"function": fn.__qualname__, "code": self.code(fn.__code__),
                "defaults": [self.value(v, depth) for v in fn.__defaults__ or ()],
                "kwdefaults": {k: self.value(v, depth) for k, v in sorted((fn.__kwdefaults__ or {}).items())},
                "closure": closure, "globals": dict(sorted(g.items()))}

    def klass(self, cls: type, depth: int) -> dict:
        members = {}
        for name, member in sorted(vars(cls).items()):
            if name in ("__dict__", "__weakref__", "__module__", "__qualname__", "__slots__"):
                continue
            code_like = callable(member) or isinstance(member, (staticmethod, classmethod, property))
            if name.startswith("__") and name.endswith("__") and not code_like and name != "__doc__":
                continue                           # __annotations__, __firstlineno__ ...: not behaviour
            members[name] = self.value(member, depth)
        return {"class": cls.__qualname__, "bases": [self.thing(b, depth) for b in cls.__bases__ if b is not object],
                "members": members}

    def instance(self, obj: Any, depth: int, level: int) -> dict:
        """An object: its class, and (given as the role itself, ``level`` 1) its attributes. An
        object reached through a closure, a global or an argument counts by its class only: a
        router or a client it uses may count calls or pool connections while the run goes."""
        cls = type(obj)
        out: dict = {"object": self.thing(cls, depth)}
        base_url = getattr(obj, "base_url", None) if not isinstance(obj, type) else None
        if base_url is not None and not callable(base_url):
            out["base_url"] = redact_url(base_url)
        if level > 1 or (_foreign(cls) and not (cls.__module__ or "").startswith("whileai_ray")):
            return out                              # held by the role, or an installed package's: type (and URL)
        attrs = {}
        state = getattr(obj, "__dict__", None)
        items = list(state.items()) if isinstance(state, dict) else []
        for klass in cls.__mro__:
            slots = vars(klass).get("__slots__", ())
            for name in ([slots] if isinstance(slots, str) else slots):
                if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                    items.append((name, getattr(obj, name)))
        for name, value in items:
            if not isinstance(name, str) or _SECRET.search(name):
                continue
            attrs[name] = self.value(value, depth) if _code_or_data(value) else self.opaque(value)
        out["attrs"] = dict(sorted(attrs.items()))
        return out


    @staticmethod
    def opaque(obj: Any) -> dict:
        """An object held by an object: its type (and URL), not its state (a world's records, a
        client's pool: what changes while a run goes)."""
        out = {"object": _dotted(type(obj))}
        base_url = getattr(obj, "base_url", None)
        if base_url is not None and not callable(base_url):
            out["base_url"] = redact_url(base_url)
        return out


def _code_or_data(value: Any) -> bool:
    return value is None or isinstance(value, (*_PLAIN, tuple, frozenset, list, dict, set, bytearray, type,
                                                types.FunctionType, types.MethodType, functools.partial,
                                                types.ModuleType, types.BuiltinFunctionType))


def describe(obj: Any) -> Any:
    """The JSON-able description :func:`code_digest` hashes (see the module doc)."""
    return _Describer().value(obj, 0)


def code_digest(obj: Any) -> str | None:
    """``"<SCHEME>:<32 hex>"`` for ``obj`` (None for None); equal in every process for the same code."""
    if obj is None:
        return None
    text = json.dumps(describe(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return f"{SCHEME}:{hashlib.sha256(text.encode('ascii')).hexdigest()[:32]}"


def data_digest(value: Any) -> str:
    """``"<SCHEME>:<32 hex>"`` for plain data given as an argument (containers by value)."""
    text = json.dumps(_Describer().value(value, 0, containers=True), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True)
    return f"{SCHEME}:{hashlib.sha256(text.encode('ascii')).hexdigest()[:32]}"


def comparable(a: Any, b: Any) -> bool:
    """Whether two digests can be compared: made under one scheme (same digest rules, same
    Python), or one of them None (a role present in one run only is a difference)."""
    if a is None or b is None:
        return True
    def scheme(d: Any) -> str | None:
        return d.partition(":")[0] if isinstance(d, str) and ":" in d else None
    return scheme(a) == scheme(b)
