"""One model server subprocess: its command line, launch, health wait and stop (no Ray).

:class:`ServerProcess` is what a ``ServerActor`` (see ``servers/model_servers.py``) holds: it starts
an OpenAI-compatible server in its own process group, writes its output to a log file, polls
``GET /v1/models`` until the server answers or ``health_timeout_s`` passes, and kills the
whole group on :meth:`stop` (vLLM forks engine processes; killing only the parent leaks GPU
memory). On Linux the server also gets SIGTERM if the process that started it dies, so a
killed actor does not leave a server holding a GPU.

Commands: ``"vllm"`` (``python -m vllm.entrypoints.openai.api_server``), ``"llama_cpp"``
(``python -m llama_cpp.server`` from ``llama-cpp-python[server]``: a GGUF file on CPU, or with
every layer offloaded when the replica has GPUs; the same OpenAI protocol vLLM speaks, and what
the project's lifecycle tests run for real on CPU), ``"scripted"`` (the project's scripted
server, a CPU stand-in for tests), or a list of strings with ``{model}``, ``{host}``, ``{port}``
and ``{gpus}`` placeholders for anything else (SGLang, llama.cpp's own ``llama-server``).
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import deque

__all__ = ["ServerProcess", "server_command", "log_tail"]

# The scripted server binds a fixed host; this launcher points it at the node's IP first.
_SCRIPTED_LAUNCH = ("import sys, whileai_ray.testing.server as s; s.HOST = sys.argv[1]; "
                    "s.main(sys.argv[2:])")
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def server_command(command, model: str, host: str, port: int, gpus: float, extra_args=()) -> list[str]:
    """The argv that starts one replica bound to ``host:port``."""
    extra = [str(a) for a in extra_args]
    if command == "vllm":
        argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
                "--host", host, "--port", str(port)]
        if gpus and int(gpus) > 1 and "--tensor-parallel-size" not in extra:
            argv += ["--tensor-parallel-size", str(int(gpus))]
        return argv + extra
    if command == "llama_cpp":
        argv = [sys.executable, "-m", "llama_cpp.server", "--model", model, "--host", host, "--port", str(port)]
        if gpus and "--n_gpu_layers" not in extra:
            argv += ["--n_gpu_layers", "-1"]          # every layer on the replica's GPUs
        return argv + extra
    if command == "scripted":
        return [sys.executable, "-c", _SCRIPTED_LAUNCH, host, "--port", str(port), "--model", model] + extra
    if isinstance(command, (list, tuple)) and command and all(isinstance(a, str) for a in command):
        fields = {"model": model, "host": host, "port": port, "gpus": gpus}
        return [a.format(**fields) for a in command] + extra
    raise ValueError(f"command must be 'vllm', 'llama_cpp', 'scripted' or a list of strings with {{model}}, {{host}}, "
                     f"{{port}} placeholders; got {command!r}")


def log_tail(path: str, lines: int = 30) -> str:
    """The last ``lines`` lines of a log file ("" when there is none)."""
    try:
        with open(path, "r", errors="replace") as fh:
            return "".join(deque(fh, maxlen=lines)).rstrip()
    except OSError:
        return ""


def _die_with_parent() -> None:
    """preexec_fn: SIGTERM this child when its parent dies (Linux prctl PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


class ServerProcess:
    """Launch, health-check and stop one server. ``label`` names it in errors ("replica 1")."""

    def __init__(self, argv: list[str], host: str, port: int, label: str, env: dict | None = None):
        self.argv = argv
        self.host = host
        self.port = port
        self.label = label
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.log_path = os.path.join(tempfile.mkdtemp(prefix="whileai-server-"), f"server-{port}.log")

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def launch(self) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=self.env, start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)

    def healthy(self, timeout: float = 2.0) -> bool:
        try:
            with _NO_PROXY.open(self.base_url + "/models", timeout=timeout) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def wait_healthy(self, timeout_s: float, poll_s: float = 0.5) -> None:
        """Block until ``GET /v1/models`` answers 200; RuntimeError with the log tail otherwise."""
        deadline = time.monotonic() + timeout_s
        proc = self.proc
        assert proc is not None, "wait_healthy() after launch()"
        while True:
            code = proc.poll()
            if code is not None:
                raise RuntimeError(self._failure(f"exited with code {code} before it was healthy"))
            if self.healthy():
                return
            if time.monotonic() >= deadline:
                raise RuntimeError(self._failure(f"did not answer GET {self.base_url}/models within "
                                                 f"health_timeout_s={timeout_s:g}"))
            time.sleep(poll_s)

    def _failure(self, what: str) -> str:
        tail = log_tail(self.log_path) or "(no output)"
        return (f"model server {self.label} ({' '.join(self.argv[:4])} ... on {self.host}:{self.port}) {what}. "
                f"Last log lines ({self.log_path}):\n{tail}")

    def stop(self, grace_s: float = 15.0) -> int | None:
        """SIGTERM the process group, SIGKILL after ``grace_s``; reap it. Returns the exit code."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                proc.wait(10)
        self._signal_group(signal.SIGKILL)   # stragglers the server forked (engine cores)
        return proc.returncode

    def _signal_group(self, sig) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
