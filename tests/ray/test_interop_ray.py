"""``data.to_ray_dataset()`` (issue 33 item 1): a lazy Ray Data dataset with ``to_arrow()``'s
rows and types, for a result in memory, one spilled to disk, and a real run that spilled."""
import copy
import json

import pyarrow as pa

import whileai_ray as wai
from whileai_ray.result.data import SimulationData
from whileai_ray.result.row_store import is_arrow, spill_rows
from whileai_ray.runtime.data.services import RayCluster
from whileai_ray.store.schema import arrow_schema
from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS, played
from bounded_call import bounded

LIMIT_S = 120


def table_of(ds) -> pa.Table:
    """Every block of ``ds`` as one table, sorted by the row itself (Ray Data may reorder blocks)."""
    table = pa.concat_tables(bounded(lambda: [ray_get(ref) for ref in ds.to_arrow_refs()]))
    return table.take(pa.compute.sort_indices(table, sort_keys=[("row_json", "ascending")]))


def ray_get(ref):
    import ray
    return ray.get(ref, timeout=LIMIT_S)


def sorted_arrow(data) -> pa.Table:
    table = data.to_arrow()
    return table.take(pa.compute.sort_indices(table, sort_keys=[("row_json", "ascending")]))


def test_to_ray_dataset_has_the_rows_and_types_of_to_arrow_in_memory_and_spilled(ray_local):
    rows = played(300, 4)                     # 1,200 rows: two row groups on disk
    # built by hand, so handed the runtime's cluster by hand (simulate() and wai.load do it themselves)
    mem = SimulationData(trajectories=copy.deepcopy(rows), system_prompt=SYSTEM, tools=TOOLS, _cluster=RayCluster())
    disk = SimulationData(trajectories=spill_rows(copy.deepcopy(rows)), system_prompt=SYSTEM, tools=TOOLS,
                          _cluster=RayCluster())
    assert is_arrow(disk.trajectories)
    expected = sorted_arrow(mem)
    for data in (mem, disk):
        ds = data.to_ray_dataset()
        got = table_of(ds)
        assert got.schema.remove_metadata().equals(arrow_schema(nested=False).remove_metadata())
        assert got.drop_columns([]).to_pylist() == expected.to_pylist()
        assert bounded(ds.count) == len(rows)
    # a query the user would write: mean reward by tier, on the cluster
    means = bounded(lambda: disk.to_ray_dataset().groupby("tier").mean("reward").take_all())
    want = {}
    for r in rows:
        want.setdefault(r["tier"], []).append(float(r["reward"]))
    assert {m["tier"]: round(m["mean(reward)"], 9) for m in means} == \
        {t: round(sum(v) / len(v), 9) for t, v in want.items()}


def test_a_spilled_run_reads_back_through_ray_data(ray_local, tools):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=40,
                        advanced={"spill_rows": 10})
    assert is_arrow(data.trajectories) and len(data) == 40
    got = table_of(data.to_ray_dataset())
    assert got.num_rows == 40 and got.equals(sorted_arrow(data))
    assert all("privileged" not in json.loads(t) for t in got.column("row_json").to_pylist())


def test_a_loaded_run_reads_back_through_ray_data(ray_local, tmp_path):
    rows = played(10, 2)
    path = SimulationData(trajectories=copy.deepcopy(rows), system_prompt=SYSTEM, tools=TOOLS).save(tmp_path / "r.jsonl")
    data = wai.load(path)                    # handed the runtime's cluster by wai.load
    assert table_of(data.to_ray_dataset()).equals(sorted_arrow(data))
