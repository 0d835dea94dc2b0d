"""Deterministic randomness: every draw is keyed by the run seed and a work unit's key.

Nothing in whileai_ray uses the global ``random`` module or the builtin ``hash()`` (which is
salted per process). A draw is a function of ``(seed, *key parts)`` alone, so a unit gives the
same result on any actor, node, or completion order.
"""
from __future__ import annotations

import hashlib
import json
import random
from json.encoder import encode_basestring_ascii as _json_str

__all__ = ["stable_hash", "unit_rng", "draw", "short_hash", "weyl", "KeyedDraw"]

_GOLDEN = 0.6180339887498949


def _canon(parts: tuple[object, ...]) -> bytes:
    """The canonical JSON of ``parts``: ``json.dumps(parts, sort_keys=True, separators=(",", ":"),
    default=str)``. Keys are nearly always plain strings and ints (a seed, a salt, an id), and
    those are written here directly, byte for byte as ``json.dumps`` writes them (its own C string
    encoder, ``int.__repr__``) at a fraction of its cost: the planner draws a dozen keys per
    situation. A list or tuple of them (a group's ``[scenario id, phrasing]`` key, drawn each time an
    rl group may grow: ~4 us a draw through ``json.dumps``) is written the same way, as the JSON
    array ``json.dumps`` writes for either. Anything else (a bool, a float, a dict, a list holding
    one of those or another list) goes through ``json.dumps``."""
    text = _plain_json(parts)
    if text is None:
        return json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str).encode()
    return text.encode()


def _plain_json(items: list | tuple, arrays: bool = True) -> str | None:
    """``items`` as the JSON array ``json.dumps`` writes when each is a str, an int or (``arrays``)
    a list or tuple of those, else None."""
    out = []
    for item in items:
        if type(item) is str:
            out.append(_json_str(item))
        elif type(item) is int:
            out.append(int.__repr__(item))
        elif arrays and (type(item) is list or type(item) is tuple) and (inner := _plain_json(item, False)) is not None:
            out.append(inner)
        else:
            return None
    return "[" + ",".join(out) + "]"


def stable_hash(*parts: object) -> str:
    """Hex sha256 of the canonical JSON of ``parts``."""
    return hashlib.sha256(_canon(parts)).hexdigest()


def short_hash(*parts: object, n: int = 10) -> str:
    return stable_hash(*parts)[:n]


def unit_rng(seed: int, *parts: object) -> random.Random:
    """A private generator for one unit of work, seeded by sha256(seed, parts)."""
    digest = hashlib.sha256(_canon((seed,) + parts)).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def draw(seed: int, *parts: object) -> float:
    """One uniform draw in [0, 1) keyed by ``(seed, *parts)``."""
    digest = hashlib.sha256(_canon((seed,) + parts)).digest()
    return int.from_bytes(digest[:7], "big") / float(1 << 56)


class KeyedDraw:
    """``draw(*prefix, last)`` for many ``last`` ints, the prefix's part of the hash taken once.

    The planner draws per pick with keys that share a long prefix (the seed, a salt, a cell's
    canonical JSON of ~100 characters): the prefix's canonical JSON is hashed once here and the
    hash state copied per draw, which gives ``draw``'s very value (same bytes hashed) at a
    quarter of its cost. A prefix that ``_canon`` would write with ``json.dumps`` (anything but
    strings and ints) is handed to ``draw`` whole."""

    __slots__ = ("_state", "_prefix")

    def __init__(self, *prefix: object):
        self._prefix = prefix
        head = _canon(prefix)                        # b"[...]": the draw's bytes add ",last]" (or "last]")
        plain = all(type(p) is str or type(p) is int for p in prefix)
        self._state = hashlib.sha256(head[:-1] + (b"," if prefix else b"")) if plain else None

    def __call__(self, last: int) -> float:
        state = self._state
        if state is None or type(last) is not int:
            return draw(*self._prefix, last)  # type: ignore[arg-type]
        h = state.copy()
        h.update(b"%d]" % last)
        return int.from_bytes(h.digest()[:7], "big") / float(1 << 56)

    def __deepcopy__(self, memo: dict) -> "KeyedDraw":
        return self                  # never changes once made (a draw copies the hash state)

    def __reduce__(self) -> tuple:
        return (KeyedDraw, self._prefix)


_WEYL_BASE: dict[tuple[int, str], float] = {}


def weyl(seed: int, index: int, salt: str = "") -> float:
    """Low-discrepancy draw: the ``index``-th point of a seeded golden-ratio sequence.

    Over any run of consecutive indices the share of points below ``p`` is within
    a few counts of ``p * n``, which is what makes a requested rate deliver exactly.
    The sequence's start is a draw of ``(seed, salt)`` alone, kept once made.
    """
    key = (seed, salt) if type(seed) is int and type(salt) is str else None     # (plain keys only)
    base = _WEYL_BASE.get(key) if key is not None else None
    if base is None:
        base = draw(seed, "weyl", salt)
        if key is not None:
            if len(_WEYL_BASE) >= 256:
                _WEYL_BASE.clear()
            _WEYL_BASE[key] = base
    return (base + index * _GOLDEN) % 1.0
