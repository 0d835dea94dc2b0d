"""A row's checkpoint line, made where the row is built, so the Driver only appends bytes.

The Driver is the one serial process of a run (issue 32): every microsecond it spends per row
bounds the whole cluster. A rollout lane already encodes each row's stored form once, to check
that it can be stored at all (``pools/rollout_worker.py``); ``encoded`` keeps that text as the
exact bytes the checkpoint writes (``dump_line(stored_row(row))``) together with the row key's
digest (``key_digest(row_key(...))``, what the checkpoint's key set and ``.keys`` index hold),
and the lane sends both with the row (``RolloutResult.line`` / ``.digest``).

Why the bytes stay right: ``stored_row`` drops every ``_`` key and ``dumps`` never changes the
row it encodes (a repair is made on a copy), so the stamps a lane or the Driver adds later
(``_ordinal``, ``_node``, ``_seconds``, ``_landed_s``) change nothing in the line. What does change
public fields (a judge's verdict, applied on the Driver) drops the line
(``RolloutResult.with_verdict``), and the checkpoint encodes that row itself, as it always did.
"""
from __future__ import annotations

from typing import Any

from ...core.identity import key_digest, row_key
from ...core.rows import stored_row
from ...core.strict_json import plain_dumps
from .lines import dump_line

__all__ = ["Digest", "Plain", "encoded", "encoded_plain", "line_text"]

Digest = tuple[int, int, str]      # key_digest's (a, b, key_string)
Plain = tuple[dict, str]           # a stored form that is plain JSON data, and its text


def encoded(row: dict[str, Any]) -> tuple[bytes, Digest | None]:
    """``(line, digest)``: the checkpoint line of ``row``'s stored form, byte for byte what the
    checkpoint would write, and its key's digest. Raises what ``dumps`` raises on a row that
    cannot be stored (circular, too deep). A key that cannot be digested here gives None: the
    Driver then computes it, and fails, exactly as without the edge's help."""
    line, digest, _ = encoded_plain(row)
    return line, digest


def encoded_plain(row: dict[str, Any]) -> tuple[bytes, Digest | None, Plain | None]:
    """``encoded(row)`` and, when the stored form is plain JSON data (``strict_json.plain_dumps``:
    its line is then that text and a newline), the stored form and its text: the lane makes the
    row's spool text from them (``spill_text.lane_text``) instead of encoding the row again."""
    stored = stored_row(row)
    text = plain_dumps(stored)
    line = dump_line(stored) if text is None else (text + "\n").encode("ascii")
    try:
        digest: Digest | None = key_digest(row_key(stored))
    except Exception:       # a prompt of no str type, say: the Driver decides, as before
        digest = None
    return line, digest, None if text is None else (stored, text)


def line_text(line: bytes) -> str:
    """A checkpoint line as the JSON text of its row (``dumps(row)``: the Parquet ``row_json``)."""
    return line[:-1].decode("ascii")
