"""One run (or two, side by side) as a self-contained HTML file: ``data.to_html(path)`` and
``whileai-ray report PATH [PATH2] --html out.html``.

The file holds everything it shows (inline SVG charts, inline style and script, no fonts,
images or libraries fetched), so it opens offline and can be attached to a pull request.
Sections: the run's summary; pass@1, pass@k and pass^k with their intervals (and, for two
runs, the paired delta of ``score.compare.delta_report``); coverage over the run; where it
fails (by grid cell, tool, fault kind and arm); re-rolls and losses by cause; a row browser
that renders each conversation with its verdict and filters on failed rows; the warnings.
The same inputs give the same file, byte for byte (no timestamp inside).
"""
from __future__ import annotations

import os

from ...store.atomic import atomic_path
from . import sections
from .page import page
from .rows import row_browser

__all__ = ["render_report", "write_report", "check_html_path"]

DEFAULT_MAX_ROWS = 1000


def check_html_path(path, argument: str = "path") -> str:
    """The output path as a str, or a ValueError naming ``argument`` and the fix. Only ``.html``
    / ``.htm`` names are written, so a slip (``out.jsonl``, the run's own file) never overwrites rows."""
    try:
        path = os.fspath(path)
    except TypeError:
        raise TypeError(f"{argument} is a file path ending in .html; got {type(path).__name__}") from None
    if not path.lower().endswith((".html", ".htm")):
        raise ValueError(f"{argument}={path!r} must end in .html (the report is one HTML file); "
                         f"e.g. {os.path.splitext(path)[0] or 'report'}.html")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"{argument}={path!r}: the folder {folder!r} does not exist; create it first")
    if os.path.isdir(path):
        raise ValueError(f"{argument}={path!r} is a folder; name a file in it, "
                         f"e.g. {os.path.join(path, 'report.html')}")
    return path


def _check_runs(runs, labels, max_rows) -> tuple[list, list]:
    if not isinstance(runs, (list, tuple)):
        runs = [runs]
    if not 1 <= len(runs) <= 2:
        raise ValueError(f"a report shows one run or two side by side; got {len(runs)}")
    for i, run in enumerate(runs):
        if not (hasattr(run, "rows") and hasattr(run, "pass_at")):
            raise TypeError(f"run {i} is a {type(run).__name__}; pass a SimulationData or ScoredData "
                            "(wai.load(path) reads a saved run)")
    if labels is None:
        labels = ["run"] if len(runs) == 1 else ["A (before)", "B (after)"]
    labels = [str(x) for x in labels]
    if len(labels) != len(runs) or len(set(labels)) != len(labels):
        raise ValueError(f"labels must name each run once ({len(runs)} distinct labels); got {labels!r}")
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise ValueError(f"max_rows is how many rows the browser shows per run, 1 or more; got {max_rows!r}")
    return list(runs), labels


def render_report(runs, labels=None, *, max_rows: int = DEFAULT_MAX_ROWS, title: str | None = None) -> str:
    """The report's HTML text for one run or ``[before, after]``."""
    runs, labels = _check_runs(runs, labels, max_rows)
    pairs = list(zip(labels, runs))
    n = sum(len(r) for r in runs)
    title = title or ("whileai_ray report" if len(runs) == 1 else f"whileai_ray report: {labels[0]} vs {labels[1]}")
    subtitle = " \u00b7 ".join(f"{label}: {len(r)} rows, {getattr(r, 'mode', None) or 'scored'}"
                               for label, r in pairs) + f" \u00b7 {n} rows in all"
    body = [
        ("summary", "Summary", sections.summary(pairs)),
        ("pass-rates", "Pass rates", sections.pass_rates(pairs)),
        ("coverage", "Coverage over the run", sections.coverage(pairs)),
        ("failures", "Where it fails", sections.failures(pairs)),
        ("causes", "Re-rolls and losses", sections.causes(pairs)),
        ("rows", "Rows", row_browser([(label, list(r.rows())) for label, r in pairs], max_rows)),
        ("warnings", "Warnings", sections.warnings(pairs)),
    ]
    return page(title, subtitle, body)


def write_report(path, runs, labels=None, *, max_rows: int = DEFAULT_MAX_ROWS, title: str | None = None,
                 argument: str = "path") -> str:
    """Write the report to ``path`` (atomically: a temporary name no other writer uses, created
    never through a link, then a rename: ``store/atomic.atomic_path``); return the path."""
    path = check_html_path(path, argument)
    text = render_report(runs, labels, max_rows=max_rows, title=title)
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    return path
