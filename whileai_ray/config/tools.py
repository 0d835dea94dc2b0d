"""Who plays and with what tools: agent kinds, backend spec strings, tool schemas.

A role (agent, situation writer, simulated user) is a callable, a spec string
(``"openai:<model>"``, ``"vllm:<model>@<url>"``, an ``http(s)://`` URL of an OpenAI-compatible
server) or a backend object (anything with a ``.spec`` or ``.model`` attribute, such as
``wai.OpenAI(...)``). Here the spec is only checked for its *form*; connecting, keys and
preflight belong to ``agents/backends.py``.

Tools are OpenAI function schemas; the bare ``{"name", "parameters"}`` form and plain Python
functions (schema from the signature and docstring) are normalized to
``{"type": "function", "function": {"name", "description", "parameters"}}``.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from .function_schema import signature_schema

__all__ = ["SPEC_PROVIDERS", "agent_kind", "check_spec", "check_role", "check_simulator",
           "is_backend", "normalize_tools", "function_schema"]

SPEC_PROVIDERS = ("openai", "vllm")
_OTHER_PROVIDERS = ("anthropic", "fireworks", "bedrock", "ollama", "typesafe", "together",
                    "groq", "azure", "google", "gemini", "mistral")
_FORMS = ("'openai:<model>', 'vllm:<model>@<url>', or an http(s):// URL of an "
          "OpenAI-compatible server")


def is_backend(value: Any) -> bool:
    """A backend object: not a str, carries ``.spec`` or ``.model`` (e.g. ``wai.OpenAI``)."""
    return not isinstance(value, str) and (hasattr(value, "spec") or hasattr(value, "model"))


def check_spec(value: str, label: str) -> str:
    """Check the form of a backend spec string and return it stripped."""
    spec = value.strip()
    if not spec:
        raise ValueError(f"{label} is an empty string; pass {_FORMS}")
    lowered = spec.lower()
    if lowered.startswith(("http://", "https://")):
        return spec
    head, colon, model = spec.partition(":")
    if not colon:
        provider, slash, rest = spec.partition("/")
        if slash and provider.lower() in SPEC_PROVIDERS + _OTHER_PROVIDERS and rest:
            raise ValueError(f"{label}{spec!r}: use a colon: {provider}:{rest}")
        raise ValueError(f"{label}{spec!r} names no provider; write it as 'openai:{spec}', "
                         f"'vllm:{spec}@http://host:8000/v1', or an http(s):// URL of an "
                         f"OpenAI-compatible server (or pass a callable agent)")
    provider = head.strip()
    if provider not in SPEC_PROVIDERS:
        if provider.lower() in SPEC_PROVIDERS:
            hint = f"write the provider in lower case, {provider.lower()}:{model}"
        elif provider.lower() in _OTHER_PROVIDERS:
            hint = f"{provider} is not served here; point at an OpenAI-compatible endpoint"
        else:
            hint = "unsupported backend spec"
        raise ValueError(f"{label}{spec!r}: {hint}; use {_FORMS}")
    if not model.strip():
        raise ValueError(f"{label}{spec!r} names no model; write '{provider}:<model>'")
    if provider == "vllm":
        name, at, url = model.partition("@")
        if not at or not name.strip() or not url.strip():
            raise ValueError(f"{label}{spec!r}: a vllm spec names the model and the server, "
                             f"'vllm:<model>@http://host:8000/v1'")
    return spec


def agent_kind(agent: Any, label: str = "agent=") -> str | None:
    """None, "callable", "spec" or "backend"; anything else is a TypeError."""
    if agent is None:
        return None
    if isinstance(agent, str):
        check_spec(agent, label)
        return "spec"
    if callable(agent) and not hasattr(agent, "spec"):
        return "callable"
    if is_backend(agent):
        return "backend"
    raise TypeError(f"{label} takes a callable message -> trajectory, a spec string "
                    f"({_FORMS}), or a backend object like wai.OpenAI(model); "
                    f"got {type(agent).__name__}")


def check_role(value: Any, label: str) -> Any:
    """None, a spec string (form checked) or a backend object; anything else is a TypeError."""
    if value is None:
        return None
    if isinstance(value, str):
        return check_spec(value, label)
    if is_backend(value):
        return value
    raise TypeError(f"{label} is a backend spec string (e.g. 'openai:gpt-4.1-mini'), a backend "
                    f"object, or None; got {type(value).__name__}")


def check_simulator(value: Any) -> Any:
    """simulator=: None or "hosted" (the model writer), False (offline), a spec or backend."""
    if value is None or value is False:
        return value
    if isinstance(value, str) and value.strip().lower() == "hosted":
        return "hosted"
    if value is True:
        raise ValueError("simulator=True is not a writer; leave simulator= unset (or 'hosted') "
                         "for the model writer, or pass simulator=False for the offline one")
    return check_role(value, "simulator=")


def normalize_tools(tools: Any) -> tuple[list[dict], dict[str, Callable]]:
    """tools= -> (schemas in the full OpenAI form, {name: function} for function tools)."""
    if tools is None:
        return [], {}
    if isinstance(tools, dict) or not isinstance(tools, (list, tuple)):
        raise TypeError(f"tools= takes a list of @wai.tool functions, plain functions or "
                        f"OpenAI function schemas; got {type(tools).__name__}"
                        + (" (wrap the schema in a list)" if isinstance(tools, dict) else ""))
    schemas: list[dict] = []
    functions: dict[str, Callable] = {}
    for index, tool in enumerate(tools):
        if isinstance(tool, dict):
            schema = _schema_from_dict(tool, index)
        elif callable(tool):
            schema = function_schema(tool)
            functions[schema["function"]["name"]] = tool
        else:
            raise TypeError(f"tools[{index}] is a {type(tool).__name__}; each tool is a "
                            f"function or an OpenAI function schema (a dict)")
        name = schema["function"]["name"]
        if not TOOL_NAME.fullmatch(name):
            raise ValueError(f"tools[{index}] is named {name!r}; OpenAI-compatible servers accept only tool "
                             f"names matching {TOOL_NAME.pattern} (letters, digits, '_' and '-', at most 64): "
                             "rename it, e.g. " + repr(_suggest(name)))
        if any(s["function"]["name"] == name for s in schemas):
            raise ValueError(f"tools= names the tool {name!r} twice; tool names must be unique")
        schemas.append(schema)
    return schemas, functions


TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")   # what the OpenAI API (and vLLM, SGLang) enforce


def _suggest(name: str) -> str:
    return (re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_") or "tool")[:64]


def _schema_from_dict(tool: dict, index: int) -> dict:
    body = tool.get("function")
    if not isinstance(body, dict):
        body = tool
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"tools[{index}] has no name; a schema is {{'type': 'function', "
                         f"'function': {{'name': ..., 'parameters': {{...}}}}}}")
    parameters = body.get("parameters")
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise ValueError(f"tools[{index}] ({name}): 'parameters' is a JSON schema dict; "
                         f"got {type(parameters).__name__}")
    function = {"name": name, "parameters": parameters}
    if body.get("description"):
        function["description"] = str(body["description"])
    return {"type": "function", "function": function}


def function_schema(fn: Callable, strict: bool = False) -> dict:
    """An OpenAI function schema from a function's name, signature and docstring, written by
    pydantic as ``openai.pydantic_function_tool`` writes it (``strict=True``: exactly that, every
    parameter required; the default lists only the parameters without a default as required:
    ``config/function_schema.py``).

    A function that already carries a schema (``fn.tool_schema`` or ``fn.schema`` dict, as a
    ``@wai.tool`` decorator would set) keeps it.
    """
    for attribute in ("tool_schema", "schema"):
        attached = getattr(fn, attribute, None)
        if isinstance(attached, dict):
            return _schema_from_dict(attached, 0)
    return signature_schema(fn, strict=strict)
