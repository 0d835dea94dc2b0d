"""The Ray Jobs client calls behind ``whileai-ray submit`` and ``status``.

Everything here talks to a Ray dashboard over HTTP (``JobSubmissionClient``); the decisions
(submission id, entrypoint, runtime_env, what to do with an id that already exists) are made
in ``whileai_ray/jobs.py`` without Ray. Submission id = run id: a second ``submit`` of the
same spec finds the first job, leaves it alone while it runs, and otherwise deletes the
finished record and submits again under the same id, which resumes from the checkpoint.
"""
from __future__ import annotations

import time

from ray.job_submission import JobSubmissionClient

from ..jobs import Submission, resubmit_action

__all__ = ["submit_planned", "job_status", "wait_for", "job_logs", "JobNotFound"]

POLL_S = 2.0
AGENT_WAIT_S = 30.0


class JobNotFound(LookupError):
    """No Ray job has this submission id on this cluster."""


def _client(address: str) -> JobSubmissionClient:
    try:
        return JobSubmissionClient(address)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConnectionError(f"cannot reach the Ray dashboard at {address!r} ({exc}); start "
                              f"the cluster or fix --address / RAY_ADDRESS") from exc


def _info(client: JobSubmissionClient, run_id: str):
    try:
        return client.get_job_info(run_id)
    except RuntimeError as exc:
        if "404" in str(exc) or "does not exist" in str(exc):
            return None
        raise


def _as_dict(run_id: str, info) -> dict:
    return {"run_id": run_id, "status": str(info.status.value if hasattr(info.status, "value")
                                            else info.status),
            "message": info.message or "", "entrypoint": info.entrypoint,
            "start_time": info.start_time, "end_time": info.end_time,
            "metadata": dict(info.metadata or {})}


def submit_planned(submission: Submission, address: str) -> dict:
    """Submit ``submission`` (or leave a live job with its id running); see the module doc."""
    client = _client(address)
    existing = _info(client, submission.run_id)
    action = resubmit_action(_as_dict(submission.run_id, existing)["status"] if existing else None)
    out = {"run_id": submission.run_id, "checkpoint": submission.checkpoint,
           "entrypoint": submission.entrypoint, "address": address}
    if action == "attach":
        return {**out, "action": "already_running", "status": str(existing.status.value)}
    if action == "replace":
        client.delete_job(submission.run_id)
        deadline = time.monotonic() + AGENT_WAIT_S       # deletion is asynchronous: wait until it is gone
        while _info(client, submission.run_id) is not None and time.monotonic() < deadline:
            time.sleep(0.5)
    _submit_with_retry(client, submission)
    return {**out, "action": "resubmitted" if action == "replace" else "submitted",
            "status": "PENDING"}


def _submit_with_retry(client: JobSubmissionClient, submission: Submission) -> None:
    """Submit; a freshly started head answers "No available agent" for a few seconds."""
    deadline = time.monotonic() + AGENT_WAIT_S
    while True:
        try:
            client.submit_job(entrypoint=submission.entrypoint, submission_id=submission.run_id,
                              runtime_env=submission.runtime_env, metadata=submission.metadata,
                              entrypoint_num_cpus=0)
            return
        except RuntimeError as exc:
            transient = "No available agent" in str(exc) or "already exists" in str(exc)
            if not transient or time.monotonic() >= deadline:
                raise
            time.sleep(1.0)


def job_status(run_id: str, address: str) -> dict | None:
    """``{"run_id", "status", "message", ...}`` or None when no job has this id."""
    info = _info(_client(address), run_id)
    return None if info is None else _as_dict(run_id, info)


def wait_for(run_id: str, address: str, timeout_s: float | None = None) -> dict:
    """Poll until the job is SUCCEEDED, FAILED or STOPPED (or ``timeout_s`` passes)."""
    client = _client(address)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        info = _info(client, run_id)
        if info is None:
            raise JobNotFound(f"no Ray job with submission id {run_id!r} at {address}")
        state = _as_dict(run_id, info)
        if state["status"] in ("SUCCEEDED", "FAILED", "STOPPED"):
            return state
        if deadline is not None and time.monotonic() >= deadline:
            return state
        time.sleep(POLL_S)


def job_logs(run_id: str, address: str) -> str:
    return _client(address).get_job_logs(run_id)
