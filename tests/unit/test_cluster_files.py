"""Every file under cluster/ loads and carries the keys Ray, KubeRay and Slurm need."""
import importlib.metadata
import importlib.util
import json
import re
import shlex
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from whileai_ray.cli import main
from whileai_ray.runtime.jobs.plan import RUNTIME_ENV_EXCLUDES
from whileai_ray.config.run_spec import load_spec

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "cluster"
KNOWN = {"README.md", "cluster.yaml", "runtime_env.yaml", "example.toml", "Dockerfile",
         "kuberay/raycluster.yaml", "kuberay/rayjob.yaml", "kuberay/outputs-pvc.yaml",
         "slurm/whileai-ray.sbatch", "gpu_check.sh",
         "grafana/build_dashboard.py", "grafana/whileai_ray_grafana_dashboard.json"}   # test_grafana_dashboard.py
RAY_VERSION = importlib.metadata.version("ray")


def load_yaml(name: str) -> dict:
    return yaml.safe_load((CLUSTER / name).read_text())


def test_every_cluster_file_is_known_and_checked_here():
    present = {p.relative_to(CLUSTER).as_posix() for p in CLUSTER.rglob("*") if p.is_file()}
    assert present == KNOWN


def test_launcher_config_matches_rays_schema_and_layout():
    config = load_yaml("cluster.yaml")
    ray_dir = Path(importlib.util.find_spec("ray").origin).parent      # no `import ray`
    schema = json.loads((ray_dir / "autoscaler" / "ray-schema.json").read_text())
    jsonschema.validate(config, schema)
    for key in ("cluster_name", "provider", "head_node_type", "available_node_types",
                "head_start_ray_commands", "worker_start_ray_commands"):
        assert key in config, key
    types = config["available_node_types"]
    head = types[config["head_node_type"]]
    assert head["resources"]["CPU"] == 0
    head_cmd = " ".join(config["head_start_ray_commands"])
    assert "--head" in head_cmd and "--num-cpus=0" in head_cmd
    workers = [t for name, t in types.items() if name != config["head_node_type"]]
    assert any(t["resources"].get("GPU", 0) >= 1 for t in workers)
    assert any(t["resources"].get("CPU", 0) > 0 and not t["resources"].get("GPU") for t in workers)
    assert all(t["min_workers"] <= t["max_workers"] <= config["max_workers"] for t in workers)
    assert f'ray[default]=={RAY_VERSION}' in " ".join(config["setup_commands"])


def _check_ray_cluster_spec(spec: dict) -> None:
    assert spec["rayVersion"] == RAY_VERSION
    head = spec["headGroupSpec"]
    assert head["rayStartParams"]["num-cpus"] == "0"
    groups = [head] + spec["workerGroupSpecs"]
    for group in groups:   # KubeRay wants string values in rayStartParams
        assert all(isinstance(v, str) for v in group["rayStartParams"].values())
        containers = group["template"]["spec"]["containers"]
        assert containers and all(c["name"] and c["image"] for c in containers)
    for group in spec["workerGroupSpecs"]:
        assert group["groupName"]
        assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]
    gpu = [g for g in spec["workerGroupSpecs"]
           if any("nvidia.com/gpu" in c["resources"].get("limits", {})
                  for c in g["template"]["spec"]["containers"])]
    assert gpu, "a worker group must request nvidia.com/gpu"
    ports = {p["containerPort"] for p in head["template"]["spec"]["containers"][0]["ports"]}
    assert {6379, 8265} <= ports
    claims = {v["persistentVolumeClaim"]["claimName"] for v in head["template"]["spec"]["volumes"]}
    assert claims == {load_yaml("kuberay/outputs-pvc.yaml")["metadata"]["name"]}


def test_kuberay_raycluster():
    doc = load_yaml("kuberay/raycluster.yaml")
    assert doc["apiVersion"] == "ray.io/v1" and doc["kind"] == "RayCluster"
    assert doc["metadata"]["name"]
    _check_ray_cluster_spec(doc["spec"])


def test_kuberay_rayjob():
    doc = load_yaml("kuberay/rayjob.yaml")
    assert doc["apiVersion"] == "ray.io/v1" and doc["kind"] == "RayJob"
    spec = doc["spec"]
    assert spec["shutdownAfterJobFinishes"] is True
    _check_ray_cluster_spec(spec["rayClusterSpec"])
    runtime_env = yaml.safe_load(spec["runtimeEnvYAML"])
    assert {".git", "outputs"} <= set(runtime_env["excludes"])
    argv = shlex.split(spec["entrypoint"])
    assert argv[:4] == ["python", "-m", "whileai_ray.cli", "run"]
    assert (REPO / argv[4]).is_file()            # the spec it runs ships in the image
    assert argv[argv.index("--run-id") + 1] == spec["jobId"]
    out_dir = argv[argv.index("--output-dir") + 1]
    mounts = spec["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    assert any(out_dir.startswith(m["mountPath"]) for m in mounts)


def test_outputs_pvc():
    doc = load_yaml("kuberay/outputs-pvc.yaml")
    assert doc["apiVersion"] == "v1" and doc["kind"] == "PersistentVolumeClaim"
    assert doc["spec"]["resources"]["requests"]["storage"]


def test_runtime_env_matches_what_submit_sends():
    env = load_yaml("runtime_env.yaml")
    assert env["excludes"] == RUNTIME_ENV_EXCLUDES
    assert env["working_dir"] == "."
    assert all(isinstance(v, str) for v in env["env_vars"].values())


def test_example_spec_is_valid_and_offline():
    spec = load_spec(CLUSTER / "example.toml")
    agent, kwargs = spec.build(make_dirs=False)
    spec.check(agent, kwargs)
    assert kwargs["simulator"] is False


def test_slurm_script_parses_and_starts_ray_then_the_run():
    path = CLUSTER / "slurm" / "whileai-ray.sbatch"
    subprocess.run(["bash", "-n", str(path)], check=True)
    text = path.read_text()
    assert text.startswith("#!/bin/bash\n")
    assert re.search(r"^#SBATCH --nodes=\d+", text, re.M)
    assert "ray start --head" in text and "ray start --address" in text
    assert "python -m whileai_ray.cli run" in text


def test_dockerfile_uses_the_tested_ray_version():
    text = (CLUSTER / "Dockerfile").read_text()
    assert f"rayproject/ray:{RAY_VERSION}-py311" in text and "pip install" in text


@pytest.mark.parametrize("needle", ["Version matrix", "KubeRay", "ray up cluster/cluster.yaml",
                                    "kubectl apply", "sbatch", RAY_VERSION])
def test_readme_covers_the_matrix_and_the_three_ways(needle):
    assert needle in (CLUSTER / "README.md").read_text()


def test_gpu_check_script_parses():
    import subprocess
    subprocess.run(["bash", "-n", str(CLUSTER / "gpu_check.sh")], check=True)


@pytest.mark.parametrize("key", ["head_start_ray_commands", "worker_start_ray_commands"])
def test_autoscaler_start_commands_raise_the_open_file_limit_before_ray_start(key):
    """Each command runs in its own shell, so the ``ulimit`` must share the ``ray start`` line."""
    starts = [c for c in load_yaml("cluster.yaml")[key] if "ray start" in c]
    assert starts, key
    for command in starts:
        steps = [s.strip() for s in command.split(";")]
        limit = next((i for i, s in enumerate(steps) if s == "ulimit -n 65536"), None)
        start = next(i for i, s in enumerate(steps) if "ray start" in s)
        assert limit is not None and limit < start, command
        subprocess.run(["bash", "-n", "-c", command], check=True, timeout=10)    # plain bash syntax


def test_rayjob_retries_resume_the_same_checkpoint(tmp_path, capsys):
    spec = load_yaml("kuberay/rayjob.yaml")["spec"]
    assert isinstance(spec["backoffLimit"], int) and spec["backoffLimit"] >= 1
    argv = shlex.split(spec["entrypoint"])
    checkpoint = argv[argv.index("--checkpoint") + 1]
    out_dir = argv[argv.index("--output-dir") + 1]
    mounts = spec["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    assert checkpoint.startswith("/") and any(checkpoint.startswith(m["mountPath"] + "/") for m in mounts)
    assert checkpoint.startswith(out_dir + "/") and spec["jobId"] in checkpoint    # one run, one fixed file
    # the entrypoint's own arguments, as `whileai-ray run` resolves them (the PVC moved under tmp_path)
    moved = [a.replace(out_dir, str(tmp_path)) for a in argv[argv.index("run"):]]
    moved[1] = str(REPO / moved[1])
    assert main(moved + ["--dry-run"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["simulate"]["checkpoint"] == checkpoint.replace(out_dir, str(tmp_path))
    assert shown["run_id"] == spec["jobId"]


def _section(text: str, title: str) -> str:
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    return text[start:end if end != -1 else None]


def test_kuberay_docs_set_the_client_side_token_auth_mode():
    """Ray's own clients (``ray job submit``, ``ray.init``) send the token only with
    ``RAY_AUTH_MODE=token`` on the client side too; the token itself comes from ``RAY_AUTH_TOKEN``."""
    kuberay = _section((CLUSTER / "README.md").read_text(), "## 2. KubeRay")
    assert "export RAY_AUTH_MODE=token" in kuberay
    assert "export RAY_AUTH_TOKEN=" in kuberay
    assert kuberay.index("export RAY_AUTH_MODE=token") < kuberay.index("port-forward")


def test_kuberay_docs_say_how_a_rayjob_resumes():
    kuberay = _section((CLUSTER / "README.md").read_text(), "## 2. KubeRay")
    assert "backoffLimit" in kuberay and "--checkpoint" in kuberay
