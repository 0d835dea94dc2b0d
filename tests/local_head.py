"""A throwaway local Ray head for tests, stopped by its own pids. Imported by tests as
``from local_head import LocalHead`` (pytest puts ``tests/`` on the path for its conftest); it
lives here, not in the package, because only the project's own tests start such a head.

``LocalHead()`` runs ``ray start --head --block`` bound to a loopback address with every port
free-picked (so it never collides with another Ray on the machine), in its own session, with
its own ``--temp-dir``; ``stop()`` ends exactly the processes it started (its session, or any
process naming its temp dir: Ray's agents rename themselves) and never runs ``ray stop``,
which would stop every Ray on the machine. The dashboard is on, because the Jobs API lives
there. Jobs run ``python`` from PATH: the head's PATH starts with this interpreter's folder.
``LocalHead(auth_token=...)`` starts it with Ray's token auth (``RAY_AUTH_MODE=token``), as the
files in ``cluster/`` do.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


class _ExitedEarly(Exception):
    def __init__(self, code: int, said: str):
        super().__init__(code, said)
        self.code, self.said = code, said


_STARTED = ("will now block forever", "Ray runtime started")    # what `ray start --block` prints once up


def _started(path: str) -> bool:
    """Whether ``ray start`` printed that every part of the head is up."""
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return False
    return any(mark in text for mark in _STARTED)


def _tail(path: str, limit: int = 600) -> str:
    """The last lines ``ray start`` printed (what to look at when the head did not come up)."""
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8", "replace").strip()
    except OSError:
        return "(no output)"
    return " | ".join(text[-limit:].splitlines()[-6:]) or "(no output)"


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LocalHead:
    def __init__(self, node_ip: str | None = None, num_cpus: int = 2, auth_token: str | None = None):
        self.node_ip = node_ip or os.environ.get("WHILEAI_RAY_NODE_IP", "127.0.0.2")
        self.num_cpus = num_cpus
        self.auth_token = auth_token     # set: the head runs with RAY_AUTH_MODE=token and this token
        self.proc: subprocess.Popen | None = None
        self.temp_dir = ""
        self.gcs_address = ""
        self.address = ""            # the Jobs API (dashboard) URL

    def start(self, timeout_s: float = 90.0, attempts: int = 2) -> "LocalHead":
        """Start the head and wait until its Jobs API answers. A head whose ``ray start`` exits
        while starting (a free-picked port taken by another process before Ray bound it) is
        started again on fresh ports, ``attempts`` times in all; the error says what Ray printed."""
        for attempt in range(1, attempts + 1):
            try:
                return self._start_once(timeout_s)
            except _ExitedEarly as exc:
                if attempt == attempts:
                    raise RuntimeError(f"the local Ray head did not come up (exit {exc.code}): {exc.said}") from None

    def _start_once(self, timeout_s: float) -> "LocalHead":
        bin_dir = Path(sys.executable).parent
        port, dash = free_port(self.node_ip), free_port(self.node_ip)
        extra = {flag: free_port(self.node_ip) for flag in (
            "--dashboard-agent-listen-port", "--dashboard-agent-grpc-port", "--runtime-env-agent-port",
            "--metrics-export-port", "--ray-client-server-port")}
        self.temp_dir = tempfile.mkdtemp(prefix="wai-head-", dir="/tmp")
        env = {**os.environ, "RAY_AUTH_MODE": "disabled",
               "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        env.pop("RAY_AUTH_TOKEN", None)
        env.pop("RAY_AUTH_TOKEN_PATH", None)
        headers = {}
        if self.auth_token:                      # every process of the head (and its jobs) sees the token
            env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=self.auth_token)
            headers = {"Authorization": f"Bearer {self.auth_token}"}
        log_path = os.path.join(self.temp_dir, "ray-start.log")
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [str(bin_dir / "ray"), "start", "--head", "--block", f"--node-ip-address={self.node_ip}",
                 f"--port={port}", f"--dashboard-host={self.node_ip}", f"--dashboard-port={dash}",
                 "--include-dashboard=true", f"--num-cpus={self.num_cpus}", "--disable-usage-stats",
                 f"--temp-dir={self.temp_dir}", *(f"{k}={v}" for k, v in extra.items())],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        self.gcs_address = f"{self.node_ip}:{port}"
        self.address = f"http://{self.node_ip}:{dash}"
        from ray.job_submission import JobSubmissionClient   # lazy: the job client pulls in aiohttp
        deadline = time.monotonic() + timeout_s
        while True:                      # ready once ray start says all is up and the Jobs client can list jobs
            try:
                if _started(log_path):   # (a head failing late serves its dashboard for a moment first)
                    JobSubmissionClient(self.address, headers=dict(headers)).list_jobs()
                    return self
                raise RuntimeError("not started yet")
            except Exception:
                code = self.proc.poll()
                if code is not None or time.monotonic() > deadline:
                    said = _tail(log_path)
                    self.stop()
                    if code is not None:
                        raise _ExitedEarly(code, said) from None
                    raise RuntimeError(f"the local Ray head did not come up in {timeout_s:g}s: {said}") from None
                time.sleep(0.2)      # (each look is a file read and, once started, one HTTP call)

    def _members(self) -> list:
        import psutil   # lazy: psutil, only to find this head's processes
        found = []
        for proc in psutil.process_iter(["pid", "cmdline"]):
            try:
                if proc.pid == os.getpid():
                    continue
                mine = self.proc is not None and os.getsid(proc.pid) == self.proc.pid
                if mine or any(self.temp_dir in part for part in proc.info["cmdline"] or []):
                    if proc.status() != psutil.STATUS_ZOMBIE:
                        found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError, PermissionError):
                pass
        return found

    def stop(self, grace_s: float = 1.0) -> list:
        """Stop every process this head started; return the pids still alive (should be []).

        ``ray start --block`` takes SIGTERM as a cue for a shutdown that waits on its children
        for about 30 s, so it never exits within a few seconds: ``grace_s`` later the whole session
        is killed instead (a throwaway head keeps nothing worth the wait; a longer grace only
        made every stop take that long)."""
        import psutil   # lazy: psutil
        if self.proc is None:
            return []
        members = self._members()
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        _, alive = psutil.wait_procs(members + self._members(), timeout=grace_s)
        for proc in alive:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(alive, timeout=10)
        left = [p.pid for p in self._members()]
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        return left

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
