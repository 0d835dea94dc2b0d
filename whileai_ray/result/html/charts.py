"""The SVG charts the HTML report adds to the notebook view's bar chart (``notebook.metrics_chart``).

Inline SVG text, no library and no script: sorted horizontal bars, small line charts, a heat
map and a delta plot around zero. Same palette and escaping as the notebook view
(``notebook._BAR_COLORS``, ``notebook._esc``), so a chart reads the same in both places.
"""
from __future__ import annotations

from .notebook import _BAR_COLORS, _esc

__all__ = ["hbars", "line_chart", "heat_map_svg", "delta_plot", "color"]

FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def color(i: int) -> str:
    return _BAR_COLORS[i % len(_BAR_COLORS)]


def _svg(width: float, height: float, title: str, body: list) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" {FONT} role="img"><title>{_esc(title)}</title>'
            + "".join(body) + "</svg>")


def hbars(items: list, *, title: str, scale: float | None = None, width: int = 480, fill: str | None = None,
          label_w: int = 170, label_chars: int = 30) -> str:
    """One horizontal bar per ``(label, value, note)``, in the order given; ``scale`` is the value
    of a full bar (the largest value when None). ``note`` is printed after the bar."""
    if not items:
        return ""
    top = max((float(v) for _, v, _ in items), default=0.0)
    scale = scale or top or 1.0
    row_h, head = 18, 20
    plot_w = width - label_w - 90
    body = [f'<text x="0" y="13" font-size="12" font-weight="600">{_esc(title)}</text>']
    for i, (label, value, note) in enumerate(items):
        y = head + i * row_h
        w = max(0.0, min(1.0, float(value) / scale)) * plot_w
        body.append(f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end">{_esc(label, label_chars)}'
                    f'<title>{_esc(label, 400)}</title></text>'
                    f'<rect x="{label_w}" y="{y + 2}" width="{plot_w}" height="13" fill="#eef1f5"/>'
                    f'<rect x="{label_w}" y="{y + 2}" width="{w:.1f}" height="13" fill="{fill or color(0)}"/>'
                    f'<text x="{label_w + plot_w + 6}" y="{y + 12}">{_esc(note, 40)}</text>')
    return _svg(width, head + len(items) * row_h + 4, title, body)


def _ticks(top: float) -> list:
    if top <= 0:
        return [0.0]
    step = 10 ** len(str(int(top))) / 10 if top >= 1 else 0.25
    while top / step > 5:
        step *= 2
    n = int(top // step) + 1
    return [i * step for i in range(n + 1)]


def line_chart(series: dict, *, title: str, x_label: str, width: int = 285, height: int = 170) -> str:
    """Lines of ``{label: [(x, y), ...]}`` on shared axes from 0, one colour per label."""
    points = [p for pts in series.values() for p in pts]
    if not points:
        return ""
    left, right, top, bottom = 40, 10, 24, 30
    pw, ph = width - left - right, height - top - bottom
    x_max = max(x for x, _ in points) or 1
    y_ticks = _ticks(max(y for _, y in points))
    y_max = y_ticks[-1] or 1

    def at(x, y):
        return left + pw * x / x_max, top + ph * (1 - y / y_max)

    body = [f'<text x="0" y="13" font-size="12" font-weight="600">{_esc(title)}</text>']
    for t in y_ticks:
        _, y = at(0, t)
        body.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e3e6ea"/>'
                    f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>')
    body.append(f'<text x="{left + pw / 2:.0f}" y="{height - 4}" text-anchor="middle" fill="#555">'
                f'{_esc(x_label)} (0 to {x_max:g})</text>')
    for i, (label, pts) in enumerate(series.items()):
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (at(*p) for p in pts))
        body.append(f'<polyline points="{path}" fill="none" stroke="{color(i)}" stroke-width="2">'
                    f'<title>{_esc(label)}</title></polyline>')
        if len(series) > 1:
            body.append(f'<rect x="{left + 8 + 90 * i}" y="{top + 2}" width="9" height="9" fill="{color(i)}"/>'
                        f'<text x="{left + 20 + 90 * i}" y="{top + 10}">{_esc(label, 12)}</text>')
    return _svg(width, height, title, body)


def _heat(rate: float) -> str:
    """White (no failures) to red (all failed)."""
    r, g, b = 255, int(255 - 170 * rate), int(255 - 190 * rate)
    return f"rgb({r},{g},{b})"


def heat_map_svg(hm: dict, *, title: str) -> str:
    """The failure-rate grid of ``failure_breakdown.heat_map``: one square per (y, x) value pair,
    coloured by failure rate and labelled ``failed/n``."""
    xs, ys = hm["xs"], hm["ys"]
    cw, ch, left, top = 62, 26, 150, 64
    width, height = left + cw * len(xs) + 10, top + ch * len(ys) + 10
    body = [f'<text x="0" y="13" font-size="12" font-weight="600">{_esc(title)}</text>',
            f'<text x="{left}" y="30" fill="#555">{_esc(hm["x"])} \u2192</text>',
            f'<text x="4" y="{top - 6}" fill="#555">{_esc(hm["y"])} \u2193</text>']
    for j, x in enumerate(xs):
        cx = left + cw * j + cw / 2
        body.append(f'<text x="{cx:.0f}" y="{top - 6}" text-anchor="middle">{_esc(x, 10)}'
                    f'<title>{_esc(x, 200)}</title></text>')
    for i, y in enumerate(ys):
        yy = top + ch * i
        body.append(f'<text x="{left - 6}" y="{yy + 17}" text-anchor="end">{_esc(y, 24)}'
                    f'<title>{_esc(y, 200)}</title></text>')
        for j, x in enumerate(xs):
            g = hm["cells"].get((y, x))
            xx = left + cw * j
            if g is None:
                body.append(f'<rect x="{xx}" y="{yy}" width="{cw - 2}" height="{ch - 2}" fill="#f4f5f7"/>')
                continue
            body.append(f'<rect x="{xx}" y="{yy}" width="{cw - 2}" height="{ch - 2}" fill="{_heat(g.rate)}">'
                        f'<title>{_esc(y)} / {_esc(x)}: {g.failed} of {g.n} failed</title></rect>'
                        f'<text x="{xx + cw / 2 - 1:.0f}" y="{yy + 17}" text-anchor="middle">{g.failed}/{g.n}</text>')
    return _svg(width, height, title, body)


def delta_plot(items: list, *, title: str, width: int = 460) -> str:
    """Differences (B - A) with their intervals around a zero line: ``(label, delta, (lo, hi) | None)``."""
    items = [it for it in items if it[1] is not None]
    if not items:
        return ""
    span = max([abs(it[1]) for it in items] + [abs(v) for it in items if it[2] for v in it[2]] + [0.05])
    span = min(1.0, span * 1.15)
    label_w, row_h, head = 150, 24, 44
    pw = width - label_w - 20
    zero = label_w + pw / 2

    def at(v):
        return zero + (pw / 2) * max(-1.0, min(1.0, v / span))

    height = head + row_h * len(items) + 6
    body = [f'<text x="0" y="13" font-size="12" font-weight="600">{_esc(title)}</text>',
            f'<line x1="{zero:.1f}" x2="{zero:.1f}" y1="{head - 10}" y2="{height - 4}" stroke="#999"/>',
            f'<text x="{at(-span):.0f}" y="{head - 12}" text-anchor="start">{-span:+.2f}</text>'
            f'<text x="{zero:.0f}" y="{head - 12}" text-anchor="middle">0</text>'
            f'<text x="{at(span):.0f}" y="{head - 12}" text-anchor="end">{span:+.2f}</text>']
    for i, (label, delta, ci) in enumerate(items):
        y = head + row_h * i + row_h / 2
        fill = "#54a24b" if ci and ci[0] > 0 else "#e45756" if ci and ci[1] < 0 else "#4c78a8"
        body.append(f'<text x="{label_w - 6}" y="{y + 4:.0f}" text-anchor="end">{_esc(label, 24)}</text>')
        if ci:
            body.append(f'<line x1="{at(ci[0]):.1f}" x2="{at(ci[1]):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                        f'stroke="{fill}" stroke-width="3"/>')
        body.append(f'<circle cx="{at(delta):.1f}" cy="{y:.1f}" r="5" fill="{fill}">'
                    f'<title>{_esc(label)}: {delta:+.3f}</title></circle>')
    return _svg(width, height, title, body)
