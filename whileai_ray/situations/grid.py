"""The coverage grid: the six axes a situation varies along, their values, and validation.

A *cell* is one value per axis, e.g. ``{"tool": "lookup_order", "rule": "unspecified",
"stance": "boundary", "world_state": "entity missing", "tool_condition": "timeout",
"history": "fresh"}``. :func:`build_axes` derives the axes from the agent's tools and policy
text (``dimensions=`` pins an axis), and :func:`pairwise_cells` picks a small set of cells that
covers every pair of values (see ``covering.py``). A cell's *stance* decides its difficulty
*tier* (``STANCE_TIER``); ``hard_share`` is the share of rows from the hard tiers.
"""
from __future__ import annotations

import json
import re

from .covering import all_pairs, pairs_in, pairwise_cells

__all__ = [
    "AXES", "STANCES", "STANCE_ALIASES", "STANCE_TIER", "TIERS", "HARD_TIERS",
    "TOOL_CONDITIONS", "CONDITION_FAULT_MODE", "FAULT_MODE_CONDITION", "WORLD_STATES", "HISTORIES",
    "tool_names", "policy_clauses", "validate_dimensions", "build_axes", "pairwise_cells",
    "cell_key", "tier_of", "all_pairs", "pairs_in", "has_key_parameter", "canonical_stance",
]

AXES = ("tool", "rule", "stance", "world_state", "tool_condition", "history")
STANCES = ("ordinary", "ambiguous", "boundary", "adversarial", "hurried", "unsure", "retry",
           "mistaken", "exploratory", "conflicting")
STANCE_ALIASES = {  # alias -> the stance whose wording it uses
    "vague": "ambiguous", "underspecified": "ambiguous", "unclear": "ambiguous",
    "policy-push": "boundary", "edge": "boundary",
    "malicious": "adversarial", "forbidden": "adversarial", "jailbreak": "adversarial",
}
TIERS = ("ordinary", "ambiguous", "boundary", "adversarial")
HARD_TIERS = ("ambiguous", "boundary", "adversarial")
STANCE_TIER = {
    "ordinary": "ordinary", "hurried": "ordinary", "retry": "ordinary", "mistaken": "ordinary",
    "exploratory": "ordinary",
    "ambiguous": "ambiguous", "unsure": "ambiguous",
    "boundary": "boundary", "conflicting": "boundary",
    "adversarial": "adversarial",
}
STANCE_TIER.update({alias: STANCE_TIER[target] for alias, target in STANCE_ALIASES.items()})

# invalid_arguments: the ask carries a value the tool's schema refuses (situations/call_plan.py);
# the world adds no fault, it refuses the call (world/validation.py).
TOOL_CONDITIONS = ("success", "timeout", "malformed_result", "stale_result", "permission_denied",
                   "invalid_arguments")
CONDITION_FAULT_MODE = {"timeout": "timeout", "malformed_result": "malformed",
                        "stale_result": "stale", "permission_denied": "permission_denied",
                        "invalid_arguments": "invalid_arguments"}
FAULT_MODE_CONDITION = {mode: cond for cond, mode in CONDITION_FAULT_MODE.items()}
WORLD_STATES = ("entity exists", "entity missing", "entity already acted on", "duplicate entity",
                "partially completed", "unknown")
HISTORIES = ("fresh", "prior_failure", "prior_partial_action", "contradicts_earlier", "repeat visit")

_KEY_PARAM = re.compile(
    r"(^|[_\-\s])(id|ids|number|num|no|ref|reference|code|sku|email|account|key|uuid|slug|"
    r"handle|username|confirmation|ticket|invoice|tracking)($|[_\-\s])|[a-z]Id$|[a-z]ID$",
)
_NORMATIVE = re.compile(
    r"\b(must|never|always|only|do not|don't|dont|should|shall|cannot|can't|may not|not allowed|"
    r"require|requires|required|before|unless|no more than|at most|at least|forbidden|prohibited|"
    r"refuse|decline|avoid|ensure|confirm)\b", re.I)


def _schema(tool) -> dict:
    if isinstance(tool, dict):
        fn = tool.get("function") if tool.get("type") == "function" else None
        return fn if isinstance(fn, dict) else tool
    return {"name": getattr(tool, "__name__", str(tool))}


def tool_names(tools) -> list[str]:
    """Names of the tools, from OpenAI function schemas or the bare ``{"name", "parameters"}`` form."""
    out = []
    for t in tools or ():
        name = _schema(t).get("name")
        if name and name not in out:
            out.append(str(name))
    return out


def has_key_parameter(tools) -> bool:
    """True when some tool parameter looks like a reference key (id, number, code, email, ...)."""
    for t in tools or ():
        props = ((_schema(t).get("parameters") or {}).get("properties") or {})
        if any(_KEY_PARAM.search(str(p)) or _KEY_PARAM.search(str(p).lower()) for p in props):
            return True
    return False


_RULES = frozenset(("enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
                    "minLength", "maxLength", "pattern", "format", "minItems", "maxItems", "uniqueItems",
                    "anyOf", "oneOf", "allOf", "$ref", "additionalProperties", "items"))


def _has_rules(tools) -> bool:
    """Some tool's schema says more than "a string, required" (an enum, a bound, a format, a
    list, a nested object...): there is a rule an ask can break (the invalid_arguments condition).
    A bare string's only breaks are a missing or placeholder value, which the world states
    already cover."""
    def rules(node, depth=0) -> bool:
        if isinstance(node, dict):
            if depth and _RULES.intersection(node) or node.get("type") in ("object", "array") and depth:
                return True
            return depth < 12 and any(rules(v, depth + 1) for v in node.values())
        if isinstance(node, list):
            return depth < 12 and any(rules(v, depth + 1) for v in node)
        return False
    return any(rules((_schema(t).get("parameters") or {}).get("properties") or {}) for t in tools or ())


def policy_clauses(system_prompt: str, cap: int = 16) -> tuple[list[str], int]:
    """Split a system prompt into rule clauses (sentences or bullets that say must/never/only...).

    Returns ``(clauses[:cap], total_found)`` so a caller can warn when the cap cut some off.
    """
    if not system_prompt:
        return [], 0
    pieces = re.split(r"(?:\n+|(?<=[.!?;])\s+)", str(system_prompt))
    found: list[str] = []
    for piece in pieces:
        text = re.sub(r"^\s*(?:[-*\u2022]|\d+[.)])\s*", "", piece).strip()
        if len(text) < 6 or not _NORMATIVE.search(text):
            continue
        if text not in found:
            found.append(text)
    return found[:cap], len(found)


def _norm(value: str) -> str:
    return re.sub(r"[\s_\-]+", " ", value.strip().lower())


def _lookup(value, table: dict, axis: str, hint: str):
    if not isinstance(value, str):
        raise ValueError(f"dimensions[{axis!r}] values must be strings; got {value!r}. {hint}")
    hit = table.get(_norm(value))
    if hit is None:
        raise ValueError(f"dimensions[{axis!r}] has unknown value {value!r}. {hint}")
    return hit


def _tables(tools):
    stance = {_norm(s): s for s in STANCES}
    stance.update({_norm(a): a for a in STANCE_ALIASES})
    cond = {_norm(c): c for c in TOOL_CONDITIONS}
    cond.update({_norm(m): c for m, c in FAULT_MODE_CONDITION.items()})
    cond["ok"] = "success"
    world = {_norm(w): w for w in WORLD_STATES + ("unspecified",)}
    hist = {_norm(h): h for h in HISTORIES}
    names = tool_names(tools) + ["unrelated", "multi_tool"]
    tool = {_norm(n): n for n in names}
    return {
        "stance": (stance, "Known stances: " + ", ".join(STANCES) + "; aliases: "
                   + ", ".join(STANCE_ALIASES) + ". Tiers go through the stance axis."),
        "tool_condition": (cond, "That names no fault mode; valid tool_condition values: "
                           + ", ".join(TOOL_CONDITIONS) + " (or the fault modes timeout, malformed, "
                           "stale, permission_denied, invalid_arguments)."),
        "world_state": (world, "Valid world_state values: " + ", ".join(WORLD_STATES) + "."),
        "history": (hist, "Valid history values: " + ", ".join(HISTORIES) + "."),
        "tool": (tool, "Valid tool values: " + ", ".join(names) + "."),
    }


def validate_dimensions(dimensions, tools=None) -> dict[str, list[str]]:
    """Check ``dimensions=`` and return it normalized (axis -> list of canonical values).

    A bare string is a one-item list; duplicates are dropped; fault mode names map to their
    tool_condition (``malformed`` -> ``malformed_result``). Tool names are checked only when
    ``tools`` is given. Raises ValueError naming the argument and the fix.
    """
    if not isinstance(dimensions, dict) or not dimensions:
        raise ValueError("dimensions= must be a non-empty dict of axis -> list of values, e.g. "
                         f"dimensions={{'stance': ['adversarial', 'boundary']}}; got {dimensions!r}")
    tables = _tables(tools)
    out: dict[str, list[str]] = {}
    for axis, values in dimensions.items():
        if axis == "tier":
            raise ValueError("dimensions= 'tier' is not a coverage axis; tiers go through the stance "
                             "axis: dimensions={'stance': [...]} (e.g. ['ambiguous', 'boundary', "
                             "'adversarial'])")
        if axis not in AXES:
            raise ValueError(f"dimensions= has unknown axis {axis!r}; coverage axes are "
                             + ", ".join(AXES))
        if isinstance(values, str):
            values = [values]
        if not isinstance(values, (list, tuple)) or not values:
            raise ValueError(f"dimensions[{axis!r}] must be a non-empty list of values, "
                             f"e.g. dimensions={{{axis!r}: [...]}}; got {values!r}")
        if axis == "tool" and not tools:
            table = None
        else:
            table = tables.get(axis)
        normalized = []
        for v in values:
            if table is None:
                if not isinstance(v, str) or not v.strip():
                    raise ValueError(f"dimensions[{axis!r}] values must be non-empty strings; "
                                     f"got {v!r}")
                v = v.strip()
            else:
                v = _lookup(v, table[0], axis, table[1])
            if v not in normalized:
                normalized.append(v)
        out[axis] = normalized
    return out


def build_axes(tools, system_prompt: str = "", dimensions=None) -> dict[str, list[str]]:
    """The grid's axes from the tools and policy text; axes named in ``dimensions`` are replaced.

    ``rule`` is ``["unspecified"]`` without a policy, else ``["unspecified", *clauses]``: the
    policy-free asks keep their own block and every clause gets cells of its own.
    """
    names = tool_names(tools)
    clauses, _ = policy_clauses(system_prompt)
    axes = {
        "tool": names + ["unrelated", "multi_tool"] if names else ["unrelated"],
        "rule": ["unspecified"] + clauses,
        "stance": list(STANCES),
        "world_state": list(WORLD_STATES) if has_key_parameter(tools) else ["unspecified"],
        "tool_condition": [c for c in TOOL_CONDITIONS if c != "invalid_arguments" or _has_rules(tools)],
        "history": list(HISTORIES),
    }
    if dimensions is not None:
        axes.update(validate_dimensions(dimensions, tools))
    return axes


def cell_key(cell: dict) -> str:
    """Canonical JSON of a cell (sorted keys): the stable name of a grid cell. A cell of string
    names and values (every grid cell) is looked up by its items first: a run names the same few
    hundred cells once a row (the planner's coverage, a spilled row's facts), ~5 us of encoding each."""
    if type(cell) is not dict:
        return _CELL_JSON(cell)
    items = tuple(cell.items())
    for k, v in items:
        if type(k) is not str or type(v) is not str:     # (1, 1.0 and True are equal keys, not equal JSON)
            return _CELL_JSON(cell)
    key = _CELL_KEYS.get(items)
    if key is None:
        if len(_CELL_KEYS) >= CELL_KEYS_KEPT:
            _CELL_KEYS.clear()
        key = _CELL_KEYS[items] = _CELL_JSON(cell)
    return key


# ``json.dumps(cell, sort_keys=True)`` without building an encoder per call (a spilled row's facts
# and the planner name a cell per row)
_CELL_JSON = json.JSONEncoder(sort_keys=True).encode
CELL_KEYS_KEPT = 4096                  # cells' keys kept (the items in their order -> the JSON)
_CELL_KEYS: dict[tuple, str] = {}


def tier_of(stance) -> str:
    """Difficulty tier of a stance (ordinary when there is none)."""
    return STANCE_TIER.get(stance or "ordinary", "ordinary")


def canonical_stance(stance) -> str:
    """The stance whose wording an alias uses (``malicious`` -> ``adversarial``)."""
    s = stance or "ordinary"
    return STANCE_ALIASES.get(s, s if s in STANCE_TIER else "ordinary")
