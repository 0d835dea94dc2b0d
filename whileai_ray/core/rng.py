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

__all__ = ["stable_hash", "unit_rng", "draw", "short_hash", "weyl"]

_GOLDEN = 0.6180339887498949


def _canon(parts: tuple[object, ...]) -> bytes:
    """The canonical JSON of ``parts``: ``json.dumps(parts, sort_keys=True, separators=(",", ":"),
    default=str)``. Keys are nearly always plain strings and ints (a seed, a salt, an id), and
    those are written here directly, byte for byte as ``json.dumps`` writes them (its own C string
    encoder, ``int.__repr__``) at a fraction of its cost: the planner draws a dozen keys per
    situation. Anything else (a bool, a float, a dict, a nested list) goes through ``json.dumps``."""
    out = []
    for part in parts:
        if type(part) is str:
            out.append(_json_str(part))
        elif type(part) is int:
            out.append(int.__repr__(part))
        else:
            return json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str).encode()
    return ("[" + ",".join(out) + "]").encode()


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


def weyl(seed: int, index: int, salt: str = "") -> float:
    """Low-discrepancy draw: the ``index``-th point of a seeded golden-ratio sequence.

    Over any run of consecutive indices the share of points below ``p`` is within
    a few counts of ``p * n``, which is what makes a requested rate deliver exactly.
    """
    return (draw(seed, "weyl", salt) + index * _GOLDEN) % 1.0
