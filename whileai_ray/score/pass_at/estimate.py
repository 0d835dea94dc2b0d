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
The rows are first reduced to a ``PassTally`` (counts per task, ``pass_at/tally.py``), which
rows spilled to disk give straight from their fact columns (``pass_at/arrow.py``).
``str(PassAt)`` prints the one-line summary of reference section 5.1; the notes after
``k=`` say why a number is missing or should not be trusted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..intervals import MIN_BOOTSTRAP_TASKS, bootstrap_ci
from .notes import build_config, build_notes
from .tally import PassTally, numeric_reward, tally_rows, task_key_of

__all__ = ["PassAt", "pass_at", "pass_at_of_tally", "task_key_of", "binary_reward", "as_rows", "lazy_rows"]


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


def lazy_rows(rows) -> bool:
    """Rows on disk (``ArrowRows``, or a run's ``ExportedRows``): a sequence of dicts that reads
    a row group at a time (``batches()``), never copied into a list."""
    return callable(getattr(rows, "batches", None)) and hasattr(rows, "__getitem__") and hasattr(rows, "__len__")


def as_rows(rows) -> list:
    """Accept a row list, a ``SimulationData``-like object (``.rows`` / ``.rows()``), or an iterable.
    Rows on disk (``lazy_rows``) are returned as they are: every element is a dict already."""
    if hasattr(rows, "rows") and not isinstance(rows, (list, tuple)):
        rows = rows.rows() if callable(rows.rows) else rows.rows
    if lazy_rows(rows):
        return rows
    if isinstance(rows, (str, bytes, dict)) or rows is None:
        raise TypeError(f"rows must be a list of row dicts, got {type(rows).__name__}")
    out = list(rows)
    for i, row in enumerate(out):
        if not isinstance(row, dict):
            raise TypeError(f"rows[{i}] is a {type(row).__name__}; every row must be a dict")
    return out


def binary_reward(row: dict):
    """1 or 0 when the row carries a binary reward, else None."""
    value = numeric_reward(row)
    if value is None or value not in (0, 1):
        return None
    return int(value)


def _mean(values) -> float:
    return math.fsum(values) / len(values)


def _check_k(k, min_k) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"pass_at: k must be a positive int (the repeats per task), got {k!r}")
    if isinstance(min_k, bool) or not isinstance(min_k, int) or min_k < 1:
        raise ValueError(f"pass_at: min_k must be a positive int, got {min_k!r}")


def pass_at(rows, k: int | None = None, *, min_k: int = 4, unanimous_short: bool = False,
            task_key=None) -> PassAt:
    """pass@1, pass^k and pass@k of graded rows, grouped by task. See the module docstring."""
    _check_k(k, min_k)
    if task_key is None and callable(getattr(rows, "_pass_tally", None)):   # a run: its own (Arrow) tally
        return pass_at_of_tally(rows._pass_tally(), k, min_k=min_k, unanimous_short=unanimous_short)
    rows = as_rows(rows)
    return pass_at_of_tally(tally_rows(rows, task_key), k, min_k=min_k, unanimous_short=unanimous_short)


def _per_task_k(ns, cs, k: int, unanimous_short: bool):
    """pass^k and pass@k of every task that counts, in task order, and how each counted (1: has
    k rows, 2: a unanimous shorter group, 0: left out). Computed once per distinct (n, c) pair:
    a million rows of k=4 have 250,000 tasks but at most 15 pairs."""
    pairs, inverse = np.unique(np.stack([ns, cs]), axis=1, return_inverse=True)
    inverse = inverse.reshape(-1)
    pow_u, atk_u, kind_u = [], [], []
    for n, c in zip(pairs[0].tolist(), pairs[1].tolist()):
        if n >= k:
            total = math.comb(n, k)
            pow_u.append(math.comb(c, k) / total)
            atk_u.append(1.0 - math.comb(n - c, k) / total)
            kind_u.append(1)
        elif unanimous_short and (c == 0 or c == n):
            pow_u.append(float(c == n))
            atk_u.append(float(c == n))
            kind_u.append(2)
        else:
            pow_u.append(0.0)
            atk_u.append(0.0)
            kind_u.append(0)
    kinds = np.asarray(kind_u, dtype=np.int8)[inverse]
    counted = kinds > 0
    return (np.asarray(pow_u)[inverse][counted], np.asarray(atk_u)[inverse][counted], kinds)


def pass_at_of_tally(tally: PassTally, k: int | None = None, *, min_k: int = 4,
                     unanimous_short: bool = False) -> PassAt:
    """The ``PassAt`` of a tally (``pass_at_tally.tally_rows`` or ``pass_at_arrow.tally_table``)."""
    _check_k(k, min_k)
    tasks, sizes, passed = tally.sorted_tasks()  # sorted: row order never changes an interval
    multi = sorted(s for s in sizes if s >= 2)
    k_given = k is not None
    if k is None:
        k = multi[0] if multi else 1

    ns, cs = np.asarray(sizes, dtype=np.int64), np.asarray(passed, dtype=np.int64)
    rates = cs / np.where(ns > 0, ns, 1)      # int64 -> float64 then divide: Python's c / n exactly
    per_task = dict(zip(tasks, rates.tolist()))
    p1 = _mean(rates) if tasks else None
    ci = bootstrap_ci(rates) if tasks else None

    pow_vals, atk_vals, n_at_k, n_imputed = [], [], 0, 0
    if k >= min_k and tasks:
        pow_vals, atk_vals, kinds = _per_task_k(ns, cs, k, unanimous_short)
        n_at_k, n_imputed = int((kinds == 1).sum()), int((kinds == 2).sum())
    p_pow = _mean(pow_vals) if len(pow_vals) else None
    p_atk = _mean(atk_vals) if len(atk_vals) else None

    notes = build_notes(
        tally, n_groups=len(tasks), k=k, k_given=k_given, min_k=min_k, multi_sizes=multi, sizes=sizes,
        n_at_k=n_at_k, n_imputed=n_imputed, has_interval=ci is not None, min_tasks=MIN_BOOTSTRAP_TASKS)
    return PassAt(
        k=k, pass_at_1=p1, pass_pow_k=p_pow, pass_at_k=p_atk, n_groups=len(tasks),
        n_rows=sum(sizes), n_groups_at_k=n_at_k, n_groups_imputed=n_imputed,
        n_partial=tally.n_partial, per_task=per_task, note="; ".join(notes),
        config=build_config(tally, n_tasks=len(tasks), k=k),
        ci95=ci, pass_pow_k_ci95=bootstrap_ci(pow_vals) if len(pow_vals) else None,
        pass_at_k_ci95=bootstrap_ci(atk_vals) if len(atk_vals) else None)
