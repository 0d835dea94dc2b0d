"""The viewer's pages, rendered on the server: the list of runs, one run, one row, a comparison.

Every piece of text from a run (paths, row text, tool names, fault kinds, judge statuses) goes
through ``notebook._esc`` (``html.escape``, quotes included), as in the HTML report, and a row's
conversation is the report's own ``report_rows.render_row``. The style is the report's CSS and
the only script is ``SCRIPT`` below (inline; the page fetches nothing but its own server's
``/api/run``): the run page asks for the run's row count every 2 s and reloads when rows landed
(or, for a large run shown while it is read, when the whole run is read). The list reloads
itself every 2 s while a run on it is still being read.
"""
from __future__ import annotations

import time
from urllib.parse import urlencode

from ..result.html.notebook import _esc
from ..result.html.page import CSS as REPORT_CSS
from ..result.html.rows import render_row
from .filters import FILTERS, PAGE_ROWS, options

__all__ = ["document", "list_page", "run_page", "row_page", "compare_page", "message_page", "link"]

CSS = REPORT_CSS + """
nav a.here { color: var(--ink); }
table.runs td, table.rows td, table.leaderboard td { white-space: nowrap; }
table.rows td.prompt { white-space: normal; max-width: 640px; }
.ci { color: var(--muted); font-size: 12px; }
.na { color: var(--muted); }
form.filters { display: flex; gap: 12px; flex-wrap: wrap; align-items: end; margin: 0 0 10px; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
.pager { display: flex; gap: 14px; margin: 8px 0; }
.wide { overflow-x: auto; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px; }
"""

SCRIPT = """
(function () {
  var main = document.querySelector('main[data-poll]');
  if (!main) { return; }
  var shown = parseInt(main.dataset.rows, 10), partial = main.dataset.ready === '0';
  function poll() {
    fetch(main.dataset.poll, {credentials: 'same-origin', cache: 'no-store'})
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (info) {
        if (info && (partial ? info.ready : info.rows > shown)) { location.reload(); return; }
        setTimeout(poll, 2000);
      })
      .catch(function () { setTimeout(poll, 2000); });
  }
  setTimeout(poll, 2000);
})();
"""


def link(route: str, **params) -> str:
    """An escaped URL of this server: ``route?params`` (lists give repeated parameters)."""
    pairs = [(k, v) for k, vs in params.items() for v in (vs if isinstance(vs, list) else [vs]) if v not in (None, "")]
    return _esc(route + ("?" + urlencode(pairs) if pairs else ""), 4000)


def document(title: str, subtitle: str, body: str, main_attrs: str = "", refresh: bool = False) -> str:
    """A whole page: the report's style, a top bar, ``body`` and the poll script."""
    again = '<meta http-equiv="refresh" content="2">' if refresh else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">" + again +
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<link rel=\"icon\" href=\"data:,\">"
            f"<title>{_esc(title, 200)}</title><style>{CSS}</style></head><body>"
            f"<header><h1>{_esc(title, 200)}</h1><p>{_esc(subtitle, 400)}</p></header>"
            f'<nav><a href="/">All runs</a></nav><main{main_attrs}>{body}</main>'
            f"<script>{SCRIPT}</script></body></html>\n")


def message_page(title: str, text: str) -> str:
    return document(title, "whileai-ray view", f'<section><p>{_esc(text, 2000)}</p></section>')


def _p1(pa) -> str:
    if pa is None or pa.pass_at_1 is None:
        return '<span class="na">n/a</span>'
    ci = f' <span class="ci">[{pa.ci95[0]:.2f}..{pa.ci95[1]:.2f}]</span>' if pa.ci95 is not None else ""
    return f"{pa.pass_at_1:.3f}{ci}"


def list_page(root: str, runs: list, cut: bool) -> str:
    """``runs``: ``[{"rel", "rows", "mode", "pass_at", "mtime", "copy", "error"}]``."""
    lines = []
    for run in runs:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(run["mtime"])) + " UTC"
        if run.get("error"):
            cells = f'<td colspan="3" class="na">{_esc(run["error"], 300)}</td>'
        elif "reading" in run:
            size = f" ({run['reading'] / 2**20:.0f} MB)" if run["reading"] else ""
            cells = f'<td colspan="3" class="na reading">reading the run{size}\u2026</td>'
        else:
            cells = f'<td>{_esc(run["mode"], 40)}</td><td>{run["rows"]}</td><td>{_p1(run["pass_at"])}</td>'
        copy = f' <span class="badge">+ Parquet copy</span>' if run.get("copy") else ""
        lines.append(f'<tr><td><input type="checkbox" name="path" value="{_esc(run["rel"], 1000)}"></td>'
                     f'<td><a class="run" href="{link("/run", path=run["rel"])}">{_esc(run["rel"], 300)}</a>{copy}</td>'
                     f"{cells}<td>{when}</td></tr>")
    note = f'<p class="note">More runs than the viewer lists; only the first {len(runs)} are shown.</p>' if cut else ""
    body = ('<section id="runs"><h2>Runs</h2><form method="get" action="/compare">'
            '<table class="runs numbers"><thead><tr><th></th><th>file</th><th>mode</th><th>rows</th>'
            '<th>pass@1 [95% interval]</th><th>modified</th></tr></thead><tbody>'
            + "".join(lines) + '</tbody></table><p><button type="submit">Compare the ticked runs</button>'
            ' <span class="note">pass@1, pass^k and pass@k for k = 1..K, side by side</span></p></form>'
            f"{note}</section>")
    return document("whileai-ray view", f"{root} \u00b7 {len(runs)} runs", body,
                    refresh=any("reading" in run for run in runs))


def _menu(name: str, values: list, chosen: dict) -> str:
    current = chosen.get(name, "")
    opts = [f'<option value=""{" selected" if not current else ""}>any</option>']
    for value, n in values[:200]:
        sel = " selected" if value == current else ""
        opts.append(f'<option value="{_esc(value, 200)}"{sel}>{_esc(value, 60)} ({n})</option>')
    return f'<label>{name}<select name="{name}">{"".join(opts)}</select></label>'


def _badge(verdict: str, reward) -> str:
    if verdict == "ungraded":
        return '<span class="badge">not graded</span>'
    return f'<span class="badge {verdict}">{verdict} {reward:.2f}</span>'


def run_page(rel: str, index, chosen: dict, page: int, picked: list) -> str:
    """One run's rows: the filter menus, one page of the picked rows, and the pager."""
    menus = getattr(index, "_options", None)
    if menus is None or menus[0] != len(index):
        menus = (len(index), options(index))
        index._options = menus
    pages = max(1, -(-len(picked) // PAGE_ROWS))
    page = min(page, pages)
    start = (page - 1) * PAGE_ROWS
    lines = []
    for i in picked[start:start + PAGE_ROWS]:
        lines.append(f'<tr data-i="{i}"><td><a href="{link("/row", path=rel, i=i)}">#{i}</a></td>'
                     f"<td>{_badge(index.verdict[i], index.reward[i])}</td><td>{_esc(index.tier[i], 40)}</td>"
                     f'<td>{_esc(", ".join(index.tools[i]) or "none", 80)}</td>'
                     f'<td>{_esc(", ".join(index.faults[i]) or "none", 80)}</td><td>{_esc(index.judge[i], 40)}</td>'
                     f'<td class="prompt">{_esc(index.prompt[i], 160)}</td></tr>')
    form = ('<form class="filters" method="get" action="/run">'
            f'<input type="hidden" name="path" value="{_esc(rel, 1000)}">'
            + "".join(_menu(name, menus[1][name], chosen) for name in FILTERS)
            + f'<button type="submit">Filter</button> <a href="{link("/run", path=rel)}">clear</a></form>')
    pager = [f'<span class="count">{len(picked)} of {len(index)} rows match \u00b7 page {page} of {pages}</span>']
    if page > 1:
        pager.append(f'<a class="prev" href="{link("/run", path=rel, page=page - 1, **chosen)}">previous</a>')
    if page < pages:
        pager.append(f'<a class="next" href="{link("/run", path=rel, page=page + 1, **chosen)}">next</a>')
    skipped = f" \u00b7 {index.skipped} lines skipped (not JSON rows)" if index.skipped else ""
    if index.partial:
        summary = (f'<p class="reading">Reading {_esc(rel, 300)} ({index.sig[2] / 2**20:.0f} MB): its first '
                   f'<b class="nrows">{len(index)}</b> rows are below; the counts, filters over every row and '
                   'pass@1 appear when the whole run is read (this page reloads by itself).</p>')
    else:
        pa = index.pass_at()
        summary = (f'<p>{_esc(rel, 300)}: <b class="nrows">{len(index)}</b> rows, '
                   f'mode {_esc(index.mode, 40)}, pass@1 {_p1(pa)}{skipped}</p>'
                   f'<p class="note">{_esc(str(pa), 600)}</p>')
    body = (f'<section id="summary"><h2>Run</h2>{summary}</section>'
            f'<section id="rows"><h2>Rows</h2>{form}<div class="pager">{"".join(pager)}</div>'
            '<table class="rows"><thead><tr><th>row</th><th>verdict</th><th>tier</th><th>tools</th><th>faults</th>'
            f'<th>judge</th><th>prompt</th></tr></thead><tbody>{"".join(lines)}</tbody></table></section>')
    poll = (f' data-poll="{link("/api/run", path=rel)}" data-rows="{len(index)}"'
            f' data-ready="{0 if index.partial else 1}"')
    return document(f"Run {rel}", f"{len(index)} rows \u00b7 refreshes as rows land", body, poll)


def row_page(rel: str, i: int, n: int, row: dict) -> str:
    """One row: the report's rendering (conversation, tool calls, facts, verdict), opened."""
    html = render_row(i, row).replace('<details class="row"', '<details class="row" open', 1)
    nav = [f'<a href="{link("/run", path=rel)}">back to the run</a>']
    if i > 0:
        nav.append(f'<a class="prev" href="{link("/row", path=rel, i=i - 1)}">previous row</a>')
    if i + 1 < n:
        nav.append(f'<a class="next" href="{link("/row", path=rel, i=i + 1)}">next row</a>')
    body = f'<section id="row"><h2>Row {i} of {n}</h2><div class="pager">{"".join(nav)}</div>{html}</section>'
    return document(f"Run {rel}: row {i}", "conversation, tool calls and verdict", body)


def compare_page(labels: list, table: str, chart: str, problems: list) -> str:
    notes = "".join(f'<p class="note">{_esc(p, 400)}</p>' for p in problems)
    body = (f'<section id="leaderboard"><h2>Leaderboard</h2>{table}{chart}{notes}'
            '<p class="note">pass@1: the mean pass rate over tasks; pass@k: at least one of k tries passes; '
            'pass^k: all k tries pass (unbiased estimators over each task\'s graded rows); '
            '[a..b]: 95% task-bootstrap intervals.</p></section>')
    return document("Compare runs", " vs ".join(labels), body)
