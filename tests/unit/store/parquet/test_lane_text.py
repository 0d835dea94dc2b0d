"""A lane encodes its row once (issue 32): the spool text is made from the checkpoint line's text
(``spill_text.lane_text``) and must be exactly ``edge_text`` of the stamped row, and the line exactly
``dump_line(stored_row(row))``, for rows as a lane makes them (the seeded agent's, played here) and
for every row shape that breaks the splice: a public key after a ``_`` one, a None or hidden key among
the public ones, a hidden key inside a value, NaN, the infinities, lone surrogates, values of no
JSON type (in the stored part or in the stamps), a str subclass, int keys."""
import copy
import datetime as dt
import random

import numpy as np
import pytest

from whileai_ray.agents.play_callable import play_callable_unit
from whileai_ray.agents.seeded import seeded_agent
from whileai_ray.core.rows import stored_row
from whileai_ray.runtime.pools.rollout_worker import storable
from whileai_ray.store.checkpoint.edge_lines import encoded_plain
from whileai_ray.store.checkpoint.lines import dump_line
from whileai_ray.store.parquet.spill_text import edge_text, lane_text
from whileai_ray.testing.seeded_rows import META, TOOLS

from planned_units import planned_units


class Label(str):
    pass


def played_rows(n: int) -> list[dict]:
    agent = seeded_agent(TOOLS)
    return [play_callable_unit(agent, u, META) for u in planned_units(n)]


def stamp(row: dict, i: int) -> dict:
    """What the lane adds after the line is made (``RolloutWorker._result``)."""
    row["_ordinal"], row["_node"], row["_seconds"] = i, "node-1", round(0.001 * i, 4)
    return row


def spool_text(row: dict, i: int):
    """``(line, text)`` the way the lane makes them: line first, stamps, then the text."""
    line, _, plain = encoded_plain(row)
    stamp(row, i)
    return line, (edge_text(row) if plain is None else lane_text(row, *plain)), plain


def odd_variants(base: dict) -> list[dict]:
    """Rows that must not take the splice (or that take it with an odd stamp)."""
    out = []
    moved = dict(base)
    moved["_early"] = 1
    moved["prompt"] = moved.pop("prompt")          # a public key after a "_" one
    out.append(moved)
    out.append({**base, "reward": None, "final_text": base["final_text"]})     # a None among the public keys
    mid = {}
    for k, v in base.items():
        mid[k] = v
        if k == "steps":
            mid["hidden_state"] = {"secret": 1}     # a hidden key among the public ones
    out.append(mid)
    out.append({**base, "steps": base["steps"] + [{"text": "x", "rubric": "hidden inside"}]})
    out.append({**base, "score": float("nan")})
    out.append({**base, "score": float("inf")})
    out.append({**base, "final_text": "cut \ud83d here"})
    out.append({**base, "final_text": "a pair \ud83d\ude80 is fine"})
    out.append({**base, "seed": np.int64(3)})
    out.append({**base, "at": dt.datetime(2024, 1, 2)})
    out.append({**base, "final_text": Label("a str subclass")})
    out.append({**base, "_stamp_nan": float("nan"), "_stamp_odd": np.float64(0.5)})
    out.append({**base, "_stamp_obj": object()})
    out.append({**base, "_stamp_set": {"a"}})
    out.append({**base, "privileged": {"expected": "x"}, "tier": "hard"})   # privileged before a public key
    ints = dict(base)
    ints[7] = "int key among the stamps"
    out.append(ints)
    return out


def test_played_rows_take_the_splice_and_give_the_very_text_and_line():
    rows = played_rows(150)
    taken = 0
    for i, row in enumerate(rows):
        want_line = dump_line(stored_row(row))
        line, text, plain = spool_text(row, i)
        taken += plain is not None
        assert line == want_line
        assert text is not None and text == edge_text(row)
    assert taken == len(rows)          # a lane's row is the case the splice is for


def test_every_odd_row_gives_edge_texts_answer():
    rows = played_rows(40)
    rng = random.Random(5)
    checked = 0
    for i, base in enumerate(rows):
        for variant in odd_variants(base):
            row = copy.deepcopy(variant) if not any(type(v) is object for v in variant.values()) else dict(variant)
            try:
                want_line = dump_line(stored_row(row))
            except (TypeError, ValueError):
                continue                               # (a row that cannot be stored: storable says so)
            line, text, _ = spool_text(row, rng.randrange(10**6))
            assert line == want_line
            assert text == edge_text(row), variant.keys()
            checked += 1
    assert checked >= 40 * 14


@pytest.mark.parametrize("late", ["_ordinal", "_seconds"])
def test_a_stamp_that_was_there_before_keeps_its_place(late):
    row = played_rows(1)[0]
    row[late] = -1                     # set before the line is made: assigning it again keeps its place
    line, text, plain = spool_text(row, 3)
    assert plain is not None and text == edge_text(row)


def test_storable_hands_the_plain_form_to_the_lane_and_none_for_a_repaired_row():
    row = played_rows(1)[0]
    problem, edge = storable(row)
    assert problem is None and edge is not None and edge[2] is not None
    stored, text = edge[2]
    assert (text + "\n").encode("ascii") == edge[0] and stored == stored_row(row)
    row["final_text"] = "nan ahead"
    row["score"] = float("nan")        # repaired in the line (json_repairs): no plain form
    problem, edge = storable(row)
    assert problem is None and edge is not None and edge[2] is None
    assert b"json_repairs" in edge[0]
