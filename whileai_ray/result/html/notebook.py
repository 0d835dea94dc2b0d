"""Notebook helpers: an HTML view of a run, an inline SVG chart, and a live progress bar.

Nothing here imports Ray or a plotting library; everything is plain HTML/SVG text.

* ``html_view(data)`` -- what a notebook shows for a ``SimulationData`` (its ``_repr_html_``):
  a summary table, the ``pass_at`` line, a chart of pass@1 / pass@k and coverage, the
  warnings, and the first rows as a table. Every piece of row text is HTML-escaped.
* ``metrics_chart(runs)`` -- an inline SVG bar chart of pass@1, pass@k, pass^k (with their
  95% intervals as whiskers) and pairwise coverage, for one run or ``{label: run}``.
* ``notebook_progress()`` -- an ``on_progress=`` callable that draws one progress bar and
  updates it in place (``IPython.display``); outside IPython it prints the progress line.
* ``parse_progress_line(text)`` -- the numbers of the last progress line in a log (a Ray
  Job's logs, say), in the ``on_progress`` dict's keys, for watching a submitted run.
"""
from __future__ import annotations

import html
import re
import sys
from typing import Any, Callable

from ..progress.lines import format_line

__all__ = ["html_view", "metrics_chart", "Chart", "NotebookProgress", "notebook_progress",
           "progress_html", "parse_progress_line"]

ROW_COLUMNS = ("prompt", "tier", "tools_used", "final_text", "reward")
TEXT_CHARS = 160
_BAR_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2")


def _esc(value, limit: int = TEXT_CHARS) -> str:
    """``value`` as escaped text, cut to ``limit`` characters (an ellipsis marks the cut)."""
    if value is None:
        return ""
    if isinstance(value, float):
        text = f"{value:.3g}"
    elif isinstance(value, (list, tuple)):
        text = ", ".join(str(v) for v in value)
    else:
        text = str(value)
    if len(text) > limit:
        text = text[:limit - 1] + "\u2026"
    return html.escape(text, quote=True)


def _pct(value) -> str:
    return "n/a" if value is None else f"{value:.0%}"


# ------------------------------------------------------------------ chart
class Chart:
    """An SVG chart a notebook displays inline (``_repr_html_``); ``.svg`` is the markup."""

    def __init__(self, svg: str):
        self.svg = svg

    def _repr_html_(self) -> str:
        return self.svg

    def __str__(self) -> str:
        return self.svg


def _run_bars(data) -> list:
    """``[(label, value, ci95 or None)]`` for one run: pass@1, pass@k, pass^k, coverage."""
    pa = data.pass_at
    coverage = getattr(data, "coverage", None)
    pairwise = coverage.get("pairwise") if isinstance(coverage, dict) else None
    pairwise = pairwise.get("fraction") if isinstance(pairwise, dict) else None
    if isinstance(pairwise, bool) or not isinstance(pairwise, (int, float)) or pairwise != pairwise:
        pairwise = None                 # a sidecar anyone can edit: only a number is drawn
    return [("pass@1", pa.pass_at_1, pa.ci95), (f"pass@{pa.k}", pa.pass_at_k, pa.pass_at_k_ci95),
            (f"pass^{pa.k}", pa.pass_pow_k, pa.pass_pow_k_ci95), ("pairwise coverage", pairwise, None)]


def metrics_chart(runs, *, title: str = "pass rates and coverage", width: int = 560) -> Chart:
    """A grouped SVG bar chart (values in [0, 1]) of one run or of ``{label: run}``.

    Each group is a metric (pass@1, pass@k, pass^k, pairwise coverage); each run is a
    coloured bar with its 95% interval as a whisker. A missing value is drawn as "n/a".
    """
    if not isinstance(runs, dict):
        runs = {"run": runs}
    if not runs:
        raise ValueError("metrics_chart(runs): pass a SimulationData or a non-empty {label: data} dict")
    series = {str(label): _run_bars(data) for label, data in runs.items()}
    groups = [bar[0] for bar in next(iter(series.values()))]
    height, top, bottom, left = 240, 28, 40, 36
    plot_h, plot_w = height - top - bottom, width - left - 10
    group_w = plot_w / len(groups)
    bar_w = min(40.0, (group_w - 16) / len(series))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 18 * len(series)}" '
           f'font-family="sans-serif" font-size="11" role="img"><title>{_esc(title)}</title>',
           f'<text x="{left}" y="16" font-size="13">{_esc(title)}</text>']
    for tick in (0.0, 0.5, 1.0):
        y = top + plot_h * (1 - tick)
        out.append(f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
                   f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{tick:.1f}</text>')
    for g, name in enumerate(groups):
        x0 = left + g * group_w + (group_w - bar_w * len(series)) / 2
        for s, (label, bars) in enumerate(series.items()):
            value, ci = bars[g][1], bars[g][2]
            x = x0 + s * bar_w
            color = _BAR_COLORS[s % len(_BAR_COLORS)]
            if value is None:
                out.append(f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h - 4:.1f}" '
                           f'text-anchor="middle" fill="#999">n/a</text>')
                continue
            v = min(1.0, max(0.0, float(value)))
            y = top + plot_h * (1 - v)
            out.append(f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{bar_w - 2:.1f}" height="{plot_h * v:.1f}" '
                       f'fill="{color}"><title>{_esc(label)} {_esc(name)} {v:.3f}</title></rect>'
                       f'<text x="{x + bar_w / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle">{v:.2f}</text>')
            if ci is not None:
                lo, hi = (top + plot_h * (1 - min(1.0, max(0.0, float(c)))) for c in ci)
                cx = x + bar_w / 2
                out.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{hi:.1f}" y2="{lo:.1f}" stroke="#333"/>')
        out.append(f'<text x="{left + (g + 0.5) * group_w:.1f}" y="{top + plot_h + 16:.1f}" '
                   f'text-anchor="middle">{_esc(name)}</text>')
    for s, label in enumerate(series):
        y = height + 18 * s - 4
        out.append(f'<rect x="{left}" y="{y - 9}" width="10" height="10" fill="{_BAR_COLORS[s % len(_BAR_COLORS)]}"/>'
                   f'<text x="{left + 14}" y="{y}">{_esc(label)}</text>')
    out.append("</svg>")
    return Chart("".join(out))


# -------------------------------------------------------------- html view
def _summary_pairs(data) -> list:
    cov = data.coverage or {}
    rows = data.rows()
    graded = sum(1 for r in rows if isinstance(r.get("reward"), (int, float)) and not isinstance(r.get("reward"), bool))
    fault_share = (cov.get("delivered") or {}).get("fault_share")
    return [("rows", len(rows)), ("stopped because", data.stopped_because), ("mode", data.mode),
            ("elapsed", f"{data.elapsed_seconds:.1f} s ({data.rows_per_second:.0f} rows/s)"),
            ("distinct prompts", cov.get("unique_prompts")), ("grid cells", cov.get("unique_cells")),
            ("pairwise coverage", _pct((cov.get("pairwise") or {}).get("fraction"))),
            ("behaviour signatures", cov.get("unique_signatures")),
            ("fault share", _pct(fault_share)), ("graded rows", graded)]


def _rows_table(rows, n: int) -> str:
    head = "".join(f"<th>{c}</th>" for c in ("#",) + ROW_COLUMNS)
    body = []
    for i, row in enumerate(rows[:n]):
        cells = "".join(f'<td style="text-align:left">{_esc(row.get(c))}</td>' for c in ROW_COLUMNS)
        body.append(f"<tr><td>{i}</td>{cells}</tr>")
    return f'<table class="wai-rows"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def html_view(data, n_rows: int = 5) -> str:
    """The HTML a notebook shows for a ``SimulationData``: summary, pass_at, chart, warnings,
    and the first ``n_rows`` exported rows (privileged fields are never shown)."""
    rows = data.rows()
    summary = "".join(f'<tr><th style="text-align:left">{_esc(k)}</th><td style="text-align:left">{_esc(v)}</td></tr>'
                      for k, v in _summary_pairs(data))
    parts = ['<div class="wai-simulation-data">',
             f"<b>SimulationData</b> &middot; {len(rows)} rows",
             f"<table>{summary}</table>",
             f"<p><code>{_esc(str(data.pass_at), limit=2000)}</code></p>"]
    if rows:
        parts.append(metrics_chart(data, title="pass rates (95% interval) and pairwise coverage").svg)
    if data.warnings:
        items = "".join(f"<li>{_esc(w, limit=2000)}</li>" for w in data.warnings)
        parts.append(f'<details open><summary>{len(data.warnings)} warning(s)</summary><ul>{items}</ul></details>')
    if rows:
        parts.append(f"<details open><summary>first {min(n_rows, len(rows))} of {len(rows)} rows</summary>"
                     f"{_rows_table(rows, n_rows)}</details>")
    parts.append("</div>")
    return "".join(parts)


# --------------------------------------------------------------- progress
def progress_html(snap: dict) -> str:
    """One progress bar (rows / cap) with the progress line under it."""
    rows, cap = int(snap.get("rows") or 0), int(snap.get("cap") or 0)
    frac = min(1.0, rows / cap) if cap > 0 else 0.0
    line = format_line({"situations": 0, "elapsed_s": 0, **snap, "rows": rows, "cap": cap})
    return (f'<div class="wai-progress"><div style="width:420px;height:14px;background:#eee;border-radius:3px">'
            f'<div style="width:{frac:.1%};height:14px;background:#4c78a8;border-radius:3px"></div></div>'
            f'<code>{_esc(line, limit=1000)}</code></div>')


def _ipython_display():
    """``IPython.display`` when running inside an IPython kernel/shell, else None."""
    ipython = sys.modules.get("IPython")
    if ipython is None or getattr(ipython, "get_ipython", lambda: None)() is None:
        return None
    import IPython.display as display   # lazy: IPython is there only in a notebook
    return display


class NotebookProgress:
    """An ``on_progress=`` callable: one HTML progress bar updated in place in a notebook,
    or one printed line per update elsewhere. ``snapshots`` keeps every dict it received;
    ``then`` (optional) is called with each dict too."""

    def __init__(self, then: Callable[[dict], Any] | None = None) -> None:
        if then is not None and not callable(then):
            raise TypeError(f"notebook_progress(then=...) must be callable(dict); got {type(then).__name__}")
        self.then = then
        self.snapshots: list = []
        self._handle: Any = None            # IPython's DisplayHandle once shown

    def __call__(self, snap: dict) -> None:
        self.snapshots.append(dict(snap))
        display = _ipython_display()
        if display is None:
            print(format_line({"situations": 0, "elapsed_s": 0, **snap}), flush=True)
        elif self._handle is None:
            self._handle = display.display(display.HTML(progress_html(snap)), display_id=True)
        else:
            self._handle.update(display.HTML(progress_html(snap)))
        if self.then is not None:
            self.then(snap)

    @property
    def last(self) -> dict | None:
        return self.snapshots[-1] if self.snapshots else None


def notebook_progress(then=None) -> NotebookProgress:
    """``wai.simulate(..., on_progress=wai.notebook_progress())``: a live progress bar."""
    return NotebookProgress(then)


_LINE = re.compile(r"(?P<rows>\d+)/(?P<cap>\d+) rollouts(?: \((?P<resumed>\d+) resumed\))?, "
                   r"(?P<situations>\d+) situations written")
_TAIL = {"rerolled": re.compile(r", (\d+) re-rolled"), "lost": re.compile(r", (\d+) lost")}
_ELAPSED = re.compile(r", (?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)? elapsed")


def parse_progress_line(text: str) -> dict | None:
    """The last progress line in ``text`` (e.g. a Ray Job's logs) as a dict with the
    ``on_progress`` keys it carries (rows, cap, resumed, situations, elapsed_s, rerolled,
    lost), or None when there is none yet."""
    if not isinstance(text, str):
        raise TypeError(f"parse_progress_line(text) needs a str; got {type(text).__name__}")
    found = None
    for line in text.splitlines():
        m = _LINE.search(line)
        if m:
            found = (m, line[m.start():])
    if found is None:
        return None
    m, line = found
    out: dict[str, int | float] = {"rows": int(m["rows"]), "cap": int(m["cap"]), "resumed": int(m["resumed"] or 0),
           "situations": int(m["situations"])}
    for key, pattern in _TAIL.items():
        hit = pattern.search(line)
        out[key] = int(hit.group(1)) if hit else 0
    hit = _ELAPSED.search(line)
    if hit:
        h, mnt, sec = (int(g or 0) for g in hit.groups())
        out["elapsed_s"] = float(h * 3600 + mnt * 60 + sec)
    return out
