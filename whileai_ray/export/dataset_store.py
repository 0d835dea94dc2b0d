"""Where pushed datasets live: a local folder or any URI pyarrow's filesystems understand.

Layout under the store root::

    index.json                        {"datasets": {name: [entry, ...]}} -- the registry index
    <name>/v1/rows.parquet            the rows (whileai_ray row schema v1; wai.load reads it)
    <name>/v1/meta.json               system prompt, tools, mode ... and the registry entry
    <name>/v2/...

A local path (``~`` expanded) is used directly; ``s3://``, ``gs://``, ``file://``, ``hdfs://``
go through ``pyarrow.fs.FileSystem.from_uri``. Versions are claimed by creating the version
folder: on a local disk that is an atomic ``mkdir`` (two pushers never share a version);
on object stores it is check-then-write. Nothing is ever overwritten except ``index.json``,
which is rebuilt from the version folders whenever it is missing or unreadable.

Many pushers at once (processes on one machine, a notebook and a job): on a local store every
change of ``index.json`` (read, add the entry, write) holds ``index.json.lock``, the checkpoint's
``flock`` (``store/checkpoint/lock.py``), so no pusher writes an index that lacks another's entry;
every file is written under a temporary name of its own (pid and a random part), then renamed.
On an object store there is no lock: the index is rebuilt from the version folders when needed.

Names (``check_name``): 1-100 letters, digits, ``.``, ``_``, ``-``, starting with a letter or
digit, the whole name (a trailing newline is not a name); never the store's own files
(``index.json`` and its lock and temporary files); and never the holdout of another dataset:
``<name>-holdout`` belongs to ``push(name, holdout=...)`` once ``<name>`` is in the store
(``check_new_names``).
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import uuid

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..store.checkpoint.lock import CheckpointBusy, CheckpointLock

__all__ = ["DatasetStore", "default_store", "STORE_ENV", "NAME_RE", "check_name", "HOLDOUT_SUFFIX"]

STORE_ENV = "WHILEAI_RAY_DATASETS"
_VERSION_RE = re.compile(r"v(\d+)")
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")      # matched whole (fullmatch): no trailing newline
INDEX = "index.json"
HOLDOUT_SUFFIX = "-holdout"
INDEX_LOCK_WAIT_S = 120.0      # a pusher waits this long for another's index change (each takes milliseconds)


def check_name(name, argument: str = "push(name=...)") -> str:
    """``name`` when it can name a dataset, else a ValueError naming ``argument`` and the rule."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ValueError(f"{argument}: {name!r} is not a dataset name; use 1-100 letters, digits, '.', '_' or '-', "
                         "starting with a letter or digit (e.g. 'orders-rl')")
    if name == INDEX or name.startswith(INDEX + "."):
        raise ValueError(f"{argument}: {name!r} is the store's own index file; pick another name (e.g. 'orders-rl')")
    return name


def default_store() -> str:
    """``$WHILEAI_RAY_DATASETS``, else ``~/.whileai_ray/datasets``."""
    return os.environ.get(STORE_ENV) or os.path.join(os.path.expanduser("~"), ".whileai_ray", "datasets")


class DatasetStore:
    """A dataset store root on some filesystem (see the module docstring)."""

    def __init__(self, store=None, filesystem=None):
        if filesystem is not None:       # a configured pyarrow filesystem (e.g. S3 with credentials)
            if not isinstance(filesystem, pafs.FileSystem):
                raise TypeError(f"filesystem= must be a pyarrow.fs.FileSystem, got {type(filesystem).__name__}")
            self.fs, self.local = filesystem, isinstance(filesystem, pafs.LocalFileSystem)
            self.uri = os.fspath(store or "")
            self.root = self.uri.rstrip("/") or ("/" if self.local else "")
            return
        store = default_store() if store is None else store
        if not isinstance(store, (str, os.PathLike)) or not os.fspath(store):
            raise TypeError(f"store= must be a folder path or a URI such as s3://bucket/datasets, got {store!r}")
        store = os.fspath(store)
        if "://" in store:
            try:
                self.fs, self.root = pafs.FileSystem.from_uri(store)
            except Exception as exc:
                raise ValueError(f"store={store!r}: pyarrow cannot open this URI ({exc}); use a local "
                                 "folder or an s3://, gs://, file:// or hdfs:// URI") from None
            self.local = isinstance(self.fs, pafs.LocalFileSystem)
        else:
            self.fs, self.root, self.local = pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(store)), True
        self.uri = store
        self.root = self.root.rstrip("/") or "/"

    def path(self, *parts) -> str:
        return "/".join(([self.root] if self.root else []) + [str(p) for p in parts])

    def location(self, *parts) -> str:
        """A path for the user: local paths as they are, remote ones as a URI (or the filesystem's path)."""
        if self.local:
            return self.path(*parts)
        return "/".join(([self.uri.rstrip("/")] if self.uri else []) + [str(p) for p in parts])

    def exists(self, path: str) -> bool:
        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def versions(self, name: str) -> list[int]:
        folder = self.path(name)
        if not self.exists(folder):
            return []
        infos = self.fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        found = (_VERSION_RE.fullmatch(i.base_name) for i in infos if i.type == pafs.FileType.Directory)
        return sorted(int(m.group(1)) for m in found if m)

    def claim_version(self, name: str) -> int:
        """Create the next version folder of ``name`` and return its number (never reuses one)."""
        check_name(name)
        self.fs.create_dir(self.path(name), recursive=True)
        version = (max(self.versions(name)) if self.versions(name) else 0) + 1
        while True:
            folder = self.path(name, f"v{version}")
            if self.local:
                try:
                    os.mkdir(folder)
                    return version
                except FileExistsError:
                    version += 1
                    continue
            if not self.exists(folder):
                self.fs.create_dir(folder, recursive=True)
                return version
            version += 1

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write ``path`` whole: a temporary name of this writer's own (two pushers never share
        one), then a rename."""
        tmp = f"{path}.{os.getpid()}-{uuid.uuid4().hex[:12]}.tmp"
        try:
            with self.fs.open_output_stream(tmp) as out:
                out.write(data)
            self.fs.move(tmp, path)
        except BaseException:
            with contextlib.suppress(Exception):
                self.fs.delete_file(tmp)
            raise

    def read_bytes(self, path: str) -> bytes:
        with self.fs.open_input_stream(path) as src:
            return src.read()

    def write_json(self, path: str, obj) -> None:
        self.write_bytes(path, json.dumps(obj, indent=1, default=str).encode("utf-8"))

    def read_json(self, path: str):
        return json.loads(self.read_bytes(path).decode("utf-8"))

    def write_table(self, table, path: str) -> None:
        pq.write_table(table, path, filesystem=self.fs, compression="zstd")

    def write_tables(self, tables, path: str, schema) -> None:
        """Write ``tables`` (an iterable, one row group each) to one Parquet file: a large
        dataset goes to the store a batch at a time."""
        with pq.ParquetWriter(path, schema, filesystem=self.fs, compression="zstd") as writer:
            for table in tables:
                writer.write_table(table)

    def read_table(self, path: str):
        return pq.read_table(path, filesystem=self.fs)

    # ------------------------------------------------------------------ index
    def index(self) -> dict:
        """The registry index; rebuilt from the version folders when missing or unreadable."""
        path = self.path("index.json")
        if self.exists(path):
            try:
                data = self.read_json(path)
                if isinstance(data, dict) and isinstance(data.get("datasets"), dict):
                    return data
            except (ValueError, OSError):
                pass
        return self._rebuilt_index()

    def _rebuilt_index(self) -> dict:
        datasets: dict = {}
        if not self.exists(self.root):
            return {"datasets": datasets}
        for info in self.fs.get_file_info(pafs.FileSelector(self.root, allow_not_found=True)):
            if info.type != pafs.FileType.Directory:
                continue
            for v in self.versions(info.base_name):
                meta = self.path(info.base_name, f"v{v}", "meta.json")
                if self.exists(meta):
                    entry = (self.read_json(meta) or {}).get("dataset")
                    if isinstance(entry, dict):
                        datasets.setdefault(info.base_name, []).append(entry)
        return {"datasets": datasets}

    @contextlib.contextmanager
    def index_lock(self):
        """Hold ``index.json.lock`` (local stores; see the module docstring) while changing the index."""
        if not self.local:
            yield
            return
        lock = CheckpointLock(self.path(INDEX), run_id="push")
        try:
            lock.acquire(retry_s=INDEX_LOCK_WAIT_S)
        except CheckpointBusy as busy:
            raise TimeoutError(f"dataset store {self.uri or self.root}: {INDEX} stayed locked by another pusher "
                               f"for {INDEX_LOCK_WAIT_S:.0f} s ({busy.holder or 'holder unknown'}); push again "
                               "when it is done") from None
        try:
            yield
        finally:
            lock.release()

    def add_to_index(self, entry: dict) -> dict:
        """Add (or replace) ``entry`` in the index: read, change and written under the index's lock,
        so another pusher's entry is never lost."""
        with self.index_lock():
            index = self.index()
            listed = index["datasets"].setdefault(entry["name"], [])
            listed[:] = [e for e in listed if e.get("version") != entry["version"]] + [entry]
            listed.sort(key=lambda e: e.get("version", 0))
            self.write_json(self.path(INDEX), index)
            return index

    def check_new_names(self, name: str, holdout: bool) -> None:
        """Refuse, before anything is written, a push whose name is another dataset's holdout
        (``orders-holdout`` while ``orders`` is in the store), or a holdout push whose
        ``<name>-holdout`` is already a dataset that is not ``name``'s holdout."""
        check_name(name)
        if name.endswith(HOLDOUT_SUFFIX) and len(name) > len(HOLDOUT_SUFFIX):
            base = name[:-len(HOLDOUT_SUFFIX)]
            if NAME_RE.fullmatch(base) and self.versions(base):
                raise ValueError(f"push(name={name!r}): that is the holdout of dataset {base!r} "
                                 f"(push({base!r}, holdout=...) writes it); pick another name")
        if not holdout:
            return
        hold = check_name(name + HOLDOUT_SUFFIX, "push(name=..., holdout=...)")
        for v in self.versions(hold):
            meta = self.path(hold, f"v{v}", "meta.json")
            try:
                entry = (self.read_json(meta) or {}).get("dataset") if self.exists(meta) else None
            except (OSError, ValueError):
                entry = None
            parent = entry.get("parent") if isinstance(entry, dict) else None
            if not (isinstance(entry, dict) and entry.get("purpose") == "holdout" and isinstance(parent, str)
                    and parent.startswith(f"ds_{name}_v")):
                raise ValueError(f"push(name={name!r}, holdout=...): the store already holds a dataset {hold!r} "
                                 f"that is not {name!r}'s holdout (v{v}); pick another name, or push without "
                                 "holdout=")
