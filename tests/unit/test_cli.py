"""The ``whileai-ray`` command: help, exit codes, run/report/submit/status without starting Ray."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from whileai_ray.cli import main
from whileai_ray.runtime.jobs.plan import (RUNTIME_ENV_EXCLUDES, attempt_id, latest_attempt, plan_submission,
                              resubmit_action)

REPO = Path(__file__).resolve().parents[2]
ROWS = [
    {"prompt": "where is order 1", "scenario_id": "s1", "reward": 1.0, "final_text": "ok", "steps": []},
    {"prompt": "where is order 1", "scenario_id": "s1", "reward": 0.0, "final_text": "no", "steps": []},
    {"prompt": "cancel order 2", "scenario_id": "s2", "reward": 1.0, "final_text": "ok", "steps": [],
     "faults": [{"tool": "lookup_order", "kind": "timeout"}]},
]
GOOD = ('agent = "whileai_ray.agents.seeded:seeded_agent"\nagent_kwargs = {}\n'
        'tools = "whileai_ray.testing.seeded_rows:TOOLS"\nrun_id = "cli-test"\n[simulate]\nsimulator = false\n')


@pytest.fixture(autouse=True)
def _no_ray_address(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


@pytest.mark.parametrize("command", ["run", "report", "submit", "status", "demo", "bench"])
def test_help_of_every_command_exits_0(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    assert f"whileai-ray {command}" in capsys.readouterr().out


def test_run_with_a_bad_field_exits_2_naming_it(tmp_path, capsys):
    spec = tmp_path / "bad.toml"
    spec.write_text(GOOD + "budgt = 10\n")
    assert main(["run", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "simulate.budgt" in err and "did you mean 'budget'" in err


def test_run_with_a_bad_value_exits_2_naming_it(tmp_path, capsys):
    spec = tmp_path / "bad.toml"
    spec.write_text(GOOD + 'mode = "fast"\n')
    assert main(["run", str(spec), "--dry-run"]) == 2
    assert "simulate.mode" in capsys.readouterr().err


def test_run_dry_run_prints_the_resolved_arguments_and_writes_nothing(tmp_path, capsys):
    spec = tmp_path / "good.toml"
    spec.write_text(GOOD + "budget = 20\n")
    assert main(["run", str(spec), "--dry-run", "--output-dir", str(tmp_path / "out")]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["run_id"] == "cli-test" and shown["simulate"]["budget"] == 20
    assert shown["simulate"]["checkpoint"] == str(tmp_path / "out" / "cli-test" / "checkpoint.jsonl")
    assert not (tmp_path / "out").exists()


def test_exit_codes_through_the_real_process(tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text('agnet = "x:y"\n')
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("RAY_ADDRESS", None)
    bad = subprocess.run([sys.executable, "-m", "whileai_ray.cli", "run", str(spec)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 2 and "did you mean 'agent'" in bad.stderr
    usage = subprocess.run([sys.executable, "-m", "whileai_ray.cli", "nonsense"],
                           capture_output=True, text=True, env=env, timeout=60)
    assert usage.returncode == 2


def _write_rows(path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def test_report_prints_rows_pass_at_and_coverage(tmp_path, capsys):
    path = _write_rows(tmp_path / "rows.jsonl")
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "3 rows" in out and "stopped_because=unknown" in out
    assert "pass@1 0.75" in out
    assert "2 distinct prompts" in out and "fault share 33%" in out and "3 graded rows" in out


def test_report_json_and_the_meta_sidecar(tmp_path, capsys):
    path = _write_rows(tmp_path / "rows.jsonl")
    (tmp_path / "rows.meta.json").write_text(json.dumps({
        "stopped_because": "writer_exhausted",
        "coverage": {"unique_prompts": 2, "unique_scenario_ids": 2, "unique_cells": 2,
                     "pairwise": {"fraction": 0.5}, "delivered": {"fault_share": 0.3333}}}))
    assert main(["report", str(path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows"] == 3 and summary["pass_at_1"] == 0.75
    assert summary["stopped_because"] == "writer_exhausted" and summary["pairwise"] == 0.5


def test_report_of_a_missing_file_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "absent.jsonl")]) == 2
    assert "no file or folder" in capsys.readouterr().err


def test_status_and_submit_without_an_address_exit_2(tmp_path, capsys):
    assert main(["status", "some-run"]) == 2
    assert "RAY_ADDRESS" in capsys.readouterr().err
    spec = tmp_path / "good.toml"
    spec.write_text(GOOD)
    assert main(["submit", str(spec), "--working-dir", str(tmp_path)]) == 2


def test_submit_of_a_spec_outside_the_working_dir_exits_2(tmp_path, capsys):
    spec = tmp_path / "good.toml"
    spec.write_text(GOOD)
    wd = tmp_path / "project"
    wd.mkdir()
    code = main(["submit", str(spec), "--address", "http://127.0.0.2:8265", "--working-dir", str(wd)])
    assert code == 2 and "outside the working dir" in capsys.readouterr().err


def test_plan_submission_uses_the_run_id_and_a_durable_checkpoint(tmp_path):
    (tmp_path / "specs").mkdir()
    spec = tmp_path / "specs" / "nightly.toml"
    spec.write_text(GOOD.replace('run_id = "cli-test"\n', ""))
    plan = plan_submission(spec, working_dir=tmp_path, output_dir="/mnt/whileai/outputs")
    again = plan_submission(spec, working_dir=tmp_path, output_dir="/mnt/whileai/outputs")
    assert plan.run_id == again.run_id and plan.run_id.startswith("nightly-")
    assert plan.entrypoint == (f"python -m whileai_ray.cli run specs/nightly.toml --run-id "
                               f"{plan.run_id} --output-dir /mnt/whileai/outputs")
    assert plan.checkpoint == f"/mnt/whileai/outputs/{plan.run_id}/checkpoint.jsonl"
    env = plan.runtime_env
    assert env["working_dir"] == str(tmp_path) and env["excludes"] == RUNTIME_ENV_EXCLUDES
    assert {".git", "outputs"} <= set(env["excludes"])
    assert env["env_vars"]["WHILEAI_OUTPUT_DIR"] == "/mnt/whileai/outputs"
    assert env["py_modules"] == [str(REPO / "whileai_ray")]   # shipped: not under tmp_path
    inside = plan_submission(REPO / "cluster" / "example.toml", working_dir=REPO, run_id="x1")
    assert inside.run_id == "x1" and "py_modules" not in inside.runtime_env


@pytest.mark.parametrize("status, action", [
    (None, "submit"), ("PENDING", "attach"), ("RUNNING", "attach"),
    ("SUCCEEDED", "replace"), ("FAILED", "replace"), ("STOPPED", "replace"),
])
def test_resubmitting_the_same_run_id(status, action):
    assert resubmit_action(status) == action


def test_unknown_job_status_is_an_error():
    with pytest.raises(ValueError, match="unknown Ray job status"):
        resubmit_action("EXPLODED")


def test_each_attempt_of_a_run_is_its_own_job_and_the_newest_is_the_runs_state():
    assert [attempt_id("nightly", n) for n in (1, 2, 3)] == ["nightly", "nightly--attempt2",
                                                           "nightly--attempt3"]
    jobs = [
        {"submission_id": "nightly", "metadata": {}},                     # before attempts were counted
        {"submission_id": "nightly--attempt3",
         "metadata": {"whileai_ray_run_id": "nightly", "whileai_ray_attempt": "3"}},
        {"submission_id": "nightly--attempt2",
         "metadata": {"whileai_ray_run_id": "nightly", "whileai_ray_attempt": "2"}},
        {"submission_id": "nightly-b", "metadata": {"whileai_ray_run_id": "nightly-b",
                                                    "whileai_ray_attempt": "9"}},
        {"submission_id": "raysubmit_x", "metadata": None},
    ]
    assert latest_attempt("nightly", jobs) == (3, jobs[1])
    assert latest_attempt("nightly", jobs[:1]) == (1, jobs[0])
    assert latest_attempt("weekly", jobs) is None
    with pytest.raises(ValueError, match="attempt must be >= 1"):
        attempt_id("nightly", 0)
