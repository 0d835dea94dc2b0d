"""``tasks=``: the task set of an earlier run, to replay instead of drawing a new one.

One task per distinct non-empty prompt, in first-seen order, carrying what makes it the same
task: scenario_id, scenario_dimensions, tier, tags, arm, writer_model, the fault plan, the
world state and the privileged block (expected outcome, hidden state), which ``save()`` and the
checkpoint keep and ``data.rows()`` carries beside its rows. A prompt's phrasing index (part of
every draw) is its rank within its scenario, not its position in the source, so a
``SimulationData``, its ``rows()``, a ``save()`` file and a checkpoint listed in landing order
all replay to the same rows. k is this call's
``repeats`` when given, else the most rollouts any pinned prompt has, whichever form the source
takes (a SimulationData, its rows or a JSONL path): the docs' rule, so one run gives one k.
"""
from __future__ import annotations

import os

from ..core.identity import prompt_sha
from ..situations.situation import Situation
from ..store.reader import load_rows
from ..world.context import REPLAY_EXTRA

TAG_KEYS = ("texture", "length", "tone", "ask", "vagueness", "phrasing", "pressure", "user", "stance", "history")


UNFAITHFUL = ("tasks=: these rows carry no expected outcomes or hidden world state (data.rows() keeps them "
              "beside its rows, not in them, so a copy such as [dict(r) for r in data.rows()] or rows your own "
              "code read back from JSON lose them): the replay keeps the prompts, faults and world state it can "
              "read, but a grader or agent that reads the expected outcome sees none, so replies and grades may "
              "differ from the source run. For a faithful replay pass the SimulationData itself, data.rows() "
              "as returned, or the run's checkpoint= / output= path.")


def _carry_privileged(rows: list) -> bool:
    return any(isinstance(r, dict) and "privileged" in r for r in rows)


def source_rows(tasks) -> tuple[list[dict], dict]:
    """Rows (internal when available) and what is known of the source run. ``unfaithful`` is
    True when the source is a plain copy of public rows (nothing says what was hidden from the
    agent): ``simulate()`` warns with :data:`UNFAITHFUL`."""
    if hasattr(tasks, "trajectories"):
        return list(tasks.trajectories), {"system_prompt": getattr(tasks, "system_prompt", ""), "unfaithful": False}
    if isinstance(tasks, (str, os.PathLike)):
        rows, meta = load_rows(tasks)
        ours = bool(meta) or _carry_privileged(rows)     # a save() file or checkpoint has its meta line
        return rows, {"k": meta.get("rollouts_per_request"), "system_prompt": meta.get("system_prompt", ""),
                      "unfaithful": not ours}
    privileged = getattr(tasks, "privileged", None)     # data.rows(): kept beside the rows (rowlist.py)
    if isinstance(privileged, list) and len(privileged) == len(tasks):
        rows = [dict(r, privileged=p) if isinstance(r, dict) and p and "privileged" not in r else r
                for r, p in zip(tasks, privileged)]
        return [r for r in rows if isinstance(r, dict)], {"k": None, "unfaithful": False}
    rows = [r for r in tasks if isinstance(r, dict)]
    return rows, {"k": None, "unfaithful": not _carry_privileged(rows)}


def _phrasing_indices(seen: dict) -> dict:
    """Each prompt's phrasing index within its scenario: its rank by ``prompt_sha`` among the
    scenario's prompts. It is part of every random draw of a unit, so it must not depend on the
    order the source lists its rows in (a checkpoint lists them as they landed)."""
    by_sid: dict[str, list] = {}
    for prompt, row in seen.items():
        by_sid.setdefault(str(row.get("scenario_id") or ""), []).append(prompt)
    out = {}
    for prompts in by_sid.values():
        for i, prompt in enumerate(sorted(prompts, key=lambda p: (prompt_sha(p), p))):
            out[prompt] = i
    return out


def build_tasks(tasks) -> tuple[list[tuple[Situation, dict | None]], int, dict]:
    """Return ``([(situation, faults)], source_k, info)`` for a ``tasks=`` value."""
    rows, source = source_rows(tasks)
    seen: dict[str, dict] = {}
    counts: dict[str, int] = {}
    for row in rows:
        prompt = row.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            continue
        counts[prompt] = counts.get(prompt, 0) + 1
        seen.setdefault(prompt, row)
    phrasing = _phrasing_indices(seen)
    out = []
    for prompt, row in seen.items():
        sid = str(row.get("scenario_id") or "")
        p_index = phrasing[prompt]
        dims = row.get("scenario_dimensions") or {}
        if dims.get("origin") == "realized":
            dims = {}
        privileged = row.get("privileged") or {}
        replay = privileged.get("replay") if isinstance(privileged, dict) else None
        replay = replay if isinstance(replay, dict) else {}
        sit = Situation(
            scenario_id=sid, prompt=prompt, phrasing_index=p_index, dims=dict(dims),
            tier=row.get("tier", "ordinary"), tags={k: row[k] for k in TAG_KEYS if k in row},
            ask_family=row.get("ask_family", "tool"), world_state=row.get("world_state"),
            reference=privileged.get("reference", "") if isinstance(privileged, dict) else "",
            arm=row.get("arm") or "pinned", writer_model=row.get("writer_model") or "pinned",
            selection_reason="pinned", parent_failure_id=row.get("parent_failure_id"),
            ref_ids=[str(i) for i in replay.get("ref_ids") or () if isinstance(i, (str, int))],
            extra={k: replay[k] for k in REPLAY_EXTRA if isinstance(replay.get(k), (dict, str))})
        out.append((sit, row.get("faults")))
    if not out:
        raise ValueError("tasks= has no rows with a prompt; pass a SimulationData, its rows(), or the JSONL/Parquet "
                         "path a run wrote")
    k = max(counts.values())      # the same rule for a SimulationData, its rows and a path (docs: tasks=)
    info = {"prompts": len(out), "tasks": len({s.scenario_id for s, _ in out}), "source_rows": len(rows),
            "k_each": [counts[s.prompt] for s, _ in out],     # a runs= replay plays each ask as often
            "unfaithful": bool(source.get("unfaithful"))}
    return out, int(k), info
