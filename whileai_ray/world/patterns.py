"""A string that matches a schema's ``pattern``, for the simple patterns real tools use.

``^W\\d{7}$``, ``^[A-Z]{3}-\\d{4}$``, ``^(economy|business)$``, ``^#?[0-9a-f]{6}$``: literals,
classes, ranges, ``\\d \\w \\s``, repeats, groups and alternation. The pattern is parsed with
Python's own regex parser (``re._parser``) and walked once; anything it does not know
(lookarounds, backreferences) gives None and the caller falls back to other hints. The result
is checked with ``re.search`` before it is returned, so a None is the only way to be wrong.
"""
from __future__ import annotations

import re
from functools import lru_cache

try:                                    # Python 3.11+
    from re import _parser as _sre      # type: ignore[attr-defined]
except ImportError:                     # pragma: no cover - older Pythons
    import sre_parse as _sre

__all__ = ["string_for_pattern"]

_C = _sre  # constants (LITERAL, IN, ...) live on the parser module's namespace
_DIGITS = "0123456789"
_WORD = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
_PRINT = "abcdefghijkmnopqrstuvwxyz23456789"
_CATEGORY = {"CATEGORY_DIGIT": _DIGITS, "CATEGORY_WORD": _WORD, "CATEGORY_SPACE": " ",
             "CATEGORY_NOT_DIGIT": "abcdefgh", "CATEGORY_NOT_WORD": "-.", "CATEGORY_NOT_SPACE": _PRINT}


class _Unsupported(Exception):
    pass


@lru_cache(maxsize=512)
def _parsed(pattern: str):
    try:
        return _sre.parse(pattern), re.compile(pattern)
    except (re.error, TypeError, ValueError, OverflowError):
        return None, None


def string_for_pattern(pattern: str, rnd, tries: int = 4) -> str | None:
    """A string ``re.search(pattern, s)`` accepts, drawn with ``rnd``; None when not simple."""
    tree, compiled = _parsed(pattern)
    if tree is None:
        return None
    for _ in range(tries):
        try:
            out = _walk(tree, rnd)
        except _Unsupported:
            return None
        if compiled.search(out):
            return out
    return None


def _walk(items, rnd) -> str:
    out = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(av))
        elif name == "NOT_LITERAL":
            out.append("x" if chr(av) != "x" else "y")
        elif name == "ANY":
            out.append(_PRINT[int(rnd.random() * len(_PRINT))])
        elif name == "IN":
            out.append(_one_of(av, rnd))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            lo, hi, sub = av
            hi = lo + 3 if hi == _sre.MAXREPEAT else hi
            n = lo + int(rnd.random() * (min(hi, lo + 3) - lo + 1))
            out.append("".join(_walk(sub, rnd) for _ in range(n)))
        elif name == "SUBPATTERN":
            out.append(_walk(av[-1], rnd))
        elif name == "BRANCH":
            branches = av[1]
            out.append(_walk(branches[int(rnd.random() * len(branches))], rnd))
        elif name == "AT":
            continue
        elif name == "CATEGORY":
            chars = _CATEGORY.get(str(av))
            if chars is None:
                raise _Unsupported(name)
            out.append(chars[int(rnd.random() * len(chars))])
        else:
            raise _Unsupported(name)
    return "".join(out)


def _one_of(av, rnd) -> str:
    chars = []
    for op, val in av:
        name = str(op)
        if name == "NEGATE":
            raise _Unsupported("negated class")
        if name == "LITERAL":
            chars.append(chr(val))
        elif name == "RANGE":
            lo, hi = val
            chars.extend(chr(c) for c in range(lo, min(hi, lo + 200) + 1))
        elif name == "CATEGORY":
            chars.extend(_CATEGORY.get(str(val), ""))
        else:
            raise _Unsupported(name)
    if not chars:
        raise _Unsupported("empty class")
    return chars[int(rnd.random() * len(chars))]
