"""``select()``: the rows worth training on, picked by a sequence of named gates.

Every input row either survives all gates or is dropped by exactly one, so the report adds
up: ``kept + sum(dropped) == rows``. Gates, in the order they run:

* ``ungraded``   -- no numeric reward, or the judge failed on the row;
* ``junk``       -- agent error, empty reply, tool-call markup in the text, a prompt under two words;
* ``leaks``      -- the reply quotes the row's privileged reference / hidden state (needs the
  internal rows, which carry ``privileged``; exported rows cannot leak-check);
* ``truncated``  -- the reply was cut off (``finish_reason == "length"`` or a truncated step);
  only with ``truncated="drop"`` (the default);
* ``band``       -- (rl, or sft with ``band=``) the prompt's group pass rate is outside ``band``;
* ``unanimous``  -- (rl) every rollout of the prompt got the same reward: no learning signal;
* ``duplicates`` -- a prompt (rl: a whole group; sft: the same prompt and reply) already kept;
* ``failed``     -- (sft and no mode) not pass-labeled: reward below 1;
* ``target``     -- beyond ``target`` rows; rl keeps whole groups, sft keeps one row of each
  distinct behaviour (``behavior_signature``) before any repeat.

Then ``hack_scan`` reports what best explains the reward of the kept rows (it drops nothing).
Without a mode the sequence is the demonstration picker: ungraded, junk, leaks, truncated,
failed, duplicate prompts, target. Groups are one prompt's rollouts within one eval run.
"""
from __future__ import annotations

import hashlib
import re

from ..core.rng import short_hash
from ..core.rows import export_row
from ..score.pass_at.estimate import as_rows
from .hack_scan import check_endorsed, hack_scan
from .row_checks import is_junk, is_truncated, leaks_privileged, reward_of
from .training import export_training

__all__ = ["select", "Selection", "GATE_WHY", "group_id_of", "run_context", "training_set"]

MODES = (None, "sft", "rl")
DEFAULT_RL_BAND = (0.2, 0.8)
GATE_WHY = {
    "ungraded": "no reward, or the judge failed on the row",
    "junk": "agent error, empty reply, tool-call markup, or a prompt under two words",
    "leaks": "the reply quotes its privileged reference or hidden state",
    "truncated": "the reply was cut off (finish_reason length)",
    "band": "the prompt's pass rate is outside the difficulty band",
    "unanimous": "every rollout of the prompt got the same reward (no learning signal)",
    "duplicates": "the same prompt was already kept",
    "failed": "not pass-labeled (reward below 1)",
    "target": "beyond target=; repeated behaviours are cut first",
}
_NORM_RE = re.compile(r"\W+")


def _norm(text) -> str:
    return _NORM_RE.sub(" ", str(text or "").lower()).strip()


def group_id_of(row: dict) -> str:
    """``"g-" + 10 hex`` of (scenario_id, prompt, eval run): one prompt's rollouts in one run."""
    lineage = row.get("lineage")
    if not isinstance(lineage, dict):
        lineage = {}
    return "g-" + short_hash(row.get("scenario_id"), row.get("prompt"), lineage.get("eval_run", 0) or 0)


def run_context(run_meta, rows) -> tuple[str, list]:
    """(system_prompt, tools) from ``run_meta`` (RunMeta, SimulationData or dict), else ``rows``."""
    for source in (run_meta, rows):
        if source is None:
            continue
        get = source.get if isinstance(source, dict) else lambda k, s=source: getattr(s, k, None)
        prompt, tools = get("system_prompt"), get("tools")
        if prompt or tools:
            return str(prompt or ""), list(tools or [])
    return "", []


def _check_args(mode, target, band, truncated):
    if mode not in MODES:
        raise ValueError(f"select(mode={mode!r}): use None (diverse demonstrations), 'sft' or 'rl'")
    if isinstance(target, bool) or not isinstance(target, int) or target < 1:
        raise ValueError(f"select(target={target!r}): pass a positive int, the most rows to keep (e.g. 1000)")
    if truncated not in ("drop", "keep"):
        raise ValueError(f"select(truncated={truncated!r}): use 'drop' (default) or 'keep'")
    if band is None:
        return DEFAULT_RL_BAND if mode == "rl" else None
    try:
        lo, hi = (float(b) for b in band)
    except (TypeError, ValueError):
        raise ValueError(f"select(band={band!r}): pass (low, high) pass rates such as (0.2, 0.8)") from None
    if not 0.0 <= lo <= hi <= 1.0:
        raise ValueError(f"select(band={band!r}): need 0 <= low <= high <= 1, e.g. (0.2, 0.8)")
    return (lo, hi)


def _diverse_order(alive: list, facts: list) -> list:
    """Row indices: one of each behaviour signature (first-seen order) before any second one."""
    buckets: dict = {}
    for i in alive:
        buckets.setdefault(facts[i].sig, []).append(i)
    out: list[int] = []
    depth = 0
    while len(out) < len(alive):
        out.extend(b[depth] for b in buckets.values() if depth < len(b))
        depth += 1
    return out


class Selection(list):
    """The selected rows (exported form, ``group_id`` added in rl) plus ``.report``; prints the report.

    ``.sources`` holds the input rows that were kept (internal rows keep ``privileged``).
    ``.export(path)`` writes them as trainer-ready chat JSONL (or Parquet for ``*.parquet``).
    """

    def __init__(self, rows, report: dict, sources=(), system_prompt: str = "", tools=None):
        super().__init__(rows)
        self.report = report
        self.sources = list(sources)
        self.system_prompt = system_prompt
        self.tools = list(tools or [])

    @property
    def rows(self) -> list:
        return list(self)

    def export(self, path, system_prompt=None, tools=None, validate: bool = True) -> dict:
        """Write the training file (OpenAI chat format with tools); return the export report."""
        report = export_training(self, path, system_prompt=self.system_prompt if system_prompt is None
                                 else system_prompt, tools=self.tools if tools is None else tools,
                                 validate=validate, sources=self.sources)
        report["selection"] = self.report
        return report

    def __str__(self) -> str:
        r = self.report
        extra = f" ({r['groups']} groups, {r['tasks']} tasks)" if r.get("groups") is not None \
            else f" ({r['distinct_behaviors']} distinct behaviours)"
        lines = [f"{r['label']} selection: kept {r['kept']} of {r['rows']} rows{extra}"]
        for g in r["gates"]:
            lines.append(f"  {g['gate']:<11} dropped {g['dropped']:>5}  {g['why']}")
        lines.append(f"  hack scan: {r['hack_scan']['summary']}")
        return "\n".join(lines)

    __repr__ = __str__


def _digest(text: str) -> bytes:
    """A short fixed-size stand-in for a normalised text (only ever compared for equality)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).digest()


class _Facts:
    """What the gates read of each row, gathered in one pass over the rows (a list, or rows on
    disk read a row group at a time): a million rows never have to be held to be selected.
    A row's later facts are only read while it survives the gates before them."""

    __slots__ = ("reward", "junk", "leak", "trunc", "gid", "prompt", "reply", "sig", "task")

    def __init__(self, row: dict, truncated: str):
        self.reward = reward_of(row)
        self.junk = self.leak = self.trunc = False
        self.gid = self.prompt = self.reply = self.sig = self.task = None
        if self.reward is None:
            return
        self.junk = is_junk(row)
        if self.junk:
            return
        self.leak = leaks_privileged(row)
        if self.leak:
            return
        self.trunc = truncated == "drop" and is_truncated(row)
        if self.trunc:
            return
        self.gid = group_id_of(row)
        reply = _norm(row.get("final_text"))
        self.prompt, self.reply = _digest(_norm(row.get("prompt"))), _digest(reply)
        self.sig = row.get("behavior_signature") or reply
        self.task = row.get("scenario_id")


def _row_batches(rows):
    batches = getattr(rows, "batches", None)
    if callable(batches):
        yield from batches()
    else:
        yield rows


def select(rows, mode=None, target: int = 1000, band=None, endorsed=(), truncated: str = "drop",
           run_meta=None) -> Selection:
    """Pick training rows through the gates of the module docstring; returns a ``Selection``."""
    band = _check_args(mode, target, band, truncated)
    endorsed = check_endorsed(endorsed)
    system_prompt, tools = run_context(run_meta, rows)
    rows = as_rows(rows)
    facts = [_Facts(r, truncated) for batch in _row_batches(rows) for r in batch]
    rewards = [f.reward for f in facts]
    if mode == "rl":
        if all(v is None for v in rewards):
            raise RuntimeError(f"select(mode='rl') needs graded rows; none of the {len(rows)} rows has a "
                               "reward. Grade in the loop (simulate(..., grader=...)) or with data.grade(grader).")
    elif not any(v in (0.0, 1.0) for v in rewards):
        raise RuntimeError(f"select() needs binary-graded rows (reward 0 or 1); none of the {len(rows)} rows "
                           "has one. Grade in the loop (simulate(..., grader=...)) or with data.grade(grader).")

    alive = list(range(len(facts)))
    gates = []

    def gate(name: str, drop) -> None:
        nonlocal alive
        kept = [i for i in alive if not drop(i)]
        gates.append({"gate": name, "dropped": len(alive) - len(kept), "why": GATE_WHY[name]})
        alive = kept

    gate("ungraded", lambda i: rewards[i] is None)
    gate("junk", lambda i: facts[i].junk)
    gate("leaks", lambda i: facts[i].leak)
    if truncated == "drop":
        gate("truncated", lambda i: facts[i].trunc)
    gid = {i: facts[i].gid for i in alive}
    if mode is not None and band is not None:
        members: dict = {}
        for i in alive:
            members.setdefault(gid[i], []).append(rewards[i])
        mean = {g: sum(v) / len(v) for g, v in members.items()}
        flat = {g for g, v in members.items() if len(v) < 2 or min(v) == max(v)}
        if mode == "rl":
            gate("band", lambda i: gid[i] not in flat and not band[0] <= mean[gid[i]] <= band[1])
            gate("unanimous", lambda i: gid[i] in flat)
        else:
            gate("band", lambda i: not band[0] <= mean[gid[i]] <= band[1])
    seen: dict = {}
    if mode == "rl":            # a prompt's group seen again (a replay) is a duplicate group
        def dup(i):
            return seen.setdefault(facts[i].prompt, gid[i]) != gid[i]
    elif mode == "sft":
        def dup(i):
            return seen.setdefault((facts[i].prompt, facts[i].reply), i) != i
    if mode is None:
        gate("failed", lambda i: rewards[i] < 1.0)
        gate("duplicates", lambda i: seen.setdefault(facts[i].prompt, i) != i)
    else:
        gate("duplicates", dup)
        if mode == "sft":
            gate("failed", lambda i: rewards[i] < 1.0)

    if mode == "rl":
        order, taken, total = _groups_in_task_order(alive, facts, gid), set(), 0
        for g, idx in order:
            if total + len(idx) > target:
                break
            taken.add(g)
            total += len(idx)
        gate("target", lambda i: gid[i] not in taken)
    else:
        ordered = _diverse_order(alive, facts)[:target]
        chosen = set(ordered)
        gate("target", lambda i: i not in chosen)
        alive = ordered

    fetched = {i: rows[i] for i in sorted(alive)}     # only the kept rows are read again
    kept_src = [fetched[i] for i in alive]
    out_rows = []
    for i in alive:
        row = export_row(fetched[i])
        if mode == "rl":
            row["group_id"] = gid[i]
        out_rows.append(row)
    kept_rewards = [rewards[i] for i in alive]
    report = {
        "mode": mode, "label": mode or "sft", "rows": len(facts), "kept": len(alive), "target": target,
        "band": list(band) if band else None, "truncated": truncated, "endorsed": list(endorsed),
        "gates": gates, "dropped": {g["gate"]: g["dropped"] for g in gates},
        "groups": len({gid[i] for i in alive}) if mode == "rl" else None,
        "tasks": len({facts[i].task for i in alive}),
        "distinct_behaviors": len({r.get("behavior_signature") for r in out_rows}),
        "mean_reward": round(sum(kept_rewards) / len(kept_rewards), 4) if kept_rewards else None,
        "hack_scan": hack_scan(kept_src, endorsed),
    }
    return Selection(out_rows, report, kept_src, system_prompt, tools)


def _groups_in_task_order(alive: list, facts: list, gid: dict) -> list:
    """Groups as ``[(group_id, [row indices])]``, round-robin over tasks so many tasks come first."""
    groups: dict = {}
    for i in alive:
        groups.setdefault(gid[i], []).append(i)
    by_task: dict = {}
    for g, idx in groups.items():
        by_task.setdefault(facts[idx[0]].task, []).append((g, idx))
    out: list[tuple[str, list[int]]] = []
    depth, lists = 0, list(by_task.values())
    while len(out) < len(groups):
        out.extend(lst[depth] for lst in lists if depth < len(lst))
        depth += 1
    return out


def training_set(rows, system_prompt: str = "", tools=None, output=None, target: int = 1000,
                 validate: bool = True, run_meta=None, mode=None) -> dict:
    """``select()`` (diverse pass-labeled rows by default) then ``export_training``; returns the report
    with ``report["selection"]`` attached. Pass ``output`` to write the file."""
    sel = select(rows, mode=mode, target=target, run_meta=run_meta)
    report = export_training(sel, output, system_prompt=system_prompt or sel.system_prompt,
                             tools=tools if tools is not None else sel.tools, validate=validate,
                             sources=sel.sources)
    report["selection"] = sel.report
    return report
