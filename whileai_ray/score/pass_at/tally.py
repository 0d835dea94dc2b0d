"""What ``pass_at`` needs to know about a set of rows, gathered in one pass: the tally.

``pass_at`` reads few things from each row: its binary reward and task, a judge failure, and a
handful of flags and settings for the notes. ``PassTally`` holds them as counts (per task: how
many graded rows, how many passed), so the same numbers come from either source:

* ``tally_rows(rows)``: one Python pass over row dicts (a list, or any iterable: rows are
  never held);
* ``pass_at_arrow.tally_table(table)``: Arrow compute over the *fact columns* that
  ``pass_at_facts(rows)`` extracts when rows are spilled to disk, for a million rows in well
  under a second (``score/row_facts.py`` writes them beside each spilled row).

Both give equal tallies for the same rows; ``pass_at.pass_at_of_tally`` turns a tally into a
``PassAt``. Plain Python here (no pyarrow): ``import whileai_ray`` imports this module.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from numbers import Real

__all__ = ["PassTally", "tally_rows", "task_key_of", "numeric_reward", "CONFIG_SOURCES", "pass_at_facts",
           "PASS_AT_FACTS", "config_text"]


def task_key_of(row: dict, task_key=None):
    """The task a row belongs to: ``task_key`` (a key name or a callable), else
    ``scenario_id``, else ``task_id``, else the prompt."""
    if task_key is not None:
        return task_key(row) if callable(task_key) else row.get(task_key)
    for name in ("scenario_id", "task_id"):
        value = row.get(name)
        if value not in (None, ""):
            return value
    return row.get("prompt")


def numeric_reward(row: dict):
    """``reward`` (else ``qwen_reward`` when reward is absent) when it is a real number, not a bool."""
    value = row.get("reward")
    if value is None:
        value = row.get("qwen_reward")
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    return value


def _sub(row: dict, key: str) -> dict:
    value = row.get(key)
    return value if isinstance(value, dict) else {}


CONFIG_SOURCES = {
    "temperature": lambda r: _sub(r, "sampling").get("temperature"),
    "max_tokens": lambda r: _sub(r, "sampling").get("max_tokens"),
    "policy_version": lambda r: r.get("policy_version"),
    "judge_version": lambda r: _sub(r, "lineage").get("judge_version") or r.get("judge_name"),
    "prompt_hash": lambda r: _sub(r, "lineage").get("system_prompt_sha"),
    "user_model": lambda r: r.get("user_model"),
    "writer_model": lambda r: r.get("writer_model"),
}


@dataclass
class PassTally:
    """Counts over a set of rows (see the module docstring)."""
    n_rows: int = 0
    tasks: dict = field(default_factory=dict)        # task -> [graded binary rows, passed]
    n_graded: int = 0                                 # rows with any numeric reward
    graded_first: float | None = None
    graded_all_equal: bool = True
    n_partial: int = 0                                # numeric rewards other than 0 and 1
    unjudged: Counter = field(default_factory=Counter)
    n_cut: int = 0                                    # finish_reason == "length"
    n_silent: int = 0                                 # no spoken reply
    n_think: int = 0                                  # an unclosed <think>
    config_seen: dict = field(default_factory=lambda: {name: [] for name in CONFIG_SOURCES})
    task_columns: tuple | None = None                 # (tasks sorted, sizes, passed): tasks as columns

    def sorted_tasks(self) -> tuple[list, list, list]:
        """``(tasks in sorted order, graded rows of each, passed rows of each)``."""
        if self.task_columns is not None:
            return self.task_columns
        tasks = sorted(self.tasks)
        return tasks, [self.tasks[t][0] for t in tasks], [self.tasks[t][1] for t in tasks]

    def see_config(self, name: str, value) -> None:
        seen = self.config_seen[name]
        if value is not None and len(seen) < 2 and value not in seen:
            seen.append(value)

    def see_graded(self, value) -> None:
        if self.n_graded == 0:
            self.graded_first = value
        elif self.graded_all_equal and not value == self.graded_first:
            self.graded_all_equal = False
        self.n_graded += 1


def tally_rows(rows, task_key=None) -> PassTally:
    """The tally of row dicts, in one pass (``rows`` may be any iterable of dicts)."""
    t = PassTally()
    tasks, unjudged = t.tasks, t.unjudged
    sources = list(CONFIG_SOURCES.items())
    for row in rows:
        t.n_rows += 1
        value = numeric_reward(row)
        if value is None:
            status = row.get("judge_status")
            if status not in (None, "ok"):
                unjudged[str(status)] += 1
        else:
            t.see_graded(value)
            if value not in (0, 1):
                t.n_partial += 1
            else:
                key = task_key_of(row, task_key)
                key = key if isinstance(key, str) else str(key)
                nc = tasks.get(key)
                if nc is None:
                    tasks[key] = nc = [0, 0]
                nc[0] += 1
                nc[1] += int(value)
        if row.get("finish_reason") == "length":
            t.n_cut += 1
        text = str(row.get("final_text") or "")
        if not text.strip():
            t.n_silent += 1
        if "<think>" in text and "</think>" not in text:
            t.n_think += 1
        for name, read in sources:
            t.see_config(name, read(row))
    return t


# ---------------------------------------------------------------- fact columns
# (name, Arrow type name): what a spilled row carries for pass_at (score/row_facts.py adds them)
PASS_AT_FACTS = (("pa_value", "float64"), ("pa_unjudged", "string"), ("pa_task", "string"),
                 ("pa_cut", "bool"), ("pa_silent", "bool"), ("pa_think", "bool")) + tuple(
    (f"pa_cfg_{name}", "string") for name in CONFIG_SOURCES)

_DUMP = json.JSONEncoder(separators=(",", ":"), sort_keys=True, default=str).encode


_TEXTS: dict = {}
_SCALARS = (str, int, float, bool)


def config_text(value) -> str | None:
    """A config value as JSON text (None stays None); decoded back when the tally is read.
    Scalars are encoded once per process (a million rows carry a handful of settings)."""
    if value is None:
        return None
    if type(value) in _SCALARS:
        key = (type(value), value)
        text = _TEXTS.get(key)
        if text is None:
            text = _DUMP(value)
            if len(_TEXTS) < 4096:
                _TEXTS[key] = text
        return text
    return _DUMP(value)


def pass_at_facts(rows: list) -> dict:
    """The pass_at fact columns of ``rows``: ``{name: [value per row]}`` (see ``PASS_AT_FACTS``)."""
    out: dict[str, list] = {name: [] for name, _ in PASS_AT_FACTS}
    value_, unjudged_, task_ = out["pa_value"], out["pa_unjudged"], out["pa_task"]
    cut_, silent_, think_ = out["pa_cut"], out["pa_silent"], out["pa_think"]
    cfg = [(out[f"pa_cfg_{name}"], read) for name, read in CONFIG_SOURCES.items()]
    for row in rows:
        value = numeric_reward(row)
        status = row.get("judge_status")
        unjudged_.append(str(status) if value is None and status not in (None, "ok") else None)
        if value is not None and value not in (0, 1):   # a partial: kept as is, never a task member
            value_.append(float(value))
            task_.append(None)
        else:
            value_.append(None if value is None else float(value))
            key = task_key_of(row) if value is not None else None
            task_.append(None if value is None else (key if isinstance(key, str) else str(key)))
        cut_.append(row.get("finish_reason") == "length")
        text = str(row.get("final_text") or "")
        silent_.append(not text.strip())
        think_.append("<think>" in text and "</think>" not in text)
        for column, read in cfg:
            column.append(config_text(read(row)))
    return out
