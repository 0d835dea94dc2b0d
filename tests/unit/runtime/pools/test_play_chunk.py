"""A rollout actor serves the Driver through ``RolloutWorker.play_chunk`` (issue 32): the units may
come pickled already (``messages.pack_units``), and each result goes back as its ``wire()`` tuple,
without the unit, which the Driver holds and puts back by position (``driver/loop.py``). Nothing
else in a result changes on the way."""
import asyncio
import pickle

from whileai_ray.core.columns import digest
from whileai_ray.runtime.messages import RolloutResult, pack_units, unpack_units
from whileai_ray.search.coverage import row_marks
from whileai_ray.runtime.pools.rollout_worker import RolloutWorker

from planned_units import planned_units
from tests.unit.runtime.pools.test_rollout_lines import META, async_reply, odd_reply


def _same(a, b):
    """Two results of one unit, played twice (their ``_seconds`` differ, and so their text)."""
    assert (a.line, a.digest, a.unusable, a.error, a.facts) == (b.line, b.digest, b.unusable, b.error, b.facts)
    assert (a.text is None) == (b.text is None)
    assert {k: v for k, v in a.row.items() if k != "_seconds"} == {k: v for k, v in b.row.items() if k != "_seconds"}


def test_play_chunk_answers_run_chunks_results_as_tuples_without_their_units():
    chunk = planned_units(8)
    for agent in (odd_reply, async_reply):
        full = asyncio.run(RolloutWorker(agent, META, concurrency=4, node_id="n").run_chunk(chunk))
        for sent in (chunk, pack_units(chunk)):
            wire = asyncio.run(RolloutWorker(agent, META, concurrency=4, node_id="n").play_chunk(sent))
            assert all(type(w) is tuple for w in wire)
            assert len(pickle.dumps(wire)) < len(pickle.dumps(full))
            for unit, f, w in zip(chunk, full, pickle.loads(pickle.dumps(wire))):
                back = RolloutResult.from_wire(unit, w)
                assert back.unit is unit and back.text is not None
                _same(back, f)
                assert back.marks == row_marks(f.row) and back.marks[0] == digest(unit.situation.scenario_id)


def test_the_driver_takes_a_lanes_marks_unless_a_verdict_changed_the_row():
    """The planner counts a row by the ``row_marks`` its lane made (``Outcome.marks``); a row a
    judge graded on the Driver is read there instead (its lane's line, text and marks dropped)."""
    from whileai_ray.runtime.driver.landing import Landing
    unit = planned_units(1)[0]
    res = asyncio.run(RolloutWorker(odd_reply, META, concurrency=1, node_id="n").run_chunk([unit]))[0]
    assert res.marks is not None
    assert Landing().played(res).marks == res.marks
    graded = res.with_verdict({"reward": 1.0, "judge_status": "ok"})
    assert graded.marks is None and Landing(judge_name="j").played(graded).marks is None


def test_units_cross_pickled_unless_plain_pickle_refuses_one():
    chunk = planned_units(3)
    packed = pack_units(chunk)
    assert isinstance(packed, bytes) and unpack_units(packed) == chunk
    odd = chunk + [lambda: None]                  # (no unit holds one; the fallback is Ray's own pickler)
    assert pack_units(odd) is odd and unpack_units(odd) is odd


def test_a_lost_unit_comes_back_on_the_wire_too():
    def broken(message):
        raise SystemExit("not an agent error we can row")   # our code fails on it: the unit is lost

    chunk = planned_units(2)
    wire = asyncio.run(RolloutWorker(broken, META, concurrency=2, node_id="n").play_chunk(chunk))
    back = [RolloutResult.from_wire(u, w) for u, w in zip(chunk, wire)]
    assert [r.unit for r in back] == chunk and all(r.row is None and r.unusable for r in back)


def test_a_result_with_every_field_set_comes_back_whole_from_its_wire_form():
    unit = planned_units(1)[0]
    res = RolloutResult(unit, {"prompt": "p"}, skipped=True, unusable="timed_out", timed_out=True, fault_parent=True,
                        error="e", seconds=1.5, verdict={"reward": 1.0}, line=b"{}\n", digest=(1, 2, "k"),
                        text="{}", facts=(1, "x"), marks=(3, 4, "cell", "shape"))
    defaults = RolloutResult._field_defaults
    assert all(getattr(res, name) != defaults[name] for name in RolloutResult._fields if name not in ("unit", "row"))
    wire = pickle.loads(pickle.dumps(res.wire()))
    assert type(wire) is tuple and len(wire) == len(RolloutResult._fields) - 1
    back = RolloutResult.from_wire(unit, wire)
    assert type(back) is RolloutResult and back == res and back.facts == (1, "x") and back.unit is unit


def test_an_asks_calls_requests_may_come_pickled_too():
    from whileai_ray.search.edge_asks import AskBuilder
    from whileai_ray.situations.covering import pairwise_cells
    from whileai_ray.situations.grid import build_axes
    cells = pairwise_cells(build_axes(META.tools, META.system_prompt))
    builder = AskBuilder(META.tools, META.system_prompt, 5, cells)
    requests = [(i % len(cells), 3 * i, 0) for i in range(40)] + [(-1, 2, 0)]      # grid asks and a probe
    worker = RolloutWorker(odd_reply, META, concurrency=4, node_id="n")
    plain = asyncio.run(worker.write_asks(builder.token(), [builder], requests))
    packed = asyncio.run(worker.write_asks(builder.token(), [None], pack_units(requests)))   # (it knows the writer now)
    assert plain[0] == packed[0] == requests and plain[1] == packed[1] and len(plain[1]) == len(requests)
    assert (plain[2] == packed[2]).all() and plain[3] == packed[3] and (plain[4] == packed[4]).all()
