"""The leaderboard view: pass@1, pass^k and pass@k for k = 1..K over N runs, with intervals.

Each run's numbers come from its pass@k tally (``run_index.RunIndex.tally``) through
``score.pass_at.pass_at_of_tally`` with an explicit k, so they equal ``data.pass_at`` of the
same rows at that k (the task-bootstrap 95% intervals included). K is the largest number of
graded tries any task of any run has (at most ``MAX_K``): past a task's size pass@k says
nothing about it. The chart is inline SVG: one colour per run, pass@k solid, pass^k dashed,
an interval as a thin vertical bar at each point.
"""
from __future__ import annotations

from ..result.html.notebook import _esc
from ..result.html.charts import color

__all__ = ["curves", "max_k", "table_html", "chart_svg"]

MAX_K = 16


def max_k(indexes: list) -> int:
    """The K of the comparison: the most graded rows any task has, 1 to ``MAX_K``."""
    sizes = [max(tally.sorted_tasks()[1], default=1) for tally in (ix.tally() for ix in indexes)]
    return max(1, min(MAX_K, max(sizes, default=1)))


def curves(index, k_max: int) -> list:
    """``[(k, PassAt at k)]`` for k = 1..k_max."""
    return [(k, index.pass_at(k)) for k in range(1, k_max + 1)]


def _cell(value, ci) -> str:
    if value is None:
        return '<td class="na">n/a</td>'
    interval = f'<br><span class="ci">[{ci[0]:.2f}..{ci[1]:.2f}]</span>' if ci is not None else ""
    return f"<td>{value:.3f}{interval}</td>"


def table_html(labels: list, all_curves: list, counts: list) -> str:
    """One line per run: rows, tasks, pass@1, then pass^k and pass@k for each k."""
    k_max = len(all_curves[0]) if all_curves else 0
    head = "".join(f"<th>pass^{k}</th><th>pass@{k}</th>" for k in range(2, k_max + 1))
    lines = []
    for i, (label, points, n) in enumerate(zip(labels, all_curves, counts)):
        first = points[0][1]
        cells = "".join(_cell(p.pass_pow_k, p.pass_pow_k_ci95) + _cell(p.pass_at_k, p.pass_at_k_ci95)
                        for _, p in points[1:])
        lines.append(f'<tr><td><span class="swatch" style="background:{color(i)}"></span>{_esc(label, 120)}</td>'
                     f"<td>{n}</td><td>{first.n_groups}</td>{_cell(first.pass_at_1, first.ci95)}{cells}</tr>")
    return (f'<div class="wide"><table class="numbers leaderboard"><thead><tr><th>run</th><th>rows</th><th>tasks</th>'
            f"<th>pass@1</th>{head}</tr></thead><tbody>{''.join(lines)}</tbody></table></div>")


def chart_svg(labels: list, all_curves: list, width: int = 640, height: int = 300) -> str:
    """pass@k (solid) and pass^k (dashed) against k for every run, intervals as bars."""
    k_max = len(all_curves[0]) if all_curves else 0
    if not k_max:
        return ""
    left, right, top, bottom = 44, 170, 26, 34
    pw, ph = width - left - right, height - top - bottom

    def at(k, y):
        x = left + (pw * (k - 1) / (k_max - 1) if k_max > 1 else pw / 2)
        return x, top + ph * (1 - y)

    body = ['<text x="0" y="14" font-size="12" font-weight="600">pass@k (solid) and pass^k (dashed) by k</text>']
    for t in (0, 0.25, 0.5, 0.75, 1.0):
        _, y = at(1, t)
        body.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e3e6ea"/>'
                    f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>')
    for k in range(1, k_max + 1):
        x, _ = at(k, 0)
        body.append(f'<text x="{x:.1f}" y="{top + ph + 14}" text-anchor="middle">{k}</text>')
    body.append(f'<text x="{left + pw / 2:.0f}" y="{height - 4}" text-anchor="middle" fill="#555">k (tries per task)</text>')
    for i, (label, points) in enumerate(zip(labels, all_curves)):
        c = color(i)
        for attr, ci_attr, dash in (("pass_at_k", "pass_at_k_ci95", ""), ("pass_pow_k", "pass_pow_k_ci95", ' stroke-dasharray="5 4"')):
            pts = []
            for k, p in points:
                value, ci = (p.pass_at_1, p.ci95) if k == 1 else (getattr(p, attr), getattr(p, ci_attr))
                if value is None:
                    continue
                x, y = at(k, value)
                pts.append(f"{x:.1f},{y:.1f}")
                if ci is not None:
                    _, y0 = at(k, ci[0])
                    _, y1 = at(k, ci[1])
                    body.append(f'<line class="ci" x1="{x:.1f}" x2="{x:.1f}" y1="{y0:.1f}" y2="{y1:.1f}" '
                                f'stroke="{c}" stroke-width="1"/>')
                body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{c}"/>')
            if pts:
                body.append(f'<polyline class="curve" points="{" ".join(pts)}" fill="none" stroke="{c}" '
                            f'stroke-width="2"{dash}><title>{_esc(label, 120)}: {attr.replace("_pow_", "^").replace("_at_", "@")}'
                            f'</title></polyline>')
        ly = top + 4 + 18 * i
        body.append(f'<rect x="{left + pw + 14}" y="{ly}" width="10" height="10" fill="{c}"/>'
                    f'<text x="{left + pw + 30}" y="{ly + 9}">{_esc(label, 22)}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="leaderboard-chart" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="system-ui, sans-serif" font-size="11" role="img">'
            f"<title>pass@k and pass^k by k</title>{''.join(body)}</svg>")
