"""The checkpoint's sidecar ``<checkpoint>.meta.json``: who wrote the rows, kept out of the rows file.

The docs call ``checkpoint=`` "a JSONL path every row is appended to", and readers take them at
their word: ``pandas.read_json(lines=True)``, DuckDB's ``read_json`` and polars read every line
as a row. So every line of the checkpoint is a row, and the run's identity lives beside it::

    run.jsonl             one exported row per line, nothing else
    run.jsonl.meta.json   {"_whileai_ray_checkpoint": 1, "fingerprint": {...}, "created": "..."}
    run.jsonl.keys        the key index (checkpoint/key_index.py), stamped with the same ``created``

``fingerprint`` (tools, system prompt, agent, plan; ``checkpoint/fingerprint.py``) is what makes a resume
refuse a file another setup wrote; ``created`` ties the ``.keys`` index and the ``.plan``
snapshots to this file. The sidecar is written atomically (tmp, fsync, rename, fsync of the
folder) before the first row. Checkpoints written before this change carry the same dict as
their first line; ``checkpoint/jsonl.py`` still reads them.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..atomic import StrPath

__all__ = ["sidecar_path", "read_sidecar", "write_sidecar"]


def sidecar_path(checkpoint_path: StrPath) -> Path:
    from ..atomic import real_path      # the checkpoint's one name: a symlink to it shares its sidecar
    return Path(real_path(checkpoint_path) + ".meta.json")


def read_sidecar(checkpoint_path: StrPath, marker: str) -> dict | None:
    """The sidecar's dict, or None when it is missing, unreadable or not ours (no ``marker`` key)."""
    try:
        data = json.loads(sidecar_path(checkpoint_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get(marker) == 1 else None


def write_sidecar(checkpoint_path: StrPath, header: dict) -> None:
    """Write the sidecar atomically and durably."""
    from ..atomic import fsync_dir, refuse_symlink, unique_tmp
    path = sidecar_path(checkpoint_path)
    refuse_symlink(path, "the checkpoint's sidecar")
    tmp = unique_tmp(path)                 # a unique name: never a planted <sidecar>.tmp link
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(header, fh, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)
