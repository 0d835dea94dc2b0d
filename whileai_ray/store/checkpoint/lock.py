"""One writer per checkpoint: an ``fcntl.flock`` on ``<checkpoint>.lock``, held for the whole run.

Two runs appending to one checkpoint would each write every row (the keys they skip are only
the ones they loaded), so the process that appends (the Driver actor, on the caller's node)
takes an exclusive, non-blocking ``flock`` on the lock file beside the checkpoint before it
reads a byte, and keeps it until it closes. A second run on the same path fails fast with
``CheckpointBusy``, whose message names the holder: its run id, the caller's pid and host, the
Driver's pid, and since when. ``flock`` belongs to the open file, so a killed process's lock
dies with it: a lock file left on disk never blocks the next resume by itself.

The lock file is named after the checkpoint's real path (``atomic.real_path``): a symlink to the
checkpoint, or another spelling of its path, is the same checkpoint and takes the same lock. A
symlink found at the lock file's own path was planted (a run only ever creates a plain file
there) and is refused, never followed: opening it for writing would truncate its target. When the
holder's caller is this very process, ``CheckpointBusy`` says "held by a run in this process".

The lock file's content is only the description of the last holder (JSON); whether the lock is
held is asked of the kernel (``probe``, a shared non-blocking ``flock`` that does not disturb a
holder). ``process_alive`` tells whether a holder's caller still exists (same host only: the pid,
and its start time so a reused pid does not count), which is how a resume tells a live second
writer (refuse) from the orphaned Driver of a killed caller (wait for it, or stop it by its run
name; see ``runtime/driver/checkpoint_guard.py``).
"""
from __future__ import annotations

import datetime as _dt
import errno
import fcntl
import json
import os
import socket
import time
from pathlib import Path

from ..atomic import StrPath, open_nofollow, real_path

__all__ = ["CheckpointLock", "CheckpointBusy", "lock_path", "probe", "read_holder", "caller_identity",
           "process_alive", "describe"]

ACQUIRE_RETRY_S = 2.0     # rides out a resume's probe (a shared lock held for microseconds)


def lock_path(checkpoint: StrPath) -> Path:
    return Path(real_path(checkpoint) + ".lock")


def _stat(pid: int) -> list | None:
    """Fields of ``/proc/<pid>/stat`` after the command name (Linux), or None when unknown."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return None


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), or None when unknown."""
    fields = _stat(pid)
    return fields[19] if fields else None


def caller_identity(pid: int | None = None) -> dict:
    """``{"pid", "host", "start"}`` of this process (or ``pid``): who a lock holder works for."""
    pid = os.getpid() if pid is None else pid
    return {"pid": pid, "host": socket.gethostname(), "start": _start_time(pid)}


def process_alive(identity: dict | None) -> bool | None:
    """True/False when ``identity`` is a process on this host that is / is no longer running
    (a pid reused by another process counts as gone); None when it cannot be told (another
    host, or no identity)."""
    if not identity or identity.get("host") != socket.gethostname() or not identity.get("pid"):
        return None
    pid = int(identity["pid"])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True           # another user's live process; /proc may hide it from us
    fields = _stat(pid)
    if fields is None:
        return not Path("/proc/self/stat").exists()   # /proc works, yet no entry: gone
    if fields[0] == "Z":
        return False          # a zombie: dead, not yet reaped by its parent
    return identity.get("start") is None or fields[19] == identity["start"]


def _this_process(caller: dict) -> bool:
    return caller.get("pid") == os.getpid() and caller.get("host") == socket.gethostname()


def describe(holder: dict | None) -> str:
    if not holder:
        return "another process (it left no description)"
    caller = holder.get("caller") or {}
    if _this_process(caller):
        return (f"a run in this process (run {holder.get('run_id')!r}, its Driver pid {holder.get('pid')} "
                f"on {holder.get('host')}, since {holder.get('since')})")
    return (f"run {holder.get('run_id')!r} (caller pid {caller.get('pid')} on host {caller.get('host')}, "
            f"Driver pid {holder.get('pid')} on {holder.get('host')}, since {holder.get('since')})")


class CheckpointBusy(RuntimeError):
    """Another live run holds the checkpoint's lock."""

    def __init__(self, checkpoint: StrPath, holder: dict | None, note: str = "") -> None:
        self.checkpoint = str(checkpoint)
        self.holder = holder or {}
        self.note = note
        mine = _this_process((holder or {}).get("caller") or {})
        who = "held by " + describe(holder) if mine else "being written by " + describe(holder)
        super().__init__(
            f"checkpoint={self.checkpoint!r} is {who}{note}. Two runs on one "
            "checkpoint would write every row twice: wait for that run to finish (or stop it), or pass "
            "another checkpoint path.")

    def __reduce__(self) -> tuple[type[CheckpointBusy], tuple[str, dict, str]]:   # raised in the Driver actor,
        # re-raised in the caller: must pickle
        return (CheckpointBusy, (self.checkpoint, self.holder, self.note))


def read_holder(checkpoint: StrPath) -> dict | None:
    """The last holder's description from the lock file (None when absent or unreadable)."""
    for _ in range(3):
        try:
            fd = open_nofollow(lock_path(checkpoint), os.O_RDONLY)
        except (OSError, ValueError):
            return None
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        try:
            data = json.loads(text)
            return data if isinstance(data, dict) else None
        except ValueError:
            time.sleep(0.01)       # being rewritten by its holder right now
    return None


def probe(checkpoint: StrPath) -> dict | None:
    """The holder's description when the checkpoint's lock is held now, else None."""
    path = lock_path(checkpoint)
    try:
        fd = open_nofollow(path, os.O_RDONLY, what="the checkpoint's lock file")   # a planted link: ValueError
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return read_holder(checkpoint) or {}
        raise
    finally:
        os.close(fd)          # closing drops the shared lock, if taken
    return None


class CheckpointLock:
    """The exclusive lock of one checkpoint, for one run (see the module docstring)."""

    def __init__(self, checkpoint: StrPath, run_id: str | None = None, caller: dict | None = None) -> None:
        self.checkpoint = Path(checkpoint)
        self.path = lock_path(checkpoint)
        self.run_id = run_id
        self.caller = caller or caller_identity()
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, retry_s: float = ACQUIRE_RETRY_S) -> None:
        """Take the lock or raise ``CheckpointBusy`` naming the holder."""
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_nofollow(self.path, os.O_RDWR | os.O_CREAT, 0o644, what="the checkpoint's lock file")
        deadline = time.monotonic() + retry_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise CheckpointBusy(self.checkpoint, read_holder(self.checkpoint)) from None
                time.sleep(0.05)
        self._fd = fd
        me = {"run_id": self.run_id, "pid": os.getpid(), "host": socket.gethostname(), "caller": self.caller,
              "since": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
        data = json.dumps(me).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)

    def release(self) -> None:
        """Drop the lock (closing the file releases it); the description stays on disk."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __enter__(self) -> CheckpointLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
