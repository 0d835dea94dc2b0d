"""The HTML report's row browser: each row a collapsed conversation, with a failed-rows filter.

Rows are rendered here, in Python, with every piece of row text passed through
``html.escape`` (``notebook._esc``); the page's script only hides and shows them, so nothing a
row says can become markup. A conversation shows the user's lines, the agent's replies and
tool calls (with arguments), the world's answers, then the judge's verdict and reason.
Large runs show at most ``max_rows`` rows: every failed row first (in run order), then the
rest, and the browser says how many it left out.
"""
from __future__ import annotations

import json

from .notebook import _esc
from ...core.rows import conversation
from ..failure_breakdown import cell_label, failed, fault_kinds, graded

__all__ = ["row_browser", "pick_rows", "render_row"]

TEXT_LIMIT = 4000


def pick_rows(rows: list, max_rows: int) -> list:
    """Indices of the rows to show: all failed ones first, then the others, in run order."""
    bad = [i for i, r in enumerate(rows) if failed(r)]
    if len(bad) >= max_rows:
        return bad[:max_rows]
    bad_set = set(bad)
    rest = [i for i in range(len(rows)) if i not in bad_set][:max_rows - len(bad)]
    return sorted(bad + rest)


def _pre(text, cls: str = "") -> str:
    return f'<pre class="{cls}">{_esc(text, TEXT_LIMIT)}</pre>'


def _pretty(value) -> str:
    """JSON text as indented JSON (a tool's answer arrives as a string), anything else as str.
    A value nested too deep to walk (a crafted row) is shown as the text it came as, or named."""
    text = value if isinstance(value, str) else None
    try:
        if text is not None:
            value = json.loads(text)
        return json.dumps(value, indent=1, ensure_ascii=False, default=str)
    except ValueError:
        return text if text is not None else f"({type(value).__name__} that is not JSON)"
    except RecursionError:
        return text if text is not None else "(nested too deep to show)"


def _names(value) -> str:
    """A row's list of tool names as one line (names that are not text shown as text)."""
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else ""


def _message(msg: dict) -> str:
    role = msg.get("role")
    if role == "tool":
        return (f'<div class="msg world"><b>world \u00b7 {_esc(msg.get("name"), 80)}</b>'
                f'{_pre(_pretty(msg.get("content")))}</div>')
    if role == "assistant":
        parts = [f'<div class="msg agent"><b>agent</b>']
        if msg.get("content"):
            parts.append(_pre(msg["content"]))
        calls = msg.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            if not isinstance(call, dict):
                continue
            function = call.get("function")
            if not isinstance(function, dict):
                function = {}
            name = call.get("name") or function.get("name")
            args = call.get("arguments", function.get("arguments"))
            parts.append(f'<div class="call">calls <code>{_esc(name, 80)}</code>{_pre(_pretty(args))}</div>')
        return "".join(parts) + "</div>"
    return f'<div class="msg user"><b>{_esc(role or "user", 20)}</b>{_pre(msg.get("content"))}</div>'


def _badge(row: dict) -> str:
    if graded(row):
        word, cls = ("fail", "fail") if failed(row) else ("pass", "pass")
        return f'<span class="badge {cls}">{word} {row["reward"]:.2f}</span>'
    status = row.get("judge_status")
    if status and status != "ok":
        return f'<span class="badge warn">judge {_esc(status, 30)}</span>'
    return '<span class="badge">not graded</span>'


def _facts(row: dict) -> str:
    pairs = [("scenario", row.get("scenario_id")), ("tier", row.get("tier")), ("arm", row.get("arm")),
             ("cell", cell_label(row)), ("faults", ", ".join(fault_kinds(row))),
             ("finish", row.get("finish_reason")), ("tools", _names(row.get("tools_used")) or "none")]
    return "".join(f"<span><i>{k}</i> {_esc(v, 300)}</span>" for k, v in pairs if v not in (None, ""))


def _verdict(row: dict) -> str:
    if not graded(row) and not row.get("judge_status"):
        return '<div class="verdict"><b>verdict</b> not graded</div>'
    parts = [f'<div class="verdict"><b>verdict</b> {_badge(row)}']
    if row.get("judge_name"):
        parts.append(f' <i>judge</i> {_esc(row["judge_name"], 80)}')
    if row.get("judge_status") not in (None, "ok"):
        parts.append(f' <i>status</i> {_esc(row["judge_status"], 40)}')
    if row.get("reason"):
        parts.append(_pre(row["reason"], "reason"))
    if row.get("markers"):
        parts.append(_pre(_pretty(row["markers"]), "markers"))
    return "".join(parts) + "</div>"


def render_row(index: int, row: dict) -> str:
    """One row as a collapsed ``<details>``: summary line, conversation, facts, verdict."""
    messages = row.get("messages")
    if not isinstance(messages, list):
        messages = conversation(row)
    text = " ".join(str(row.get(k) or "") for k in ("prompt", "final_text", "reason"))[:600].lower()
    tools = _names(row.get("tools_used")) or "no tool"
    return (f'<details class="row" data-failed="{int(failed(row))}" data-text="{_esc(text, 600)}">'
            f'<summary><span class="idx">#{index}</span> {_badge(row)} '
            f'<span class="meta">{_esc(row.get("tier"), 20)} \u00b7 {_esc(tools, 60)}</span> '
            f'<span class="prompt">{_esc(row.get("prompt"), 140)}</span></summary>'
            f'<div class="facts">{_facts(row)}</div>'
            f'<div class="conv">{"".join(_message(m) for m in messages if isinstance(m, dict))}</div>'
            f'{_verdict(row)}</details>')


def row_browser(runs: list, max_rows: int = 1000) -> str:
    """The browser for ``[(label, rows)]``: one panel per run (tabs when there are several)."""
    tabs = ""
    if len(runs) > 1:
        tabs = '<div class="tabs">' + "".join(
            f'<button type="button" data-run="{i}" class="{"on" if i == 0 else ""}">{_esc(label, 60)}</button>'
            for i, (label, _) in enumerate(runs)) + "</div>"
    panels = []
    for i, (label, rows) in enumerate(runs):
        shown = pick_rows(rows, max_rows)
        n_failed = sum(1 for r in rows if failed(r))
        note = f"{len(rows)} rows, {n_failed} failed"
        if len(shown) < len(rows):
            note += (f"; showing {len(shown)} (every failed row first, then in run order): "
                     f"pass max_rows= to show more")
        panels.append(
            f'<div class="browser" data-run="{i}"{" hidden" if i else ""}>'
            f'<div class="controls"><label><input type="checkbox" class="failed-only"> failed rows only</label> '
            f'<input type="search" class="search" placeholder="filter by prompt, reply or reason"> '
            f'<span class="count"></span></div><p class="note">{_esc(label, 80)}: {_esc(note, 300)}</p>'
            + "".join(render_row(j, rows[j]) for j in shown) + "</div>")
    return tabs + "".join(panels)
