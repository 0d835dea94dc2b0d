"""An OpenAI tool schema from a Python function's signature, through pydantic's type system.

``tools=[refund]`` takes plain functions. Their parameters become a pydantic model (one field
per parameter: its annotation, its default, its description from the docstring), and the model's
JSON Schema is the tool's ``parameters``, so every type comes out as OpenAI's own helper
(``openai.pydantic_function_tool``) writes it: ``int | None`` / ``Optional[int]`` is
``anyOf [integer, null]``, a ``Literal`` is an ``enum``, ``list[int]`` has ``items``, a nested
pydantic model or ``typing_extensions.TypedDict`` is an object under ``$defs``, ``Annotated[int,
Field(ge=1)]`` keeps its bounds, defaults are ``default``. (A hand-rolled type map got all of
these wrong: ``"string"`` for ``Optional[int]``, no enum, no items.)

Two forms, because OpenAI's strict mode changes what ``required`` means:

* ``strict=False`` (the default): the model's ``model_json_schema()``, less the titles pydantic
  makes up from names (``"title": "Order Id"``; a ``Field(title=...)`` you wrote stays). A
  parameter with a default is optional (not in ``required``), which is what the function
  accepts and what the world's argument validation checks.
* ``strict=True``: exactly ``openai.pydantic_function_tool(Model)["function"]`` (``"strict":
  true``; every property listed in ``required``, ``additionalProperties: false``, titles kept,
  ``None`` defaults dropped), for servers that enforce OpenAI's structured outputs.

The description is the docstring's first paragraph; per-parameter descriptions come from a
Google (``Args:``), NumPy (``Parameters`` / ``----------``) or Sphinx (``:param x:``) section.
An unannotated parameter takes its default's type (``limit=10``: integer), else string (as
before); a type pydantic cannot describe (an arbitrary class, ``typing.TypedDict`` on Python <
3.12: use ``typing_extensions.TypedDict``) falls back to its container's JSON type, or string.
"""
from __future__ import annotations

import inspect
import re
import typing
import warnings
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from pydantic.json_schema import GenerateJsonSchema

__all__ = ["signature_schema", "parameter_docs"]

_FALLBACK = {str: str, int: int, float: float, bool: bool, list: list, tuple: list, set: list, frozenset: list,
             dict: dict}
_SECTION = re.compile(r"^\s*(?:args|arguments|parameters|params|keyword args|keyword arguments)\s*:?\s*$", re.I)
_OTHER_SECTION = re.compile(r"^\s*(?:returns?|yields?|raises?|examples?|notes?|see also|attributes|warnings?|"
                            r"references|todo)\s*:?\s*$", re.I)
_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
_GOOGLE_ITEM = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ITEM = re.compile(r"^(\w+)\s*(?::\s*.*)?$")
_SPHINX_ITEM = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


class _NoNameTitles(GenerateJsonSchema):
    """pydantic's generator without the titles it derives from field names."""

    def field_title_should_be_set(self, schema) -> bool:
        return False


def parameter_docs(doc: str) -> dict[str, str]:
    """``{parameter: description}`` from a docstring's Google, NumPy or Sphinx parameter section."""
    out: dict[str, str] = {}
    lines = doc.splitlines()
    for line in lines:
        m = _SPHINX_ITEM.match(line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    i = 0
    while i < len(lines):
        if not _SECTION.match(lines[i]):
            i += 1
            continue
        numpy = i + 1 < len(lines) and _UNDERLINE.match(lines[i + 1])
        i += 2 if numpy else 1
        base, name = None, None
        while i < len(lines):
            line = lines[i]
            if line.strip() and (_OTHER_SECTION.match(line) or (i + 1 < len(lines) and _UNDERLINE.match(lines[i + 1]))):
                break
            indent = len(line) - len(line.lstrip())
            if not line.strip():
                if not numpy and name is not None and i + 1 < len(lines) and not lines[i + 1].strip():
                    break
            elif base is None or indent <= base:
                base = indent if base is None else base
                m = (_NUMPY_ITEM if numpy else _GOOGLE_ITEM).match(line.strip())
                if not m:
                    break
                name = m.group(1).lstrip("*")
                out[name] = "" if numpy else m.group(2).strip()
            elif name is not None:
                out[name] = (out[name] + " " + line.strip()).strip()
            i += 1
    return {k: v for k, v in out.items() if v}


def _summary(doc: str) -> str:
    first = doc.split("\n\n")[0].strip()
    return "" if not first or _SECTION.match(first.splitlines()[0]) else first


def _hints(fn: Callable, signature: inspect.Signature) -> dict:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:      # a forward reference that does not resolve: keep the annotations that are types
        return {n: p.annotation for n, p in signature.parameters.items()
                if p.annotation is not p.empty and not isinstance(p.annotation, str)}


def _describable(hint) -> Any:
    """``hint`` when pydantic can write its JSON Schema, else the nearest plain type."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            TypeAdapter(hint).json_schema()
        return hint
    except Exception:
        origin = typing.get_origin(hint) or hint
        return next((_FALLBACK[b] for b in getattr(origin, "__mro__", ()) if b in _FALLBACK), str)


def _model(fn: Callable, name: str, doc: str) -> type[BaseModel]:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return create_model(name)
    hints, docs = _hints(fn, signature), parameter_docs(doc)
    fields: dict[str, Any] = {}          # pydantic field definitions: (type, FieldInfo) or (type, default)
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name == "self":
            continue
        unannotated = type(param.default) if type(param.default) in _FALLBACK else str   # x=3: an integer
        hint = _describable(hints.get(param.name, unannotated))
        default = ... if param.default is param.empty else param.default
        extra: dict[str, Any] = {"description": docs[param.name]} if param.name in docs else {}
        # a name pydantic reserves (_x, model_x, json, ...) rides on an alias: the schema shows the real name
        if param.name.startswith(("_", "model_")) or hasattr(BaseModel, param.name):
            extra["alias"] = param.name
            fields[f"param_{len(fields)}"] = (hint, Field(default, **extra))
        else:
            fields[param.name] = (hint, Field(default, **extra) if extra else default)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_model(name, __config__=ConfigDict(populate_by_name=True), **fields)


def _strip_model_titles(schema: dict, name: str) -> dict:
    if schema.get("title") == name:
        schema.pop("title")
    for key, sub in (schema.get("$defs") or {}).items():
        if isinstance(sub, dict) and sub.get("title") == key:
            sub.pop("title")
    return schema


def signature_schema(fn: Callable, strict: bool = False) -> dict:
    """``{"type": "function", "function": {name, description?, parameters[, strict]}}`` for ``fn``
    (see the module docstring for the two forms)."""
    name = getattr(fn, "__name__", None) or type(fn).__name__
    doc = inspect.getdoc(fn) or ""
    description = _summary(doc)
    model = _model(fn, name, doc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # a default that is not JSON is left out of the schema
        if strict:
            from openai import pydantic_function_tool
            return dict(pydantic_function_tool(model, name=name, description=description or None))
        parameters = _strip_model_titles(model.model_json_schema(schema_generator=_NoNameTitles), name)
    function = {"name": name, "parameters": parameters}
    if description:
        function["description"] = description
    return {"type": "function", "function": function}
