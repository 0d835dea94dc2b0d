"""``text_encoder()``: ``strict_json.dumps`` for the many small values of a table's columns, cheaper.

A Parquet copy's row has a dozen small JSON values (``lineage``, ``tools_used``, a step's
``arguments`` and ``result``, ...). ``dumps`` pays about a microsecond a call before encoding a
byte (``JSONEncoder.encode`` builds a fresh C encoder each time), which on small values is most
of the cost. ``text_encoder()`` makes the same C encoder once, for one batch of rows, and returns
a function that gives exactly ``dumps(value)``: the C encoder's text when ``dumps`` would keep it
(it encoded, and holds no lone surrogate), else ``dumps(value)`` itself (NaN, Infinity, a lone
surrogate, a key of no JSON type, a circular value: repaired or raised as ``dumps`` does).

One encoder per batch, never shared between threads: its circular-reference ``markers`` are its
own, cleared before each value (an error may leave some behind).
"""
from __future__ import annotations

from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any, Callable

from ...core.row_values import json_default
from ...core.strict_json import _LONE, dumps

__all__ = ["text_encoder"]


def text_encoder() -> Callable[[Any], str]:
    """A function equal to ``strict_json.dumps`` (compact) for any value; see the module docstring."""
    if c_make_encoder is None:          # no C accelerator (another Python): the plain path
        return dumps
    markers: dict[int, Any] = {}
    encode = c_make_encoder(markers, json_default, encode_basestring_ascii, None, ":", ",", False, False, False)
    clear, join, lone = markers.clear, "".join, _LONE.search

    def text_of(value: Any) -> str:
        clear()
        try:
            text = join(encode(value, 0))
        except (ValueError, TypeError):         # what dumps repairs (or raises again)
            return dumps(value)
        if "\\ud" in text and lone(text):       # a lone surrogate: dumps repairs it
            return dumps(value)
        return text

    return text_of
