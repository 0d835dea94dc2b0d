"""The Parquet copy of a checkpointed run is written by a process beside the Driver
(``runtime/driver/parquet_writer.py``, issue 32 item 2): its folder must hold what the Driver
wrote itself, the JSONL's rows in the JSONL's order (a fresh run, a resume); the writer's CPU
shows in the driver bench line as its own role; a writer killed mid-run is an error that names
it, and the resume rebuilds the copy from the JSONL."""
import os
import signal
import threading
import time

import pyarrow.parquet as pq
import pytest

import whileai_ray as wai
from bounded_call import bounded
from whileai_ray.bench.driver_line import cpu_by_role
from whileai_ray.store.parquet.folder import ParquetSink


def _today(ck, folder, first=0):
    """The folder today's in-Driver code writes for the JSONL's rows, in its order: each row with
    its line as ``row_json`` (``CheckpointSink.append``), compacted. ``first``: rows on disk that
    the Parquet side lacked at the resume (a killed run's): filled in at its close, after its own."""
    import json
    lines = [line for line in open(ck, "rb").read().splitlines(keepends=True) if line.strip()]
    lines = lines[first:] + lines[:first]
    rows = [json.loads(line) for line in lines]
    with ParquetSink(folder) as sink:
        sink.write(rows, texts=[line[:-1].decode("ascii") for line in lines])
    return pq.read_table(folder / "rows.parquet"), len(rows)


def _same_copy(ck, tmp_path, name, first=0):
    got_file = str(ck)[:-len(".jsonl")] + ".parquet"
    assert sorted(os.listdir(got_file)) == ["rows.parquet"]
    want, n = _today(ck, tmp_path / name, first)
    got = pq.read_table(os.path.join(got_file, "rows.parquet"))
    assert got.num_rows == n and got.equals(want) and got.schema.metadata == want.schema.metadata
    return os.path.join(got_file, "rows.parquet"), tmp_path / name / "rows.parquet"


def _play(tools, ck, budget, seed=3, agent=None):
    return bounded(lambda: wai.simulate(agent or wai.seeded_agent(tools), tools=tools, simulator=False,
                                        budget=budget, seed=seed, concurrency=8, checkpoint=str(ck),
                                        advanced={"ray": {"rollout_actors": 2}}), 240)


def test_the_writer_beside_the_driver_writes_todays_copy_and_shows_in_the_bench(ray_local, tools, tmp_path):
    ck = tmp_path / "ck.jsonl"
    assert len(_play(tools, ck, 150)) == 150
    got, want = _same_copy(ck, tmp_path, "one")
    assert open(got, "rb").read() == open(want, "rb").read()            # byte for byte
    assert "parquet" in {role for role, _cpu in cpu_by_role(os.getpid()).values()}   # ray::ParquetWriter: a role
    assert len(_play(tools, ck, 300)) == 300                           # a resume: 150 more rows
    _same_copy(ck, tmp_path, "resumed")


class Slow:
    """The seeded agent, 20 ms a reply: a run long enough to kill its writer in the middle."""

    def __init__(self, tools):
        self.inner = wai.seeded_agent(tools)
        self.__name__ = "slow_seeded"

    def __call__(self, message):
        time.sleep(0.02)
        return self.inner(message)


def test_a_killed_writer_stops_the_run_with_its_name_and_the_resume_rebuilds_the_copy(ray_local, tools,
                                                                                      tmp_path):
    ck = tmp_path / "ck.jsonl"
    killed = []

    def kill_when_rows_land():
        deadline = time.monotonic() + 200
        while time.monotonic() < deadline and not killed:
            if ck.exists() and ck.read_bytes().count(b"\n") >= 40:
                for pid, (role, _cpu) in cpu_by_role(os.getpid()).items():
                    if role == "parquet":
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
            time.sleep(0.05)
    killer = threading.Thread(target=kill_when_rows_land, daemon=True)
    killer.start()
    with pytest.raises(Exception, match="Parquet writer of .*ck.parquet .*died"):
        _play(tools, ck, 600, agent=Slow(tools))
    killer.join(5)
    assert killed
    landed = ck.read_bytes().count(b"\n")
    assert 40 <= landed < 600
    parts = [p for p in os.listdir(tmp_path / "ck.parquet") if p.endswith(".parquet")] \
        if (tmp_path / "ck.parquet").exists() else []
    assert parts == []                     # under a row group (2,000 rows): no part yet, as before
    assert len(_play(tools, ck, 600, agent=Slow(tools))) == 600        # resumed: the copy filled in
    _same_copy(ck, tmp_path, "after_kill", first=landed)
