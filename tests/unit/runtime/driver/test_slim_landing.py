"""Slim results (issue 32 item 2): in an ungraded run a rollout lane sends each row as its line,
its spool text, its fact values and a stub of the fields the Driver reads
(``store/parquet/slim_row.py``). A run whose lanes send them must leave exactly what a run whose
lanes send whole rows leaves: the checkpoint, its Parquet copy, the rows handed on (a list, and
spilled Parquet with its fact columns), what the planner decided and counted, the metrics, the
labels. Real planner, real lanes (each answer pickled as Ray would), real files; no Ray."""
import asyncio
import json
import pickle
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from whileai_ray.agents.seeded import seeded_agent
from whileai_ray.runtime.driver.landing import Landing
from whileai_ray.runtime.driver.loop import DriverLoop, LoopSettings
from whileai_ray.runtime.messages import RolloutResult, pack_units
from whileai_ray.runtime.metrics.recorder import NoMetrics, batch_counts
from whileai_ray.runtime.pools.rollout_worker import RolloutWorker
from whileai_ray.runtime.pools.slim_results import slimmed
from whileai_ray.score.row_facts import FACT_NAMES, fact_spill_writer, row_facts
from whileai_ray.store.checkpoint.jsonl import JsonlCheckpoint
from whileai_ray.store.checkpoint.key_index import RECORD
from whileai_ray.store.checkpoint.resume import ResumeIndex
from whileai_ray.store.checkpoint.sink import CheckpointSink
from whileai_ray.store.parquet.folder import read_parquet
from whileai_ray.store.parquet.lane import LocalLane
from whileai_ray.store.parquet.slim_row import STUB_KEYS, SlimRow, plain_row, slim_row
from whileai_ray.store.row_spool import RowSpool, SpilledRows
from whileai_ray.testing.seeded_rows import TOOLS

from planned_units import planned_units
from tests.unit.runtime.driver.test_driver_loop import META, InProcessPool, planner
from tests.unit.store.checkpoint.test_jsonl import FP

SEEDED = seeded_agent(TOOLS, rate=0.35, seed=3)


async def agent(message):
    """The seeded agent, with usage the metrics count (and a unicode mark in its text)."""
    reply = SEEDED(message)
    reply = reply if isinstance(reply, dict) else {"final_text": str(reply)}
    return {**reply, "final_text": f"{reply.get('final_text') or ''} ✓ \ud800",
            "usage": {"input_tokens": len(message), "output_tokens": 7, "cost": 0.001}}


class Counting(NoMetrics):
    def __init__(self):
        self.totals = {"by_node": {}, "tokens_in": 0, "tokens_out": 0, "cost": 0.0}

    def landed(self, rows):
        c = batch_counts(rows)
        for node, n in c["by_node"].items():
            self.totals["by_node"][node] = self.totals["by_node"].get(node, 0) + n
        for k in ("tokens_in", "tokens_out", "cost"):
            self.totals[k] = round(self.totals[k] + c[k], 6)


class CrossingPool(InProcessPool):
    """Lanes answer as a rollout actor does (``play_chunk``), pickled there and back."""

    def __init__(self, slim, lanes=2):
        super().__init__(lambda i: RolloutWorker(agent, META, concurrency=8, node_id=f"lane-{i}", slim=slim),
                         lanes=lanes, slots=8)
        self.slim_answers = 0

    async def _play(self, lane, n, payload):
        answer = pickle.loads(pickle.dumps(await self.workers[lane].play_chunk(pack_units(payload))))
        assert all(type(w) is tuple for w in answer)
        self.slim_answers += sum(RolloutResult.from_wire(None, w).facts is not None for w in answer)
        return answer


def run_once(folder, slim, spool_rows, lane=LocalLane):
    folder.mkdir()
    sink = CheckpointSink(JsonlCheckpoint(folder / "ck.jsonl", FP), lane=lane)
    landing = Landing(sink=sink, clock=lambda: 10.0, spool=RowSpool(spool_rows, fact_spill_writer))
    metrics, pool, plan = Counting(), CrossingPool(slim), planner(budget=96)
    loop = DriverLoop(LoopSettings(lag=2, chunk_size=4, concurrency=8), plan, pool, landing,
                      ResumeIndex([], None, None), metrics=metrics)
    asyncio.run(loop.run())
    out = landing.spool.finish()
    sink.close()
    if isinstance(out, SpilledRows):     # the spool's folder is the caller's now: read, then removed
        tables = [pq.read_table(f"{out.folder}/{f}" if not f.startswith("/") else f) for f in out.files]
        shutil.rmtree(out.folder)
        rows = [json.loads(t) for table in tables for t in table.column("row_json").to_pylist()]
        facts = {name: [v for table in tables for v in table.column(name).to_pylist()] for name in FACT_NAMES}
    else:
        rows, facts = out, None
    lines = sorted((folder / "ck.jsonl").read_bytes().splitlines())
    t = plan.tracker
    return {"rows": [{k: v for k, v in r.items() if k != "_seconds"} for r in rows], "facts": facts,
            "lines": lines,
            "parquet": sorted(json.dumps(r, sort_keys=True) for r in read_parquet(folder / "ck.parquet")),
            "planner": (plan.landed, t.rows, dict(t.cells), dict(t.shapes), len(t.prompts), len(t.signatures),
                        plan.agent_errors), "metrics": metrics.totals, "landed": landing.landed,
            "edge_texts": landing.edge_texts}, pool.slim_answers


@pytest.mark.parametrize("spool_rows,lane", [(10_000, LocalLane), (10, LocalLane), (10, None)])
def test_a_run_whose_lanes_send_slim_rows_leaves_what_whole_rows_leave(tmp_path, spool_rows, lane):
    """(``lane=None``: the sink makes the Parquet copy in this process, from whole rows: the
    Landing decodes each slim row first.)"""
    whole, none_slim = run_once(tmp_path / "whole", False, spool_rows, lane)
    slim, slim_answers = run_once(tmp_path / "slim", True, spool_rows, lane)
    assert none_slim == 0 and slim_answers == whole["landed"] == len(whole["lines"]) == len(whole["rows"]) == 96
    assert (whole["facts"] is None) == (spool_rows > 96) and len(whole["parquet"]) == 96
    for key in whole:
        assert slim[key] == whole[key], key
    assert whole["metrics"]["tokens_in"] > 0 and set(whole["metrics"]["by_node"]) == {"lane-0", "lane-1"}


def test_a_slim_result_is_its_rows_stub_and_its_text_is_the_whole_row():
    units = planned_units(6)
    results = asyncio.run(RolloutWorker(agent, META, concurrency=4, node_id="n").run_chunk(units))
    slim = pickle.loads(pickle.dumps(slimmed(results)))
    for unit, full, s in zip(units, results, slim):
        assert s.unit == unit and s.facts is not None
        assert s.row == {k: full.row[k] for k in STUB_KEYS if k in full.row}
        back = s.full()
        assert back.row == json.loads(full.text) and back.facts is None and back.unit == unit
        assert s.facts == tuple(row_facts([full.row])[name][0] for name in FACT_NAMES)


def test_row_facts_of_slim_rows_mixed_with_whole_rows_are_row_facts_of_the_whole_rows():
    results = asyncio.run(RolloutWorker(agent, META, concurrency=4, node_id="n").run_chunk(planned_units(5)))
    slim = slimmed(results)
    spooled, whole = [], []
    for n, (full, s) in enumerate(zip(results, slim)):
        row = {**full.row, "_landed_s": 1.5 + n}
        whole.append(row)
        spooled.append(row if n % 2 else slim_row({**s.row, "_landed_s": 1.5 + n}, full.text, s.facts))
    assert any(type(r) is SlimRow for r in spooled)
    assert row_facts(spooled) == row_facts(whole)
    assert [plain_row(r) for r in spooled] == whole
    assert [list(plain_row(r)) for r in spooled] == [list(r) for r in whole]     # key order too


def test_row_facts_of_slim_rows_only_are_row_facts_of_the_whole_rows():
    results = asyncio.run(RolloutWorker(agent, META, concurrency=4, node_id="n").run_chunk(planned_units(5)))
    whole = [{**full.row, "_landed_s": 2.25 + n} for n, full in enumerate(results)]
    spooled = [slim_row({**s.row, "_landed_s": 2.25 + n}, full.text, s.facts)
               for n, (full, s) in enumerate(zip(results, slimmed(results)))]
    assert all(type(r) is SlimRow for r in spooled)
    facts = row_facts(spooled)
    assert facts == row_facts(whole)
    assert facts["landed_s"] == [2.25, 3.25, 4.25, 5.25, 6.25]      # the Driver's stamp, not the lane's


def test_only_rows_the_driver_would_not_change_go_slim():
    results = asyncio.run(RolloutWorker(agent, META, concurrency=4, node_id="n").run_chunk(planned_units(3)))
    stamped = RolloutResult(None, {**results[0].row, "_landed_s": 3.0}, line=results[0].line,
                            digest=results[0].digest, text=results[0].text)
    graded = results[1].with_verdict({"reward": 1.0})
    no_text = RolloutResult(None, results[2].row, line=results[2].line, digest=results[2].digest)
    lost = RolloutResult.lost(None, "rollout_failed", "boom")
    assert [r.facts for r in slimmed([stamped, graded, no_text, lost])] == [None] * 4


def test_a_runs_lanes_send_slim_rows_only_where_its_rows_go_to_disk_and_the_driver_changes_none():
    from types import SimpleNamespace as NS

    from whileai_ray.runtime.pools.slim_results import slim_lanes
    big = dict(cap=20_000, spool_rows=10_000, lineage=None, shards=None)
    assert slim_lanes(NS(**big), NS(graded=False))
    assert not slim_lanes(NS(**{**big, "cap": 10_000}), NS(graded=False))     # its rows go to the caller as dicts
    assert not slim_lanes(NS(**big), NS(graded=True))                          # verdicts rewrite rows on the Driver
    assert not slim_lanes(NS(**{**big, "lineage": {"runs": 2}}), NS(graded=False))
    assert not slim_lanes(NS(**{**big, "shards": "/shared"}), NS(graded=False))


def test_the_rows_of_the_chunks_back_in_one_turn_reach_the_checkpoint_in_one_write(tmp_path):
    """One write and fsync a turn of the loop, not one a chunk: the key index beside the checkpoint
    keeps a group of records per write (``checkpoint/key_index.py``), so its groups are the writes."""
    out, _ = run_once(tmp_path / "run", slim=True, spool_rows=10_000)
    index = (tmp_path / "run" / "ck.jsonl.keys").read_bytes()
    head, body = index.split(b"\n", 1)
    recs = np.frombuffer(body[:len(body) - len(body) % RECORD.itemsize], dtype=RECORD)
    writes = recs["n"][recs["n"] > 0]
    assert int(writes.sum()) == len(out["lines"]) == out["landed"] == 96
    assert writes.max() > 4                  # a write held the rows of more than one 4-unit chunk
    assert len(writes) < 96 // 4             # fewer writes than chunks played
