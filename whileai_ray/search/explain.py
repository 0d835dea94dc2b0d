"""What the search says about where it went and where it did not: ``search`` keys computed from
the landed rows and the planner's counts (pure functions, no Ray).

* ``underexplored``: the axis values drawn least, under half their axis's mean row count
  (``{"axis", "value", "rows"}``, fewest first) -- where more budget would add coverage;
* ``axis_gaps``: planned axis values no row reached, each with the nudge the LLM writer would be
  given for it (``writer_prompt.py``), e.g. ``stance=hurried`` -> "the user is in a hurry and
  wants it done fast";
* ``plateau_batches``: how many of the last coverage-curve batches (a point every 50 rows) found
  no new cell and no new behaviour signature;
* ``avoid``: what the search steered away from, counted: near-copy families refused by the
  family cap, prompts already on disk at a resume, generated asks dropped for near-copying a
  source trace (``traces=``);
* ``scene_brief``: the brief every situation is written from (the tools, the policy, the axes the
  world varies on) -- the same tools and policy lines the LLM writer sends its model.
"""
from __future__ import annotations

from collections import Counter

__all__ = ["underexplored", "axis_gaps", "plateau_batches", "avoid", "scene_brief", "duplicate_rate",
           "DUPLICATE_SIMILARITY"]

_SKIP_AXES = ("rule",)      # policy clauses: long text, reported through the rules themselves


def _axis_counts(rows, axes: dict) -> dict:
    counts: dict[str, Counter] = {axis: Counter() for axis in axes}
    for r in rows:
        dims = r.get("scenario_dimensions") or {}
        if dims.get("origin") == "realized":
            continue
        for axis in axes:
            if axis in dims:
                counts[axis][dims[axis]] += 1
    return counts


def underexplored(rows, axes: dict, limit: int = 12) -> list[dict]:
    out = []
    for axis, counter in _axis_counts(rows, axes).items():
        values = [v for v in axes[axis]]
        if axis in _SKIP_AXES or len(values) < 2:
            continue
        mean = sum(counter[v] for v in values) / len(values)
        out += [{"axis": axis, "value": v, "rows": counter[v]} for v in values if 0 < counter[v] < mean / 2]
    out.sort(key=lambda d: (d["rows"], d["axis"], str(d["value"])))
    return out[:limit]


def _nudge(axis: str, value: str) -> str:
    from ..situations.grid import canonical_stance
    from ..situations.writer_prompt import CONDITION_TEXT, HISTORY_TEXT, STANCE_TEXT, WORLD_TEXT
    table = {"stance": STANCE_TEXT, "world_state": WORLD_TEXT, "tool_condition": CONDITION_TEXT,
             "history": HISTORY_TEXT}.get(axis, {})
    key = canonical_stance(value) if axis == "stance" else value
    text = table.get(key)
    if text:
        return text[0].upper() + text[1:] + "."
    if axis == "tool":
        return f"The user needs the tool {value}."
    return f"The situation has {axis} = {value}."


def axis_gaps(rows, axes: dict) -> list[dict]:
    out = []
    for axis, counter in _axis_counts(rows, axes).items():
        if axis in _SKIP_AXES:
            continue
        out += [{"axis": axis, "value": v, "nudge": _nudge(axis, v)} for v in axes[axis] if not counter[v]]
    return out


def plateau_batches(curve: list) -> int:
    """Trailing coverage-curve points that added no cell and no behaviour signature."""
    n = 0
    for prev, point in zip(curve[-2::-1], curve[::-1]):
        if (point.get("unique_cells"), point.get("unique_behavior_signatures")) != \
                (prev.get("unique_cells"), prev.get("unique_behavior_signatures")):
            break
        n += 1
    return n


def avoid(stats, precounted_prompts: int = 0, trace_near_copies: int = 0) -> dict:
    """``search["avoid"]``: what the run refused to draw again (``stats``: the planner's ``PlannerStats``)."""
    family = stats.family_cap or {}
    return {"near_copy_families_refused": int(family.get("refused", 0)),
            "prompts_on_disk": int(precounted_prompts), "trace_near_copies": int(trace_near_copies)}


def scene_brief(tools, system_prompt: str, axes: dict) -> str:
    from ..situations.writer_prompt import tools_block
    lines = ["Tools the agent has:", tools_block(tools), "", "Policy the agent follows:",
             (system_prompt or "").strip()[:2000] or "(none given)", "", "The world varies on:"]
    for axis, values in axes.items():
        if axis in _SKIP_AXES:
            lines.append(f"- rule: {len(values)} polic{'y clause' if len(values) == 1 else 'y clauses'}")
        else:
            lines.append(f"- {axis}: {', '.join(map(str, values))}")
    return "\n".join(lines)


DUPLICATE_SIMILARITY = 0.8


def duplicate_rate(prompts) -> float | None:
    """``semantic_duplicate_rate``: the share of a run's distinct prompts that near-copy an earlier
    one -- estimated Jaccard similarity of their word unigram+bigram sets (the MinHash index the
    selector uses, ``novelty.py``) of at least ``DUPLICATE_SIMILARITY``. Lexical, not embedding
    based (the run has no embedding model: ``semantic`` is False). None for no prompts."""
    from .novelty import NoveltyIndex, sketch
    index, distinct, dups = NoveltyIndex(), 0, 0
    seen: set = set()
    for prompt in prompts:
        if not isinstance(prompt, str) or prompt in seen:
            continue
        seen.add(prompt)
        distinct += 1
        sk = sketch(prompt)
        if len(index) and index.similarity(prompt, sk)[1] >= DUPLICATE_SIMILARITY:
            dups += 1
        index.add(prompt, sk)
    return round(dups / distinct, 4) if distinct else None
