"""A rollout lane sends each row with its spool text (``RolloutResult.text``, issue 32): ``dump_row``
of the whole internal row as the Driver receives it, the lane's stamps (``_ordinal``, ``_node``,
``_seconds``) in, the Driver's ``_landed_s`` not yet. Sync and async lanes alike; a row the lane
did not encode (a timeout) carries none, and a verdict drops it."""
import pickle

from whileai_ray.runtime.pools.rollout_worker import RolloutWorker
from whileai_ray.store.parquet.spill import dump_row

from planned_units import planned_units
from tests.unit.runtime.pools.test_rollout_lines import META, async_reply, odd_reply, play


def test_sync_and_async_lanes_send_the_rows_spool_text():
    chunk = planned_units(10)
    for agent in (odd_reply, async_reply):
        results = play(RolloutWorker(agent, META, concurrency=4, node_id="n"), chunk)
        assert len(results) == len(chunk)
        for res in results:
            crossed = pickle.loads(pickle.dumps(res))
            assert crossed.text == dump_row(crossed.row)
            assert '"_node":"n"' in crossed.text and '"_seconds":' in crossed.text and "_landed_s" not in crossed.text
            assert '"privileged":' in crossed.text
            assert crossed.with_verdict({"reward": 1.0}).text is None


def test_a_timed_out_row_carries_no_text():
    import time

    def stuck(message):
        time.sleep(0.5)
        return odd_reply(message)

    worker = RolloutWorker(stuck, META, concurrency=4, timeout=0.05, node_id="n")
    results = play(worker, planned_units(3))
    worker.shutdown()
    assert results and all(r.text is None for r in results)
