"""Which records a call names, and what the world adds to its answers about them.

``entity_refs`` walks a call's arguments, nested objects and lists included, and returns the
ids it names, each with its kind: ``{"order_id": "#W123", "items": [{"item_id": "I1"}, ...],
"item_ids": ["I2", "I3"]}`` names one order and three items, one by one (a list of ids is never
read as one id). Parameters that are keys without a kind (an ``email``, a ``username``) keep
their older reading (``records.py``), and so does an id-looking string under a plain name when
no tool names a kind of record at all (else a zip code would be read as a missing record).

``ack`` is the answer of a tool that acts on no record (a ``think`` tool, ``transfer_to_human``):
a plain acknowledgement, never a made-up order.
"""
from __future__ import annotations

from .records import ID_RE, is_placeholder

__all__ = ["entity_refs", "ack", "search_ids"]

_DEPTH = 8


def entity_refs(book, spec, args: dict, placeholders: frozenset) -> list[tuple]:
    """``[(kind or None, value)]`` for every record the call names, in argument order."""
    out: list[tuple] = []
    kinds = book.tool_kinds.get(spec.name) or ()
    for key in spec.ref_keys:
        if key in args and book.kind_of(key) is None:
            _add(out, None, args[key], placeholders)
    if kinds:
        _walk(book, args, out, placeholders, 0)
    elif not book.formats:           # tools that name no kind of record: an id-looking value is one
        out.extend((None, v) for k, v in args.items() if k not in spec.ref_keys and isinstance(v, str)
                   and ID_RE.fullmatch(v.strip()))
    return out


def _add(out: list, kind, value, placeholders) -> None:
    if isinstance(value, list):
        for v in value:
            _add(out, kind, v, placeholders)
    elif isinstance(value, (str, int)) and not isinstance(value, bool) and not is_placeholder(value, placeholders):
        out.append((kind, value))


def _walk(book, value, out: list, placeholders, depth: int) -> None:
    if depth > _DEPTH:
        return
    if isinstance(value, dict):
        for key, v in value.items():
            kind = book.kind_of(key) if isinstance(key, str) else None
            if kind is not None and not isinstance(v, dict):
                _add(out, kind, v, placeholders)
            else:
                _walk(book, v, out, placeholders, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _walk(book, v, out, placeholders, depth + 1)


def ack(tool: str, args: dict) -> dict:
    """A tool with no record behind it: it did what it was asked, nothing to look up."""
    return {"status": "ok", "data": {"acknowledged": True, "tool": tool}}


def search_ids(book, spec, run_seed, scenario_id, n: int) -> list[dict]:
    """The ids search hits carry when the tool's noun is a kind the world holds (else [{}] * n)."""
    kind = spec.noun[:-1] if spec.noun.endswith("s") and spec.noun[:-1] in book.formats else spec.noun
    fmt = book.formats.get(kind)
    if fmt is None:
        return [{} for _ in range(n)]
    pool = book.pool(run_seed, scenario_id, kind)
    return [{fmt.name: pool[i % len(pool)]} for i in range(n)]
