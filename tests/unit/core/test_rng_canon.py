"""``core/rng._canon`` writes plain str/int keys itself; it must give ``json.dumps``'s bytes exactly.

Every seeded draw of a run (``unit_rng``, ``draw``, ``short_hash``: scenario ids, worlds,
phrasings, fault modes) hashes these bytes, so one byte off would move every plan.
"""
import json
import math
import random
from enum import IntEnum

from whileai_ray.core import rng
from whileai_ray.core.rng import _canon, draw, short_hash, stable_hash, unit_rng


def reference(parts):
    """The encoding before issue 32 (commit 50aa2a8)."""
    return json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str).encode()


class Level(IntEnum):
    LOW = 1


class Name(str):
    pass


TEXTS = ["", "world", "sc-0a1b2c3d4e", "é", "¿Dónde está? 😀", "\ud800 lone surrogate", "quote \" back \\ slash",
         "tab\tnew\nline\r\x00\x1f\x7f", "\u2028\u2029", "日本語のテキスト", "a" * 10_000, "word " * 500, "İſK"]
INTS = [0, 1, -1, 7, 2**63, -(2**63) - 1, 10**40, 123456789012345678901234567890]
ODD = [True, False, None, 1.5, float("nan"), float("inf"), -0.0, Level.LOW, Name("x"), (1, "a"), [1, [2]],
       {"b": 1, "a": [2]}, {3: "x"}, b"bytes", object.__new__(object), frozenset()]


def test_plain_keys_encode_exactly_as_json_dumps():
    for t in TEXTS:
        for parts in [(t,), (0, t), (t, 5, t), (2**64, "world", t)]:
            assert _canon(parts) == reference(parts), parts
    for i in INTS:
        assert _canon((i, "x")) == reference((i, "x"))
    assert _canon(()) == reference(()) == b"[]"


def test_any_other_part_falls_back_to_json_dumps_whole():
    for odd in ODD:
        for parts in [(odd,), (0, "a", odd), (odd, "b")]:
            try:
                want = reference(parts)
            except (TypeError, ValueError):
                continue
            assert _canon(parts) == want, parts
    assert math.isnan(json.loads(_canon((float("nan"),)))[0])


def test_random_mixes_encode_exactly():
    r = random.Random(32)
    alphabet = ["a", "Z", " ", "\"", "\\", "\n", "é", "😀", "\ud83d", "\x01", "-", "0"]
    for _ in range(3000):
        parts = tuple(r.choice([r.randrange(-10**20, 10**20), "".join(r.choices(alphabet, k=r.randrange(12))),
                                r.random(), None, r.random() < 0.5]) for _ in range(r.randrange(5)))
        assert _canon(parts) == reference(parts), parts


def test_lists_and_tuples_of_plain_keys_encode_exactly():
    """A group's key ``[scenario id, phrasing]`` is a part of the rl policy's draws (groups.py)."""
    r = random.Random(33)
    alphabet = ["a", "Z", " ", "\"", "\\", "\n", "é", "😀", "\ud83d", "\x01", "-", "0"]

    def item():
        return r.choice([r.randrange(-10**20, 10**20), "".join(r.choices(alphabet, k=r.randrange(12))),
                         r.random(), None, r.random() < 0.5, [], [1, "a"], {"k": 1}, (2, "b")])
    for _ in range(3000):
        parts = tuple(r.choice([item(), [item() for _ in range(r.randrange(4))],
                                tuple(item() for _ in range(r.randrange(4)))]) for _ in range(r.randrange(5)))
        assert _canon(parts) == reference(parts), parts
    for parts in [(3, "explore-hazard", ["sc-0a1b2c3d4e", 0], 2), ([],), ((),), (["é", 2**70],), ((1, "a"), [2])]:
        assert _canon(parts) == reference(parts), parts


def test_the_draws_built_on_it_are_unchanged():
    # the draws hash exactly the bytes json.dumps gave (the encoding of commit 50aa2a8)
    assert short_hash("family", "check order # for N") == stable_hash("family", "check order # for N")[:10]
    assert rng.hashlib.sha256(reference((0, "world", "sc-1"))).hexdigest() == stable_hash(0, "world", "sc-1")
    assert unit_rng(0, "world", "sc-1").random() == unit_rng(0, "world", "sc-1").random()
    assert draw(3, "fault-mode", "sc-9") == int.from_bytes(
        rng.hashlib.sha256(reference((3, "fault-mode", "sc-9"))).digest()[:7], "big") / float(1 << 56)


def test_a_keyed_draw_is_draw_with_its_prefix_hashed_once():
    """``KeyedDraw(*prefix)(last)`` (the cell picker's ties, the bandit's arms) is ``draw(*prefix, last)``."""
    r = random.Random(7)
    for _ in range(500):
        seed = r.choice([0, 3, -5, 2**63, r.randrange(-10**15, 10**15)])
        key = r.choice(TEXTS[:9])
        last = r.choice([0, 1, -1, 2**64, r.randrange(10**9)])
        assert rng.KeyedDraw(seed, "cell-tie", key)(last) == draw(seed, "cell-tie", key, last)
        assert rng.KeyedDraw(seed, "arm", 4)(last) == draw(seed, "arm", 4, last)
    for odd in ODD[:8]:                        # a part _canon hands to json.dumps: draw() whole
        try:
            want = draw(1, odd, 2)
        except (TypeError, ValueError):
            continue
        assert rng.KeyedDraw(1, odd)(2) == want
    assert rng.KeyedDraw(1, "x")(True) == draw(1, "x", True)
    assert rng.KeyedDraw()(3) == draw(3)


def test_weyl_keeps_its_sequence():
    for seed, salt in [(0, ""), (5, "fault"), (-3, "x"), (2**70, "fault")]:
        for i in (0, 1, 7, 10**6):
            assert rng.weyl(seed, i, salt) == (draw(seed, "weyl", salt) + i * rng._GOLDEN) % 1.0
