"""A string that matches a schema's ``pattern``, for the simple patterns real tools use.

``^W\\d{7}$``, ``^[A-Z]{3}-\\d{4}$``, ``^(economy|business)$``, ``^#?[0-9a-f]{6}$``: literals,
classes, ranges, ``\\d \\w \\s``, repeats, groups and alternation. The pattern is parsed with
Python's own regex parser (``re._parser``) and compiled once into a program of plain tuples
(``_compile``: a class's characters listed, each node's kind decided), which each draw runs;
anything it does not know (lookarounds, backreferences) gives None and the caller falls back to
other hints. The result is checked with ``re.search`` before it is returned, so a None is the
only way to be wrong.
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


# the compiled program's steps (see ``_compile``)
_LIT, _PICK, _REPEAT, _BRANCH, _SEQ, _BAD, _PICKS = range(7)


@lru_cache(maxsize=512)
def _parsed(pattern: str):
    """``(program, compiled regex)`` of ``pattern``, or ``(None, None)`` when it does not parse."""
    try:
        return _compile(_sre.parse(pattern)), re.compile(pattern)
    except (re.error, TypeError, ValueError, OverflowError, RecursionError):
        return None, None


def string_for_pattern(pattern: str, rnd, tries: int = 4) -> str | None:
    """A string ``re.search(pattern, s)`` accepts, drawn with ``rnd``; None when not simple."""
    program, compiled = _parsed(pattern)
    if program is None:
        return None
    for _ in range(tries):
        try:
            out = _run(program, rnd.random)
        except _Unsupported:
            return None
        if compiled.search(out):
            return out
    return None


def _compile(items) -> tuple:
    """The parse tree ``items`` as a program of plain tuples, made once per pattern: what a draw
    does at each node is decided here (a class's characters listed, an operator's name read), so
    a draw only runs it. A node a draw cannot make is kept as ``(_BAD, name)`` where it stands and
    raises only when a draw reaches it (a branch not taken, a repeat of zero never does), after
    the very draws the walk of the tree made before it: the strings drawn, and the draws left for
    the caller's fallbacks, are the same."""
    steps: list = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            steps.append((_LIT, chr(av)))
        elif name == "NOT_LITERAL":
            steps.append((_LIT, "x" if chr(av) != "x" else "y"))
        elif name == "ANY":
            steps.append((_PICK, _PRINT))
        elif name == "IN":
            steps.append(_class(av))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            lo, hi, sub = av
            hi = lo + 3 if hi == _sre.MAXREPEAT else hi
            sub = _compile(sub)
            if len(sub) == 1 and sub[0][0] == _PICK:        # \d{7}: n characters of one class
                steps.append((_PICKS, lo, min(hi, lo + 3) - lo + 1, sub[0][1]))
            else:
                steps.append((_REPEAT, lo, min(hi, lo + 3) - lo + 1, sub))
        elif name == "SUBPATTERN":
            steps.append((_SEQ, _compile(av[-1])))
        elif name == "BRANCH":
            steps.append((_BRANCH, tuple(_compile(b) for b in av[1])))
        elif name == "AT":
            continue
        elif name == "CATEGORY":
            chars = _CATEGORY.get(str(av))
            steps.append((_PICK, chars) if chars is not None else (_BAD, name))
        else:
            steps.append((_BAD, name))
    return tuple(steps)


def _class(av) -> tuple:
    """A character class as ``(_PICK, its characters)``, or ``(_BAD, why)``."""
    chars: list[str] = []
    for op, val in av:
        name = str(op)
        if name == "NEGATE":
            return (_BAD, "negated class")
        if name == "LITERAL":
            chars.append(chr(val))
        elif name == "RANGE":
            lo, hi = val
            chars.extend(chr(c) for c in range(lo, min(hi, lo + 200) + 1))
        elif name == "CATEGORY":
            chars.extend(_CATEGORY.get(str(val), ""))
        else:
            return (_BAD, name)
    if not chars:
        return (_BAD, "empty class")
    return (_PICK, "".join(chars))


def _run(program: tuple, r) -> str:
    """One string of ``program``, drawn with ``r`` (``rnd.random``), node by node in order."""
    out = []
    for step in program:
        kind = step[0]
        if kind == _LIT:
            out.append(step[1])
        elif kind == _PICK:
            chars = step[1]
            out.append(chars[int(r() * len(chars))])
        elif kind == _PICKS:
            n = step[1] + int(r() * step[2])
            chars = step[3]
            size = len(chars)
            out.append("".join([chars[int(r() * size)] for _ in range(n)]))
        elif kind == _REPEAT:
            n = step[1] + int(r() * step[2])
            sub = step[3]
            out.append("".join([_run(sub, r) for _ in range(n)]))
        elif kind == _SEQ:
            out.append(_run(step[1], r))
        elif kind == _BRANCH:
            branches = step[1]
            out.append(_run(branches[int(r() * len(branches))], r))
        else:
            raise _Unsupported(step[1])
    return "".join(out)
