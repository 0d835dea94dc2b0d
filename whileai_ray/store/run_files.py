"""Which files a run owns, and the one way rows are written back to a file that already exists.

A checkpoint ``run.jsonl`` owns ``run.jsonl.meta.json`` (its fingerprint), ``run.jsonl.keys``
(and ``run.jsonl.keys.seal``, ``checkpoint/key_seal.py``), ``run.jsonl.plan``, ``run.jsonl.lock``, ``run.jsonl.shards.json`` (shared storage: ``shards/storage.py``)
and the ``run.parquet/`` folder (with ``.run.parquet.work/`` beside it, where its files are built:
``parquet/swap.py``); an ``output=`` path ``out.jsonl`` writes ``out.jsonl``, ``out.parquet`` and
``out.meta.json``. ``check_output(output, checkpoint)`` refuses, before any
budget is spent, an ``output=`` whose files would land on the checkpoint's (same file after
``os.path.realpath``, a symlink included) or on any existing checkpoint: the output writer
replaces its file, and no writer may ever truncate a checkpoint.

Paths are compared by their real path (``atomic.real_path``): a symlink to the checkpoint, or
another spelling of it, is the checkpoint. ``run_file_owner(path)`` says which checkpoint a path
belongs to (the checkpoint itself, one of its sidecars, or anything inside its Parquet folder),
and ``refuse_run_file(path, argument)`` is what every writer of a result calls first (``save()``,
``to_html()``, ``training_set(output=)``, ``push(store=)``): a ValueError naming the argument and
the fix, before a byte is written. ``refuse_planted_links(checkpoint)`` refuses a symlink found
at one of the checkpoint's own files (a run only ever creates plain files there).

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
from collections.abc import Iterable
from pathlib import Path

from ..core.identity import row_key
from .atomic import StrPath, real_path, refuse_symlink
from .checkpoint.lock import CheckpointLock, lock_path
from .checkpoint.meta import read_sidecar, sidecar_path
from .checkpoint.lines import HEADER_KEY, dump_line
from .checkpoint.key_index import index_path, records_for, write_index
from .checkpoint.key_seal import seal_path
from .parquet.swap import replace_folder, work_folder, work_owner
from .row_key_set import digest_arrays

__all__ = ["checkpoint_files", "output_files", "is_checkpoint", "is_parquet", "check_output", "write_rows",
           "parquet_folder_for", "run_file_owner", "refuse_run_file", "refuse_planted_links"]

_PARQUET_MAGIC = b"PAR1"
# what a checkpoint's own files add to its name (checkpoint_files, in the same order)
_SIDECAR_SUFFIXES = (".meta.json", ".keys", ".keys.seal", ".plan", ".lock", ".shards.json")


def parquet_folder_for(checkpoint_path: StrPath) -> str:
    """Where the Parquet side of a checkpoint lives: ``<stem>.parquet/`` beside the JSONL."""
    p = real_path(checkpoint_path)
    return (p[:-6] if p.endswith(".jsonl") else p) + ".parquet"


def checkpoint_files(checkpoint: StrPath) -> list[Path]:
    """The checkpoint (by its real path) and every file a run keeps beside it."""
    from .snapshots.file import snapshot_path
    ck = Path(real_path(checkpoint))
    return [ck, sidecar_path(ck), index_path(ck), seal_path(ck), Path(snapshot_path(ck)), lock_path(ck),
            Path(parquet_folder_for(ck)), Path(str(ck) + ".shards.json"), work_folder(parquet_folder_for(ck))]


def refuse_planted_links(checkpoint: StrPath) -> None:
    """ValueError when one of the checkpoint's own files (sidecar, key index, seal, plan, lock,
    shards, Parquet folder) is a symlink: a run only ever creates plain files there, so a link was
    planted, and writing through it would overwrite (truncate, append to) the file it points at."""
    for f in checkpoint_files(checkpoint)[1:]:
        refuse_symlink(f, f"the checkpoint {real_path(checkpoint)!r}'s own file")


def _run_base(path: str) -> str | None:
    """The checkpoint ``path`` (a real path) is a file of: itself, a sidecar of it, or in its
    Parquet folder; None when it is none of these."""
    for suffix in _SIDECAR_SUFFIXES:       # first: a sidecar (``.meta.json``) reads like an old checkpoint
        base = path[:-len(suffix)]
        if path.endswith(suffix) and os.path.isfile(base) and (is_checkpoint(base) or os.path.lexists(path)):
            return base
    if os.path.isfile(path) and is_checkpoint(path):
        return path
    folder = path
    while True:                       # the Parquet side (or its work folder): the folder or anything under it
        owner = work_owner(os.path.basename(folder))
        if owner is not None:
            folder = os.path.join(os.path.dirname(folder), owner)
        if folder.endswith(".parquet"):
            stem = folder[:-len(".parquet")]
            for base in (stem + ".jsonl", stem):
                if os.path.isfile(base) and (is_checkpoint(base) or os.path.exists(base + ".keys")):
                    return base
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def run_file_owner(path: StrPath) -> str | None:
    """The real path of the checkpoint whose own file ``path`` is (the checkpoint itself, a sidecar
    of it, or a path in its Parquet folder), or None."""
    return _run_base(real_path(path))


def refuse_run_file(path: StrPath, argument: str) -> None:
    """Raise ValueError, naming ``argument`` (``"to_html(path=...)"``) and the fix, when writing ``path`` would write onto a
    run's own files (``run_file_owner``); a symlink there is judged by what it points at."""
    owner = run_file_owner(path)
    if owner is None:
        return
    what = ("the checkpoint of a run" if real_path(path) == owner else
            f"a file of the checkpoint {owner!r} (its sidecars and Parquet copy are part of it)")
    raise ValueError(
        f"{argument}: {os.fspath(path)!r} is {what}; writing there would overwrite the run's own data, and "
        "its next resume would mix or lose rows. Nothing was written: pass a path outside the checkpoint's "
        "files, e.g. a new file name in another folder.")


def output_files(output: StrPath) -> list[Path]:
    text = os.fspath(output)
    stem = text[:-6] if text.endswith(".jsonl") else text
    return [Path(text), Path(stem + ".parquet"), Path(stem + ".meta.json")]


def _real(path: StrPath) -> str:
    return real_path(path)


def is_checkpoint(path: StrPath) -> bool:
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


def is_parquet(path: StrPath) -> bool:
    path = Path(path)
    if path.suffix == ".parquet" and not path.is_dir():
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == _PARQUET_MAGIC
    except OSError:
        return False


def check_output(output: StrPath | None, checkpoint: StrPath | None) -> None:
    """Refuse an ``output=`` that would overwrite the checkpoint, one of its files, or any
    checkpoint (see the module docstring)."""
    if checkpoint is not None:
        refuse_planted_links(checkpoint)          # before any budget: never write through a planted link
    if output is None:
        return
    owned: dict[str, Path] = {}
    if checkpoint is not None:
        for f in checkpoint_files(checkpoint):
            owned[_real(f)] = f
    folders = [_real(parquet_folder_for(checkpoint)), _real(work_folder(parquet_folder_for(checkpoint)))] \
        if checkpoint is not None else []
    parquet_folder = folders[0] if folders else None
    for f in output_files(output):
        real = _real(f)
        inside = any(real.startswith(folder + os.sep) for folder in folders)
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


def _write_checkpoint(rows: list[dict], path: Path) -> str:
    """Rewrite checkpoint ``path`` with ``rows`` under its lock, keeping its sidecar (or the header
    line of a checkpoint written before the sidecar existed)."""
    from .atomic import atomic_path, fsync_file
    from .parquet.folder import write_parquet
    with CheckpointLock(path, run_id="rewrite"):
        with open(path, "rb") as fh:
            first = fh.readline()
        header = b""
        created: str | None = None
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
        if folder.is_dir():              # the Parquet side follows the JSONL, swapped in whole (parquet/swap.py)
            replace_folder(folder, lambda nxt: write_parquet(rows, nxt / "rows.parquet"))
    return str(path)


def write_rows(rows: Iterable[dict], path: StrPath, source: StrPath | None = None,
               argument: str = "save(path=...)") -> str:
    """Write stored-form ``rows`` to ``path`` in the format it has (see the module docstring). A
    run's own file other than the checkpoint (a sidecar, its Parquet copy) is written only with
    the data read from that same file (grading a loaded Parquet side in place); else refused."""
    from .parquet.folder import write_parquet
    from .reader import save_jsonl_atomic
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"save(path={str(target)!r}) is a folder; pass a file path such as rows.jsonl")
    owner = run_file_owner(target)
    if owner is not None and _real(target) != owner and (source is None or _real(source) != _real(target)):
        refuse_run_file(target, argument)
    if is_parquet(target):
        return write_parquet(rows, target)       # streamed, a row group at a time
    if is_checkpoint(target):
        if source is None or _real(source) != _real(target):
            raise ValueError(
                f"save(path={str(target)!r}): that file is the checkpoint of a run, and these rows were not "
                "read from it; writing them there would wipe it. Pass another path.")
        return _write_checkpoint(list(rows), target)
    return save_jsonl_atomic(rows, target)       # streamed: rows (any iterable) are never all held
