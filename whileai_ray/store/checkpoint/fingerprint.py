"""The identity of a run's setup, stored in a checkpoint header to refuse foreign files.

A checkpoint may only be resumed by a run with the same tools, system prompt and agent:
rows written by another setup would silently mix two experiments. ``fingerprint`` reduces
the setup to three comparable fields; ``fingerprint_mismatch`` names what differs.

Beside those three, a header written since issue 28 carries ``"run"``: what makes a unit what it
is (``config/run_identity.py`` builds it: the agent's, grader's and ``execute=``'s code digests,
``seed``, ``mode``, ``fault_rate``, ``repeats`` ...). Each of its fields that both headers hold is
compared, and a mismatch is named with both values where they are plain (``seed (1 on disk, 2
now)``); a field an older header lacks is unknown, not a mismatch (the resume that finds a header
without the record writes its own into it, ``with_run_record``, so the next one is checked), and
two code digests made under different schemes (another Python, ``core/code_identity.py``) are
not compared.
``mismatch_message`` is the refusal the caller reads: what differs and how to start fresh.

Tools are compared by content, not layout: the wrapped OpenAI form
``{"type": "function", "function": {...}}`` and the bare ``{"name", "parameters"}`` form of
the same schema give the same digest, and the order of the tool list does not matter.
"""
from __future__ import annotations

import hashlib
import json
import re

__all__ = ["fingerprint", "fingerprint_mismatch", "mismatch_message", "with_run_record", "with_grader",
           "GRADER_ONLY", "COMPARED_FIELDS", "RUN_KEY"]

COMPARED_FIELDS = ("tools_sha", "system_prompt_sha", "agent")
RUN_KEY = "run"                        # the header's dict of unit-defining arguments (see the module doc)
_DIGEST = re.compile(r"^[A-Za-z0-9.-]+:[0-9a-f]{16,}$")      # core/code_identity.py's "<scheme>:<hex>"
_CODE_FIELDS = {"agent_code": "agent (its code or its settings)", "grader": "grader", "execute": "execute"}
GRADER_ONLY = ["grader"]               # fingerprint_mismatch's answer when a resume changed its grader and nothing else


def _canon(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _bare_tool(tool: object) -> object:
    if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
        return tool["function"]
    return tool


def fingerprint(tools: list | tuple | None, system_prompt: object, agent_name: object) -> dict:
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


def _schemes_differ(a: object, b: object) -> bool:
    """Two code digests made under different schemes (``<scheme>:<hex>``): not comparable."""
    if not (isinstance(a, str) and isinstance(b, str) and _DIGEST.match(a) and _DIGEST.match(b)):
        return False
    return a.partition(":")[0] != b.partition(":")[0]


def _run_mismatch(stored: dict, current: dict) -> list[str]:
    differ = []
    for field in sorted(set(stored) & set(current)):
        old, new = stored[field], current[field]
        if old == new or _schemes_differ(old, new):
            continue
        if field in _CODE_FIELDS:
            differ.append(_CODE_FIELDS[field])
        elif all(isinstance(v, (str, int, float, bool, type(None))) and not (isinstance(v, str) and _DIGEST.match(v))
                 for v in (old, new)):
            differ.append(f"{field} ({old!r} on disk, {new!r} now)")
        else:
            differ.append(field)
    return differ


def fingerprint_mismatch(stored: dict, current: dict) -> list[str]:
    """The names of the compared fields that differ (empty list when they agree).

    A field missing from ``stored`` (an older or hand-written header) is not a mismatch.
    """
    names = {"tools_sha": "tools", "system_prompt_sha": "system prompt", "agent": "agent"}
    differ = []
    for field in COMPARED_FIELDS:
        if field in stored and field in current and stored[field] != current[field]:
            differ.append(names[field])
    old_run, new_run = stored.get(RUN_KEY), current.get(RUN_KEY)
    if isinstance(old_run, dict) and isinstance(new_run, dict):
        differ.extend(d for d in _run_mismatch(old_run, new_run) if d not in differ)
    return differ


def with_run_record(header: dict | None, current: dict) -> dict | None:
    """``header`` with this run's ``"run"`` record added, when the header (written before the record
    existed) has none and this run has one; else None. The resume that found it unknown adopts it,
    so the next resume is checked; ``created`` and ``plan`` stay as they were."""
    if not isinstance(header, dict) or not isinstance(current.get(RUN_KEY), dict):
        return None
    stored = header.get("fingerprint")
    if not isinstance(stored, dict) or RUN_KEY in stored:
        return None
    return {**header, "fingerprint": {**stored, RUN_KEY: current[RUN_KEY]}}


def with_grader(header: dict, current: dict) -> dict:
    """``header`` with this run's grader in its run record: the rows on disk were regraded with it."""
    stored = dict(header.get("fingerprint") or {})
    stored[RUN_KEY] = {**(stored.get(RUN_KEY) or {}), "grader": (current.get(RUN_KEY) or {}).get("grader")}
    return {**header, "fingerprint": stored}


def mismatch_message(path: object, differ: list[str]) -> str:
    """The refusal of a resume by another run: what differs, that the file is untouched, and the
    two ways on (the same arguments, or a fresh start)."""
    path = str(path)
    stem = path[:-6] if path.endswith(".jsonl") else path
    lines = [f"checkpoint={path!r} was written by a different run: the {', '.join(differ)} differ.",
             "The file was left untouched; its rows would mix two runs.",
             "To resume it, call simulate() with the same tools, system prompt, agent and arguments that "
             "wrote it.",
             f"To start fresh, pass a new checkpoint path (checkpoint={stem + '-2.jsonl'!r}), or delete "
             f"{path!r} with the files beside it named {path}.* (meta.json, keys, plan ...) and the folder "
             f"{stem}.parquet.",
             ]
    if any(d.startswith("grader") for d in differ):
        lines.append("A grader= callable that is the only change regrades the rows on disk and resumes; "
                     f"otherwise score them apart: data = wai.load({path!r}); data.grade(grader=...).")
    return "\n".join(lines)
