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
"""
from __future__ import annotations

import json
import os
import re

import pyarrow.fs as pafs
import pyarrow.parquet as pq

__all__ = ["DatasetStore", "default_store", "STORE_ENV"]

STORE_ENV = "WHILEAI_RAY_DATASETS"
_VERSION_RE = re.compile(r"^v(\d+)$")


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
        found = (_VERSION_RE.match(i.base_name) for i in infos if i.type == pafs.FileType.Directory)
        return sorted(int(m.group(1)) for m in found if m)

    def claim_version(self, name: str) -> int:
        """Create the next version folder of ``name`` and return its number (never reuses one)."""
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
        tmp = path + ".tmp"
        with self.fs.open_output_stream(tmp) as out:
            out.write(data)
        self.fs.move(tmp, path)

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

    def add_to_index(self, entry: dict) -> dict:
        index = self.index()
        listed = index["datasets"].setdefault(entry["name"], [])
        listed[:] = [e for e in listed if e.get("version") != entry["version"]] + [entry]
        listed.sort(key=lambda e: e.get("version", 0))
        self.write_json(self.path("index.json"), index)
        return index
