"""A Ray Job against a local head (`ray start --head` on 127.0.0.2): the CLI's entrypoint runs a
simulation to completion; a job stopped mid-run and submitted again resumes from its checkpoint."""
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from whileai_ray.store.schema import row_key
from local_head import LocalHead

SPEC = '''
agent = "whileai_ray.bench.lines:SleepyAgent"
agent_kwargs = {{ latency_s = {latency} }}
system_prompt = "You help customers look up their orders."
run_id = "{run_id}"

[[tools]]
type = "function"
[tools.function]
name = "lookup_order"
[tools.function.parameters]
type = "object"
required = ["order_id"]
[tools.function.parameters.properties.order_id]
type = "string"

[simulate]
simulator = false
budget = {budget}
seed = 0
concurrency = 16
'''


@pytest.fixture(scope="module")
def head():
    h = LocalHead().start()
    yield h
    assert h.stop() == [], "the head left processes running"


def cli(*args, ok=(0,)):
    done = subprocess.run([sys.executable, "-m", "whileai_ray.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode in ok, done.stdout + done.stderr
    return done


def wait_status(run_id, address, want, timeout=240):
    from whileai_ray.runtime.jobs.client import status
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = status(run_id, address)
        if st and st["status"] in want:
            if st["status"] == "FAILED":
                from whileai_ray.runtime.jobs.client import job_logs
                st["logs"] = job_logs(run_id, address)[-3000:]
            return st
        time.sleep(0.25)                 # each look is one HTTP call to the Jobs API
    raise AssertionError(f"{run_id} never reached {want}: {status(run_id, address)}")


def body(path: Path) -> list:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip() and "_whileai_ray_checkpoint" not in x]


def test_submit_runs_to_completion_and_a_stopped_job_resumes(head, tmp_path):
    project, outputs = tmp_path / "project", tmp_path / "outputs"
    project.mkdir()
    spec = project / "orders.toml"
    spec.write_text(SPEC.format(latency=0.0, run_id="jobs-quick", budget=120))
    cli("submit", spec, "--address", head.address, "--working-dir", project, "--output-dir", outputs)
    st = wait_status("jobs-quick", head.address, {"SUCCEEDED", "FAILED", "STOPPED"})
    assert st["status"] == "SUCCEEDED", st
    assert len(body(outputs / "jobs-quick" / "checkpoint.jsonl")) == 120
    report = cli("report", outputs / "jobs-quick" / "rows.jsonl")
    assert "120" in report.stdout

    spec2 = project / "slow.toml"
    spec2.write_text(SPEC.format(latency=0.05, run_id="jobs-slow", budget=1500))
    ck = outputs / "jobs-slow" / "checkpoint.jsonl"
    cli("submit", spec2, "--address", head.address, "--working-dir", project, "--output-dir", outputs)
    deadline = time.monotonic() + 180
    while len(body(ck)) < 200 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert len(body(ck)) >= 200, "the job did not get going"
    from ray.job_submission import JobSubmissionClient
    from whileai_ray.runtime.jobs.client import status
    first = status("jobs-slow", head.address)
    assert first["attempt"] == 1 and first["submission_id"] == "jobs-slow"
    JobSubmissionClient(head.address).stop_job(first["submission_id"])
    wait_status("jobs-slow", head.address, {"STOPPED", "FAILED"})
    before = len(body(ck))
    assert before < 1500
    cli("submit", spec2, "--address", head.address, "--working-dir", project, "--output-dir", outputs)
    st = wait_status("jobs-slow", head.address, {"SUCCEEDED", "FAILED", "STOPPED"})
    assert st["status"] == "SUCCEEDED", st
    assert st["attempt"] == 2 and st["submission_id"] == "jobs-slow--attempt2"
    assert JobSubmissionClient(head.address).get_job_status("jobs-slow").value == "STOPPED"  # kept
    rows = body(ck)
    assert len(rows) == 1500 and len({row_key(r) for r in rows}) == 1500
    resumed = [r for r in json.loads(Path(outputs / "jobs-slow" / "rows.meta.json").read_text())["search"]
               ["rollouts"].items() if r[0] == "resumed"]
    assert resumed and resumed[0][1] >= before - 32          # what was on disk was kept, not redone
