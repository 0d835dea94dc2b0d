"""The seal of a cleanly closed checkpoint: reopening it trusts its key index without reading it.

Opening a checkpoint verifies every index group against the bytes it names (``checkpoint/key_index.py``:
one CRC pass over the whole file, 2.5 GB at a million rows, seconds on the way to a resume's
first row). When a run closes its checkpoint cleanly, nothing can have changed those bytes
unless the file itself changed, so the close writes ``<checkpoint>.keys.seal``: the file's size,
modification time (ns), change time (ns), inode and device, and the index's size and rows, as they were at the
close (both files' modification times set ten seconds back first, so that any later write, even
in the same tick of the file system's clock, shows). An open that finds every one of them
unchanged takes the index as is (after a numpy check that its groups cover the file) and reads no row; any difference (a row appended by a run that crashed, a line
edited, the file copied or restored, the index touched) and the checkpoint is verified in full,
as without a seal. The seal is removed when the checkpoint is opened for appending.

What it trusts: that a file whose size, mtime, ctime, inode and device are unchanged holds the
same bytes. Someone who edits a line and sets the mtime back (``os.utime``, ``touch -d``) still
moves the ctime, which no user can set: the open then verifies every group, and the rows whose
bytes changed are named and left out (``checkpoint/key_index.py``'s row CRCs). A seal written before the
ctime was sealed never matches: the next open verifies in full once. ``scan_file(...,
use_index=False)`` (``wai.load``) never uses it.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from ..atomic import StrPath, atomic_path, fsync_file, refuse_symlink
from .key_index import index_path, read_index

__all__ = ["SEAL_KEY", "seal_path", "write_seal", "unseal", "sealed_records"]

SEAL_KEY = "_whileai_ray_seal"
BACKDATE_S = 10           # how far back a seal sets the sealed files' modification times


def seal_path(checkpoint_path: StrPath) -> Path:
    return Path(str(index_path(checkpoint_path)) + ".seal")


def _stat(path: StrPath) -> dict[str, int]:
    st = os.stat(path, follow_symlinks=False)
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns, "ino": st.st_ino,
            "dev": st.st_dev}


def write_seal(checkpoint_path: StrPath, created: str | None, rows: int) -> None:
    """Seal the closed checkpoint at ``checkpoint_path`` (``rows``: the rows its index holds).

    The file's and the index's modification times are first set ``BACKDATE_S`` into the past: a
    file's times come from a coarse clock (a few ms, up to seconds on some file systems), so an
    edit in the same tick as the last write would leave them as they were; any write after this
    one stamps the present, which is never the backdated time the seal holds."""
    when = time.time_ns() - BACKDATE_S * 10**9
    for path in (checkpoint_path, index_path(checkpoint_path)):
        refuse_symlink(path, "a checkpoint's sealed file")       # never stamp the file a link points at
        os.utime(path, ns=(when, when))
    seal = {SEAL_KEY: 1, "created": created, "rows": int(rows), "file": _stat(checkpoint_path),
            "index": _stat(index_path(checkpoint_path))}
    with atomic_path(seal_path(checkpoint_path)) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(seal, separators=(",", ":")))
        fsync_file(fh)


def unseal(checkpoint_path: StrPath) -> None:
    """Remove the seal (the checkpoint is about to change)."""
    try:
        os.unlink(seal_path(checkpoint_path))
    except FileNotFoundError:
        pass


def sealed_records(checkpoint_path: StrPath, created: str | None) -> tuple[np.ndarray, int] | None:
    """``(records, file size)`` of the index when the seal beside ``checkpoint_path`` still holds
    (its file and index unchanged since the close that wrote it, as many records as it sealed);
    else None. Whether the records cover the file is the caller's check (``jsonl_lines``)."""
    try:
        seal = json.loads(seal_path(checkpoint_path).read_text(encoding="utf-8"))
        if not isinstance(seal, dict) or seal.get(SEAL_KEY) != 1 or seal.get("created") != created:
            return None
        if _stat(checkpoint_path) != seal["file"] or _stat(index_path(checkpoint_path)) != seal["index"]:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    recs = read_index(index_path(checkpoint_path), created)
    if recs is None or len(recs) != seal["rows"] or not len(recs):
        return None
    return recs, int(seal["file"]["size"])
