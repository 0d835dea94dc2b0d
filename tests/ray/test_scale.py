"""Large results on local Ray: rows spill to disk past advanced['spill_rows'] and every summary
stays the same; a result past advanced['cluster_grade_rows'] is graded by Ray Data on the
cluster, with the rewards in-process grading gives, in the same row order."""
import dataclasses
import gc
import json
import os
import shutil

import pytest

import whileai_ray as wai
from whileai_ray.result.data import SimulationData
from whileai_ray.result.row_store import is_arrow, spill_rows
from whileai_ray.runtime.data.grading import PASSES
from whileai_ray.store.reader import load_rows, save_jsonl_atomic
from whileai_ray.testing.seeded_rows import TOOLS, truthful
from whileai_ray.testing.server import start_server

QUIET = {"progress_every_s": 3600.0, "progress_every_rows": 10**6}
RUN = dict(tools=TOOLS, simulator=False, seed=3, budget=160, mode="rl", repeats=4, grader=truthful)


def _stable(row: dict) -> dict:
    """A row without what differs between two runs of the same seed (run ids, timings)."""
    row = {k: v for k, v in row.items() if k not in ("_key", "_seconds", "_landed_s", "_node", "_ordinal")}
    row["lineage"] = {k: v for k, v in (row.get("lineage") or {}).items()
                      if k not in ("run_id", "scoring_run_id", "parent_run_id")}
    return row


class PidGrader:
    """A grader class (Ray Data's callable-class form): built once per actor, it says where it ran."""

    def __init__(self):
        self.where = f"{os.getpid()}:{id(self)}"

    def __call__(self, row):
        return {"reward": 0.0 if row.get("seeded") else 1.0, "reason": self.where}


def test_a_run_past_spill_rows_is_arrow_backed_and_reports_the_same(ray_local, tmp_path):
    small = wai.simulate(wai.seeded_agent(TOOLS), **RUN, advanced=QUIET)
    big = wai.simulate(wai.seeded_agent(TOOLS), **RUN, advanced={**QUIET, "spill_rows": 40})
    assert not is_arrow(small.trajectories) and is_arrow(big.trajectories)
    folder = big.trajectories.owner.path
    assert os.path.isdir(folder) and any(name.endswith(".parquet") for name in os.listdir(folder))
    assert len(big) == len(small) == 160
    assert [_stable(r) for r in big] == [_stable(r) for r in small]
    cov_s, cov_b = small.report(), big.report()
    for key in ("rows", "unique_prompts", "unique_scenario_ids", "unique_signatures", "unique_cells",
                "unique_shapes", "pairwise", "tools", "delivered", "min_cell_copies", "saturation"):
        assert cov_b[key] == cov_s[key], key
    for key in ("cell_counts", "shape_counts", "region_counts", "tier_mix", "groups"):
        assert big.search[key] == small.search[key], key
    assert big.warnings == small.warnings and str(big.pass_at) == str(small.pass_at)
    assert len(big.row_seconds) == 160 and big.rows_per_second > 0

    twin = dataclasses.replace(big, trajectories=list(big.trajectories), _rows_cache=None)
    assert twin.pass_at.to_dict() == big.pass_at.to_dict()
    assert str(twin.select(mode="rl")) == str(big.select(mode="rl"))
    saved = big.save(tmp_path / "big.jsonl", meta=True)
    assert wai.load(saved).rows() == twin.rows()            # privileged blocks stay on disk only
    del big, twin
    gc.collect()
    assert not os.path.exists(folder)                       # the temp run folder went with the result
    assert len(load_rows(saved)[0]) == 160                  # what was saved stays


def test_a_large_result_is_graded_by_ray_data_on_the_cluster(ray_local):
    data = wai.simulate(wai.seeded_agent(TOOLS), **{**RUN, "grader": None},
                        advanced={**QUIET, "spill_rows": 40, "cluster_grade_rows": 100})
    assert is_arrow(data.trajectories)
    here = dataclasses.replace(data, trajectories=list(data.trajectories), _rows_cache=None,
                               _cluster_grade_rows=10**9)
    before = dict(PASSES)
    assert data.grade(PidGrader) is data
    assert PASSES == {"runs": before["runs"] + 1, "rows": before["rows"] + 160}
    here.grade(PidGrader)
    assert PASSES["runs"] == before["runs"] + 1                      # below the threshold: in-process
    places = {r["reason"] for r in data.rows()}
    assert len(places) == 1 and int(next(iter(places)).split(":")[0]) != os.getpid()   # one actor, not us
    assert {r["reason"] for r in here.rows()} != places
    assert [r["reward"] for r in data.rows()] == [r["reward"] for r in here.rows()]      # same rows, same order
    assert [r["prompt"] for r in data.rows()] == [r["prompt"] for r in here.rows()]
    assert str(data.pass_at) == str(here.pass_at) and data.pass_at.n_rows == 160
    assert all(r["judge_meta"]["trust"]["measured"] is False for r in data.rows())


def test_a_loaded_result_past_the_threshold_is_graded_on_the_cluster_one_built_by_hand_in_process(
        ray_local, tmp_path, monkeypatch):
    rows = list(wai.simulate(wai.seeded_agent(TOOLS), **{**RUN, "grader": None}, advanced=QUIET).trajectories)
    path = str(tmp_path / "rows.jsonl")
    save_jsonl_atomic(rows, path)
    monkeypatch.setenv("WHILEAI_RAY_SPILL_ROWS", "40")
    monkeypatch.setenv("WHILEAI_RAY_CLUSTER_GRADE_ROWS", "100")
    loaded = wai.load(path)
    by_hand = SimulationData(trajectories=spill_rows(r for r in load_rows(path)[0]))   # no cluster given
    assert is_arrow(loaded.trajectories) and is_arrow(by_hand.trajectories)
    before = dict(PASSES)
    loaded.grade(PidGrader)
    assert PASSES == {"runs": before["runs"] + 1, "rows": before["rows"] + len(rows)}
    by_hand.grade(PidGrader)
    assert PASSES["runs"] == before["runs"] + 1                      # past the threshold, yet in-process
    assert int(next(iter({r["reason"] for r in loaded.rows()})).split(":")[0]) != os.getpid()
    assert {int(r["reason"].split(":")[0]) for r in by_hand.rows()} == {os.getpid()}
    assert [r["reward"] for r in loaded.rows()] == [r["reward"] for r in by_hand.rows()]


def test_grading_a_large_path_with_the_llm_judge_runs_on_the_cluster(ray_local, tmp_path, monkeypatch):
    rows = list(wai.simulate(wai.seeded_agent(TOOLS), **{**RUN, "grader": None}, advanced=QUIET).trajectories)
    src, ref = tmp_path / "rows.jsonl", tmp_path / "ref.jsonl"
    save_jsonl_atomic(rows, src)
    save_jsonl_atomic(rows, ref)
    host, port, stop = start_server(port=0)
    try:
        url = f"http://{host}:{port}/v1"
        want = wai.grade(str(ref), base_url=url)                       # in-process, the whole list
        asked = stop.server.requests                                   # a row each, and the endpoint check
        monkeypatch.setenv("WHILEAI_RAY_SPILL_ROWS", "40")
        monkeypatch.setenv("WHILEAI_RAY_CLUSTER_GRADE_ROWS", "100")
        before = dict(PASSES)
        got = wai.grade(str(src), base_url=url)                        # spilled, then Ray Data
        assert stop.server.requests - asked == asked >= len(rows)
        assert PASSES == {"runs": before["runs"] + 1, "rows": before["rows"] + len(rows)}
    finally:
        stop()
    strip = lambda rep: {k: v for k, v in rep.items() if k != "path"}  # noqa: E731
    assert strip(got) == strip(want) and got["graded"] + got["unjudged"] == len(rows)
    a, b = load_rows(src)[0], load_rows(ref)[0]
    assert [r["reward"] for r in a] == [r["reward"] for r in b]
    assert [json.dumps(_stable(r), sort_keys=True) for r in a] == [json.dumps(_stable(r), sort_keys=True) for r in b]


@pytest.mark.parametrize("knob", ["spill_rows", "cluster_grade_rows"])
def test_the_knobs_are_checked_before_anything_runs(knob):
    with pytest.raises(ValueError, match=knob):
        wai.simulate(wai.seeded_agent(TOOLS), **RUN, advanced={knob: 0})


def test_the_driver_hands_back_files_not_rows_and_a_resume_keeps_the_order(ray_local, tmp_path):
    """Past spill_rows the Driver's rows arrive as Parquet files (the RunResult holds none); a run
    resumed from its checkpoint's planner snapshot (the snapshot's rows come first, the new ones
    after) gives the rows the in-memory resume of the same checkpoint gives, in the same order.
    (Small rounds: a resume with a larger budget continues only from a snapshot taken before the
    first run's budget cut its plan, which 64-unit rounds decided ahead do at once in a run this small.)"""
    from whileai_ray import simulation
    first, second = tmp_path / "a", tmp_path / "b"
    small = {**QUIET, "round_size": 8}
    wai.simulate(wai.seeded_agent(TOOLS), **{**RUN, "budget": 300}, checkpoint=str(first / "run.jsonl"),
                 advanced=small)
    shutil.copytree(first, second)
    kept = []
    real = simulation._run_once

    def spy(*args, **kwargs):
        result, rows, facts = real(*args, **kwargs)
        kept.append(result)
        return result, rows, facts

    simulation._run_once = spy
    try:
        mem = wai.simulate(wai.seeded_agent(TOOLS), **{**RUN, "budget": 400}, checkpoint=str(first / "run.jsonl"),
                           advanced=small)
        disk = wai.simulate(wai.seeded_agent(TOOLS), **{**RUN, "budget": 400}, checkpoint=str(second / "run.jsonl"),
                            advanced={**small, "spill_rows": 40})
    finally:
        simulation._run_once = real
    assert kept[1].rows == [] and kept[1].row_count == 400 and kept[1].resumed_count == 300
    assert disk.search["resume"]["snapshot_round"] is not None and disk.search["resume"]["matched"] == 300
    assert not is_arrow(mem.trajectories) and is_arrow(disk.trajectories)
    assert [_stable(r) for r in disk] == [_stable(r) for r in mem]
    assert disk.search["rollouts"]["resumed"] == mem.search["rollouts"]["resumed"] == 300
    same = _same_report
    assert same(disk.report()) == same(mem.report()) and str(disk.pass_at) == str(mem.pass_at)


def test_a_run_under_spill_rows_is_a_list_though_the_driver_spilled(ray_local, monkeypatch):
    from whileai_ray import simulation
    monkeypatch.setattr(simulation, "DRIVER_LIST_ROWS", 50)       # the Driver spills past 50 rows
    data = wai.simulate(wai.seeded_agent(TOOLS), **RUN, advanced=QUIET)
    assert type(data.trajectories) is list and len(data) == 160
    ordinals = [r["_ordinal"] for r in data.trajectories]
    assert ordinals == sorted(ordinals)


def test_runs_and_tasks_stamp_lineage_on_rows_on_disk(ray_local):
    run = {**RUN, "budget": 64, "runs": 2}
    mem = wai.simulate(wai.seeded_agent(TOOLS), **run, advanced=QUIET)
    disk = wai.simulate(wai.seeded_agent(TOOLS), **run, advanced={**QUIET, "spill_rows": 40})
    assert is_arrow(disk.trajectories) and len(disk) == len(mem) == 128
    assert [_stable(r) for r in disk] == [_stable(r) for r in mem]
    assert {r["lineage"]["eval_run"] for r in disk} == {0, 1}
    assert all(bool(r["lineage"].get("replayed")) == (r["lineage"]["eval_run"] == 1) for r in disk)
    replay = wai.simulate(wai.seeded_agent(TOOLS), **{**RUN, "budget": 64}, tasks=mem,
                          advanced={**QUIET, "spill_rows": 40})
    assert is_arrow(replay.trajectories) and all(r["lineage"]["replayed"] for r in replay)


def _same_report(rep: dict) -> dict:
    """A report less what differs between two runs of the same rows: the run id, the knobs, and
    whether its Driver and actors were started or reused (the first run of a module starts them)."""
    out = {k: v for k, v in rep.items() if k not in ("run_id", "knobs")}
    out["placement"] = {k: v for k, v in out.get("placement", {}).items() if k != "warm"}
    return out


def test_a_spilled_run_read_back_as_a_list_reports_from_the_spills_columns(ray_local, monkeypatch):
    """A run of 10,000 to 50,000 rows spills on the Driver and comes back as a list. Its report
    once computed every row's fact columns again from that list: ~1 s of a 20,000-row run, after
    its last row had landed. It reads them from the spill now, and says what the list says."""
    from whileai_ray import simulation
    from whileai_ray.result import row_store
    run = dict(tools=TOOLS, simulator=False, seed=5, budget=160, grader=truthful)
    plain = wai.simulate(wai.seeded_agent(TOOLS), **run, advanced=QUIET)
    monkeypatch.setattr(simulation, "DRIVER_LIST_ROWS", 50)       # the Driver spills past 50 rows
    computed, real = [], row_store.facts_table
    monkeypatch.setattr(row_store, "facts_table", lambda rows: computed.append(len(rows)) or real(rows))
    spilled = wai.simulate(wai.seeded_agent(TOOLS), **run, advanced=QUIET)
    assert type(spilled.trajectories) is list and len(spilled) == 160
    assert computed == []                                         # the report read the spill's columns
    assert [_stable(r) for r in spilled] == [_stable(r) for r in plain]
    same = _same_report
    assert same(spilled.report()) == same(plain.report()) and str(spilled.pass_at) == str(plain.pass_at)
    assert [str(w) for w in spilled.warnings] == [str(w) for w in plain.warnings]


def test_an_rl_run_whose_budget_cut_groups_reports_from_the_spills_columns(ray_local, monkeypatch):
    """An rl run's groups the budget cut have their rows marked ``group_cut`` once it ended. That
    is no report column, so a spilled run read back as a list still reports from the spill's
    columns (it computed every row's facts again: ~20 us a row of the caller's CPU) and says what
    a run that never spilled says."""
    from whileai_ray import simulation
    from whileai_ray.result import row_store
    run = dict(tools=TOOLS, simulator=False, seed=5, budget=150, mode="rl")
    plain = wai.simulate(wai.seeded_agent(TOOLS), **run, advanced=QUIET)
    assert any(r.get("group_cut") for r in plain)                  # the budget cut a group
    monkeypatch.setattr(simulation, "DRIVER_LIST_ROWS", 50)       # the Driver spills past 50 rows
    computed, real = [], row_store.facts_table
    monkeypatch.setattr(row_store, "facts_table", lambda rows: computed.append(len(rows)) or real(rows))
    spilled = wai.simulate(wai.seeded_agent(TOOLS), **run, advanced=QUIET)
    assert type(spilled.trajectories) is list and len(spilled) == 150 and computed == []
    assert [_stable(r) for r in spilled] == [_stable(r) for r in plain]
    assert [r.get("group_cut") for r in spilled] == [r.get("group_cut") for r in plain]
    same = _same_report
    assert same(spilled.report()) == same(plain.report()) and str(spilled.pass_at) == str(plain.pass_at)
