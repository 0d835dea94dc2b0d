"""``tasks=``: the task set of an earlier run, to replay instead of drawing a new one.

One task per distinct non-empty prompt, in first-seen order, carrying what makes it the same
task: scenario_id, scenario_dimensions, tier, tags, arm, writer_model, the fault plan and the
world state (and the privileged reference when the source still has it). k is this call's
``repeats`` when given, else the most rollouts any pinned prompt has, whichever form the source
takes (a SimulationData, its rows or a JSONL path): the docs' rule, so one run gives one k.
"""
from __future__ import annotations

import os

from ..situations.situation import Situation
from ..store.reader import load_rows

TAG_KEYS = ("texture", "length", "tone", "ask", "vagueness", "phrasing", "pressure", "user", "stance", "history")


def source_rows(tasks) -> tuple[list[dict], dict]:
    """Rows (internal when available) and what is known of the source run."""
    if hasattr(tasks, "trajectories"):
        return list(tasks.trajectories), {"system_prompt": getattr(tasks, "system_prompt", "")}
    if isinstance(tasks, (str, os.PathLike)):
        rows, meta = load_rows(tasks)
        return rows, {"system_prompt": meta.get("system_prompt", "")}
    return [r for r in tasks if isinstance(r, dict)], {}


def build_tasks(tasks) -> tuple[list[tuple[Situation, dict | None]], int, dict]:
    """Return ``([(situation, faults)], source_k, info)`` for a ``tasks=`` value."""
    rows, info = source_rows(tasks)
    seen: dict[str, dict] = {}
    counts: dict[str, int] = {}
    phrasing: dict[str, int] = {}
    out = []
    for row in rows:
        prompt = row.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            continue
        counts[prompt] = counts.get(prompt, 0) + 1
        if prompt in seen:
            continue
        seen[prompt] = row
        sid = str(row.get("scenario_id") or "")
        p_index = phrasing.get(sid, 0)
        phrasing[sid] = p_index + 1
        dims = row.get("scenario_dimensions") or {}
        if dims.get("origin") == "realized":
            dims = {}
        privileged = row.get("privileged") or {}
        sit = Situation(
            scenario_id=sid, prompt=prompt, phrasing_index=p_index, dims=dict(dims),
            tier=row.get("tier", "ordinary"), tags={k: row[k] for k in TAG_KEYS if k in row},
            ask_family=row.get("ask_family", "tool"), world_state=row.get("world_state"),
            reference=privileged.get("reference", "") if isinstance(privileged, dict) else "",
            arm=row.get("arm") or "pinned", writer_model=row.get("writer_model") or "pinned",
            selection_reason="pinned", parent_failure_id=row.get("parent_failure_id"))
        out.append((sit, row.get("faults")))
    if not out:
        raise ValueError("tasks= has no rows with a prompt; pass a SimulationData, its rows(), or the JSONL/Parquet "
                         "path a run wrote")
    k = max(counts.values())      # the same rule for a SimulationData, its rows and a path (docs: tasks=)
    info = {"prompts": len(out), "tasks": len({s.scenario_id for s, _ in out}), "source_rows": len(rows)}
    return out, int(k), info
