"""The Ray Jobs client calls behind ``whileai-ray submit`` and ``status``.

Everything here talks to a Ray dashboard over HTTP (``JobSubmissionClient``); the decisions
(submission ids, entrypoint, runtime_env, what to do when a run already has a job) are made
in ``whileai_ray/runtime/jobs/plan.py`` without Ray. One run (one spec) is a series of attempts, each its
own Ray job tagged with the run id: a second ``submit`` finds the latest attempt, leaves it
alone while it runs, and otherwise submits the next attempt, which resumes from the
checkpoint. ``job_status`` / ``wait_for`` / ``job_logs`` take the run id and answer for the
latest attempt.
"""
from __future__ import annotations

import contextlib
import time

from ray.job_submission import JobSubmissionClient

from .auth import JobAuthError, auth_failure, auth_headers
from .plan import (ATTEMPT_KEY, Submission, attempt_id, latest_attempt, plan_submission, resolve_address,
                       resubmit_action)

__all__ = ["submit", "status", "submit_planned", "job_status", "wait_for", "job_logs", "JobNotFound", "JobAuthError"]

POLL_S = 2.0
AGENT_WAIT_S = 30.0


class JobNotFound(LookupError):
    """No Ray job has this submission id on this cluster."""


def _client(address: str) -> JobSubmissionClient:
    """A Jobs client that sends the cluster's token when one is configured (``jobs/auth.py``)."""
    try:
        return JobSubmissionClient(address, headers=auth_headers())
    except Exception as exc:
        refused = auth_failure(address, exc)
        if refused is not None:
            raise refused from None
        if isinstance(exc, (ConnectionError, RuntimeError, ValueError)):
            raise ConnectionError(f"cannot reach the Ray dashboard at {address!r} ({exc}); start "
                                  f"the cluster or fix --address / RAY_ADDRESS") from exc
        raise


@contextlib.contextmanager
def _refused(address: str):
    """Turn the dashboard's 401/403 on any later call into ``JobAuthError`` too."""
    try:
        yield
    except JobAuthError:
        raise
    except Exception as exc:
        refused = auth_failure(address, exc)
        if refused is not None:
            raise refused from None
        raise


def _job_dict(job) -> dict:
    return {"submission_id": job.submission_id, "metadata": dict(job.metadata or {})}


def _latest(client: JobSubmissionClient, run_id: str):
    """``(attempt, submission_id, JobDetails)`` of the run's newest attempt, or None."""
    details = {j.submission_id: j for j in client.list_jobs() if j.submission_id}
    found = latest_attempt(run_id, [_job_dict(j) for j in details.values()])
    if found is None:
        return None
    attempt, job = found
    return attempt, job["submission_id"], details[job["submission_id"]]


def _as_dict(run_id: str, info, attempt: int = 1, submission_id: str | None = None) -> dict:
    return {"run_id": run_id, "status": str(info.status.value if hasattr(info.status, "value")
                                            else info.status),
            "message": info.message or "", "entrypoint": info.entrypoint,
            "start_time": info.start_time, "end_time": info.end_time,
            "attempt": attempt, "submission_id": submission_id or run_id,
            "metadata": dict(info.metadata or {})}


def submit_planned(submission: Submission, address: str) -> dict:
    """Submit ``submission`` (or leave a live attempt running); see the module doc."""
    client = _client(address)
    with _refused(address):
        latest = _latest(client, submission.run_id)
    state = _as_dict(submission.run_id, latest[2], latest[0], latest[1]) if latest else None
    action = resubmit_action(state["status"] if state else None)
    out = {"run_id": submission.run_id, "checkpoint": submission.checkpoint,
           "entrypoint": submission.entrypoint, "address": address}
    if action == "attach":
        assert state is not None               # attach: an attempt is running
        return {**out, "action": "already_running", "status": state["status"],
                "attempt": state["attempt"], "submission_id": state["submission_id"]}
    attempt = state["attempt"] + 1 if state else 1
    with _refused(address):
        sid = _submit_with_retry(client, submission, attempt)
    return {**out, "action": "resubmitted" if action == "replace" else "submitted",
            "status": "PENDING", "attempt": attempt, "submission_id": sid}


def _submit_with_retry(client: JobSubmissionClient, submission: Submission, attempt: int) -> str:
    """Submit attempt ``attempt``; returns its submission id.

    A freshly started head answers "No available agent" for a few seconds: retried. An id
    already taken (a job someone submitted by hand) moves on to the next attempt number.
    """
    deadline = time.monotonic() + AGENT_WAIT_S
    while True:
        sid = attempt_id(submission.run_id, attempt)
        try:
            client.submit_job(entrypoint=submission.entrypoint, submission_id=sid,
                              runtime_env=submission.runtime_env,
                              metadata={**submission.metadata, ATTEMPT_KEY: str(attempt)},
                              entrypoint_num_cpus=0)
            return sid
        except RuntimeError as exc:
            if "already exists" in str(exc):
                attempt += 1
                continue
            if "No available agent" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(1.0)


def job_status(run_id: str, address: str) -> dict | None:
    """The latest attempt's ``{"run_id", "status", "message", "attempt", "submission_id", ...}``,
    or None when the run has no job on this cluster."""
    client = _client(address)
    with _refused(address):
        latest = _latest(client, run_id)
    return None if latest is None else _as_dict(run_id, latest[2], latest[0], latest[1])


def wait_for(run_id: str, address: str, timeout_s: float | None = None) -> dict:
    """Poll until the job is SUCCEEDED, FAILED or STOPPED (or ``timeout_s`` passes)."""
    client = _client(address)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        latest = _latest(client, run_id)
        if latest is None:
            raise JobNotFound(f"no Ray job for run {run_id!r} at {address}")
        state = _as_dict(run_id, latest[2], latest[0], latest[1])
        if state["status"] in ("SUCCEEDED", "FAILED", "STOPPED"):
            return state
        if deadline is not None and time.monotonic() >= deadline:
            return state
        time.sleep(POLL_S)


def job_logs(run_id: str, address: str) -> str:
    """The driver log of the run's latest attempt ("" when the run has no job)."""
    client = _client(address)
    latest = _latest(client, run_id)
    return "" if latest is None else client.get_job_logs(latest[1])


def submit(spec_path, address: str | None, *, run_id: str | None = None, **options) -> dict:
    """Submit (or resume, or leave running) the job for a spec; returns what happened.

    ``{"run_id", "action": "submitted" | "resubmitted" | "already_running", "status",
    "checkpoint", "entrypoint"}``. Needs a Ray dashboard address (``--address`` or
    ``RAY_ADDRESS``, e.g. ``http://127.0.0.1:8265``).
    """
    submission = plan_submission(spec_path, run_id=run_id, **options)
    return submit_planned(submission, resolve_address(address))


def status(run_id: str, address: str | None) -> dict | None:
    """The job's ``{"run_id", "status", "message", ...}``, or None when there is no such job."""
    return job_status(run_id, resolve_address(address))
