"""Is run B different from run A? Paired by task, with a bootstrap interval.

``compare_runs(a, b, metric="pass_at_1")`` reduces each run to one value per task (``scenario_id``,
else ``task_id``, else prompt), keeps the tasks both runs have, and bootstraps the mean of
the per-task differences (B - A). Tasks only one side has are counted and dropped; with no
shared task at all it falls back to an unpaired bootstrap and says so. Pin the task set
(``simulate(tasks=base)``) to keep every pair.

``delta_report(before, after)`` is the before/after verdict on pass@1 and every marker both
runs carry, with the re-run noise band (from ``lineage.eval_run``), a power check (the
smallest change this many tasks can detect) and a ceiling check.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .intervals import bootstrap_means, normal_quantile, tail_index
from .pass_at.estimate import as_rows, binary_reward, task_key_of
from .variance import eval_variance, noise_band, split_runs

__all__ = ["compare_runs", "task_values", "delta_report", "DeltaReport", "format_delta_report"]

RESAMPLES = 2000


def _row_value(row: dict, metric):
    if callable(metric):
        return metric(row)
    if metric == "pass_at_1":
        return binary_reward(row)
    if metric == "reward":
        value = row.get("reward")
    elif isinstance(metric, str) and metric.startswith("marker:"):
        value = (row.get("markers") or {}).get(metric[7:])
    else:
        raise ValueError(f"metric must be 'reward', 'pass_at_1', 'marker:<name>' or a callable, got {metric!r}")
    return None if isinstance(value, bool) or not isinstance(value, (int, float)) else value


def task_values(rows, metric="reward") -> dict:
    """``{task: mean of the metric over the task's rows}``, tasks without a value left out."""
    sums: dict = {}
    for row in as_rows(rows):
        value = _row_value(row, metric)
        if value is not None:
            sums.setdefault(str(task_key_of(row)), []).append(value)
    return {t: math.fsum(v) / len(v) for t, v in sums.items()}


def _p_value(means: np.ndarray) -> float:
    below, above = int((means <= 0).sum()), int((means >= 0).sum())
    return min(1.0, 2.0 * (min(below, above) + 1) / (len(means) + 1))


def _unpaired_means(xa: list, xb: list, seed: int, n_boot: int = RESAMPLES) -> np.ndarray:
    """Sorted differences of resampled means (B - A), each side resampled on its own."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(xa, dtype=float), np.asarray(xb, dtype=float)
    ma = a[rng.integers(0, len(a), size=(n_boot, len(a)))].mean(axis=1)
    mb = b[rng.integers(0, len(b), size=(n_boot, len(b)))].mean(axis=1)
    return np.sort(mb - ma)


def _verdict(ci) -> str:
    if ci is None:
        return "insufficient_data"
    if ci[0] > 0:
        return "improved"
    if ci[1] < 0:
        return "regressed"
    return "no_difference_detected"


def compare_runs(a, b, *, metric="pass_at_1", n_boot: int = RESAMPLES, seed: int = 0, min_paired: int = 5,
                 level: float = 0.95) -> dict:
    """Paired-by-task bootstrap comparison of ``metric`` between row sets ``a`` and ``b``.

    ``metric``: ``"pass_at_1"`` (the default: binary rewards, the pass rate the docs compare),
    ``"reward"``, ``"marker:<name>"`` or a callable row -> number. ``n_boot`` resamples, seeded by
    ``seed``; an interval needs at least ``min_paired`` tasks (each side, when unpaired).
    """
    if not 0 < level < 1:
        raise ValueError(f"compare_runs: level must be in (0, 1), e.g. 0.95, got {level!r}")
    for name, value, low in (("n_boot", n_boot, 100), ("min_paired", min_paired, 2)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"compare_runs: {name} is an int >= {low}; got {value!r}")
    va, vb = task_values(a, metric), task_values(b, metric)
    shared = sorted(set(va) & set(vb))
    union = set(va) | set(vb)
    name = getattr(metric, "__name__", "metric") if callable(metric) else metric
    out = {"metric": name, "paired": bool(shared), "n_paired": len(shared),
           "n_only_a": len(set(va) - set(vb)), "n_only_b": len(set(vb) - set(va)),
           "paired_share": (len(shared) / len(union)) if union else 0.0, "level": level}
    ci, p = None, None
    if shared:
        xa, xb = [va[t] for t in shared], [vb[t] for t in shared]
        diffs = [y - x for x, y in zip(xa, xb)]
        n_used = len(shared)
        if n_used >= min_paired:
            if all(d == diffs[0] for d in diffs):
                means = np.full(n_boot, diffs[0])
            else:
                means = bootstrap_means(diffs, n_boot, seed)
            lo_i = tail_index(n_used, n_boot, level)
            ci, p = (float(means[lo_i]), float(means[n_boot - 1 - lo_i])), _p_value(means)
    else:
        xa, xb = [va[t] for t in sorted(va)], [vb[t] for t in sorted(vb)]
        n_used = len(xa) + len(xb)
        if min(len(xa), len(xb)) >= min_paired:
            means = _unpaired_means(xa, xb, seed, n_boot)
            lo_i = tail_index(min(len(xa), len(xb)), n_boot, level)
            ci, p = (float(means[lo_i]), float(means[RESAMPLES - 1 - lo_i])), _p_value(means)
    mean_a = math.fsum(xa) / len(xa) if xa else None
    mean_b = math.fsum(xb) / len(xb) if xb else None
    delta = mean_b - mean_a if mean_a is not None and mean_b is not None else None
    out.update(n_used=n_used, mean_a=mean_a, mean_b=mean_b, delta=delta,
               ci95=list(ci) if ci else None, p_value=p, verdict=_verdict(ci))
    if not union:
        note = f"neither run has a value for {name}; grade both runs first"
    elif not shared:
        note = ("no shared tasks: compared unpaired; pin the task set with simulate(tasks=...) "
                "to pair every task")
    else:
        note = f"paired on {len(shared)} task(s)"
        if out["n_only_a"] or out["n_only_b"]:
            note += (f"; dropped {out['n_only_a']} only in a and {out['n_only_b']} only in b "
                     f"(pin the task set with simulate(tasks=...) to keep them)")
    if ci is None and union:
        note += f"; fewer than {min_paired} paired tasks: no interval (min_paired={min_paired})"
    out["note"] = note
    return out


@dataclass
class DeltaReport:
    verdict: str                       # IMPROVED / REGRESSED / NO DIFFERENCE / UNCONFIRMED ... / TOO FEW TASKS
    main: dict                         # compare_runs(before, after, metric="pass_at_1")
    markers: dict = field(default_factory=dict)   # marker name -> compare_runs dict
    run_std: float | None = None
    noise_band: float | None = None
    n_runs_before: int = 1
    n_runs_after: int = 1
    min_detectable: float | None = None
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "main": self.main, "markers": self.markers,
                "run_std": self.run_std, "noise_band": self.noise_band,
                "n_runs_before": self.n_runs_before, "n_runs_after": self.n_runs_after,
                "min_detectable": self.min_detectable, "notes": list(self.notes)}

    def __str__(self) -> str:
        return format_delta_report(self)


def _line(label: str, c: dict) -> str:
    if c["mean_a"] is None or c["mean_b"] is None:
        return f"{label} n/a ({c['note']})"
    ci = c["ci95"]
    span = f" [{ci[0]:+.3f}..{ci[1]:+.3f}]" if ci else ""
    word = "flat" if not ci or (ci[0] <= 0 <= ci[1]) else ("up" if ci[0] > 0 else "down")
    count = f"{c['n_paired']} paired" if c["paired"] else f"{c['n_used']} tasks, unpaired"
    return f"{label} {c['mean_a']:.3f} -> {c['mean_b']:.3f} {c['delta']:+.3f}{span} {word} ({count})"


def format_delta_report(report: DeltaReport) -> str:
    """Text of a delta report: verdict and pass@1 on the first line, markers and checks below."""
    lines = [f"{report.verdict}: {_line('pass_at_1', report.main)}"]
    lines += [f"  {_line('marker ' + name, c)}" for name, c in report.markers.items()]
    lines += [f"  {note}" for note in report.notes]
    return "\n".join(lines)


def _marker_names(rows) -> set:
    return {str(n) for r in rows if isinstance(r.get("markers"), dict) for n in r["markers"]}


def delta_report(before, after, *, level: float = 0.95) -> DeltaReport:
    """Before/after verdict on pass@1 and shared markers, with noise band, power and ceiling checks."""
    rows_a, rows_b = as_rows(before), as_rows(after)
    main = compare_runs(rows_a, rows_b, metric="pass_at_1", min_paired=3, level=level)
    markers = {name: compare_runs(rows_a, rows_b, metric=f"marker:{name}", min_paired=3, level=level)
               for name in sorted(_marker_names(rows_a) & _marker_names(rows_b))}
    report = DeltaReport(verdict="NO DIFFERENCE", main=main, markers=markers)
    runs_a, runs_b = len(split_runs(rows_a)), len(split_runs(rows_b))
    report.n_runs_before, report.n_runs_after = runs_a, runs_b
    reports = [eval_variance(r) for r, n in ((rows_a, runs_a), (rows_b, runs_b)) if n >= 2]
    sides = [(s.run_std, s.df) for s in reports if s.run_std is not None and s.df is not None]  # set together
    if sides:
        df = sum(s_df for _, s_df in sides)
        report.run_std = math.sqrt(math.fsum(std ** 2 * s_df for std, s_df in sides) / df)
        report.noise_band = noise_band(report.run_std, runs_a, runs_b, df, level)
        report.notes.append(f"noise band +/-{report.noise_band:.3f} from re-runs "
                            f"(run_std {report.run_std:.3f}, {runs_a} vs {runs_b} runs)")
    ci, delta = main["ci95"], main["delta"]
    if ci is None:
        report.verdict = "TOO FEW TASKS"
        report.notes.append("fewer than 3 tasks with pass@1 on both sides; grade both runs on more tasks")
        return report
    if main["paired"] and main["n_paired"] >= 2:
        va, vb = task_values(rows_a, "pass_at_1"), task_values(rows_b, "pass_at_1")
        diffs = [vb[t] - va[t] for t in sorted(set(va) & set(vb))]
        mu = math.fsum(diffs) / len(diffs)
        sd = math.sqrt(math.fsum((d - mu) ** 2 for d in diffs) / (len(diffs) - 1))
        z = normal_quantile(0.5 + level / 2) + normal_quantile(0.8)
        report.min_detectable = z * sd / math.sqrt(len(diffs))
    moved = ci[0] > 0 or ci[1] < 0
    word = "IMPROVED" if delta > 0 else "REGRESSED"
    if moved and report.noise_band is not None:
        report.verdict = word if abs(delta) > report.noise_band else "NO DIFFERENCE"
        if report.verdict == "NO DIFFERENCE":
            report.notes.append("the interval excludes 0 but the change is inside the re-run noise band")
    elif moved:
        report.verdict = f"UNCONFIRMED ({word})"
        report.notes.append("one run per side: replay with simulate(tasks=..., runs=3) to measure the "
                            "re-run noise before calling this real")
    if not moved and report.min_detectable:
        report.notes.append(f"power: with {main['n_paired']} paired tasks the smallest change this can "
                            f"detect is about {report.min_detectable:.3f} (80% power)")
    if main["mean_a"] is not None and (main["mean_a"] >= 0.95 or main["mean_a"] <= 0.05):
        report.notes.append(f"ceiling: before is at {main['mean_a']:.3f}, so there is little room to "
                            f"move; use harder tasks")
    if not main["paired"] or main["n_only_a"] or main["n_only_b"]:
        report.notes.append(main["note"])
    return report
