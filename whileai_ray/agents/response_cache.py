"""A response cache for model calls: the same chat-completions request answered from disk.

Why: a regrade with the same LLM judge, or a replay of a run at temperature 0, sends requests it
has sent before; paying a model for them again costs money and minutes and, on a shared
endpoint, can even answer differently. ``advanced={"cache": path}`` keeps every reply here.

The key is a sha256 of the *full* request, as canonical JSON (sorted keys, no spaces): the
endpoint's URL without secrets (no user:password, no query string) and the request body as
sent (model, messages, tools, tool_choice, temperature, max_tokens, seed, response_format,
``n``, ...). Any change in any of them is another key; the API key is never part of it.

The store is one SQLite file (stdlib ``sqlite3``, no server): WAL mode so readers never wait
for a writer, ``busy_timeout`` so writers from many processes and Ray actors queue instead of
failing, one row per key written with ``INSERT OR IGNORE`` (the first answer stays), each in
its own transaction, so no reader ever sees half an entry. A row holds the reply's JSON text
and its sha256; what is read back is parsed as JSON (never unpickled) and checked against the
digest. A file that is not a cache (garbage, a truncated copy) or an entry that does not check
is a miss, with one warning; the run goes on calling the model.

What is cached (:func:`cacheable`): every request of the judge, the LLM writer and the
simulated user while the cache is on; the agent's requests only at temperature 0, unless
``advanced["cache_agent_sampled"]`` is True (at temperature > 0 each identical request would
then get the *same* sampled reply, which is what a replay wants and a fresh run does not).
Streaming requests are never cached.

Counts: every lookup is a hit or a miss, per role, in :data:`STATS` (this process) and in the
unit tally a rollout opens with :func:`unit_tally` (kept on the row as ``_cache``, so the
driver sums what its actors saw). Pure Python, no Ray, no HTTP: the transport that consults
the cache is ``http_transport.CachingTransport``.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["CacheSpec", "CacheStore", "cache_spec", "request_key", "public_url", "cacheable", "cache_role",
           "unit_tally", "store_for", "count", "since", "summary", "STATS", "ROLES"]

log = logging.getLogger("whileai.cache")

ROLES = ("agent", "user", "judge", "writer")
_BUSY_MS = 60_000
_ROLE: contextvars.ContextVar = contextvars.ContextVar("whileai_cache_role", default=None)
_TALLY: contextvars.ContextVar = contextvars.ContextVar("whileai_cache_tally", default=None)


@dataclass(frozen=True)
class CacheSpec:
    """Where the cache lives and whether sampled agent requests are cached (picklable)."""
    path: str
    agent_sampled: bool = False


def cache_spec(path: Any, agent_sampled: bool = False, label: str = "advanced['cache']") -> CacheSpec | None:
    """The run's cache from its ``advanced['cache']`` and ``['cache_agent_sampled']`` (None when
    the cache is off); a value that is not a file path is a ValueError naming ``label``."""
    if path is None or path is False:
        return None
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path.strip() or os.path.isdir(os.path.expanduser(path.strip())):
        raise ValueError(f"{label} is the response cache's file path (a SQLite file, made when absent), "
                         f"e.g. 'runs/responses.sqlite'; got {path!r}")
    return CacheSpec(os.path.abspath(os.path.expanduser(path.strip())), bool(agent_sampled))


def public_url(url: str) -> str:
    """``url`` without what may be a secret: the user:password part and the query string."""
    parts = urlsplit(str(url))
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def request_key(url: str, body: dict) -> str:
    """sha256 of the canonical JSON of the endpoint (secrets removed) and the request body."""
    text = json.dumps({"url": public_url(url), "body": body}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cacheable(role: str, body: dict, agent_sampled: bool = False) -> bool:
    """Whether a request of ``role`` may be answered from the cache (see the module docstring)."""
    if not isinstance(body, dict) or body.get("stream"):
        return False
    if role != "agent" or agent_sampled:
        return True
    t = body.get("temperature")
    return isinstance(t, (int, float)) and not isinstance(t, bool) and float(t) == 0.0


# ---- counts ----------------------------------------------------------------------------------
class _Stats:
    """Hits and misses per cache path and role, in this process (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.counts: dict = {}

    def add(self, path: str, role: str, hit: bool) -> None:
        with self._lock:
            roles = self.counts.setdefault(path, {})
            slot = roles.setdefault(role, {"hits": 0, "misses": 0})
            slot["hits" if hit else "misses"] += 1

    def snapshot(self, path: str) -> dict:
        with self._lock:
            return {r: dict(c) for r, c in self.counts.get(path, {}).items()}


STATS = _Stats()


def count(path: str, role: str, hit: bool) -> None:
    """One lookup: into the process counts and, inside a rollout, into the unit's tally."""
    STATS.add(path, role, hit)
    tally = _TALLY.get()
    if tally is not None:
        slot = tally.setdefault(role, {"hits": 0, "misses": 0})
        slot["hits" if hit else "misses"] += 1


@contextlib.contextmanager
def cache_role(role: str):
    """Requests sent inside this block count (and follow the rule) as ``role``'s."""
    token = _ROLE.set(role)
    try:
        yield
    finally:
        _ROLE.reset(token)


def current_role(default: str) -> str:
    return _ROLE.get() or default


@contextlib.contextmanager
def unit_tally():
    """Collect this task's cache lookups into a dict ``{role: {"hits", "misses"}}`` (yielded)."""
    tally: dict = {}
    token = _TALLY.set(tally)
    try:
        yield tally
    finally:
        _TALLY.reset(token)


def _add(into: dict, role: str, counts: dict) -> None:
    slot = into.setdefault(role, {"hits": 0, "misses": 0})
    for k in ("hits", "misses"):
        slot[k] += int((counts or {}).get(k) or 0)


def since(path: str, before: dict, roles=ROLES) -> dict:
    """This process's lookups on ``path`` since ``before`` (a ``STATS.snapshot``), by role."""
    out: dict = {}
    for role, now in STATS.snapshot(path).items():
        if role in roles:
            then = before.get(role) or {}
            _add(out, role, {k: now[k] - int(then.get(k) or 0) for k in ("hits", "misses")})
    return out


def summary(spec: CacheSpec | None, rows=(), extra: dict | None = None) -> dict | None:
    """``{"path", "hits", "misses", "by_role", "agent_sampled"}``: the rows' tallies (``_cache``:
    what the rollout actors saw; ``judge_meta["cache"]``: the judge's) plus ``extra`` (counts by
    role from elsewhere: the writer's stats, or this process's lookups), or None when off."""
    if spec is None:
        return None
    by_role: dict = {}
    for row in rows:
        if not isinstance(row, dict):
            continue
        for role, counts in (row.get("_cache") or {}).items():
            _add(by_role, role, counts)
        looked = (row.get("judge_meta") or {}).get("cache") if isinstance(row.get("judge_meta"), dict) else None
        if looked in ("hit", "miss"):           # the run's judge (score/judges/llm_judge.py) notes it per verdict
            _add(by_role, "judge", {"hits": int(looked == "hit"), "misses": int(looked == "miss")})
    for role, counts in (extra or {}).items():
        _add(by_role, role, counts)
    return {"path": spec.path, "hits": sum(c["hits"] for c in by_role.values()),
            "misses": sum(c["misses"] for c in by_role.values()), "by_role": by_role,
            "agent_sampled": spec.agent_sampled}


# ---- the store -------------------------------------------------------------------------------
class CacheStore:
    """One SQLite file of ``key -> reply JSON``, safe for many processes at once.

    Each thread (and each process after a fork) opens its own connection. Any SQLite error (a
    file that is not a database, a disk that fails) makes that lookup a miss and that write a
    no-op, with one warning; a file that is not a database turns the store off for the process.
    """

    def __init__(self, path: str):
        self.path = str(path)
        self.broken: str | None = None
        self._local = threading.local()
        self._warned: set = set()

    def _warn(self, what: str) -> None:
        if what not in self._warned and len(self._warned) < 20:
            self._warned.add(what)
            log.warning("response cache %s: %s; treated as a miss, the model is called", self.path, what)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        folder = os.path.dirname(self.path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=_BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout={_BUSY_MS}")
        for attempt in range(20):       # journal_mode needs a moment alone with the file
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, reply TEXT NOT NULL, "
                             "digest TEXT NOT NULL, created REAL NOT NULL)")
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 19:
                    raise
                time.sleep(0.05 * (attempt + 1))
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def _failed(self, exc: Exception) -> None:
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
            self.broken = f"not a usable cache file ({exc})"
        self._warn(f"{type(exc).__name__}: {exc}")

    def get(self, key: str) -> dict | None:
        """The reply kept under ``key``, or None (absent, unreadable, or failing its digest)."""
        if self.broken:
            self._warn(self.broken)
            return None
        try:
            found = self._conn().execute("SELECT reply, digest FROM responses WHERE key = ?", (key,)).fetchone()
        except (sqlite3.Error, OSError) as exc:
            self._failed(exc)
            return None
        if found is None:
            return None
        text, digest = found
        try:
            if hashlib.sha256(text.encode("utf-8")).hexdigest() != digest:
                raise ValueError("its digest does not match")
            reply = json.loads(text)
            if not isinstance(reply, dict):
                raise ValueError("it is not a JSON object")
        except (ValueError, AttributeError) as exc:
            self._warn(f"entry {key[:12]} is unreadable ({exc})")
            return None
        return reply

    def put(self, key: str, reply: dict) -> bool:
        """Keep ``reply`` under ``key`` unless one is there already; False when it could not."""
        if self.broken:
            return False
        text = json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        try:
            self._conn().execute("INSERT OR IGNORE INTO responses (key, reply, digest, created) VALUES (?, ?, ?, ?)",
                                 (key, text, digest, time.time()))
        except (sqlite3.Error, OSError) as exc:
            self._failed(exc)
            return False
        return True

    def __len__(self) -> int:
        try:
            return int(self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0])
        except (sqlite3.Error, OSError):
            return 0


_STORES: dict = {}
_STORES_LOCK = threading.Lock()


def store_for(path: str) -> CacheStore:
    """The process's one store object for ``path``."""
    with _STORES_LOCK:
        store = _STORES.get(path)
        if store is None:
            store = _STORES[path] = CacheStore(path)
        return store
