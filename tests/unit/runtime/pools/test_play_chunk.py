"""A rollout actor answers the Driver without the units it was sent (``RolloutWorker.play_chunk``,
issue 32): the Driver holds them and puts each back by position (``driver/loop.py``), so a unit is
never pickled twice more per row. Everything else in each result is what ``run_chunk`` gives."""
import asyncio
import pickle

from whileai_ray.runtime.pools.rollout_worker import RolloutWorker

from planned_units import planned_units
from tests.unit.runtime.pools.test_rollout_lines import META, async_reply, odd_reply


def test_play_chunk_answers_run_chunks_results_without_their_units():
    chunk = planned_units(8)
    for agent in (odd_reply, async_reply):
        full = asyncio.run(RolloutWorker(agent, META, concurrency=4, node_id="n").run_chunk(chunk))
        bare = asyncio.run(RolloutWorker(agent, META, concurrency=4, node_id="n").play_chunk(chunk))
        assert [r.unit for r in bare] == [None] * len(chunk)
        assert len(pickle.dumps(bare)) < len(pickle.dumps(full))
        for unit, f, b in zip(chunk, full, bare):
            back = b.with_unit(unit)
            assert back.unit is unit and f.unit is unit
            assert (back.line, back.digest, back.unusable, back.error) == (f.line, f.digest, f.unusable, f.error)
            assert (back.text is None) == (f.text is None) and back.text is not None   # (its _seconds differs)
            assert {k: v for k, v in back.row.items() if k != "_seconds"} == \
                   {k: v for k, v in f.row.items() if k != "_seconds"}


def test_a_lost_unit_comes_back_bare_too():
    def broken(message):
        raise SystemExit("not an agent error we can row")   # our code fails on it: the unit is lost

    chunk = planned_units(2)
    bare = asyncio.run(RolloutWorker(broken, META, concurrency=2, node_id="n").play_chunk(chunk))
    assert len(bare) == 2 and all(r.unit is None for r in bare)
    assert [r.with_unit(u).unit for r, u in zip(bare, chunk)] == chunk
