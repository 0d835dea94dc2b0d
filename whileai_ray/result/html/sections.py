"""The sections of the HTML report, each a function ``runs -> HTML`` over ``[(label, data)]``.

``data`` is a ``SimulationData`` (fresh or loaded with ``wai.load``) or a ``ScoredData``;
what a kind of object does not carry (a ScoredData has no search record, a JSONL file without
its ``.meta.json`` has no coverage curve) is computed from the rows when it can be and said
to be missing when it cannot. Every text that comes from a run is escaped (``notebook._esc``),
numbers included: a ``.meta.json`` sidecar is a file anyone can edit, so a count read from it
is printed only when it is a number (``_number``), and a chart is drawn only from numbers.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any

from ...score.compare import delta_report
from .notebook import _esc, _pct, metrics_chart
from .. import failure_breakdown as fb
from .charts import delta_plot, heat_map_svg, hbars, line_chart

__all__ = ["summary", "pass_rates", "coverage", "failures", "causes", "warnings"]


def _is_number(value) -> bool:
    """A finite int or float (not a bool): what a count, a share or a time from a record can be."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _number(value, default=0) -> str:
    """A count from the run's record as escaped text: a number as it is, anything else (a
    crafted sidecar's string, say) escaped like any other text."""
    if value is None:
        value = default
    return str(value) if _is_number(value) else _esc(value, 80)


def _fraction(value):
    """A share in [0, 1] for ``_pct``, or None when the record holds no number there."""
    return float(value) if _is_number(value) else None


def _rows(data) -> list:
    return list(data.rows())


def _cov(data) -> dict:
    cov = getattr(data, "coverage", None)
    return cov if isinstance(cov, dict) else {}


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _n_distinct(rows, key) -> int:
    return len({key(r) for r in rows})


def _shape(row: dict) -> str:
    tools = row.get("tools_used")
    return "|".join(map(str, tools)) if isinstance(tools, list) and tools else "no tool"


def _summary_values(data) -> list:
    rows, cov = _rows(data), _cov(data)
    n_graded = sum(1 for r in rows if fb.graded(r))
    n_failed = sum(1 for r in rows if fb.failed(r))
    judge = getattr(data, "judge_name", None) or next((r.get("judge_name") for r in rows if r.get("judge_name")), None)
    elapsed = getattr(data, "elapsed_seconds", 0.0)
    elapsed = float(elapsed) if _is_number(elapsed) else 0.0
    pairwise = _fraction(_dict(cov.get("pairwise")).get("fraction"))
    fault_share = _fraction(_dict(cov.get("delivered")).get("fault_share"))
    if fault_share is None and rows:
        fault_share = sum(1 for r in rows if r.get("faults")) / len(rows)
    return [
        ("source", getattr(data, "path", "") or "(in memory)"),
        ("rows", len(rows)),
        ("stopped because", getattr(data, "stopped_because", None) if cov else "(not recorded)"),
        ("mode", getattr(data, "mode", None) and f"{data.mode} (repeats {getattr(data, 'rollouts_per_request', 1)}, "
                                                 f"{getattr(data, 'repeat_policy', 'none')})"),
        ("run id", cov.get("run_id")),
        ("agent", cov.get("agent_model") or (rows[0].get("model_version") if rows else None)),
        ("situation writer", getattr(data, "writer_model", None) or (rows[0].get("writer_model") if rows else None)),
        ("judge", judge),
        ("graded rows", f"{n_graded} ({n_failed} failed)" if n_graded else "0 (not graded)"),
        ("distinct prompts", cov.get("unique_prompts", _n_distinct(rows, lambda r: r.get("prompt")))),
        ("grid cells", cov.get("unique_cells", _n_distinct(rows, fb.cell_label))),
        ("pairwise coverage", _pct(pairwise)),
        ("fault share", _pct(fault_share)),
        ("elapsed", f"{elapsed:.1f} s ({len(rows) / elapsed:.0f} rows/s)" if elapsed > 0 else None),
        ("warnings", len(_list(getattr(data, "warnings", None)))),
    ]


def _list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else ([value] if value else [])


def summary(runs: list) -> str:
    values = [_summary_values(d) for _, d in runs]
    head = "".join(f"<th>{_esc(label, 80)}</th>" for label, _ in runs)
    body = []
    for i, (name, _) in enumerate(values[0]):
        cells = "".join(f"<td>{_esc(v[i][1], 300) if v[i][1] not in (None, '') else '&mdash;'}</td>"
                        for v in values)
        body.append(f"<tr><th>{_esc(name)}</th>{cells}</tr>")
    return f'<table class="summary"><thead><tr><th></th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _interval(value, ci) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" + (f" [{ci[0]:.3f}..{ci[1]:.3f}]" if ci else "")


def pass_rates(runs: list) -> str:
    pas = [(label, data.pass_at) for label, data in runs]
    table_rows = [
        ("pass@1", [_interval(p.pass_at_1, p.ci95) for _, p in pas]),
        ("pass@k", [f"k={p.k}: {_interval(p.pass_at_k, p.pass_at_k_ci95)}" for _, p in pas]),
        ("pass^k", [f"k={p.k}: {_interval(p.pass_pow_k, p.pass_pow_k_ci95)}" for _, p in pas]),
        ("tasks (at k)", [f"{p.n_groups} ({p.n_groups_at_k})" for _, p in pas]),
        ("graded rows", [str(p.n_rows) for _, p in pas]),
    ]
    head = "".join(f"<th>{_esc(label, 80)}</th>" for label, _ in pas)
    body = "".join(f"<tr><th>{name}</th>" + "".join(f"<td>{_esc(v)}</td>" for v in vals) + "</tr>"
                   for name, vals in table_rows)
    lines = "".join(f"<p><b>{_esc(label, 80)}</b> <code>{_esc(str(p), 2000)}</code></p>" for label, p in pas)
    chart = metrics_chart({label: data for label, data in runs},
                          title="pass rates with 95% intervals, and pairwise coverage").svg
    out = [f'<div class="two">{chart}<table class="numbers"><thead><tr><th></th>{head}</tr></thead>'
           f'<tbody>{body}</tbody></table></div>', lines]
    if len(runs) == 2:
        out.append(_paired_delta(runs))
    return "".join(out)


def _paired_delta(runs: list) -> str:
    (la, a), (lb, b) = runs
    report = delta_report(_rows(a), _rows(b))
    m = report.main
    items = [("pass@1", m["delta"], m["ci95"])] + [
        (f"marker {name}", c["delta"], c["ci95"]) for name, c in sorted(report.markers.items())]
    plot = delta_plot(items, title=f"{lb} minus {la}, paired by task (95% bootstrap interval)")
    return (f'<div class="delta"><h3>Paired delta: {_esc(lb, 80)} vs {_esc(la, 80)}</h3>'
            f'<p class="verdict-line">{_esc(report.verdict)}: {_esc(m["note"], 400)}</p>{plot}'
            f'<pre>{_esc(str(report), 4000)}</pre></div>')


CURVE_KEYS = (("unique_prompts", "distinct prompts"), ("unique_behavior_signatures", "behaviour signatures"),
              ("unique_cells", "grid cells"), ("unique_action_shapes", "action shapes"))


def _curve(data) -> list:
    """The run's coverage curve, or one rebuilt from the rows in run order (about 40 points)."""
    curve = _recorded_curve(data)
    if curve:
        return [{"n_rows": 0, **{k: 0 for k, _ in CURVE_KEYS}}] + curve
    rows = _rows(data)
    seen: dict[str, set[Any]] = {k: set() for k, _ in CURVE_KEYS}
    keys = {"unique_prompts": lambda r: r.get("prompt"),
            "unique_behavior_signatures": lambda r: r.get("behavior_signature"),
            "unique_cells": fb.cell_label, "unique_action_shapes": _shape}
    step, points = max(1, len(rows) // 40), [{"n_rows": 0, **{k: 0 for k, _ in CURVE_KEYS}}]
    for i, r in enumerate(rows, 1):
        for k, f in keys.items():
            seen[k].add(f(r))
        if i % step == 0 or i == len(rows):
            points.append({"n_rows": i, **{k: len(s) for k, s in seen.items()}})
    return points


def _recorded_curve(data) -> list:
    """The run's recorded coverage curve when every point is a dict of numbers, else [] (a
    crafted or damaged sidecar is ignored and the curve rebuilt from the rows)."""
    curve = getattr(data, "coverage_curve", None)
    if not isinstance(curve, list) or not curve:
        return []
    keys = ("n_rows",) + tuple(k for k, _ in CURVE_KEYS)
    ok = all(isinstance(p, dict) and all(_is_number(p.get(k, 0)) for k in keys) for p in curve)
    return [{k: p.get(k) or 0 for k in keys} for p in curve] if ok else []


def coverage(runs: list) -> str:
    curves = {label: _curve(d) for label, d in runs}
    charts = []
    for key, title in CURVE_KEYS:
        series = {label: [(p["n_rows"], p.get(key) or 0) for p in pts] for label, pts in curves.items()}
        charts.append(line_chart(series, title=title, x_label="rows landed"))
    rebuilt = [label for label, d in runs if not _recorded_curve(d)]
    note = (f'<p class="note">rebuilt from the rows in run order for {_esc(", ".join(rebuilt), 200)} '
            f"(no coverage curve recorded)</p>" if rebuilt else "")
    return f'<div class="grid4">{"".join(charts)}</div>{note}'


def _bars(groups: list, title: str, limit: int = 12, **kw) -> str:
    items = [(g.key, g.rate, f"{g.failed}/{g.n} ({g.rate:.0%})") for g in groups[:limit]]
    more = f'<p class="note">{len(groups) - limit} more not shown</p>' if len(groups) > limit else ""
    return hbars(items, title=title, scale=1.0, fill="#e45756", **kw) + more


def failures(runs: list) -> str:
    cols = []
    for label, data in runs:
        rows = _rows(data)
        if not any(fb.graded(r) for r in rows):
            cols.append(f'<div><h3>{_esc(label, 80)}</h3><p class="note">no graded rows: failures need a '
                        f"verdict; grade the run (data.grade(...), grader= or grade=True)</p></div>")
            continue
        hm = fb.heat_map(rows)
        parts = [f"<div><h3>{_esc(label, 80)}</h3>"]
        if hm:
            parts.append(heat_map_svg(hm, title=f"failure rate by {hm['y']} and {hm['x']}"))
        axes = fb.varying_axes(rows)
        title = "by grid cell: " + " \u00b7 ".join(axes or ["(one cell)"])
        parts.append(_bars(fb.by_cell(rows, axes), title, label_w=300, width=600, label_chars=52))
        parts.append(_bars(fb.by_tool(rows), "by tool"))
        parts.append(_bars(fb.by_fault(rows), "by fault kind"))
        parts.append(_bars(fb.by_arm(rows), "by arm (how the situation was chosen)"))
        cols.append("".join(parts) + "</div>")
    return ('<p class="note">A row fails when its reward is under 0.5; bars show failed / graded rows and '
            'the failure rate, worst first. The heat map crosses the two grid axes with the most values.</p>'
            f'<div class="cols{len(runs)}">{"".join(cols)}</div>')


def _count_bars(counts: object, title: str, fill: str) -> str:
    """Bars of ``{cause: count}`` (anything else: none); entries whose count is not a number are left out."""
    numbers = {str(k): v for k, v in _dict(counts).items() if _is_number(v) and v > 0}
    items = [(k, v, str(v)) for k, v in sorted(numbers.items(), key=lambda kv: (-kv[1], kv[0]))]
    return hbars(items, title=title, fill=fill) if items else ""


def causes(runs: list) -> str:
    cols = []
    for label, data in runs:
        ro = _dict(getattr(data, "search", None)).get("rollouts")
        ro = ro if isinstance(ro, dict) or ro is None else {}
        statuses = Counter(str(r.get("judge_status")) for r in _rows(data) if r.get("judge_status"))
        parts = [f"<div><h3>{_esc(label, 80)}</h3>"]
        if ro is None:
            parts.append('<p class="note">re-rolls and losses were not recorded with these rows '
                         "(a ScoredData, or a file without its .meta.json)</p>")
        else:
            parts.append(f'<p>{_number(ro.get("rerolled"))} re-rolled, {_number(ro.get("lost"))} lost, '
                         f'{_number(ro.get("timed_out"))} agent calls timed out, of {_number(ro.get("rows"))} rows</p>')
            parts.append(_count_bars(ro.get("rerolled_by"), "re-rolls by cause", "#f58518"))
            parts.append(_count_bars(ro.get("lost_by"), "lost rollouts by cause", "#b279a2"))
        if statuses:
            parts.append(_count_bars(dict(statuses), "judge status of the graded rows", "#4c78a8"))
        cols.append("".join(parts) + "</div>")
    return f'<div class="cols{len(runs)}">{"".join(cols)}</div>'


def warnings(runs: list) -> str:
    out = []
    for label, data in runs:
        items = _list(getattr(data, "warnings", None))
        body = "".join(f"<li>{_esc(w, 2000)}</li>" for w in items) or "<li>none</li>"
        out.append(f"<h3>{_esc(label, 80)}</h3><ul>{body}</ul>")
    return "".join(out)
