"""Ray Jobs for a run spec: what ``whileai-ray submit`` / ``status`` send, decided without Ray.

``plan_submission(spec_path, ...)`` turns a spec file into a ``Submission``: the submission id
(= the run id, so one spec is one job), the entrypoint (``python -m whileai_ray.cli run SPEC
--run-id ID``, run on the head node inside the uploaded working dir) and the runtime_env
(working dir without ``.git`` and ``outputs``, ``WHILEAI_OUTPUT_DIR`` pointing at storage that
outlives the job). Resubmitting the same spec gives the same run id and the same checkpoint
path, so the new job resumes from the rows the last one landed.

``resubmit_action(status)`` is the rule for a run that already has a job: the latest attempt
still PENDING or RUNNING is left alone (``"attach"``); a finished one gets a new attempt
(``"replace"``); no job yet means ``"submit"``. Each attempt is its own Ray job, with
submission id ``attempt_id(run_id, n)`` (``run_id`` for the first, ``run_id--attempt2`` ...)
and the run id in its metadata: reusing one submission id races Ray's job monitor, which
keeps watching the old supervisor actor and can mark the new job FAILED ("Job supervisor actor
died"); separate ids also keep every attempt's logs. ``latest_attempt`` picks the attempt that
``status`` reports. The Ray calls themselves (``submit``, ``status``) live in
``whileai_ray/runtime/jobs/client.py``; this module imports no ray, so its rules are unit-tested alone.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ...config.run_spec import SpecError, load_spec

__all__ = ["Submission", "plan_submission", "resubmit_action", "attempt_id", "attempt_of",
           "latest_attempt",
           "resolve_address", "RUNTIME_ENV_EXCLUDES", "DEFAULT_JOB_OUTPUT_DIR", "TERMINAL", "LIVE"]

# Never uploaded with the working dir: history, results, environments, caches.
RUNTIME_ENV_EXCLUDES = [".git", "outputs", ".venv", "venv", "**/__pycache__", "*.egg-info",
                        ".pytest_cache"]
# On the head node, outside the per-job copy of the working dir, so a resubmission finds it.
DEFAULT_JOB_OUTPUT_DIR = "/tmp/whileai_ray/outputs"
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
LIVE = ("PENDING", "RUNNING")


@dataclass
class Submission:
    """Everything ``JobSubmissionClient.submit_job`` is called with."""
    run_id: str
    entrypoint: str
    runtime_env: dict
    metadata: dict = field(default_factory=dict)
    spec_path: str = ""
    checkpoint: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def resubmit_action(existing_status: str | None) -> str:
    """``None`` -> "submit"; PENDING/RUNNING -> "attach"; SUCCEEDED/FAILED/STOPPED -> "replace"."""
    if existing_status is None:
        return "submit"
    status = str(existing_status).upper()
    if status in LIVE:
        return "attach"
    if status in TERMINAL:
        return "replace"
    raise ValueError(f"unknown Ray job status {existing_status!r}")


RUN_ID_KEY = "whileai_ray_run_id"
ATTEMPT_KEY = "whileai_ray_attempt"


def attempt_id(run_id: str, attempt: int) -> str:
    """The Ray submission id of a run's ``attempt``-th job (1-based)."""
    if attempt < 1:
        raise ValueError(f"attempt must be >= 1, got {attempt}")
    return run_id if attempt == 1 else f"{run_id}--attempt{attempt}"


def attempt_of(run_id: str, job: dict) -> int | None:
    """Which attempt of ``run_id`` the job ``{"submission_id", "metadata"}`` is, or None."""
    meta = job.get("metadata") or {}
    sid = job.get("submission_id")
    if meta.get(RUN_ID_KEY) == run_id and str(meta.get(ATTEMPT_KEY, "")).isdigit():
        return int(meta[ATTEMPT_KEY])
    if sid == run_id:
        return 1                                   # a job submitted before attempts were counted
    return None


def latest_attempt(run_id: str, jobs: list[dict]) -> tuple[int, dict] | None:
    """``(attempt, job)`` for the newest attempt of ``run_id`` among ``jobs``, or None."""
    found = [(n, job) for job in jobs if (n := attempt_of(run_id, job)) is not None]
    return max(found, key=lambda pair: pair[0]) if found else None


def _package_dir() -> Path:
    return Path(__file__).resolve().parents[2]     # whileai_ray/


def plan_submission(spec_path: str | os.PathLike, *, run_id: str | None = None,
                    working_dir: str | os.PathLike | None = None,
                    output_dir: str | None = None, env: dict | None = None,
                    pip: list[str] | None = None) -> Submission:
    """Validate the spec and build its Submission (see the module doc).

    ``working_dir`` (default: the current folder) is uploaded and must contain the spec.
    ``output_dir`` sets ``WHILEAI_OUTPUT_DIR`` for the job (default
    ``DEFAULT_JOB_OUTPUT_DIR``, a head-node folder that outlives a job; use a shared volume
    on a cluster whose head can be replaced).
    """
    spec_file = Path(spec_path).resolve()
    spec = load_spec(spec_file)
    run_id = run_id or spec.resolved_run_id()
    spec.run_id = run_id
    wd = Path(working_dir or os.getcwd()).resolve()
    if not wd.is_dir():
        raise SpecError(f"--working-dir {wd}: no such folder")
    try:
        rel = spec_file.relative_to(wd)
    except ValueError:
        raise SpecError(f"{spec_file} is outside the working dir {wd}, which is what the job "
                        f"uploads; move the spec under it or pass --working-dir") from None
    out_root = output_dir or spec.output_dir or DEFAULT_JOB_OUTPUT_DIR
    env_vars = {"WHILEAI_OUTPUT_DIR": str(out_root), "PYTHONUNBUFFERED": "1"}
    env_vars.update({str(k): str(v) for k, v in (env or {}).items()})
    runtime_env: dict = {"working_dir": str(wd), "excludes": list(RUNTIME_ENV_EXCLUDES),
                         "env_vars": env_vars}
    package = _package_dir()
    if wd not in package.parents:       # ship this whileai_ray unless the working dir has it
        runtime_env["py_modules"] = [str(package)]
    if pip:
        runtime_env["pip"] = list(pip)
    entrypoint = (f"python -m whileai_ray.cli run {shlex.quote(rel.as_posix())} --run-id {run_id} "
                  f"--output-dir {shlex.quote(str(out_root))}")
    spec.output_dir = str(out_root)
    checkpoint = spec.paths(run_id)["checkpoint"]
    return Submission(run_id=run_id, entrypoint=entrypoint, runtime_env=runtime_env,
                      metadata={RUN_ID_KEY: run_id, ATTEMPT_KEY: "1", "spec": rel.as_posix()},
                      spec_path=str(spec_file), checkpoint=checkpoint)


def resolve_address(address: str | None) -> str:
    address = address or os.environ.get("RAY_ADDRESS")
    if not address:
        raise SpecError("no Ray address: pass --address http://<head>:8265 or set RAY_ADDRESS")
    return address
