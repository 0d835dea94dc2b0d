"""Row shards on shared storage: rollout actors write the rows, the Driver keeps only keys.

On a cluster every landed row used to travel to the Driver, which wrote it to the checkpoint:
every row's bytes funnelled through one process on one node. With shared storage (a folder
every node sees, or any pyarrow filesystem URI: ``s3://``, ``gs://``, ``hdfs://``,
``file://``), each rollout actor writes the rows it plays itself and tells the Driver only
where each one is (file, byte span, CRC) and the few facts the planner reads. Layout, for
``checkpoint="runs/a.jsonl"``::

    runs/a.jsonl                   the checkpoint: one short *stub* line per landed row
    runs/a.jsonl.keys/.lock/.plan  as for any checkpoint (key index, lock, planner snapshot)
    runs/a.jsonl.shards.json       where the shards are (``{"_whileai_ray_shards": 1, "folder": ...}``)
    <shards>/rows/<actor>-<n>.jsonl     one file per chunk an actor played: full rows, stored form
    <shards>/parquet/part-<actor>-<n>.parquet  the landed rows as Parquet, a part per ~2,000 rows an actor
                                   played (part-fill-*: landed rows of an actor that died before its next part)
    <shards>/staged/               an actor's parts until the Driver publishes them (``shards/parquet.py``)
    <shards>/probe-<run id>        written by the Driver when the run opens; every actor must see it

``<shards>`` is ``runs/a.shards`` (``shared_storage=True``) or ``<uri>/a-<digest>.shards`` (the
digest of the checkpoint's path: two ``a.jsonl`` in one storage never share a folder).

**Exactly once.** The checkpoint stays the truth of *which* rows landed: the Driver appends a
stub (key fields, planner facts, ``_shard = [file, start, end, crc]``) with the same lock,
key index, duplicate refusal and torn-tail repair as any checkpoint line. A shard file may
also hold rows the Driver never landed (played after the budget was reached, or by an actor
whose node went away before it answered: the chunk was played again elsewhere); no stub points
at them, so they are never read back. Resume reads the stubs only. ``parquet/`` holds exactly
the landed rows, each once, for DuckDB, polars or ``ray.data.read_parquet`` to read whole: an
actor stages its parts, and when the pool has closed the Driver moves in those the checkpoint
took, without the rows it did not (``shards/parquet.py``).

**Never torn.** A shard file is written under a temporary name and renamed (an object store
publishes an object whole on close), so a node killed mid-write leaves at most a ``*.tmp``
file; the Driver removes those when it opens the run, with a warning, as the checkpoint's own
torn tail is dropped. ``read_landed`` checks each row's CRC and raises naming the file when a
shard was changed or lost.

No playing logic here: the runtime decides what a stub holds (``runtime/pools/dataplane.py``).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import uuid
import zlib
from collections import defaultdict
from typing import TYPE_CHECKING

from ...core.rows import stored_row
from ..checkpoint.lines import dump_line
from .files import (SHARD_KEY, bad_pointer, check_regular, delete, fs_of, is_uri, join, listing, mkdir, put, read_bytes,
                    read_shard, shard_pointer)
from .parquet import write_staged

if TYPE_CHECKING:
    import pyarrow.fs as pafs

    from ..atomic import StrPath

__all__ = ["shards_folder", "ShardWriter", "prepare_shards", "read_landed", "is_uri", "SHARD_KEY",
           "check_probe", "sidecar_path", "shards_of", "resolve_stubs", "check_stub_shards",
           "open_shards"]

_SIDECAR_KEY = "_whileai_ray_shards"
PARQUET_ROWS = 2000             # rows an actor buffers before writing a Parquet part
_DECODE = json.JSONDecoder().decode


def shards_folder(checkpoint: StrPath, storage: bool | StrPath) -> str:
    """Where the shards of ``checkpoint`` go: beside it (``storage is True``: ``<stem>.shards``),
    else in ``storage`` (a folder or URI) as ``<stem>-<digest>.shards``, the digest of the
    checkpoint's real path telling apart two checkpoints of the same name that share the storage
    (each run's start-up cleanup of half-written files stays in its own folder). A resume whose
    sidecar names a folder in that storage keeps it, so a checkpoint moved since still finds its
    shards."""
    name = os.path.basename(str(checkpoint))
    stem = name[:-6] if name.endswith(".jsonl") else name
    if storage is True:
        return os.path.join(os.path.dirname(os.path.abspath(str(checkpoint))), stem + ".shards")
    base = str(storage).rstrip("/")
    if not is_uri(base):
        base = os.path.abspath(base)
    recorded = shards_of(checkpoint)
    if recorded is not None and recorded.rstrip("/").rsplit("/", 1)[0] == base:
        return recorded
    digest = hashlib.sha256(os.path.realpath(str(checkpoint)).encode("utf-8")).hexdigest()[:10]
    return f"{base}/{stem}-{digest}.shards" if is_uri(base) else os.path.join(base, f"{stem}-{digest}.shards")


def sidecar_path(checkpoint: StrPath) -> str:
    """The file beside a checkpoint that says where its shards are (named after its real path, as
    every file of a checkpoint is: a symlink to it shares it)."""
    from ..atomic import real_path
    return real_path(checkpoint) + ".shards.json"


def shards_of(checkpoint: StrPath) -> str | None:
    """The shards folder a checkpoint's stubs point into (None: the checkpoint has none)."""
    try:
        with open(sidecar_path(checkpoint), "rb") as fh:
            meta = _DECODE(fh.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    folder = meta.get(_SIDECAR_KEY) == 1 and meta.get("folder") if isinstance(meta, dict) else None
    return folder if isinstance(folder, str) and folder else None


def resolve_stubs(rows: list[dict], checkpoint: StrPath) -> list[dict]:
    """``rows`` read from ``checkpoint`` with each stub replaced by the row it points at."""
    if not any(SHARD_KEY in r for r in rows):
        return rows
    folder = shards_of(checkpoint)
    if folder is None:
        raise ValueError(f"{checkpoint}: its rows live in shards on shared storage, and {sidecar_path(checkpoint)} "
                         "that says where is missing; put it back, or resume with the same advanced['shared_storage']")
    return read_landed(folder, rows)


def fill_stubs(batch: list[dict], folder: str | None, checkpoint: StrPath | None = None) -> None:
    """``batch`` with each stub replaced, in place, by the row it points at: a spilled result is
    filled a batch at a time (``folder``: the run's shards; None: the checkpoint's sidecar says)."""
    if any(SHARD_KEY in r for r in batch):
        if folder:
            batch[:] = read_landed(folder, batch)
        else:
            assert checkpoint is not None, "fill_stubs: stubs without a shards folder need the checkpoint"
            batch[:] = resolve_stubs(batch, checkpoint)


_POINTER = re.compile(rb'"_shard"\s*:\s*\[\s*"([0-9a-f]{12}-[0-9]{6,}\.jsonl)"\s*,')
_ANY_POINTER = re.compile(rb'"_shard"\s*:')


def check_stub_shards(folder: str, checkpoint: StrPath) -> None:
    """A resume opens: every shard file the checkpoint's stubs point at must be in ``folder``,
    or the run stops here, before any budget is spent, naming the first missing file (its rows
    could not be read back at the end). One scan of the checkpoint's bytes (no JSON decoded)
    and one listing of ``<folder>/rows``."""
    try:
        with open(checkpoint, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return
    named = {m.group(1).decode("ascii") for m in _POINTER.finditer(data)}
    bad = next((m for m in _ANY_POINTER.finditer(data) if not _POINTER.match(data, m.start())), None)
    if bad is not None:                                   # a stub that names no shard file: refused now
        pointer = data[bad.end():bad.end() + 120].split(b"\n", 1)[0].decode("utf-8", "replace")
        raise ValueError(f"checkpoint {checkpoint}: " + bad_pointer(pointer, folder))
    if not named:
        return
    fs, path = fs_of(folder)
    missing = sorted(named - set(listing(fs, join(path, "rows"))))
    if missing:
        raise ValueError(
            f"{join(folder, 'rows', missing[0])}: a shard file that rows of checkpoint {checkpoint} point at is "
            f"missing ({len(missing)} of {len(named)} shard files missing); those rows could not be read back. "
            "Put the shard files back, or resume with the advanced['shared_storage'] the checkpoint was written "
            f"with (its sidecar {sidecar_path(checkpoint)} names {shards_of(checkpoint)!r}).")
    if fs is None:                  # a link, FIFO or device put where a shard should be: refused now
        check_regular(path, named, checkpoint)


def prepare_shards(folder: str, run_id: str, checkpoint: StrPath | None = None) -> list[str]:
    """The Driver opens a run's shards: create the folders, write the probe every actor checks
    (``check_probe``) and the checkpoint's sidecar (``shards_of``), remove ``*.tmp`` files a killed
    node left and the staged parts of a run whose Driver never published them (``shards/parquet.py``).
    Returns the warnings."""
    if checkpoint is not None:
        from ..atomic import atomic_path
        with atomic_path(sidecar_path(checkpoint)) as tmp, open(tmp, "wb") as fh:
            fh.write(json.dumps({_SIDECAR_KEY: 1, "folder": folder}).encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
    fs, path = fs_of(folder)
    for sub in ("rows", "parquet", "staged"):
        mkdir(fs, join(path, sub))
    warnings = []
    for sub in ("rows", "parquet"):
        torn = [n for n in listing(fs, join(path, sub)) if n.endswith(".tmp")]
        for name in torn:
            delete(fs, join(path, sub, name))
        if torn:
            warnings.append(f"{join(folder, sub)}: removed {len(torn)} shard file(s) a stopped actor left half "
                            "written (*.tmp); their rows never landed and are played again")
    staged = listing(fs, join(path, "staged"))   # parts a run that did not close never published
    for name in staged:
        delete(fs, join(path, "staged", name))
    put(fs, join(path, f"probe-{run_id}"), run_id.encode())
    return warnings


def open_shards(folder: str | None, run_id: str, checkpoint: StrPath) -> list[str]:
    """The Driver opens a checkpoint (under its lock): the shard files its stubs point at are
    checked first (``check_stub_shards``; in the sidecar's folder when this run writes through
    the Driver), then, on shared storage, the folders are prepared (``prepare_shards``).
    Returns the warnings."""
    if folder is None:
        recorded = shards_of(checkpoint)
        if recorded is not None:
            check_stub_shards(recorded, checkpoint)
        return []
    check_stub_shards(folder, checkpoint)
    return prepare_shards(folder, run_id, checkpoint)


def check_probe(folder: str, run_id: str, node: str) -> None:
    """An actor checks it sees the folder the Driver opened; else a clear error before any work."""
    fs, path = fs_of(folder)
    try:
        seen = read_bytes(fs, join(path, f"probe-{run_id}")).decode()
    except (OSError, FileNotFoundError) as exc:
        seen = f"nothing ({type(exc).__name__})"
    if seen != run_id:
        raise ValueError(
            f"advanced['shared_storage']: the rollout actor on node {node} does not see {folder!r} as the "
            f"Driver wrote it (found {seen!r} where the run's probe file should be). Shared storage must be "
            "a folder every node sees (an NFS mount, say) or a filesystem URI (s3://, gs://, hdfs://); "
            "or drop advanced['shared_storage'] to write through the Driver.")


class ShardWriter:
    """One rollout actor's writer: ``write(rows)`` puts a chunk's rows in a new shard file and
    returns where each row is; Parquet parts are written every ``parquet_rows`` rows and on
    ``flush()``. An actor packs several chunks at once (threads): the names, the buffer and the
    part numbers are taken under a lock, the files written outside it."""

    def __init__(self, folder: str, parquet_rows: int = PARQUET_ROWS) -> None:
        self.folder = folder
        self.fs, self.path = fs_of(folder)
        self.token = uuid.uuid4().hex[:12]          # names this actor's files; never reused
        self.parquet_rows = parquet_rows
        self.seq = 0
        self.parts = 0
        self._buffer: list[dict] = []
        self._origin: list[list] = []               # [shard file, [row offsets]] of the buffered rows
        self._lock = threading.Lock()
        self.bytes_written = 0

    def write(self, rows: list[dict]) -> tuple[str, list[tuple[int, int, int]], int]:
        """``(file, [(start, end, crc)] per row, bytes)``: the rows are on storage when it returns."""
        exported = [stored_row(r) for r in rows]
        lines = [dump_line(r) for r in exported]
        with self._lock:
            name = f"{self.token}-{self.seq:06d}.jsonl"
            self.seq += 1
        spans, pos = [], 0
        for line in lines:
            spans.append((pos, pos + len(line) - 1, zlib.crc32(line[:-1])))
            pos += len(line)
        put(self.fs, join(self.path, "rows", name), b"".join(lines))
        with self._lock:
            self.bytes_written += pos
            self._buffer.extend(exported)
            self._origin.append([name, [start for start, _end, _crc in spans]])
            part = self._take() if len(self._buffer) >= self.parquet_rows else None
        if part is not None:
            _stage(self.fs, self.path, *part)
        return name, spans, pos

    def _take(self) -> tuple[str, list[dict], list[list]]:
        """The buffered rows as a part to write (its name, rows, origin); the buffer emptied."""
        part = (f"part-{self.token}-{self.parts:05d}.parquet", self._buffer, self._origin)
        self._buffer, self._origin = [], []
        self.parts += 1
        return part

    def flush(self) -> str:
        """Write the buffered rows as a staged Parquet part (the Driver publishes the landed ones:
        ``shards/parquet.py``); returns this writer's token."""
        with self._lock:
            part = self._take() if self._buffer else None
        if part is not None:
            _stage(self.fs, self.path, *part)
        return self.token


def _stage(fs: pafs.FileSystem | None, path: str, name: str, rows: list[dict], origin: list[list]) -> None:
    write_staged(fs, path, name, rows, origin)


def read_landed(folder: str, stubs: list[dict]) -> list[dict]:
    """The full rows the ``stubs`` point at (other rows pass through as they are), each with
    the stub's bookkeeping (``_key``, ``_ordinal``, ``_landed_s``, ``_node``...) and lineage.
    Each shard file is read once. Raises ``ValueError`` naming the file when a row is missing
    or its CRC does not match (the shard was changed or lost)."""
    fs, path = fs_of(folder)
    by_file: dict = defaultdict(list)
    for i, stub in enumerate(stubs):
        if stub.get(SHARD_KEY) is None:
            continue
        pointer = shard_pointer(stub.get(SHARD_KEY))
        if pointer is None:
            raise ValueError(bad_pointer(stub.get(SHARD_KEY), folder))
        by_file[pointer[0]].append(i)
    out = list(stubs)
    for name, positions in sorted(by_file.items()):
        try:
            data = read_shard(fs, path, name)     # shards/files.py: inside the folder, a regular file
        except (OSError, FileNotFoundError) as exc:
            raise ValueError(f"{join(folder, 'rows', name)}: a shard the checkpoint points at cannot be read "
                             f"({type(exc).__name__}: {exc}); its rows are lost unless the file comes back") from None
        for i in positions:
            out[i] = _merge(_row_at(data, stubs[i], folder, name), stubs[i])
    return out


def _row_at(data: bytes, stub: dict, folder: str, name: str) -> dict:
    _file, start, end, crc = stub[SHARD_KEY]
    line = data[start:end]
    if end > len(data) or zlib.crc32(line) != crc:
        raise ValueError(f"{join(folder, 'rows', name)}: bytes {start}-{end} are not the row the checkpoint "
                         "landed (the shard was changed or cut); its rows cannot be read back")
    row: dict = _DECODE(line.decode("utf-8"))     # a line the CRC vouches for: a row the run wrote
    return row


def _merge(row: dict, stub: dict) -> dict:
    for k, v in stub.items():
        if k[:1] == "_" and k not in (SHARD_KEY, "_fp"):
            row[k] = v
    extra = stub.get("lineage")
    if extra:
        row["lineage"] = {**(row.get("lineage") or {}), **extra}
    return row
