"""pass@1, pass^k and pass@k over graded rows, with task-bootstrap intervals.

Rows are grouped into tasks (``scenario_id``, else ``task_id``, else the prompt). Only
binary rewards count (``reward``, falling back to ``qwen_reward``; booleans are not
rewards); other numbers are counted in ``n_partial``. For a task with ``n`` graded rows of
which ``c`` passed:

* pass@1 = mean over tasks of ``c / n``;
* pass@k = mean of ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021, unbiased): the chance
  that at least one of k tries passes;
* pass^k = mean of ``C(c, k) / C(n, k)``: the chance that all k tries pass;

both over tasks with at least k rows (and, with ``unanimous_short=True``, unanimous shorter
tasks at 1 or 0). ``k`` defaults to the smallest group size among tasks with 2+ rows, and
pass^k/pass@k need ``k >= min_k``. Intervals: ``intervals.bootstrap_ci`` over tasks.
``str(PassAt)`` prints the one-line summary of reference section 5.1; the notes after
``k=`` say why a number is missing or should not be trusted.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from numbers import Real

from .intervals import MIN_BOOTSTRAP_TASKS, bootstrap_ci
from .pass_at_notes import build_config, build_notes

__all__ = ["PassAt", "pass_at", "task_key_of", "binary_reward", "as_rows"]


@dataclass
class PassAt:
    k: int
    pass_at_1: float | None = None
    pass_pow_k: float | None = None
    pass_at_k: float | None = None
    n_groups: int = 0
    n_rows: int = 0
    n_groups_at_k: int = 0
    n_groups_imputed: int = 0
    n_partial: int = 0
    per_task: dict = field(default_factory=dict)
    note: str = ""
    config: dict = field(default_factory=dict)
    ci95: tuple | None = None
    pass_pow_k_ci95: tuple | None = None
    pass_at_k_ci95: tuple | None = None

    @property
    def headroom(self) -> float | None:
        """pass@k - pass@1: how much a best-of-k sampler would gain."""
        if self.pass_at_k is None or self.pass_at_1 is None:
            return None
        return self.pass_at_k - self.pass_at_1

    def to_dict(self) -> dict:
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["per_task"] = dict(self.per_task)
        out["config"] = dict(self.config)
        for name in ("ci95", "pass_pow_k_ci95", "pass_at_k_ci95"):
            out[name] = list(out[name]) if out[name] is not None else None
        out["headroom"] = self.headroom
        return out

    def __str__(self) -> str:
        def part(label, value, ci):
            if value is None:
                return f"{label} n/a"
            text = f"{label} {value:.2f}"
            return text + (f" [{ci[0]:.2f}..{ci[1]:.2f}]" if ci is not None else "")

        head = "n/a" if self.headroom is None else f"{self.headroom:.2f}"
        tail = f"{self.n_groups} groups, k={self.k}" + (f"; {self.note}" if self.note else "")
        return " | ".join([
            part("pass@1", self.pass_at_1, self.ci95),
            part(f"pass^{self.k} (pass_pow_k)", self.pass_pow_k, self.pass_pow_k_ci95),
            part(f"pass@{self.k}", self.pass_at_k, self.pass_at_k_ci95),
            f"headroom {head} ({tail})",
        ])

    __repr__ = __str__


def as_rows(rows) -> list:
    """Accept a row list, a ``SimulationData``-like object (``.rows`` / ``.rows()``), or an iterable."""
    if hasattr(rows, "rows") and not isinstance(rows, (list, tuple)):
        rows = rows.rows() if callable(rows.rows) else rows.rows
    if isinstance(rows, (str, bytes, dict)) or rows is None:
        raise TypeError(f"rows must be a list of row dicts, got {type(rows).__name__}")
    out = list(rows)
    for i, row in enumerate(out):
        if not isinstance(row, dict):
            raise TypeError(f"rows[{i}] is a {type(row).__name__}; every row must be a dict")
    return out


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


def _numeric_reward(row: dict):
    value = row.get("reward")
    if value is None:
        value = row.get("qwen_reward")
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    return value


def binary_reward(row: dict):
    """1 or 0 when the row carries a binary reward, else None."""
    value = _numeric_reward(row)
    if value is None or value not in (0, 1):
        return None
    return int(value)


def _mean(values) -> float:
    return math.fsum(values) / len(values)


def pass_at(rows, k: int | None = None, *, min_k: int = 4, unanimous_short: bool = False,
            task_key=None) -> PassAt:
    """pass@1, pass^k and pass@k of graded rows, grouped by task. See the module docstring."""
    rows = as_rows(rows)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"pass_at: k must be a positive int (the repeats per task), got {k!r}")
    if isinstance(min_k, bool) or not isinstance(min_k, int) or min_k < 1:
        raise ValueError(f"pass_at: min_k must be a positive int, got {min_k!r}")

    groups: dict = {}
    graded_values, n_partial, unjudged = [], 0, Counter()
    for row in rows:
        value = _numeric_reward(row)
        if value is None:
            status = row.get("judge_status")
            if status not in (None, "ok"):
                unjudged[str(status)] += 1
            continue
        graded_values.append(value)
        if value not in (0, 1):
            n_partial += 1
            continue
        key = task_key_of(row, task_key)
        groups.setdefault(str(key) if not isinstance(key, str) else key, []).append(int(value))

    tasks = sorted(groups)                       # sorted: row order never changes an interval
    sizes = {t: len(groups[t]) for t in tasks}
    multi = sorted(s for s in sizes.values() if s >= 2)
    k_given = k is not None
    k = k if k_given else (multi[0] if multi else 1)

    per_task = {t: sum(groups[t]) / sizes[t] for t in tasks}
    p1 = _mean(list(per_task.values())) if tasks else None
    ci = bootstrap_ci([per_task[t] for t in tasks]) if tasks else None

    pow_vals, atk_vals, n_at_k, n_imputed = [], [], 0, 0
    if k >= min_k:
        for t in tasks:
            n, c = sizes[t], sum(groups[t])
            if n >= k:
                total = math.comb(n, k)
                pow_vals.append(math.comb(c, k) / total)
                atk_vals.append(1.0 - math.comb(n - c, k) / total)
                n_at_k += 1
            elif unanimous_short and (c == 0 or c == n):
                pow_vals.append(float(c == n))
                atk_vals.append(float(c == n))
                n_imputed += 1
    p_pow = _mean(pow_vals) if pow_vals else None
    p_atk = _mean(atk_vals) if atk_vals else None

    notes = build_notes(
        rows=rows, graded_values=graded_values, n_groups=len(tasks), n_partial=n_partial,
        unjudged=unjudged, k=k, k_given=k_given, min_k=min_k, multi_sizes=multi, sizes=sizes,
        n_at_k=n_at_k, n_imputed=n_imputed, has_interval=ci is not None,
        min_tasks=MIN_BOOTSTRAP_TASKS)
    return PassAt(
        k=k, pass_at_1=p1, pass_pow_k=p_pow, pass_at_k=p_atk, n_groups=len(tasks),
        n_rows=sum(sizes.values()), n_groups_at_k=n_at_k, n_groups_imputed=n_imputed,
        n_partial=n_partial, per_task=per_task, note="; ".join(notes),
        config=build_config(rows, n_tasks=len(tasks), k=k, n_graded=len(graded_values)),
        ci95=ci, pass_pow_k_ci95=bootstrap_ci(pow_vals) if pow_vals else None,
        pass_at_k_ci95=bootstrap_ci(atk_vals) if atk_vals else None)
