"""ray.data.read_parquet over a run's Parquet folder sees exactly the rows that landed: after a
compaction killed part way, and on shared storage where a rollout actor died mid-run (its chunk
played again elsewhere)."""
import json
import os
import subprocess
import sys
import time

import whileai_ray as wai
from bounded_call import bounded
from whileai_ray.store.schema import key_string, row_key
from whileai_ray.store.shards.storage import shards_of

UNIT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unit", "store", "parquet")


def _ray_keys(folder) -> list:
    import ray
    ds = ray.data.read_parquet(str(folder)).select_columns(["row_key"])
    return sorted(r["row_key"] for r in ds.take_all())


def test_ray_data_reads_a_compaction_killed_part_way_as_the_landed_rows(ray_local, tmp_path):
    from tests.unit.store.parquet.test_parquet import make_row
    from tests.unit.store.parquet.test_parquet_visibility import _COMPACT_EACH_STEP
    want = sorted(key_string(row_key(make_row(i))) for i in range(100))
    script = tmp_path / "compact.py"
    script.write_text(_COMPACT_EACH_STEP)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([p for p in sys.path if p])}
    # killed before the swap, just after it, while the old parts are removed: one forked writer each
    # (from one Python that imported once), on folders k1, k2 and k4 holding rows 0..59
    proc = subprocess.run([sys.executable, str(script), str(tmp_path), "0", UNIT, "1,2,4"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr[-2000:]
    outcomes = json.loads(proc.stdout.strip().splitlines()[-1])
    assert outcomes == [[1, -9], [2, -9], [4, -9]], (outcomes, proc.stderr[-2000:])
    for kill_at in (1, 2, 4):
        folder = tmp_path / f"k{kill_at}" / "run.parquet"
        assert bounded(lambda: _ray_keys(folder), 120) == want, kill_at


class DiesOnce:
    """The seeded agent, whose process exits (an OOM kill, a segfault) at its 15th rollout, once
    in the whole run (a flag file says it happened)."""

    def __init__(self, tools, flag):
        self.inner = wai.seeded_agent(tools)
        self.flag = str(flag)
        self.calls = 0
        self.__name__ = "dies_once"

    def __call__(self, message):
        self.calls += 1
        if self.calls == 15:
            try:
                os.close(os.open(self.flag, os.O_CREAT | os.O_EXCL))
                os._exit(1)
            except FileExistsError:
                pass
        time.sleep(0.01)
        return self.inner(message)


def test_ray_data_reads_the_shards_parquet_of_a_run_whose_actor_died_as_the_landed_rows(ray_local, tools,
                                                                                        tmp_path):
    ck = tmp_path / "ck.jsonl"
    agent = DiesOnce(tools, tmp_path / "died")
    data = bounded(lambda: wai.simulate(agent, tools=tools, simulator=False, budget=120, seed=5, concurrency=16,
                                        checkpoint=str(ck),
                                        advanced={"ray": {"rollout_actors": 2}, "shared_storage": True}), 240)
    assert os.path.exists(tmp_path / "died") and len(data.rows()) == 120
    landed = sorted(key_string(row_key(r)) for r in data.rows())
    assert landed == sorted(key_string(row_key(r)) for r in wai.load(str(ck)).rows())
    assert bounded(lambda: _ray_keys(os.path.join(shards_of(ck), "parquet")), 120) == landed
