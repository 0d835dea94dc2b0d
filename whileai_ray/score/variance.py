"""Re-run noise: how much one metric moves when the same task set is evaluated again.

One evaluation is a draw; three give a standard deviation (Lambert 2025, evaluation-variance
appendix). ``eval_variance`` takes either one row list that holds several runs (split by
``lineage.eval_run``, as ``simulate(runs=N)`` stamps it) or several runs, computes the
metric per run, and reports the spread:

* ``run_std`` -- sample standard deviation of the per-run means;
* ``noise_band`` -- ``t * sqrt(2) * run_std``: how far two single runs of the *same* agent
  can differ at the given level; a before/after change smaller than this is not real.

``noise_band(run_std, n_a, n_b, df, level)`` is the general form for comparing the mean of
``n_a`` runs with the mean of ``n_b`` runs: ``t_{df} * run_std * sqrt(1/n_a + 1/n_b)``
(a normal quantile when ``df`` is None).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from .intervals import normal_quantile, t_quantile
from .pass_at.estimate import as_rows, pass_at

__all__ = ["EvalVarianceReport", "eval_variance", "noise_band", "metric_value", "split_runs"]

METRICS = ("pass_at_1", "pass_at_k", "pass_pow_k", "reward")
STABLE_BAND = 0.02
NOISY_BAND = 0.05


def noise_band(run_std, n_a: int = 1, n_b: int = 1, df=None, level: float = 0.95):
    """Half-width a difference between two run means must exceed to be more than re-run noise."""
    if run_std is None:
        return None
    if isinstance(run_std, bool) or not isinstance(run_std, (int, float)) or run_std < 0:
        raise ValueError(f"noise_band: run_std must be a number >= 0, got {run_std!r}")
    for name, n in (("n_a", n_a), ("n_b", n_b)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"noise_band: {name} must be an int >= 1 (runs averaged), got {n!r}")
    if not 0 < level < 1:
        raise ValueError(f"noise_band: level must be in (0, 1), e.g. 0.95, got {level!r}")
    p = 0.5 + level / 2.0
    q = normal_quantile(p) if df is None else t_quantile(p, df)
    return q * run_std * math.sqrt(1.0 / n_a + 1.0 / n_b)


def _dig(row: dict, path: str):
    value: Any = row                 # a row's nested JSON, walked by ``path``
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def split_runs(rows, by=None) -> dict:
    """``{run label: rows}`` from one row list, by ``by`` (a dotted key or a callable);
    default ``lineage.eval_run``. Rows without the key are run 0."""
    by = by or "lineage.eval_run"
    runs: dict = {}
    for row in as_rows(rows):
        label = by(row) if callable(by) else _dig(row, by)
        runs.setdefault(0 if label is None else label, []).append(row)
    return {label: runs[label] for label in sorted(runs, key=lambda x: (str(type(x)), x))}


def metric_value(rows, metric="pass_at_1", k=None):
    """One number for one run: pass_at_1 / pass_at_k / pass_pow_k (via ``pass_at``), the mean
    numeric ``reward``, or ``metric(rows)`` for a callable."""
    if callable(metric):
        return metric(rows)
    if metric == "reward":
        values = [r.get("reward") for r in rows]
        values = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return math.fsum(values) / len(values) if values else None
    if metric in ("pass_at_1", "pass_at_k", "pass_pow_k"):
        return getattr(pass_at(rows, k), metric)
    raise ValueError(f"metric must be one of {', '.join(METRICS)} or a callable, got {metric!r}")


@dataclass
class EvalVarianceReport:
    metric: str
    n_runs: int
    runs: list = field(default_factory=list)          # run labels, in order
    means: list = field(default_factory=list)         # the metric per run (None when not computable)
    n_rows: list = field(default_factory=list)
    mean: float | None = None
    run_std: float | None = None
    df: int | None = None
    noise_band: float | None = None
    level: float = 0.95
    stability: str = "single_run"                     # single_run / deterministic / stable / noisy / unstable
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        shown = " ".join("n/a" if m is None else f"{m:.3f}" for m in self.means)
        head = f"eval variance of {self.metric} over {self.n_runs} run(s): {shown}"
        if self.run_std is None:
            return f"{head}; {self.stability}" + (f"; {self.note}" if self.note else "")
        body = (f" (mean {self.mean:.3f}, run_std {self.run_std:.3f}); noise band +/-{self.noise_band:.3f} "
                f"({round(self.level * 100)}%, t df={self.df} x sqrt2 x run_std): {self.stability}")
        return head + body + (f"; {self.note}" if self.note else "")


def eval_variance(*runs, metric="pass_at_1", by=None, level: float = 0.95) -> EvalVarianceReport:
    """Spread of ``metric`` across evaluation runs of one task set (see the module docstring)."""
    if not runs:
        raise TypeError("eval_variance needs rows: eval_variance(data.rows()) or eval_variance(run_a, run_b, ...)")
    if len(runs) == 1:
        split = split_runs(runs[0], by)
    else:
        if by is not None:
            raise ValueError("eval_variance: by= splits one row list; pass one list, or drop by= for several runs")
        split = {i: as_rows(r) for i, r in enumerate(runs)}
    name = getattr(metric, "__name__", "metric") if callable(metric) else metric
    k = None
    if metric == "pass_at_k" or metric == "pass_pow_k":
        k = pass_at(next(iter(split.values())) if split else []).k   # one k for every run
    means = [metric_value(rows, metric, k) for rows in split.values()]
    report = EvalVarianceReport(metric=name, n_runs=len(split), runs=list(split), means=means,
                                n_rows=[len(r) for r in split.values()], level=level)
    values = [m for m in means if m is not None]
    if len(values) < 2:
        report.mean = values[0] if values else None
        report.note = ("one evaluation is a draw; replay the task set with simulate(tasks=..., runs=3) "
                       "to measure the re-run noise")
        return report
    if max(values) == min(values):       # identical runs: exactly 0 (the float mean of 0.675 x 3 is not 0.675)
        report.mean, var = values[0], 0.0
    else:
        report.mean = math.fsum(values) / len(values)
        var = math.fsum((v - report.mean) ** 2 for v in values) / (len(values) - 1)
    report.run_std = math.sqrt(var)
    report.df = len(values) - 1
    report.noise_band = noise_band(report.run_std, 1, 1, report.df, level)
    if report.run_std == 0:
        report.stability = "deterministic"
        report.note = "identical runs: the agent answers the same way every time"
    elif report.noise_band <= STABLE_BAND:
        report.stability = "stable"
    elif report.noise_band <= NOISY_BAND:
        report.stability = "noisy"
    else:
        report.stability = "unstable"
    if len(values) == 2 and report.run_std > 0:
        report.note = "two runs give a weak spread estimate (t df=1); three or more are better"
    if len(values) < len(means):
        report.note = (report.note + "; " if report.note else "") + \
            f"{len(means) - len(values)} run(s) had no graded rows and are left out"
    return report
