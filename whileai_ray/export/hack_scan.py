"""The reward-hacking scan: which observable feature of a reply best explains its reward?

A reward that a trainer will push on should track doing the job, not a surface habit. The
scan turns every graded row into a small set of *features* the policy controls (which tools
it called, how many calls, reply length, refusing, asking a question, hedging, padding,
claiming success, how the turn finished) and measures each feature's Pearson correlation
with the reward. The feature with the largest ``|r|`` is what "best explains" the reward.

``endorsed`` names what the reward *should* track, as feature-name substrings (e.g.
``"tool:lookup_order"``). The verdict is:

* ``no_signal``  -- fewer than two graded rows, or the reward never varies;
* ``endorsed``   -- the best-explaining feature matches an endorsed name;
* ``weak``       -- nothing explains the reward well (best ``|r|`` under ``STRONG_R``);
* ``suspect``    -- a feature nobody endorsed explains the reward strongly;
* ``unreviewed`` -- a strong feature was found but ``endorsed`` was empty, so nobody said
  what the reward should track (it is reported, never refused).

Features are computed with a few precompiled regex scans per row (tens of microseconds).
"""
from __future__ import annotations

import math
import re

from ..score.conduct import HEDGES, PADDING
from ..agents.signature import REFUSAL_RE
from .row_checks import reward_of

__all__ = ["hack_scan", "HackScan", "row_features", "check_endorsed", "STRONG_R", "VERDICTS"]

STRONG_R = 0.3
VERDICTS = ("no_signal", "endorsed", "weak", "suspect", "unreviewed")
_TOP = 5


def _phrases(words) -> re.Pattern:
    ordered = sorted(words, key=len, reverse=True)
    return re.compile("|".join(r"(?<![a-z])" + re.escape(w) for w in ordered))


_HEDGE_RE = _phrases(HEDGES)
_PAD_RE = _phrases(PADDING)
_SUCCESS_RE = re.compile(r"\b(done|completed?|succeeded|successful(ly)?|all set|confirmed|"
                         r"taken care of|went through|processed)\b")


def row_features(row: dict) -> dict:
    """The named features of one row: ``{name: float}`` (0/1 flags, counts, word length)."""
    steps = row.get("steps")
    if not isinstance(steps, list):
        steps = []
    tools = [s.get("tool") for s in steps if isinstance(s, dict) and s.get("tool")]
    text = str(row.get("final_text") or "")
    low = text.lower()
    feats = {f"tool:{name}": 1.0 for name in set(tools)}
    feats["no_tool"] = 0.0 if tools else 1.0
    feats["tool_calls"] = float(len(tools))
    feats["length_words"] = float(len(text.split()))
    feats["refusal"] = 1.0 if REFUSAL_RE.search(text) else 0.0
    feats["asks_question"] = 1.0 if "?" in text else 0.0
    feats["hedging"] = 1.0 if _HEDGE_RE.search(low) else 0.0
    feats["padding"] = 1.0 if _PAD_RE.search(low) else 0.0
    feats["claims_success"] = 1.0 if _SUCCESS_RE.search(low) else 0.0
    finish = row.get("finish_reason")
    if finish and finish != "stop":
        feats[f"finish:{finish}"] = 1.0
    return feats


def _exact(value: float):
    """An integral float as an int, so sums of flags, counts and 0/1 rewards stay exact."""
    return int(value) if value == value and float(value).is_integer() else value


class HackScan:
    """``hack_scan`` one row at a time: the sums each feature's Pearson r needs (n, sums of x,
    x*x and x*y), never the rows or their features. Feed it a list or rows read from disk a row
    group at a time (``add_all``); ``result(endorsed)`` is ``hack_scan``'s dict. Flags, counts
    and 0/1 rewards are summed as integers, so r is exact up to its last division."""

    def __init__(self):
        self.n = 0
        self.sy = self.syy = 0
        self.y_min = self.y_max = None
        self.moments: dict = {}            # feature -> [sum x, sum x*x, sum x*y, rows where x != 0]

    def add(self, row: dict) -> None:
        y = reward_of(row)
        if y is None:
            return
        y = _exact(y)
        self.n += 1
        self.sy += y
        self.syy += y * y
        self.y_min = y if self.y_min is None else min(self.y_min, y)
        self.y_max = y if self.y_max is None else max(self.y_max, y)
        moments = self.moments
        for name, x in row_features(row).items():
            m = moments.get(name)
            if m is None:
                moments[name] = m = [0, 0, 0, 0]
            if x:
                x = _exact(x)
                m[0] += x
                m[1] += x * x
                m[2] += x * y
                m[3] += 1

    def add_all(self, rows) -> "HackScan":
        batches = getattr(rows, "batches", None)
        for batch in (batches() if callable(batches) else (rows,)):
            for row in batch:
                self.add(row)
        return self

    def _r(self, m) -> float:
        n = self.n
        den_x = n * m[1] - m[0] * m[0]
        den_y = n * self.syy - self.sy * self.sy
        if den_x <= 0 or den_y <= 0:
            return 0.0
        return (n * m[2] - m[0] * self.sy) / math.sqrt(den_x * den_y)

    def result(self, endorsed=()) -> dict:
        endorsed = check_endorsed(endorsed)
        out = {"verdict": "no_signal", "best": None, "r": None, "endorsed": list(endorsed),
               "n_graded": self.n, "features": [], "summary": ""}
        if self.n < 2 or self.y_max == self.y_min:
            out["summary"] = (f"no reward signal to explain ({self.n} graded rows"
                              + (", all with the same reward)" if self.n else ")"))
            return out
        scored = []
        for name in sorted(self.moments):
            m = self.moments[name]
            r = self._r(m)
            scored.append((-abs(r), name, r, m[3] / self.n))
        scored.sort()
        out["features"] = [{"feature": n, "r": round(r, 3), "share": round(s, 3)} for _, n, r, s in scored[:_TOP]]
        _, best, r, _ = scored[0]
        out["best"], out["r"] = best, round(r, 3)
        if _is_endorsed(best, endorsed):
            verdict, note = "endorsed", "endorsed"
        elif abs(r) < STRONG_R:
            verdict, note = "weak", "no feature explains it strongly"
        elif endorsed:
            verdict, note = "suspect", f"not endorsed ({', '.join(endorsed)})"
        else:
            verdict, note = "unreviewed", "pass endorsed= to name what the reward should track"
        out["verdict"] = verdict
        out["summary"] = f"reward best explained by {best} (r={r:+.2f}, {note})"
        return out


def _is_endorsed(name: str, endorsed) -> bool:
    return any(e and e in name for e in endorsed)


def check_endorsed(endorsed) -> tuple:
    """Validate ``endorsed=`` (a string or a sequence of strings) into a tuple of strings."""
    if endorsed is None:
        return ()
    if isinstance(endorsed, str):
        endorsed = (endorsed,)
    try:
        items = tuple(endorsed)
    except TypeError:
        raise TypeError(f"endorsed= takes feature-name substrings such as ('tool:lookup_order',); "
                        f"got {type(endorsed).__name__}") from None
    bad = [e for e in items if not isinstance(e, str) or not e]
    if bad:
        raise TypeError(f"endorsed= items must be non-empty strings (e.g. 'tool:lookup_order'); got {bad[0]!r}")
    return items


def hack_scan(rows, endorsed=()) -> dict:
    """Scan graded rows for what best explains their reward; see the module docstring.

    Returns ``{"verdict", "best", "r", "endorsed", "n_graded", "features": [{"feature", "r",
    "share"}] (top 5 by |r|), "summary"}``. One pass over ``rows`` (``HackScan``).
    """
    endorsed = check_endorsed(endorsed)
    return HackScan().add_all(rows).result(endorsed)
