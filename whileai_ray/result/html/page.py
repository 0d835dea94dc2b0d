"""The HTML report's page: one file with its style and script inline, nothing fetched.

The script does three small things and needs nothing else: the failed-rows and text filters
of the row browser, the run tabs when two runs are shown, and keeping the section links
working. The icon is a ``data:`` URL, so the browser does not ask the network for one either.
"""
from __future__ import annotations

from .notebook import _esc

__all__ = ["page"]

CSS = """
:root { --ink: #1d2330; --muted: #5b6472; --line: #dfe3e8; --bg: #f6f7f9; --card: #fff;
        --pass: #2f7d32; --fail: #c62828; --warn: #b26a00; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
       background: var(--bg); }
header { background: #1f2a44; color: #fff; padding: 14px 24px; }
header h1 { margin: 0; font-size: 20px; }
header p { margin: 4px 0 0; color: #c9d2e3; }
nav { position: sticky; top: 0; z-index: 2; background: #fff; border-bottom: 1px solid var(--line);
      padding: 8px 24px; display: flex; gap: 16px; flex-wrap: wrap; }
nav a { color: #2a5db0; text-decoration: none; font-weight: 600; }
main { padding: 16px 24px; max-width: 1400px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 14px 18px;
          margin: 0 0 16px; }
section > h2 { margin: 0 0 10px; font-size: 17px; border-left: 4px solid #4c78a8; padding-left: 8px; }
h3 { font-size: 14px; margin: 12px 0 6px; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: 4px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
table.summary th:first-child, table.numbers th:first-child { color: var(--muted); font-weight: 500; }
thead th { background: #eef2f8; }
code, pre { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
pre { white-space: pre-wrap; word-break: break-word; margin: 4px 0; background: #f7f8fa; padding: 6px 8px;
      border-radius: 4px; max-height: 320px; overflow: auto; }
.note { color: var(--muted); font-size: 12px; }
.two { display: flex; gap: 24px; flex-wrap: wrap; align-items: flex-start; }
.grid4 { display: flex; gap: 12px; flex-wrap: wrap; }
.cols1 > div, .cols2 > div { min-width: 0; }
.cols2 { display: grid; grid-template-columns: 1fr 1fr; gap: 18px; }
.cols2 svg { max-width: 100%; height: auto; }
svg { display: block; margin: 6px 0 10px; }
.delta { margin-top: 10px; border-top: 1px dashed var(--line); }
.verdict-line { font-weight: 600; }
.badge { display: inline-block; padding: 0 6px; border-radius: 9px; font-size: 11px; font-weight: 600;
         background: #e8eaee; color: var(--muted); }
.badge.pass { background: #e3f2e4; color: var(--pass); }
.badge.fail { background: #fde7e7; color: var(--fail); }
.badge.warn { background: #fff1dc; color: var(--warn); }
.controls { display: flex; gap: 14px; align-items: center; margin: 6px 0; }
.controls input[type=search] { width: 320px; padding: 4px 8px; border: 1px solid var(--line); border-radius: 4px; }
.count { color: var(--muted); }
details.row { border: 1px solid var(--line); border-radius: 6px; margin: 4px 0; background: #fff; }
details.row[open] { box-shadow: 0 1px 4px rgba(0,0,0,.08); }
details.row > summary { cursor: pointer; padding: 5px 8px; list-style-position: inside; white-space: nowrap;
                        overflow: hidden; text-overflow: ellipsis; }
.idx { color: var(--muted); font-variant-numeric: tabular-nums; }
.meta { color: var(--muted); font-size: 12px; }
.facts { padding: 4px 10px; display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 12px; }
.facts i, .verdict i { color: var(--muted); font-style: normal; }
.conv { padding: 4px 10px; }
.msg { border-left: 3px solid #ccc; padding: 2px 8px; margin: 6px 0; }
.msg b { font-size: 11px; text-transform: uppercase; letter-spacing: .04em; }
.msg.user { border-color: #4c78a8; } .msg.user b { color: #4c78a8; }
.msg.agent { border-color: #54a24b; } .msg.agent b { color: #3b7d34; }
.msg.world { border-color: #f58518; } .msg.world b { color: #b35c00; }
.call code { color: #7a3e9d; font-weight: 600; }
.verdict { padding: 6px 10px 10px; border-top: 1px solid var(--line); }
.tabs { display: flex; gap: 6px; margin: 4px 0 8px; }
.tabs button { border: 1px solid var(--line); background: #fff; padding: 4px 12px; border-radius: 14px; cursor: pointer; }
.tabs button.on { background: #1f2a44; color: #fff; }
"""

JS = """
(function () {
  document.querySelectorAll('.browser').forEach(function (panel) {
    var only = panel.querySelector('.failed-only'), query = panel.querySelector('.search');
    var count = panel.querySelector('.count'), rows = panel.querySelectorAll('details.row');
    function apply() {
      var text = query.value.trim().toLowerCase(), shown = 0;
      rows.forEach(function (row) {
        var show = (!only.checked || row.dataset.failed === '1') && (!text || row.dataset.text.indexOf(text) >= 0);
        row.hidden = !show;
        if (show) { shown += 1; }
      });
      count.textContent = shown + ' of ' + rows.length + ' rows shown';
    }
    only.addEventListener('change', apply);
    query.addEventListener('input', apply);
    apply();
  });
  document.querySelectorAll('.tabs button').forEach(function (button) {
    button.addEventListener('click', function () {
      document.querySelectorAll('.tabs button').forEach(function (b) { b.classList.toggle('on', b === button); });
      document.querySelectorAll('.browser').forEach(function (p) { p.hidden = p.dataset.run !== button.dataset.run; });
    });
  });
})();
"""


def page(title: str, subtitle: str, sections: list) -> str:
    """The whole document: ``sections`` is ``[(id, heading, html)]``, linked from the top bar."""
    nav = "".join(f'<a href="#{sid}">{_esc(heading)}</a>' for sid, heading, _ in sections)
    body = "".join(f'<section id="{sid}"><h2>{_esc(heading)}</h2>{content}</section>'
                   for sid, heading, content in sections)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<link rel=\"icon\" href=\"data:,\">"
            f"<title>{_esc(title, 200)}</title><style>{CSS}</style></head><body>"
            f"<header><h1>{_esc(title, 200)}</h1><p>{_esc(subtitle, 400)}</p></header>"
            f"<nav>{nav}</nav><main>{body}</main><script>{JS}</script></body></html>\n")
