"""ServerActor: one model server on one placement-group bundle, kept running until stopped.

:class:`~whileai_ray.runtime.servers.model_servers.ModelServers` makes one per replica. ``start`` launches
the server subprocess (``server_process.ServerProcess``) bound to the node's IP and waits until it
answers ``GET /v1/models``. Then a supervisor thread watches the process: a server that exits
(an out-of-memory kill, a crash, someone's ``kill -9``) is launched again on the same host and
port, so the URLs the run holds stay valid, up to ``max_restarts`` times. The rollouts that were
talking to it fail (connection errors, after play's own retries) and are re-rolled by the
planner like any agent error; the run goes on. ``stop`` ends supervision first, then kills the
server's whole process group, so nothing is left running.

A plain class (``ray`` only to ask the node IP): ModelServers wraps it with ``ray.remote`` and gives it the
bundle's resources.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
import socket
import threading
import time

from .process import ServerProcess, log_tail, server_command

_log = logging.getLogger(__name__)   # a child of whileai_ray.runtime

__all__ = ["ServerActor", "free_port"]

WATCH_S = 0.25


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class ServerActor:
    """Launches one server, waits for health, restarts it when it dies, stops it."""

    def __init__(self, index: int, replicas: int, max_restarts: int = 3):
        self.label = f"replica {index} of {replicas}"
        self.max_restarts = int(max_restarts)
        self.server: ServerProcess | None = None
        self.restarts = 0
        self.restart_errors: list[str] = []
        self._health_timeout_s = 600.0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None
        self._restarting = False

    def start(self, command, model: str, port: int | None, node_ip: str | None, gpus: float,
              extra_args, health_timeout_s: float) -> dict:
        """Launch and wait; ``{"url", "pid", "node_ip"}`` or ``{"error": message}``."""
        if node_ip is None:
            import ray   # only here: the node's IP as Ray sees it
            node_ip = ray.util.get_node_ip_address()
        host = node_ip
        try:
            port = port or free_port(host)
            argv = server_command(command, model, host, port, gpus, extra_args)
            env = dict(os.environ)
            if command == "scripted":   # the stand-in must import whileai_ray wherever the actor runs
                root = str(Path(__file__).resolve().parents[3])      # the folder holding whileai_ray/
                env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
            self.server = ServerProcess(argv, host, port, self.label, env)
            self.server.launch()
            self.server.wait_healthy(health_timeout_s)
        except Exception as exc:   # returned, not raised: the caller shows one clean message
            if self.server is not None:
                self.server.stop(grace_s=5)
            return {"error": str(exc) if isinstance(exc, RuntimeError) else
                    f"model server {self.label} could not start: {type(exc).__name__}: {exc}"}
        self._health_timeout_s = float(health_timeout_s)
        self._watcher = threading.Thread(target=self._watch, name="server-supervisor", daemon=True)
        self._watcher.start()
        return {"url": self.server.base_url, "pid": self.server.pid, "node_ip": host}

    # -- supervision -------------------------------------------------------------------------
    def _watch(self) -> None:
        """Relaunch the server when its process exits, until stop() or max_restarts.

        The relaunch happens in this thread, which lives as long as the server does: the child
        gets SIGTERM when the thread that forked it ends (Linux PR_SET_PDEATHSIG is per thread)."""
        while not self._stopping.wait(WATCH_S):
            server = self.server
            if server is None or server.proc is None or server.proc.poll() is None:
                continue
            with self._lock:
                if self._stopping.is_set():
                    return
                code = server.proc.returncode
                if self.restarts >= self.max_restarts:
                    self.restart_errors.append(f"exited with code {code}; max_restarts={self.max_restarts} "
                                               f"reached, not restarted")
                    return
                self.restarts += 1
                server.stop(grace_s=1)          # reap it, and any process it forked
                _log.warning("whileai_ray: model server %s exited with code %s; restarting it on %s:%s "
                             "(restart %d of %d)", self.label, code, server.host, server.port,
                             self.restarts, self.max_restarts)
                server.launch()
                self._restarting = True
            try:
                server.wait_healthy(self._health_timeout_s)
            except RuntimeError as exc:
                if server.proc.poll() is None:   # up but silent; one that died again is the next turn's
                    self.restart_errors.append(str(exc))
            finally:
                self._restarting = False

    def status(self) -> dict:
        """``{"pid", "alive", "healthy", "restarting", "restarts", "errors", "log_tail"}`` now
        (``restarting``: relaunched, health not yet confirmed)."""
        server = self.server
        if server is None:
            return {"pid": None, "alive": False, "healthy": False, "restarting": False,
                    "restarts": self.restarts, "errors": list(self.restart_errors), "log_tail": ""}
        alive = server.proc is not None and server.proc.poll() is None
        return {"pid": server.pid, "alive": alive, "healthy": alive and server.healthy(),
                "restarting": self._restarting, "restarts": self.restarts,
                "errors": list(self.restart_errors), "log_tail": log_tail(server.log_path, 5)}

    def healthy(self) -> bool:
        server = self.server
        return server is not None and server.proc is not None and server.proc.poll() is None and server.healthy()

    def stop(self) -> int | None:
        """End supervision, then kill the server's process group. Safe to call twice."""
        self._stopping.set()
        with self._lock:
            code = self.server.stop() if self.server is not None else None
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        return code
