"""A spilled row's ``row_json`` text, and the text a rollout lane makes of its row for it.

``dump_row`` is the spill's encoder (``spill.py``): the whole internal row, ASCII-escaped so any
Python str (a lone surrogate too) survives, ``default=str`` so a value of no JSON type never
stops a spill. An ``EncodedRow`` carries that text already made, so writing it costs nothing.

Why the lane makes it (issue 32): the Driver is the one serial process of a run, and encoding
each landed row for its spool was ~20 us of it per row. A lane encodes its row once it is
complete (``edge_text``: every lane stamp in, ``_ordinal``, ``_node``, ``_seconds``) and sends the
text with it (``RolloutResult.text``); the Driver only adds its landing time (``with_landed``:
the member ``"_landed_s":<float>`` spliced before the final ``}``, exactly where and as ``json``
writes a key added last). ``edge_text`` refuses (None) any row holding a value the encoder
would pass to ``default`` (its ``str()`` may differ in another process: an object's address, a
set's order): the text it gives is then a function of plain JSON data alone, which the trip to
the Driver keeps as it is, so it equals ``dump_row`` of the row the Driver receives. The
Driver encodes the row itself, as before, whenever it changes anything else (a verdict, a
lineage stamp, a ``_landed_s`` already there).

No pyarrow here: the lanes import it.
"""
from __future__ import annotations

import json
import math

from ...core.strict_json import not_plain

__all__ = ["dump_row", "EncodedRow", "edge_text", "lane_text", "with_landed", "encoded_row", "LANDED_KEY"]

LANDED_KEY = "_landed_s"

# ASCII-escaped JSON: any Python str (even a lone surrogate) survives the round trip.
dump_row = json.JSONEncoder(separators=(",", ":"), default=str).encode


# dump_row's settings, but a value of no JSON type raises instead of becoming its str()
_PLAIN = json.JSONEncoder(separators=(",", ":"), default=not_plain).encode


class EncodedRow(dict):
    """A row that carries its own ``row_json`` (``json``: exactly what ``dump_row`` gives for it),
    so writing it costs no encoding: a resumed row's JSON is built from its checkpoint line, a
    played row's from its lane's text (``with_landed``)."""

    __slots__ = ("json",)
    json: str


def edge_text(row: dict) -> str | None:
    """``dump_row(row)`` when ``row`` holds plain JSON data only, else None (see the module doc)."""
    try:
        text = _PLAIN(row)
    except (TypeError, ValueError, RecursionError):
        return None
    return text if text[:1] == "{" and text[-1:] == "}" else None


def lane_text(row: dict, stored: dict, stored_text: str) -> str | None:
    """``edge_text(row)``, given ``stored_text``: the plain JSON text (``strict_json.plain_dumps``)
    of ``stored``, the row's stored form (``edge_lines.encoded_plain``). A row whose first members
    are ``stored``'s, the same keys in the same order holding the very same values, as a lane's row
    is (its public fields first, then the ``_`` stamps the lane adds), has as its text the stored
    text's members and then the others': only those are encoded (a row's text was encoded whole
    once more, ~18 us a row on the lane). Any other row: ``edge_text(row)``."""
    n = len(stored)
    keys = list(row)
    if not n or keys[:n] != list(stored) or any(row[k] is not v for k, v in stored.items()):
        return edge_text(row)
    if len(keys) == n:
        return stored_text
    try:
        rest = _PLAIN({k: row[k] for k in keys[n:]})
    except (TypeError, ValueError, RecursionError):
        return None
    return stored_text[:-1] + "," + rest[1:]


def with_landed(text: str, landed: float) -> str:
    """``text`` (``dump_row`` of a dict without ``_landed_s``) with ``_landed_s: landed`` added
    last: ``dump_row`` of that dict once the Driver has stamped it."""
    # a finite float is what json writes as its repr (its C encoder does just that): no encoder call a row
    stamp = float.__repr__(landed) if type(landed) is float and math.isfinite(landed) else dump_row(landed)
    member = '"' + LANDED_KEY + '":' + stamp
    return text[:-1] + ("," if len(text) > 2 else "") + member + "}"


def encoded_row(row: dict, text: str) -> EncodedRow:
    """A copy of ``row`` (stamped with its ``_landed_s``) carrying its ``row_json``, from the text
    its lane made of it before the stamp."""
    out = EncodedRow(row)
    out.json = with_landed(text, row[LANDED_KEY])
    return out
