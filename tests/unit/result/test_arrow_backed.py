"""An Arrow-backed SimulationData (rows on disk) answers every public method exactly as the
in-memory one built from the same rows does. Each test builds both twins from one row list."""
import copy
import gc
import json
import os
import pickle

import pytest

import whileai_ray as wai
from whileai_ray.agents.backends import configure, reset_configuration
from whileai_ray.export import load_pushed
from whileai_ray.core.rows import stored_row
from whileai_ray.result.data import SimulationData
from whileai_ray.result.row_store import is_arrow, open_parquet, row_store, spill_rows
from whileai_ray.result.report_tally import report_tally
from whileai_ray.store.reader import load_rows, save_jsonl_atomic
from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS, played
from whileai_ray.testing.server import start_server


def _varied_rows() -> list:
    """Graded seeded rows plus the cases pass_at and the gates treat apart: partial rewards,
    judge failures, an old reward kept as qwen_reward, cut and silent replies, mixed settings."""
    rows = played(24, 4)
    for i, row in enumerate(rows):
        if i % 17 == 3:
            row["reward"], row["judge_status"] = None, "error"
        if i % 19 == 5:
            row["reward"] = 0.5
        if i % 23 == 7:
            row["qwen_reward"] = row.pop("reward")
        if i % 29 == 11:
            row["finish_reason"] = "length"
        if i % 31 == 13:
            row["final_text"] = ""
        row["sampling"] = {"temperature": 0.7 if i % 2 else 0.2, "max_tokens": 512}
    return rows


ROWS = _varied_rows()
META = dict(system_prompt=SYSTEM, tools=TOOLS, mode="rl", repeat_policy="fixed", rollouts_per_request=4,
            stopped_because="budget", budget=len(ROWS))


def twins(rows=ROWS, **meta):
    mem = SimulationData(trajectories=copy.deepcopy(rows), **{**META, **meta})
    disk = SimulationData(trajectories=spill_rows(copy.deepcopy(rows)), **{**META, **meta})
    assert not is_arrow(mem.trajectories) and is_arrow(disk.trajectories)
    return mem, disk


def _scrub(value):
    """Rows / reports without the ids a grading pass draws fresh (scoring_run_id, created) and
    the paths each twin wrote to."""
    if isinstance(value, tuple):
        return tuple(_scrub(v) for v in value)
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items() if k not in ("scoring_run_id", "created", "path")}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def same_rows(a, b):
    assert len(a) == len(b)
    assert _scrub(list(a.trajectories)) == _scrub(list(b.trajectories))
    assert _scrub(list(a.rows())) == _scrub(list(b.rows()))


@pytest.fixture
def judge_url():
    reset_configuration()
    host, port, stop = start_server(port=0)
    yield f"http://{host}:{port}/v1"
    stop()
    reset_configuration()


def test_reading_rows_is_the_same(tmp_path):
    mem, disk = twins()
    assert len(disk) == len(mem) == len(ROWS)
    assert list(disk) == list(mem) == ROWS
    assert disk.trajectories == mem.trajectories
    for i in (0, 1, 57, -1, -len(ROWS)):
        assert disk.trajectories[i] == mem.trajectories[i]
        assert disk.rows[i] == mem.rows[i]
    assert disk.trajectories[10:20] == mem.trajectories[10:20] and disk.rows()[5:9] == mem.rows()[5:9]
    assert disk.rows() == mem.rows() and list(disk.rows) == list(mem.rows())
    assert disk.rows.system_prompt == mem.rows.system_prompt == SYSTEM and disk.rows.tools == TOOLS
    with pytest.raises(IndexError):
        disk.trajectories[len(ROWS)]
    assert repr(disk) == repr(mem)
    assert disk.report() == mem.report() and disk.judge_model == mem.judge_model
    assert disk._repr_html_() == mem._repr_html_()
    assert pickle.loads(pickle.dumps(disk.trajectories)) == mem.trajectories


def test_pass_at_and_the_summaries_agree():
    mem, disk = twins()
    assert str(disk.pass_at) == str(mem.pass_at)
    assert disk.pass_at.to_dict() == mem.pass_at.to_dict()
    assert wai.pass_at(disk).to_dict() == wai.pass_at(mem).to_dict() == wai.pass_at(ROWS).to_dict()
    assert "failed on" in mem.pass_at.note and mem.pass_at.n_partial > 0      # the varied rows reached the notes
    assert mem.pass_at.config["mixed"] == ["temperature"]
    adaptive = dict(repeat_policy="successive")
    assert twins(**adaptive)[1].pass_at.to_dict() == twins(**adaptive)[0].pass_at.to_dict()
    tally_mem = report_tally(row_store(mem.trajectories).facts())
    tally_disk = report_tally(row_store(disk.trajectories).facts())
    assert tally_disk == tally_mem and tally_mem.n == len(ROWS)
    assert list(tally_disk.region_counts.items()) == list(tally_mem.region_counts.items())   # first-seen order
    assert disk.meta_dict() == mem.meta_dict()


def test_save_writes_the_same_bytes(tmp_path):
    mem, disk = twins()
    a, b = mem.save(tmp_path / "a.jsonl", meta=True), disk.save(tmp_path / "b.jsonl", meta=True)
    assert open(a, "rb").read() == open(b, "rb").read()
    assert json.load(open(tmp_path / "a.meta.json")) == json.load(open(tmp_path / "b.meta.json"))
    assert wai.load(b).rows() == mem.rows()          # the saved rows, privileged block kept on disk only
    assert load_rows(b)[0] == [stored_row(t) for t in mem.trajectories]


def test_grading_with_a_callable_a_class_and_a_judge():
    def grader(row):
        return {"reward": 1.0 if "lookup_order" in json.dumps(row.get("steps")) else 0.0, "reason": "tool use"}

    class CountingGrader:
        built = 0

        def __init__(self):
            CountingGrader.built += 1

        def __call__(self, row):
            return 0.0 if row.get("seeded") else 1.0

    for g in (grader, CountingGrader):
        mem, disk = twins()
        assert mem.grade(g) is mem and disk.grade(g) is disk
        same_rows(mem, disk)
        assert is_arrow(disk.trajectories) and str(disk.pass_at) == str(mem.pass_at)
    assert CountingGrader.built == 2          # once per grading pass, never per row
    mem, disk = twins()
    sm, sd = mem.grade(judge=lambda row: {"reward": 1, "reason": "fine"}, version="v3"), \
        disk.grade(judge=lambda row: {"reward": 1, "reason": "fine"}, version="v3")
    assert is_arrow(sd.trajectories) and not is_arrow(sm.trajectories)
    same_rows(sm, sd)
    assert sd.statuses == sm.statuses and str(sd.pass_at) == str(sm.pass_at)
    assert disk.trajectories == mem.trajectories == ROWS       # the judge= path leaves the run alone


def test_trust_check_with_labels_is_the_same():
    labels = {i: int(not ROWS[i].get("seeded")) for i in range(0, len(ROWS), 2)}
    mem, disk = twins()
    assert disk.attach_labels(labels) == mem.attach_labels(labels)
    same_rows(mem, disk)
    mem.grade(lambda row: 0.0 if row.get("seeded") else 1.0)
    disk.grade(lambda row: 0.0 if row.get("seeded") else 1.0)
    same_rows(mem, disk)
    assert disk.trajectories[0]["judge_meta"]["trust"]["n"] == len(labels)
    assert disk.trajectories[1]["judge_meta"] == mem.trajectories[1]["judge_meta"]


def test_llm_grading_paths(judge_url, caplog):
    configure(judge=judge_url)
    mem, disk = twins()
    assert _scrub(disk.grade()) == _scrub(mem.grade())
    same_rows(mem, disk)
    mem, disk = twins()
    assert _scrub(disk.grade_llm(limit=30)) == _scrub(mem.grade_llm(limit=30))
    same_rows(mem, disk)
    mem, disk = twins()
    disk.llm_grade()
    mem.llm_grade()
    same_rows(mem, disk)


def test_rank_leaks_and_labels():
    mem, disk = twins()
    assert disk.rank() == mem.rank()
    same_rows(mem, disk)
    assert disk.leak_report() == mem.leak_report() and str(disk.leak_report()) == str(mem.leak_report())
    labels = [{"scenario_id": ROWS[i]["scenario_id"], "rollout_index": ROWS[i]["rollout_index"], "label": i % 2}
              for i in range(0, 40, 3)] + [{"key": "nope", "label": 1}, {"index": 5, "label": "x"}]
    assert disk.attach_labels(labels, kind="program") == mem.attach_labels(labels, kind="program")
    same_rows(mem, disk)


def test_selection_training_set_push_and_sft(tmp_path):
    mem, disk = twins()
    for mode in (None, "sft", "rl"):
        sm, sd = mem.select(mode=mode, target=40), disk.select(mode=mode, target=40)
        assert str(sd) == str(sm) and list(sd) == list(sm) and sd.sources == sm.sources
        assert sd.report == sm.report
    rm = mem.training_set(output=str(tmp_path / "m.jsonl"), target=30)
    rd = disk.training_set(output=str(tmp_path / "d.jsonl"), target=30)
    assert _scrub(rd) == _scrub(rm)
    assert open(tmp_path / "m.jsonl", "rb").read() == open(tmp_path / "d.jsonl", "rb").read()
    em = mem.push("twin", store=str(tmp_path / "m"), holdout=0.25)
    ed = disk.push("twin", store=str(tmp_path / "d"), holdout=0.25)
    assert _scrub(ed) == _scrub(em) and em["holdout"]["n_rows"] > 0
    for name in ("twin", "twin-holdout"):
        assert _scrub(load_pushed(name, store=str(tmp_path / "d"))) == \
            _scrub(load_pushed(name, store=str(tmp_path / "m")))
    assert disk.sft_rows() == mem.sft_rows() and disk.sft_rows(False) == mem.sft_rows(False)
    assert str(disk.compare_judges({"a": lambda r: 1.0})) == str(mem.compare_judges({"a": lambda r: 1.0}))


def test_a_large_path_is_graded_and_loaded_from_disk(tmp_path, monkeypatch, judge_url):
    src_m, src_d = tmp_path / "m.jsonl", tmp_path / "d.jsonl"
    save_jsonl_atomic(ROWS, src_m)
    save_jsonl_atomic(ROWS, src_d)
    report_m = wai.grade(str(src_m), base_url=judge_url)
    monkeypatch.setenv("WHILEAI_RAY_SPILL_ROWS", "10")         # past it, a path is read from disk
    report_d = wai.grade(str(src_d), base_url=judge_url)
    assert _scrub(report_d) == _scrub(report_m)
    assert _scrub(load_rows(src_d)[0]) == _scrub(load_rows(src_m)[0])
    ranked_d = wai.rank(str(src_d))                             # rank on the disk copy, rewrites the file
    monkeypatch.delenv("WHILEAI_RAY_SPILL_ROWS")
    assert _scrub(ranked_d) == _scrub(wai.rank(str(src_m)))     # rank over the list
    assert _scrub(load_rows(src_d)[0]) == _scrub(load_rows(src_m)[0])
    monkeypatch.setenv("WHILEAI_RAY_SPILL_ROWS", "10")
    loaded = wai.load(str(src_d))
    assert is_arrow(loaded.trajectories) and list(loaded) == load_rows(src_d)[0]
    parquet = tmp_path / "rows.parquet"
    from whileai_ray.store.parquet.folder import write_parquet
    write_parquet(ROWS, parquet)
    before = parquet.read_bytes()
    lazy = wai.load(str(parquet))
    assert is_arrow(lazy.trajectories) and list(lazy) == ROWS
    view = SimulationData(trajectories=open_parquet(parquet))   # rows read where they are, no save path
    view.grade(lambda row: 1.0)                                 # a rewrite goes to a spill folder of its own
    assert parquet.read_bytes() == before and all(r["reward"] == 1.0 for r in view.rows())


def test_the_spill_folder_goes_with_its_data_and_a_save_keeps_the_rows(tmp_path):
    mem, disk = twins()
    folder = disk.trajectories.owner.path
    assert os.path.isdir(folder) and os.listdir(folder)
    disk.grade(lambda row: 1.0)                                  # a rewrite moves to a new folder
    new_folder = disk.trajectories.owner.path
    gc.collect()
    assert new_folder != folder and not os.path.exists(folder) and os.path.isdir(new_folder)
    saved = disk.save(tmp_path / "kept.jsonl")
    twin = copy.deepcopy(disk)                                   # a copy keeps the folder alive
    del disk
    gc.collect()
    assert os.path.isdir(new_folder) and len(twin) == len(ROWS) and twin.trajectories[3]["reward"] == 1.0
    del twin
    gc.collect()
    assert not os.path.exists(new_folder)
    assert len(load_rows(saved)[0]) == len(ROWS)


def test_the_grader_failure_note_is_the_same_on_disk():
    from whileai_ray.result.row_store import grader_note_rows
    mem, disk = twins()

    def broken(row):
        raise RuntimeError("grader down")

    mem.grade(broken)
    disk.grade(broken)
    notes = [str(w) for w in mem.warnings if "grader failed on every row" in str(w)]
    assert len(notes) == 1 and "grader down" in notes[0]
    assert [str(w) for w in disk.warnings] == [str(w) for w in mem.warnings]
    mem.grade(lambda row: 1.0)
    disk.grade(lambda row: 1.0)
    assert not any("grader failed" in str(w) for w in mem.warnings + disk.warnings)
    assert grader_note_rows(disk.trajectories) == [{"judge_status": "ok"}]    # read from the facts
