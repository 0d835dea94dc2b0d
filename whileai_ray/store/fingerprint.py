"""The identity of a run's setup, stored in a checkpoint header to refuse foreign files.

A checkpoint may only be resumed by a run with the same tools, system prompt and agent:
rows written by another setup would silently mix two experiments. ``fingerprint`` reduces
the setup to three comparable fields; ``fingerprint_mismatch`` names what differs.

Tools are compared by content, not layout: the wrapped OpenAI form
``{"type": "function", "function": {...}}`` and the bare ``{"name", "parameters"}`` form of
the same schema give the same digest, and the order of the tool list does not matter.
"""
from __future__ import annotations

import hashlib
import json

__all__ = ["fingerprint", "fingerprint_mismatch", "COMPARED_FIELDS"]

COMPARED_FIELDS = ("tools_sha", "system_prompt_sha", "agent")


def _canon(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _bare_tool(tool) -> object:
    if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
        return tool["function"]
    return tool


def fingerprint(tools, system_prompt, agent_name) -> dict:
    """``{"tools_sha", "system_prompt_sha", "agent"}`` for a run's setup.

    ``tools``: list of tool schemas (or None); ``system_prompt``: str or None;
    ``agent_name``: the agent's stable name (e.g. its model_version).
    """
    if tools is None:
        tools = []
    if not isinstance(tools, (list, tuple)):
        raise TypeError(
            f"fingerprint(tools=...) expects a list of tool schemas, got {type(tools).__name__}; "
            "pass the same tools list given to simulate()"
        )
    tool_texts = sorted(_canon(_bare_tool(t)) for t in tools)
    prompt = "" if system_prompt is None else str(system_prompt)
    return {
        "tools_sha": _sha("[" + ",".join(tool_texts) + "]"),
        "system_prompt_sha": _sha(prompt),
        "agent": "" if agent_name is None else str(agent_name),
    }


def fingerprint_mismatch(stored: dict, current: dict) -> list[str]:
    """The names of the compared fields that differ (empty list when they agree).

    A field missing from ``stored`` (an older or hand-written header) is not a mismatch.
    """
    names = {"tools_sha": "tools", "system_prompt_sha": "system prompt", "agent": "agent"}
    differ = []
    for field in COMPARED_FIELDS:
        if field in stored and field in current and stored[field] != current[field]:
            differ.append(names[field])
    return differ
