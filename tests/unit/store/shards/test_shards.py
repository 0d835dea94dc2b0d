"""Shared storage without Ray: rollout workers write their rows to shards, the Driver's loop gets
keys and outcomes only, and the rows read back from the shards equal a run through the Driver."""
import asyncio
import json
import os
import re
import time

import pytest

import whileai_ray as wai

from tests.unit.runtime.driver.test_driver_loop import META, InProcessPool, Landed, planner, run
from whileai_ray.runtime.messages import RolloutResult
from whileai_ray.agents.seeded import seeded_agent
from whileai_ray.core.identity import row_key
from whileai_ray.core.rows import export_row
from whileai_ray.runtime.pools.dataplane import DataPlane
from whileai_ray.runtime.driver.loop import DriverLoop, LoopSettings
from whileai_ray.runtime.driver.landing import Landing
from whileai_ray.runtime.pools.protocol import LaneFailed
from whileai_ray.runtime.pools.rollout_worker import RolloutWorker
from whileai_ray.store.checkpoint.fingerprint import fingerprint
from whileai_ray.store.checkpoint.jsonl import JsonlCheckpoint
from whileai_ray.store.reader import load_rows
from whileai_ray.store.checkpoint.resume import ResumeIndex
from whileai_ray.store.shards.storage import (ShardWriter, check_probe, open_shards, prepare_shards, read_landed,
                                     shards_folder, shards_of)
from whileai_ray.store.checkpoint.sink import CheckpointSink
from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS


class DiesAfterWriting(InProcessPool):
    """A lane told to fail plays its chunk (the rows reach the shard) and then dies unanswered."""

    async def _play(self, lane, n, payload):
        out = await self.workers[lane].run_chunk(payload)
        if self.fail is not None and self.fail(lane, n):
            raise LaneFailed(f"lane {lane} died after writing chunk {n}")
        return out


def shard_lanes(folder, lanes=2, slots=8, parquet_rows=None):
    agent = seeded_agent(TOOLS, rate=0.35, seed=3)

    def lane(i):
        worker = RolloutWorker(agent, META, concurrency=slots, node_id=f"lane-{i}", shards=folder)
        if parquet_rows is not None:            # a Parquet part every few rows, not every 2,000
            worker.shards.parquet_rows = parquet_rows
        return worker
    return DiesAfterWriting(lane, lanes=lanes, slots=slots)


def run_sharded(folder, ck, budget=120, fail=None, parquet_rows=None):
    sink = CheckpointSink(JsonlCheckpoint(ck, fingerprint(TOOLS, SYSTEM, "seeded_agent")), stubs=True)
    warnings = prepare_shards(folder, META.run_id, ck)
    plane = DataPlane(folder)
    rollouts = shard_lanes(folder, parquet_rows=parquet_rows)
    rollouts.fail = fail
    landing = Landing(sink=sink)
    loop = DriverLoop(LoopSettings(lag=2, chunk_size=4, concurrency=8), planner(budget), rollouts, landing,
                      ResumeIndex(sink.loaded, sink.header, None), unpack=plane.unpack)
    asyncio.run(loop.run())
    for w in rollouts.workers:                  # a lane that died never flushed
        w.flush_shards()
    plane.publish(sink.landed_shards)
    sink.close()
    return loop, Landed(landing), plane, warnings


def full(folder, landing):
    stubs = sorted(landing.rows + landing.resumed_rows, key=lambda r: r["_ordinal"])
    return read_landed(folder, stubs)


def test_rows_read_back_from_the_shards_equal_a_run_through_the_driver(tmp_path):
    folder = shards_folder(tmp_path / "ck.jsonl", True)
    assert folder == str(tmp_path / "ck.shards")
    loop, landing, plane, _ = run_sharded(folder, tmp_path / "ck.jsonl")
    _, plain = run(planner(), shard_lanes(None))
    rows = full(folder, landing)
    want = sorted(plain.rows, key=lambda r: r["_ordinal"])
    assert len(rows) == 120 and [export_row(r) for r in rows] == [export_row(r) for r in want]
    assert {r["_node"] for r in rows} == {"lane-0", "lane-1"}
    figures = plane.figures()
    assert figures["rows"] == 120 and 0 < figures["driver_bytes"] <= 0.05 * figures["row_bytes"], figures
    # the checkpoint holds one short stub per landed row; the shards hold the rows, in Parquet too
    lines = (tmp_path / "ck.jsonl").read_text().splitlines()   # no header line: every line is a row
    assert len(lines) == 120 and all("_shard" in json.loads(x) for x in lines)
    assert sum(len(x) + 1 for x in lines) < figures["row_bytes"] / 2
    from whileai_ray.store.parquet.folder import read_parquet
    assert len(read_parquet(os.path.join(folder, "parquet"))) == 120
    # the checkpoint says where its shards are: reading it back gives the rows, not the stubs
    loaded, _ = load_rows(tmp_path / "ck.jsonl")
    assert sorted(map(export_row, loaded), key=row_key) == sorted(map(export_row, rows), key=row_key)
    os.remove(tmp_path / "ck.jsonl.shards.json")
    with pytest.raises(ValueError, match="shards.json"):
        load_rows(tmp_path / "ck.jsonl")


def test_a_resume_reads_the_stubs_and_lands_each_row_once(tmp_path):
    folder, ck = str(tmp_path / "sh"), tmp_path / "ck.jsonl"
    _, first, _, _ = run_sharded(folder, ck, budget=60)
    loop, again, plane, _ = run_sharded(folder, ck, budget=120)
    rows = full(folder, again)
    assert len(again.resumed_rows) == 60 and len(again.rows) == 60 and plane.rows == 60
    _, plain = run(planner(), shard_lanes(None))
    want = sorted(plain.rows, key=lambda r: r["_ordinal"])
    strip = [{k: v for k, v in export_row(r).items() if k != "lineage"} for r in rows]
    assert strip == [{k: v for k, v in export_row(r).items() if k != "lineage"} for r in want]
    assert sum(bool(r["lineage"].get("resumed")) for r in rows) == 60


def test_a_chunk_lost_with_its_lane_is_played_again_and_read_back_once(tmp_path):
    folder, ck = str(tmp_path / "sh"), tmp_path / "ck.jsonl"
    # the sixth chunk's lane dies after its rows were written: the failed flight never lands them
    loop, landing, plane, _ = run_sharded(folder, ck, fail=lambda lane, n: n == 5)
    rows = full(folder, landing)
    assert len(rows) == 120 and len({tuple(r["_key"]) for r in rows}) == 120 and loop.chunks_reissued == 1
    want = sorted(run(planner(), shard_lanes(None))[1].rows, key=lambda r: r["_ordinal"])
    assert [export_row(r) for r in rows] == [export_row(r) for r in want]
    assert plane.rows == 120                    # the failed chunk's rows were written, never landed
    # the dead lane's landed rows were still buffered for Parquet: the Driver filled them in from its shards
    from whileai_ray.store.parquet.folder import read_parquet
    in_parquet = {row_key(r) for r in read_parquet(os.path.join(folder, "parquet"))}
    assert {row_key(r) for r in rows} <= in_parquet and plane.parquet_filled > 0
    names = os.listdir(os.path.join(folder, "rows"))
    written = sum(len((tmp_path / "sh" / "rows" / n).read_text().splitlines()) for n in names)
    assert written > 120


def test_the_shards_parquet_folder_holds_exactly_the_landed_rows_for_outside_readers(tmp_path):
    """A lane writes a Parquet part holding the rows of a chunk it then dies without answering
    (played again elsewhere): DuckDB, polars and pyarrow reading <shards>/parquet see each landed
    row once and no other (the Driver publishes only what the checkpoint took)."""
    import duckdb
    import polars as pl
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    from whileai_ray.store.schema import key_string
    folder, ck = str(tmp_path / "sh"), tmp_path / "ck.jsonl"
    loop, landing, plane, _ = run_sharded(folder, ck, fail=lambda lane, n: n == 5, parquet_rows=4)
    want = sorted(key_string(row_key(r)) for r in full(folder, landing))
    assert len(want) == 120 == len(set(want)) and loop.chunks_reissued >= 1
    names = os.listdir(os.path.join(folder, "rows"))
    assert sum(len((tmp_path / "sh" / "rows" / n).read_text().splitlines()) for n in names) > 120
    parquet = os.path.join(folder, "parquet")
    seen = {"pq.read_table": pq.read_table(parquet).column("row_key").to_pylist(),
            "pyarrow.dataset": ds.dataset(parquet).to_table(columns=["row_key"]).column(0).to_pylist(),
            "duckdb": [k for (k,) in duckdb.sql(f"select row_key from read_parquet('{parquet}/*.parquet')").fetchall()],
            "polars": pl.read_parquet(parquet).get_column("row_key").to_list()}
    assert all(sorted(keys) == want for keys in seen.values()), {k: len(v) for k, v in seen.items()}
    assert not os.listdir(os.path.join(folder, "staged"))


def test_a_unit_skipped_at_the_deadline_reaches_the_driver_as_skipped_between_rows(tmp_path):
    # time_budget: an actor past the deadline skips the units it had not started; on shared storage
    # the payload says so per unit and the rows around it still point at the right bytes
    from whileai_ray.runtime.pools.dataplane import pack
    folder = str(tmp_path / "sh")
    prepare_shards(folder, META.run_id)
    units = planner(budget=8).decide(0)[:3]
    played = asyncio.run(RolloutWorker(seeded_agent(TOOLS, seed=3), META, node_id="lane").run_chunk(units))
    mixed = [played[0], RolloutResult.not_started(units[1]), played[2]]
    plane = DataPlane(folder)
    out = plane.unpack([(0, i, u) for i, u in enumerate(units)], pack(mixed, ShardWriter(folder), "lane"))
    assert [bool(r.skipped) for r in out] == [False, True, False] and out[1].row is None
    back = read_landed(folder, [out[0].row, out[2].row])
    assert [export_row(r) for r in back] == [export_row(played[0].row), export_row(played[2].row)]
    assert plane.rows == 2
    late = RolloutWorker(seeded_agent(TOOLS, seed=3), META, node_id="lane", shards=folder, deadline_at=time.time() - 1)
    out = plane.unpack([(0, i, u) for i, u in enumerate(units)], asyncio.run(late.run_chunk(units)))
    assert [r.skipped for r in out] == [True, True, True] and all(r.row is None for r in out)
    assert len(os.listdir(os.path.join(folder, "rows"))) == 1          # nothing played, no shard written


def test_time_budget_with_shard_writing_actors_lands_stubs_only_for_rows_played(tmp_path):
    folder, ck = str(tmp_path / "sh"), tmp_path / "ck.jsonl"
    sink = CheckpointSink(JsonlCheckpoint(ck, fingerprint(TOOLS, SYSTEM, "seeded_agent")), stubs=True)
    prepare_shards(folder, META.run_id, ck)
    plane, rollouts, now, skipped = DataPlane(folder), shard_lanes(folder), [0.0], []
    real_play = rollouts._play

    async def play(lane, n, payload):   # from the 7th chunk sent, the actors' own clocks are past the
        if n >= 6:                      # deadline; each chunk back costs the run's clock a second
            rollouts.workers[lane].deadline_at = 0.0
        out = await real_play(lane, n, payload)
        now[0] += 1.0
        return out
    rollouts._play = play

    def unpack(items, payload):
        out = plane.unpack(items, payload)
        skipped.extend(r for r in out if r.skipped)
        return out
    landing = Landing(sink=sink)
    loop = DriverLoop(LoopSettings(lag=2, chunk_size=4, concurrency=8, time_budget=12.0), planner(400), rollouts,
                      landing, ResumeIndex(sink.loaded, sink.header, None), clock=lambda: now[0], unpack=unpack)
    asyncio.run(loop.run())
    sink.close()
    landing = Landed(landing)
    assert skipped and loop.clock_summary()["skipped"] >= len(skipped)     # the actors' skips counted
    assert 0 < len(landing.rows) < 400 and plane.rows == len(landing.rows)
    stubs = [json.loads(x) for x in ck.read_text().splitlines()]
    assert len(stubs) == len(landing.rows) and all("_shard" in s for s in stubs)
    assert not {tuple(s["_key"]) for s in stubs} & {tuple(r.unit.key) for r in skipped}
    rows = read_landed(folder, stubs)           # every stub points at a row that was played
    assert [row_key(r) for r in rows] == [row_key(s) for s in stubs]
    assert all(r.get("final_text") is not None or r.get("steps") for r in rows)


def test_a_half_written_shard_is_removed_when_the_run_opens(tmp_path):
    folder = str(tmp_path / "sh")
    prepare_shards(folder, "r")
    (tmp_path / "sh" / "rows" / "abc-000001.jsonl.tmp").write_bytes(b'{"prompt": "half')
    warnings = prepare_shards(folder, "r")
    assert not (tmp_path / "sh" / "rows" / "abc-000001.jsonl.tmp").exists()
    assert len(warnings) == 1 and "half written" in warnings[0]


def test_parts_a_dead_driver_never_published_are_removed_when_the_next_run_opens(tmp_path):
    """Staged parts may hold rows that never landed; the run that staged them did not decide which,
    so the next run removes them (its landed rows stay in the stubs and JSONL shards)."""
    folder = str(tmp_path / "sh")
    prepare_shards(folder, "r")
    writer = ShardWriter(folder, parquet_rows=1)
    writer.write([{"prompt": "p", "steps": [], "final_text": "x"}])
    staged = tmp_path / "sh" / "staged"
    assert len(os.listdir(staged)) == 1 and not os.listdir(tmp_path / "sh" / "parquet")
    prepare_shards(folder, "r2")
    assert not os.listdir(staged) and not os.listdir(tmp_path / "sh" / "parquet")


def test_two_checkpoints_of_one_name_in_one_storage_keep_their_shards_apart(tmp_path):
    store = str(tmp_path / "store")
    a, b = tmp_path / "a" / "ck.jsonl", tmp_path / "b" / "ck.jsonl"
    fa, fb = shards_folder(a, store), shards_folder(b, store)
    assert fa != fb and os.path.dirname(fa) == os.path.dirname(fb) == store
    assert shards_folder(a, store) == fa and shards_folder(a, True) == str(tmp_path / "a" / "ck.shards")
    os.makedirs(a.parent)
    os.makedirs(b.parent)
    prepare_shards(fb, "rb", b)
    in_progress = os.path.join(fb, "rows", "abc-000001.jsonl.tmp")     # b's actor is writing this
    open(in_progress, "wb").write(b'{"prompt": "half')
    assert prepare_shards(fa, "ra", a) == [] and os.path.exists(in_progress)
    # a resume keeps the folder its sidecar names in this storage (the checkpoint may have moved since)
    moved = tmp_path / "moved" / "ck.jsonl"
    os.makedirs(moved.parent)
    os.replace(str(a) + ".shards.json", str(moved) + ".shards.json")
    assert shards_folder(moved, store) == fa and shards_of(moved) == fa
    assert shards_folder(moved, str(tmp_path / "other")) != fa


def test_a_resume_whose_stubs_point_at_a_missing_shard_stops_before_any_work_naming_it(tmp_path):
    folder, ck = str(tmp_path / "sh"), tmp_path / "ck.jsonl"
    run_sharded(folder, ck, budget=40)
    assert open_shards(folder, "again", ck) == [] and open_shards(None, "again", ck) == []   # all there
    pointed = sorted({json.loads(x)["_shard"][0] for x in ck.read_text().splitlines()})
    gone = os.path.join(folder, "rows", pointed[len(pointed) // 2])
    os.unlink(gone)
    before = {p: (tmp_path / p).read_bytes() for p in ("ck.jsonl", "ck.jsonl.shards.json")}
    for where in (folder, None):                # on shared storage, or through the Driver (the sidecar's folder)
        with pytest.raises(ValueError, match=re.escape(gone) + ".* missing \\(1 of"):
            open_shards(where, "again", ck)
    with pytest.raises(ValueError, match="resume with the advanced\\['shared_storage'\\]"):
        open_shards(str(tmp_path / "elsewhere"), "again", ck)         # another storage: none of them there
    assert {p: (tmp_path / p).read_bytes() for p in before} == before   # nothing rewritten
    assert not os.path.exists(tmp_path / "elsewhere")


def test_a_changed_shard_is_named_not_read_as_another_row(tmp_path):
    folder = str(tmp_path / "sh")
    prepare_shards(folder, "r")
    writer = ShardWriter(folder)
    name, spans, _ = writer.write([{"prompt": "p", "steps": [], "final_text": "a"}])
    stub = {"prompt": "p", "_ordinal": 3, "_shard": [name, *spans[0]]}
    assert read_landed(folder, [stub])[0]["final_text"] == "a"
    path = tmp_path / "sh" / "rows" / name
    path.write_bytes(path.read_bytes().replace(b'"a"', b'"b"'))
    with pytest.raises(ValueError, match=name):
        read_landed(folder, [stub])


def test_a_filesystem_uri_goes_through_pyarrow_and_a_folder_no_actor_sees_is_refused(tmp_path):
    folder = shards_folder("runs/a.jsonl", f"file://{tmp_path}/store")
    assert re.fullmatch(f"file://{tmp_path}/store/a-[0-9a-f]{{10}}.shards", folder)
    prepare_shards(folder, "r")
    check_probe(folder, "r", "node-1")
    writer = ShardWriter(folder)
    name, spans, _ = writer.write([{"prompt": "p", "steps": [], "final_text": "x"}])
    writer.flush()
    assert read_landed(folder, [{"_shard": [name, *spans[0]]}])[0]["final_text"] == "x"
    base = folder[len("file://"):]
    assert os.listdir(base + "/staged") and not os.listdir(base + "/parquet")   # until the Driver publishes it
    from whileai_ray.store.shards.parquet import publish
    assert publish(folder, {name: [spans[0][0]]})["published"] == 1
    assert os.listdir(base + "/parquet") and not os.listdir(base + "/staged")
    with pytest.raises(ValueError, match="does not see"):
        check_probe(str(tmp_path / "elsewhere"), "r", "node-2")


@pytest.mark.parametrize("value, kwargs, match", [
    (3, {"checkpoint": "ck.jsonl"}, "s3://bucket"),
    (True, {}, "needs checkpoint="),
    ("/shared", {"checkpoint": "ck.jsonl", "grade": "conduct"}, "grade"),
])
def test_shared_storage_is_refused_before_any_work_when_it_cannot_hold(tmp_path, value, kwargs, match):
    if "checkpoint" in kwargs:
        kwargs = {**kwargs, "checkpoint": str(tmp_path / kwargs["checkpoint"])}
    with pytest.raises(ValueError, match=match):       # raised before Ray starts (the unit conftest forbids it)
        wai.simulate(seeded_agent(TOOLS), tools=TOOLS, simulator=False, budget=10,
                     advanced={"shared_storage": value}, **kwargs)
    assert os.listdir(tmp_path) == []
