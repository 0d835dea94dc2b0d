"""A rollout lane sends each row with its checkpoint line and key digest (issue 32 item 2): the
very bytes the Driver's checkpoint would make of the row it receives, so the Driver appends them.
The same ``RolloutWorker`` runs as a Ray actor and in the caller's own pool (``caller/player.py``),
so what holds here holds for both. A row the lane could not encode (or did not build from the
agent's reply: a timeout, a class that failed to build) carries no line: the Driver encodes it."""
import asyncio
import pickle
import time

import numpy as np

from whileai_ray.agents.forms import bind_class_form
from whileai_ray.core.identity import key_digest, row_key
from whileai_ray.core.rows import stored_row
from whileai_ray.core.unit import RunMeta
from whileai_ray.runtime.pools.rollout_worker import RolloutWorker
from whileai_ray.store.checkpoint.jsonl import dump_line
from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS

from planned_units import planned_units

META = RunMeta(run_id="r", seed=3, tools=TOOLS, system_prompt=SYSTEM, model_version="lines")


def odd_reply(message):
    """A reply with everything a strict encoder has to repair or normalise."""
    return {"steps": [{"tool": "lookup_order", "arguments": {"order_id": "ORD-\ud800"},
                       "result": {"score": float("nan"), "big": float("inf"), "n": np.int64(3),
                                  "arr": np.array([1.5, 2.5]), "text": "漢字 🚀 \udc00",
                                  "nested": [[{"a": None}]]}}],
            "final_text": f"done \ud83d {message[:20]}", "privileged": {"expected": "refund"}}


async def async_reply(message):
    await asyncio.sleep(0.001)
    return odd_reply(message)


def play(worker, chunk):
    async def go():
        return await worker.run_chunk(chunk)
    return asyncio.run(go())


def check_lines(results):
    rows = 0
    for res in results:
        crossed = pickle.loads(pickle.dumps(res))       # as Ray hands it to the Driver
        assert crossed.line == dump_line(stored_row(crossed.row))
        assert crossed.digest == key_digest(row_key(stored_row(crossed.row)))
        rows += 1
    return rows


def test_sync_and_async_lanes_send_each_rows_stored_line_and_key_digest():
    chunk = planned_units(12)
    for agent in (odd_reply, async_reply):
        results = play(RolloutWorker(agent, META, concurrency=4, node_id="n"), chunk)
        assert check_lines(results) == len(chunk)
        assert all(b"json_repairs" in r.line and b"privileged" in r.line and b"_node" not in r.line
                   for r in results)


def test_rows_the_lane_did_not_encode_carry_no_line():
    chunk = planned_units(4)

    def stuck(message):
        time.sleep(0.5)
        return odd_reply(message)

    class Broken:
        def __init__(self):
            raise RuntimeError("no model")

        def __call__(self, message):
            return odd_reply(message)

    for worker in (RolloutWorker(stuck, META, concurrency=4, timeout=0.05, node_id="n"),
                   RolloutWorker(bind_class_form(Broken, ()), META, concurrency=4, node_id="n")):
        results = play(worker, chunk)
        assert results and all(r.line is None and r.digest is None for r in results)
        assert all(r.row is not None or r.unusable for r in results)
    worker.shutdown()


def test_a_row_that_cannot_be_stored_is_lost_without_a_line():
    def circular(message):
        out = odd_reply(message)
        out["steps"][0]["result"]["self"] = out["steps"][0]["result"]
        return out

    results = play(RolloutWorker(circular, META, concurrency=2, node_id="n"), planned_units(2))
    assert all(r.row is None and r.line is None and r.unusable == "unserializable_result" for r in results)
