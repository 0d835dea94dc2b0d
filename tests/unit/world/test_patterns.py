"""``world/patterns.py`` draws a string for a schema's ``pattern`` from a program compiled once per
pattern (issue 32: with a retail tool set's ``^#W\\d{7}$`` ids, walking the regex parser's tree
at every draw was a fifth of a rollout lane's CPU). The program must draw exactly what the walk
of the tree drew, and leave the generator where the walk left it (an unsupported node makes the
caller fall back to other hints with the draws that are left): the walk as first written is kept
here as the reference.
"""
import random
import re

import pytest

from whileai_ray.world import patterns
from whileai_ray.world.entities import EntityBook
from whileai_ray.world.patterns import string_for_pattern

_sre = patterns._sre


class _Unsupported(Exception):
    pass


def _walk(items, rnd):
    out = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(av))
        elif name == "NOT_LITERAL":
            out.append("x" if chr(av) != "x" else "y")
        elif name == "ANY":
            out.append(patterns._PRINT[int(rnd.random() * len(patterns._PRINT))])
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
            chars = patterns._CATEGORY.get(str(av))
            if chars is None:
                raise _Unsupported(name)
            out.append(chars[int(rnd.random() * len(chars))])
        else:
            raise _Unsupported(name)
    return "".join(out)


def _one_of(av, rnd):
    chars = ""
    for op, val in av:
        kind = str(op)
        if kind == "RANGE":
            chars += "".join(map(chr, range(val[0], min(val[1], val[0] + 200) + 1)))
        elif kind == "LITERAL":
            chars += chr(val)
        elif kind == "CATEGORY":
            chars += patterns._CATEGORY.get(str(val), "")
        else:                                   # NEGATE, or a node no draw can make
            raise _Unsupported(kind)
    if not chars:
        raise _Unsupported("empty class")
    return chars[int(rnd.random() * len(chars))]


def _first_string_for_pattern(pattern, rnd, tries=4):
    try:
        tree, compiled = _sre.parse(pattern), re.compile(pattern)
    except (re.error, TypeError, ValueError, OverflowError):
        return None
    for _ in range(tries):
        try:
            out = _walk(tree, rnd)
        except _Unsupported:
            return None
        if compiled.search(out):
            return out
    return None


PATTERNS = [
    r"^W\d{7}$", r"^#W\d{7}$", r"^\d{5}$", r"^\d{10}$", r"^[A-Z]{3}-\d{4}$", r"^(economy|business)$",
    r"^#?[0-9a-f]{6}$", r"^[A-Za-z0-9_]+$", r"^\w{2,}\s\S+$", r"^(?:ORD|INV)-\d{3,6}(?:-[a-z])?$",
    r"a.b.c", r"[^abc]{3}", r"x(?=y)", r"(a)\1", r"^[\d\D]{2}$", r"^\W+$", r"[a-c]*?z+?", r"(?i)abc",
    r"^(a|b(c|[^d])|e\B)$", r"^(x|(?=y)y)$", r"^[a-\u0400]{2}$", r"^[\]]$", r"^(|a)$",
    r"^\d{2}(?=x)x$", r"^[ab](?<=a)c$", r"^(ab){0,2}(cd){1,}$", r"^\d*$", "(", r"[", r"^a{1000}$", r"^.{0,5}$",
    r"\bword\b", r"^[\s\d]x$",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_pattern_draws_what_the_walk_of_its_tree_drew_and_leaves_the_same_draws(pattern):
    for seed in range(60):
        new, old = random.Random(seed), random.Random(seed)
        assert string_for_pattern(pattern, new) == _first_string_for_pattern(pattern, old), (pattern, seed)
        assert new.random() == old.random(), (pattern, seed)     # the caller's fallbacks draw the same next


def test_a_retail_tool_sets_ids_come_out_as_before():
    tools = [{"type": "function", "function": {"name": "get_order_details", "parameters": {
        "type": "object", "properties": {
            "order_id": {"type": "string", "pattern": r"^#W\d{7}$"},
            "user_id": {"type": "string", "description": "e.g. sara_doe_496"},
            "item_ids": {"type": "array", "items": {"type": "string", "pattern": r"^\d{10}$"}},
            "zip_id": {"type": "string", "pattern": r"^(?=\d)\d{5}$"}}}}}]
    book = EntityBook(tools)
    pools = {kind: book.pool(7, "sc-0123456789", kind) for kind in ("order", "item", "user", "zip")}
    assert all(re.fullmatch(r"#W\d{7}", v) for v in pools["order"]) and len(pools["order"]) > 1
    assert all(re.fullmatch(r"\d{10}", v) for v in pools["item"])
    assert all(not re.fullmatch(r"\d{5}", v) for v in pools["zip"])     # a lookahead: the other hints
    # the same ids from the walk of the tree, with the same stream
    from whileai_ray.world.entities import _Stream
    fmt = book.formats["order"]
    for k in range(6):
        key = f"7|entities|sc-0123456789|order|{k}"
        assert fmt.draw(_Stream(key)) == _first_string_for_pattern(fmt.pattern, _Stream(key))


class _FirstStream:
    """``entities._Stream`` as first written: a draw sliced from the block at each call."""

    def __init__(self, key):
        import hashlib
        self.key, self.block, self.pos = key.encode(), 0, 0
        self.buf = hashlib.sha256(self.key).digest()

    def random(self):
        import hashlib
        if self.pos > 25:
            self.block += 1
            self.buf = hashlib.sha256(self.key + b"#%d" % self.block).digest()
            self.pos = 0
        v = int.from_bytes(self.buf[self.pos:self.pos + 7], "big") / 72057594037927936.0
        self.pos += 7
        return v


def test_a_worlds_stream_draws_what_it_drew_block_after_block():
    """The stream now cuts a block's four draws at once; the draws are the very same floats."""
    from whileai_ray.world.entities import _Stream
    for i in range(300):
        key = f"{i}|entities|sc-{i:010x}|order|{i % 6}" + "é" * (i % 3)
        new, old = _Stream(key), _FirstStream(key)
        assert [new.random() for _ in range(57)] == [old.random() for _ in range(57)], key
