"""Progress that fits the place: a tqdm bar in a terminal, the HTML bar in Jupyter, lines elsewhere.

``choose_display()`` looks at where the run was started from:

* an IPython kernel (Jupyter, VS Code notebooks): ``NotebookBar``, the notebook view's HTML bar
  (``notebook_bar.progress_html``) updated in place, at most twice a second;
* a terminal (stderr is a TTY): ``TerminalBar``, a ``tqdm`` bar on stderr with rows, rate, ETA,
  re-rolls and losses (tqdm: it sizes itself to the terminal, smooths the rate and is the bar
  Python users already read; it is imported only here);
* anything else (a log file, a pipe, a Ray Job's captured output): ``None``, and the reporter
  writes its plain progress lines (``progress.format_line``).

A display is only chosen when nobody listens on the run's logger (``progress/run_log.py``: a configured handler
gets the lines, and a bar beside it would tangle the two) and when ``on_progress`` is not
already a ``notebook_progress()`` bar.
"""
from __future__ import annotations

import os
import sys
import time

from .notebook_bar import NotebookProgress, progress_html
from .run_log import listens

__all__ = ["choose_display", "TerminalBar", "NotebookBar"]


def _extras(snap: dict) -> str:
    parts = []
    if snap.get("rerolled"):
        parts.append(f"{snap['rerolled']} re-rolled")
    if snap.get("lost"):
        parts.append(f"{snap['lost']} lost")
    if snap.get("resumed"):
        parts.append(f"{snap['resumed']} resumed")
    return ", ".join(parts)


class TerminalBar:
    """A tqdm bar: ``rows/cap``, rows per second (this call's rows; resumed ones start the bar),
    time left, and re-rolls and losses after it (their causes are in the lines and ``search``)."""

    def __init__(self, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.bar = None

    def update(self, snap: dict) -> None:
        rows, cap = int(snap.get("rows") or 0), int(snap.get("cap") or 0)
        if self.bar is None:
            from tqdm import tqdm   # lazy: only a terminal draws a bar
            # a pty nobody sized reports 0 x 0, where tqdm would hide the bar: draw it 100 wide
            sized = _columns(self.stream) > 0
            self.bar = tqdm(total=cap, initial=rows, file=self.stream, desc="whileai_ray", unit=" rows",
                            dynamic_ncols=sized, ncols=None if sized else 100, nrows=None if sized else 20,
                            mininterval=0.2, smoothing=0.1, leave=True)
        if cap != self.bar.total:
            self.bar.total = cap
        self.bar.set_postfix_str(_extras(snap), refresh=False)
        self.bar.update(rows - self.bar.n)

    def close(self, snap: dict | None = None) -> None:
        if snap is not None:
            self.update(snap)
        if self.bar is not None:
            self.bar.refresh()
            self.bar.close()
            self.bar = None


def _columns(stream) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


class NotebookBar:
    """The notebook view's HTML progress bar, drawn once and updated in place."""

    def __init__(self, display_module, every_s: float = 0.5):
        self.display = display_module
        self.every_s = every_s
        self.handle = None
        self._last = 0.0

    def update(self, snap: dict, force: bool = False) -> None:
        if not force and time.monotonic() - self._last < self.every_s:
            return
        self._last = time.monotonic()
        html = self.display.HTML(progress_html(snap))
        if self.handle is None:
            self.handle = self.display.display(html, display_id=True)
        else:
            self.handle.update(html)

    def close(self, snap: dict | None = None) -> None:
        if snap is not None:
            self.update(snap, force=True)


def _in_kernel():
    """``IPython.display`` when this process is an IPython kernel (a notebook), else None."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython is not None else None
    if shell is None or getattr(shell, "kernel", None) is None:
        return None
    import IPython.display as display   # lazy: IPython is there only in a notebook
    return display


def choose_display(on_progress=None, stream=None):
    """The progress display for this place, or None for plain lines (see the module docstring)."""
    if isinstance(on_progress, NotebookProgress) or listens():
        return None
    display = _in_kernel()
    if display is not None:
        return NotebookBar(display)
    stream = stream if stream is not None else sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return TerminalBar(stream) if tty else None
