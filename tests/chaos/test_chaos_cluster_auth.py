"""Issue 11 item 16: who may submit work to a cluster.

The cluster files turn Ray's token auth on and publish no dashboard; against a throwaway
``ray start --head`` with ``RAY_AUTH_MODE=token`` (on 127.0.0.2, stopped by its own pids),
``whileai-ray submit`` and ``status`` succeed with the token and, without it or with a wrong
one, stop with exit code 3 and a message that says what to do."""
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import yaml

from local_head import LocalHead

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "cluster"

SPEC = '''
agent = "whileai_ray.agents.seeded:seeded_agent"
system_prompt = "You help customers look up their orders."
run_id = "auth-check"

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
budget = 20
seed = 0
'''


def test_the_cluster_files_turn_token_auth_on_and_keep_the_token_out():
    launcher = yaml.safe_load((CLUSTER / "cluster.yaml").read_text())
    for key in ("head_start_ray_commands", "worker_start_ray_commands"):
        starts = [c for c in launcher[key] if "ray start" in c]
        assert starts and all("RAY_AUTH_MODE=token" in c for c in starts), key
    head = " ".join(launcher["head_start_ray_commands"])
    assert "0.0.0.0" not in head                                   # the dashboard is not published
    assert launcher["file_mounts"].get("/home/ubuntu/.ray/auth_token") == "~/.ray/auth_token"
    for name in ("kuberay/raycluster.yaml", "kuberay/rayjob.yaml"):
        doc = yaml.safe_load((CLUSTER / name).read_text())
        spec = doc["spec"] if doc["kind"] == "RayCluster" else doc["spec"]["rayClusterSpec"]
        assert spec["authOptions"]["mode"] == "token", name
    for path in CLUSTER.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert not re.search(r"RAY_AUTH_TOKEN\s*[:=]\s*['\"]?[0-9a-f]{16,}", text), path
    sbatch = (CLUSTER / "slurm" / "whileai-ray.sbatch").read_text()
    assert "export RAY_AUTH_MODE=token" in sbatch
    readme = (CLUSTER / "README.md").read_text()
    assert "Reaching the dashboard safely" in readme and "port-forward" in readme


def cli(args, env, cwd):
    return subprocess.run([sys.executable, "-m", "whileai_ray.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def test_submit_and_status_send_the_token_and_say_what_to_do_without_it(tmp_path):
    token = secrets.token_hex(16)
    work = tmp_path / "work"
    work.mkdir()
    (work / "spec.toml").write_text(SPEC)
    home = tmp_path / "home"                     # no ~/.ray/auth_token to fall back on
    home.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    base.update(HOME=str(home), PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    head = LocalHead(auth_token=token)
    head.start()
    try:
        address = head.address
        missing = cli(["submit", "spec.toml", "--address", address], base, work)
        assert missing.returncode == 3, missing.stdout + missing.stderr
        assert "requires a token" in missing.stderr and "RAY_AUTH_TOKEN" in missing.stderr, missing.stderr
        wrong = cli(["submit", "spec.toml", "--address", address], {**base, "RAY_AUTH_TOKEN": "0" * 32}, work)
        assert wrong.returncode == 3 and "refused the token from RAY_AUTH_TOKEN" in wrong.stderr, wrong.stderr
        status = cli(["status", "auth-check", "--address", address], base, work)
        assert status.returncode == 3 and "requires a token" in status.stderr, status.stderr
        (home / ".ray").mkdir()
        (home / ".ray" / "auth_token").write_text(token + "\n")      # what `ray get-auth-token --generate` makes
        ok = cli(["submit", "spec.toml", "--address", address], base, work)
        assert ok.returncode == 0 and "submitted: run auth-check" in ok.stdout, ok.stdout + ok.stderr
        seen = cli(["status", "auth-check", "--address", address], {**base, "RAY_AUTH_TOKEN": token}, work)
        assert seen.returncode == 0 and seen.stdout.startswith("run auth-check: "), seen.stdout + seen.stderr
    finally:
        assert head.stop() == [], "the head left processes running"


def test_a_head_that_cannot_start_is_tried_again_and_says_what_ray_printed():
    """``ray start`` that exits while starting (a free-picked port taken meanwhile, or a bad
    setting) is started again on fresh ports; when every try exits, the error carries Ray's own
    words and nothing of the head is left running."""
    import psutil
    before = {p.pid for p in psutil.process_iter()}
    head = LocalHead(num_cpus=-1)
    try:
        head.start(timeout_s=60, attempts=2)
    except RuntimeError as exc:
        message = str(exc)
    else:
        head.stop()
        raise AssertionError("a head with -1 CPUs came up")
    assert "did not come up (exit 1)" in message and "nonnegative" in message     # Ray's words
    assert not os.path.exists(head.temp_dir)
    left = [p for p in psutil.process_iter(["cmdline"]) if p.pid not in before
            and any(head.temp_dir in part for part in (p.info["cmdline"] or []))]
    assert left == []
