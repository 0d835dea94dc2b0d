"""A run whose rollout actors send each row's checkpoint line (issue 32 item 2) writes the checkpoint
the old encoding would write: every line is ``dump_line(stored_row(row))`` of a landed row, its
Parquet copy's ``row_json`` is the same text, and a resume from a cut file ends with the very
lines of the uninterrupted run, each key once."""
import json

import pyarrow.parquet as pq

import whileai_ray as wai
from whileai_ray.core.rows import stored_row
from whileai_ray.store.checkpoint.jsonl import dump_line
from whileai_ray.store.schema import row_key

KNOBS = {"ray": {"rollout_actors": 2}}
FAULTS = 0.3                   # world faults: rows that carry them (faults, fault_parent) land too


def _lines_by_key(path):
    lines = path.read_bytes().splitlines(keepends=True)
    out = {row_key(json.loads(x)): x for x in lines}
    assert len(out) == len(lines)                      # each key once
    return out


def test_the_checkpoint_is_the_old_encoding_of_the_landed_rows_and_resumes_exactly(ray_local, tools, tmp_path):
    agent = wai.seeded_agent(tools)
    ck = tmp_path / "ck.jsonl"
    data = wai.simulate(agent, tools=tools, simulator=False, budget=300, seed=4, checkpoint=str(ck), advanced=KNOBS,
                        fault_rate=FAULTS)
    assert data.search["rollouts"]["landed"] == 300
    assert any(r.get("faults") for r in data.trajectories)
    on_disk = _lines_by_key(ck)
    expected = {row_key(stored_row(r)): dump_line(stored_row(r)) for r in data.trajectories}
    assert on_disk == expected                          # byte for byte, row by row
    row_json = pq.read_table(tmp_path / "ck.parquet" / "rows.parquet", columns=["row_json"]).column(0).to_pylist()
    assert sorted(row_json) == sorted(x[:-1].decode("ascii") for x in on_disk.values())

    full = ck.read_bytes()
    lines = full.splitlines(keepends=True)
    ck.write_bytes(b"".join(lines[:120]) + lines[120][:40])      # a crash: 120 rows and a torn line
    again = wai.simulate(agent, tools=tools, simulator=False, budget=300, seed=4, checkpoint=str(ck), fault_rate=FAULTS,
                         advanced=KNOBS)
    assert again.search["rollouts"]["resumed"] == 120 and again.search["rollouts"]["landed"] == 180
    assert _lines_by_key(ck) == on_disk
    assert ck.read_bytes()[:len(b"".join(lines[:120]))] == b"".join(lines[:120])


def test_the_callers_own_pool_and_graded_rows_write_the_old_encoding_too(ray_local, tools, tmp_path):
    """One node, no actors asked: the caller's pool plays (its lines cross with its pushes); a
    grader's verdict changes each row on the Driver, which then encodes the row itself."""
    from whileai_ray.testing.seeded_rows import truthful
    for name, grader in (("home.jsonl", None), ("graded.jsonl", truthful)):
        ck = tmp_path / name
        data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=60, seed=6,
                            checkpoint=str(ck), grader=grader)
        expected = {row_key(stored_row(r)): dump_line(stored_row(r)) for r in data.trajectories}
        assert len(expected) == 60 and _lines_by_key(ck) == expected
        assert all(b'"judge_status"' in x for x in expected.values()) == (grader is not None)
