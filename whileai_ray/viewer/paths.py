"""Which files of the served folder are runs, and the one way a request's path is resolved.

A run is what ``wai.load`` reads: a JSONL file (a ``checkpoint=``, ``output=`` or ``save()``
file), a Parquet file, or a Parquet folder (``rows.parquet`` / ``part-*.parquet``, a
checkpoint's ``<stem>.parquet/`` side). A checkpoint's own files (``.meta.json``, ``.keys``,
``.plan``...) are not runs. A Parquet copy beside a JSONL of the same stem (``out.parquet``
next to ``out.jsonl``) is the same rows: the list shows the JSONL and names the copy.

``resolve(root, rel)`` is the only door from a URL to a file: a relative path with no ``..``
part, no drive or leading slash, no NUL, whose real path (links followed) stays inside the
real path of the root, and which is a run. Anything else is a ``ValueError`` (a 404 page):
a link inside the folder that points out of it is refused like ``../../etc/passwd``.
"""
from __future__ import annotations

import os

__all__ = ["find_runs", "resolve", "is_run", "parquet_copy"]

MAX_DEPTH = 6                  # how deep the walk looks for runs below the served folder
MAX_RUNS = 2000                # a folder of more runs is listed in part (the list says so)
_SIDECARS = (".meta.json", ".keys", ".keys.seal", ".plan", ".lock", ".shards.json", ".tmp")


def _inside(root_real: str, path: str) -> bool:
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _parquet_folder(path: str) -> bool:
    try:
        names = os.listdir(path)
    except OSError:
        return False
    return "rows.parquet" in names or any(n.startswith("part-") and n.endswith(".parquet") for n in names)


def is_run(path: str) -> bool:
    """Is ``path`` (already inside the root) a file or folder ``wai.load`` reads as a run?"""
    name = os.path.basename(path)
    if name.startswith(".") or name.endswith(_SIDECARS):
        return False
    if os.path.isfile(path):
        return name.endswith((".jsonl", ".parquet"))
    return os.path.isdir(path) and _parquet_folder(path)


def parquet_copy(path: str) -> str | None:
    """The Parquet copy beside a JSONL run (``out.parquet`` for ``out.jsonl``), when there is one."""
    if not path.endswith(".jsonl"):
        return None
    copy = path[:-6] + ".parquet"
    return copy if os.path.exists(copy) else None


def _has_jsonl(path: str) -> bool:
    """Is ``path`` the Parquet copy of a JSONL run beside it (``out.parquet`` of ``out.jsonl``)?"""
    return path.endswith(".parquet") and os.path.isfile(path[:-8] + ".jsonl")


def find_runs(root: str) -> tuple[list[str], bool]:
    """``(relative paths of the runs under root, sorted; whether the list was cut at MAX_RUNS)``.
    Links are not followed into folders, and a linked file that leads out of the root is left out."""
    root_real = os.path.realpath(root)
    found: list[str] = []
    for folder, dirs, files in os.walk(root_real):
        depth = os.path.relpath(folder, root_real).count(os.sep) + (folder != root_real)
        keep = []
        for d in sorted(dirs):
            full = os.path.join(folder, d)
            if d.startswith(".") or os.path.islink(full) and not _inside(root_real, full):
                continue
            if is_run(full):
                if not _has_jsonl(full):     # a Parquet folder with no JSONL of its stem: a run of its own
                    found.append(full)
            elif not d.endswith(".parquet") and depth < MAX_DEPTH:
                keep.append(d)
        dirs[:] = keep
        for f in files:
            full = os.path.join(folder, f)
            if not _inside(root_real, full) or not is_run(full):
                continue
            if _has_jsonl(full):
                continue                     # the Parquet copy of a JSONL run: shown with it
            found.append(full)
        if len(found) > MAX_RUNS:
            break
    rel = sorted(os.path.relpath(p, root_real) for p in found)
    return rel[:MAX_RUNS], len(rel) > MAX_RUNS


def resolve(root: str, rel: str | None) -> str:
    """The real path of run ``rel`` under ``root``, or a ValueError saying why it is refused."""
    if not rel or not isinstance(rel, str):
        raise ValueError("name a run: ?path=<a file listed on the first page>")
    if "\x00" in rel or os.path.isabs(rel) or rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
        raise ValueError("a run's path is relative to the served folder")
    parts = rel.replace("\\", "/").split("/")
    if any(p in ("..",) for p in parts):
        raise ValueError("a run's path may not leave the served folder ('..')")
    root_real = os.path.realpath(root)
    full = os.path.join(root_real, *parts)
    if not _inside(root_real, full):
        raise ValueError("that path leads out of the served folder (a link); refused")
    real = os.path.realpath(full)
    if not os.path.exists(real) or not is_run(real) or not is_run(full):
        raise ValueError("no run at that path (a JSONL or Parquet file, or a Parquet folder)")
    return real
