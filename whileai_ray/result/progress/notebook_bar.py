"""The live progress bar: ``wai.notebook_progress()`` (an ``on_progress=`` callable that draws one
HTML bar in a notebook and prints lines elsewhere), the bar's HTML, and ``parse_progress_line``,
which reads the last progress line of a job's logs back into numbers (a Ray Job watched from a
notebook). The line itself is ``lines.format_line``'s, so the bar and the logs say the same.
"""
from __future__ import annotations

import html
import re
import sys
from typing import Any, Callable

from .lines import format_line

__all__ = ["NotebookProgress", "notebook_progress", "progress_html", "parse_progress_line"]

LINE_CHARS = 1000            # the progress line under the bar, cut with an ellipsis past this


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS - 1] + "\u2026"


def progress_html(snap: dict) -> str:
    """One progress bar (rows / cap) with the progress line under it."""
    rows, cap = int(snap.get("rows") or 0), int(snap.get("cap") or 0)
    frac = min(1.0, rows / cap) if cap > 0 else 0.0
    line = format_line({"situations": 0, "elapsed_s": 0, **snap, "rows": rows, "cap": cap})
    return (f'<div class="wai-progress"><div style="width:420px;height:14px;background:#eee;border-radius:3px">'
            f'<div style="width:{frac:.1%};height:14px;background:#4c78a8;border-radius:3px"></div></div>'
            f'<code>{html.escape(_cut(line), quote=True)}</code></div>')


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


def notebook_progress(then: Callable[[dict], Any] | None = None) -> NotebookProgress:
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
    out: dict[str, float] = {"rows": int(m["rows"]), "cap": int(m["cap"]), "resumed": int(m["resumed"] or 0),
           "situations": int(m["situations"])}
    for key, pattern in _TAIL.items():
        hit = pattern.search(line)
        out[key] = int(hit.group(1)) if hit else 0
    hit = _ELAPSED.search(line)
    if hit:
        h, mnt, sec = (int(g or 0) for g in hit.groups())
        out["elapsed_s"] = float(h * 3600 + mnt * 60 + sec)
    return out
