"""Which files a run owns, and the one way rows are written back to a file that already exists.

A checkpoint ``run.jsonl`` owns ``run.jsonl.meta.json`` (its fingerprint), ``run.jsonl.keys``
(and ``run.jsonl.keys.seal``, ``key_seal.py``), ``run.jsonl.plan``, ``run.jsonl.lock``, ``run.jsonl.shards.json`` (shared storage: ``shards.py``)
and the ``run.parquet/`` folder; an ``output=`` path ``out.jsonl`` writes ``out.jsonl``,
``out.parquet`` and ``out.meta.json``. ``check_output(output, checkpoint)`` refuses, before any
budget is spent, an ``output=`` whose files would land on the checkpoint's (same file after
``os.path.realpath``, a symlink included) or on any existing checkpoint: the output writer
replaces its file, and no writer may ever truncate a checkpoint.

``write_rows(rows, path, source=...)`` is what ``save()`` and the graders' write-back call
(``rows`` any iterable: JSONL and Parquet are written as it yields, so a result on disk is never
held whole):

* a Parquet path (``.parquet`` or a file that starts with ``PAR1``) gets Parquet, never JSONL;
* an existing checkpoint is rewritten only by the data read from it (``source`` is that same
  file): under the checkpoint's lock, with its sidecar (or, in a checkpoint written before the
  sidecar, its header line) kept, so a resume still verifies the setup and replays exactly, its
  key index rewritten and its Parquet side refreshed;
  any other data is refused there with a ValueError;
* anything else is JSONL, written atomically.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..core.identity import row_key
from .checkpoint_lock import CheckpointLock, lock_path
from .checkpoint_meta import read_sidecar, sidecar_path
from .jsonl_lines import HEADER_KEY, dump_line
from .key_index import index_path, records_for, write_index
from .key_seal import seal_path
from .row_key_set import digest_arrays

__all__ = ["checkpoint_files", "output_files", "is_checkpoint", "is_parquet", "check_output", "write_rows",
           "parquet_folder_for"]

_PARQUET_MAGIC = b"PAR1"


def parquet_folder_for(checkpoint_path) -> str:
    """Where the Parquet side of a checkpoint lives: ``<stem>.parquet/`` beside the JSONL."""
    p = str(checkpoint_path)
    return (p[:-6] if p.endswith(".jsonl") else p) + ".parquet"


def checkpoint_files(checkpoint) -> list[Path]:
    from .plan_snapshot_file import snapshot_path
    ck = Path(checkpoint)
    return [ck, sidecar_path(ck), index_path(ck), seal_path(ck), Path(snapshot_path(ck)), lock_path(ck),
            Path(parquet_folder_for(ck)), Path(str(ck) + ".shards.json")]


def output_files(output) -> list[Path]:
    text = os.fspath(output)
    stem = text[:-6] if text.endswith(".jsonl") else text
    return [Path(text), Path(stem + ".parquet"), Path(stem + ".meta.json")]


def _real(path) -> str:
    return os.path.realpath(os.fspath(path))


def is_checkpoint(path) -> bool:
    """True when ``path`` is a checkpoint: a file with its sidecar, or (written before the sidecar)
    whose first line is a whileai_ray checkpoint header."""
    if Path(path).is_file() and read_sidecar(path, HEADER_KEY) is not None:
        return True
    try:
        with open(path, "rb") as fh:
            first = fh.readline(1 << 20)
    except OSError:
        return False
    return HEADER_KEY.encode() in first


def is_parquet(path) -> bool:
    path = Path(path)
    if path.suffix == ".parquet" and not path.is_dir():
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == _PARQUET_MAGIC
    except OSError:
        return False


def check_output(output, checkpoint) -> None:
    """Refuse an ``output=`` that would overwrite the checkpoint, one of its files, or any
    checkpoint (see the module docstring)."""
    if output is None:
        return
    owned = {}
    if checkpoint is not None:
        for f in checkpoint_files(checkpoint):
            owned[_real(f)] = f
    parquet_folder = _real(parquet_folder_for(checkpoint)) if checkpoint is not None else None
    for f in output_files(output):
        real = _real(f)
        inside = parquet_folder is not None and real.startswith(parquet_folder + os.sep)
        if real in owned or inside:
            raise ValueError(
                f"output={os.fspath(output)!r} would write {str(f)!r}, which is the checkpoint's own "
                f"{'file' if real in owned else 'Parquet folder'} ({str(owned.get(real, parquet_folder))!r}): "
                "the output is rewritten at the end of the run and would wipe the checkpoint. Pass another "
                "output path (the checkpoint already keeps every row).")
        if is_checkpoint(f):
            raise ValueError(
                f"output={os.fspath(output)!r}: {str(f)!r} is the checkpoint of a run; output= replaces its "
                "file and would wipe it. Pass another output path.")


def _write_checkpoint(rows, path: Path) -> str:
    """Rewrite checkpoint ``path`` with ``rows`` under its lock, keeping its sidecar (or the header
    line of a checkpoint written before the sidecar existed)."""
    from .atomic import atomic_path, fsync_file
    from .parquet import write_parquet
    with CheckpointLock(path, run_id="rewrite"):
        with open(path, "rb") as fh:
            first = fh.readline()
        header, created = b"", None
        if HEADER_KEY.encode() in first:           # an old checkpoint: its header stays its first line
            header = first if first.endswith(b"\n") else first + b"\n"
            try:
                import json
                created = json.loads(header).get("created")
            except ValueError:
                pass
        else:
            created = (read_sidecar(path, HEADER_KEY) or {}).get("created")
        lines = [dump_line(r) for r in rows]
        records = records_for(lines, len(header), *digest_arrays([row_key(r) for r in rows]))
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            fh.write(header)
            fh.write(b"".join(lines))
            fsync_file(fh)
        write_index(index_path(path), created, records)
        folder = Path(parquet_folder_for(path))
        if folder.is_dir():                              # the Parquet side follows the JSONL
            write_parquet(rows, folder / "rows.parquet")
            for part in folder.glob("part-*.parquet"):
                part.unlink()
    return str(path)


def write_rows(rows, path, source=None) -> str:
    """Write stored-form ``rows`` to ``path`` in the format it has (see the module docstring)."""
    from .parquet import write_parquet
    from .reader import save_jsonl_atomic
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"save(path={str(target)!r}) is a folder; pass a file path such as rows.jsonl")
    if is_parquet(target):
        return write_parquet(rows, target)       # streamed, a row group at a time
    if is_checkpoint(target):
        if source is None or _real(source) != _real(target):
            raise ValueError(
                f"save(path={str(target)!r}): that file is the checkpoint of a run, and these rows were not "
                "read from it; writing them there would wipe it. Pass another path.")
        return _write_checkpoint(list(rows), target)
    return save_jsonl_atomic(rows, target)       # streamed: rows (any iterable) are never all held
