"""Did any reply quote its own privileged block? (``data.leak_report()``)

Each internal row may carry ``privileged`` -- ``{"reference": text, "hidden_state": {...}}``,
what the grader may see and the agent must not. A *leak* is a run of ``min_len`` (12)
characters, compared case- and whitespace-insensitively, that appears in the agent's words
(its ``final_text`` and the text of its steps) and in the privileged block, but not in anything
the agent was shown (the prompt, user turns, tool arguments and results). Quoting what a tool
returned is not a leak, however secret it sounds.

Only rows with a non-empty privileged block are *checked*; exported ``rows()`` are scrubbed of
it, so pass the trajectories. The result is a :class:`LeakReport`, a dict with ``n_rows``,
``n_checked``, ``n_leaked``, ``rate``, ``checked`` (row indices), ``leaked`` (one entry per
leaking row: index, scenario_id, field, quote) and ``summary``; ``str()`` is the summary, e.g.
``checked 40 of 40 rows: no reply quoted its privileged context``.
"""
from __future__ import annotations

import json
import re

__all__ = ["LeakReport", "leak_report", "find_leak"]

_WS = re.compile(r"\s+")


class LeakReport(dict):
    """A dict (``n_rows``, ``n_checked``, ``n_leaked``, ``rate``, ``checked``, ``leaked``,
    ``summary``) whose keys also read as attributes; prints as its summary."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __str__(self) -> str:
        return self["summary"]

    def __repr__(self) -> str:
        return f"LeakReport({self['summary']!r})"


def _norm(text: str) -> str:
    return _WS.sub(" ", text.lower()).strip()


def _windows(text: str, n: int) -> set:
    return {text[i:i + n] for i in range(len(text) - n + 1)}


def _dump(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _sources(priv: dict) -> list[tuple[str, str]]:
    out = []
    ref = priv.get("reference")
    if isinstance(ref, str) and ref.strip():
        out.append(("reference", _norm(ref)))
    hidden = priv.get("hidden_state")
    if hidden:
        values = hidden.values() if isinstance(hidden, dict) else [hidden]
        out.append(("hidden_state", _norm(" | ".join(_dump(v) for v in values))))
    for key in sorted(k for k in priv if k not in ("reference", "hidden_state", "replay")):   # replay: the prompt says it
        if priv[key]:
            out.append((str(key), _norm(_dump(priv[key]))))
    return out


def _said_and_seen(row: dict) -> tuple[str, str]:
    said = [str(row.get("final_text") or "")]
    seen = [str(row.get("prompt") or "")]
    for step in _steps(row):
        if not isinstance(step, dict):
            continue
        if step.get("text"):
            said.append(str(step["text"]))
        if step.get("user") is not None:
            seen.append(_dump(step["user"]))
        if step.get("tool"):
            seen.append(str(step["tool"]))            # the agent chose the tool: naming it is no leak
            seen.append(_dump(step.get("arguments")))
            seen.append(_dump(step.get("result")))
    return _norm(" \n ".join(said)), _norm(" \n ".join(seen))


def _agent_tokens(row: dict) -> list:
    """Names the agent itself used (tool names, its string arguments): quoting them is no leak."""
    tokens = set()
    for step in _steps(row):
        if isinstance(step, dict) and step.get("tool"):
            tokens.add(_norm(str(step["tool"])))
            args = step.get("arguments")
            if isinstance(args, dict):
                tokens.update(_norm(v) for v in args.values() if isinstance(v, str))
    return sorted((t for t in tokens if len(t) >= 3), key=len, reverse=True)


def _mask(text: str, tokens) -> str:
    for token in tokens:
        text = text.replace(token, "\x00")
    return text


def find_leak(row: dict, min_len: int = 12) -> dict | None:
    """``{"field", "quote"}`` for the first privileged field the reply quotes, else None."""
    priv = row.get("privileged")
    if not isinstance(priv, dict) or not priv:
        return None
    said, seen = _said_and_seen(row)
    if len(said) < min_len:
        return None
    masks = _agent_tokens(row)
    said_windows = {w for w in _windows(_mask(said, masks), min_len) if "\x00" not in w}
    seen_text = seen
    for field, text in _sources(priv):
        hits = {w for w in (_windows(_mask(text, masks), min_len) & said_windows) if w not in seen_text}
        if hits:
            return {"field": field, "quote": _quote(said, text, hits, min_len)}
    return None


def _quote(said: str, text: str, hits: set, min_len: int, cap: int = 80) -> str:
    """The first leaking window of the reply, grown while it still occurs in the privileged text."""
    start = next(i for i in range(len(said) - min_len + 1) if said[i:i + min_len] in hits)
    end = start + min_len
    while end < len(said) and end - start < cap and said[start:end + 1] in text:
        end += 1
    return said[start:end].strip()


def leak_report(rows, min_len: int = 12) -> LeakReport:
    """Check every row that carries a privileged block; see the module docstring."""
    if isinstance(min_len, bool) or not isinstance(min_len, int) or min_len < 4:
        raise ValueError(f"leak_report(min_len=...) is the shortest quote that counts, an int >= 4; "
                         f"got {min_len!r}")
    checked, leaked, n_rows = [], [], 0
    for i, row in enumerate(rows):          # one pass: rows on disk are read a row group at a time
        n_rows += 1
        if not isinstance(row, dict) or not isinstance(row.get("privileged"), dict) or not row["privileged"]:
            continue
        checked.append(i)
        hit = find_leak(row, min_len)
        if hit:
            leaked.append({"index": i, "scenario_id": row.get("scenario_id"), **hit})
    n_checked, n_leaked = len(checked), len(leaked)
    rate = n_leaked / n_checked if n_checked else 0.0
    head = f"checked {n_checked} of {n_rows} rows: "
    if not n_checked:
        summary = head + "no row carries a privileged block (rows() is scrubbed; pass the trajectories)"
    elif not n_leaked:
        summary = head + "no reply quoted its privileged context"
    else:
        noun = "reply" if n_leaked == 1 else "replies"
        summary = head + f"{n_leaked} {noun} quoted their privileged context ({rate:.1%})"
    return LeakReport(n_rows=n_rows, n_checked=n_checked, n_leaked=n_leaked, rate=rate,
                      checked=checked, leaked=leaked, summary=summary, min_len=min_len)


def _steps(row: dict) -> list:
    """A row's steps (none when the field is missing or not a list)."""
    steps = row.get("steps")
    return steps if isinstance(steps, list) else []
