"""Changing a Parquet folder so that a reader outside whileai_ray never sees rows twice.

DuckDB (``read_parquet('f/*.parquet')``), polars (``read_parquet('f')``, which also walks
sub-folders and hidden files), ``pyarrow.dataset`` and ``ray.data.read_parquet`` read every
Parquet file they find in a folder. They do not know that ``rows.parquet`` already holds the
rows of the ``part-*.parquet`` files it was compacted from, so a folder must never hold both
(an interrupted compaction used to leave them side by side: 200 rows for 100 landed), nor a
half-written temporary file (polars refuses a folder holding one; pyarrow reads a complete one).

So nothing is ever built inside the folder. Its writer works in a hidden sibling,
``.<name>.work/`` (``work_folder``), which no reader of the folder looks into:

* a new file is written there and renamed into the folder (``write_into``);
* a new content for the whole folder (a compaction) is built in ``.<name>.work/next/`` and
  swapped with the folder in one step, Linux ``renameat2(RENAME_EXCHANGE)``
  (``replace_folder``); the old content, now in ``next/``, is removed after. Before the swap and
  after it the folder is complete, so a writer killed at any point leaves it right, and
  ``recover`` (the next open) only removes the work folder.
* Where the exchange is not offered (not Linux, or a filesystem that refuses it: NFS, some FUSE
  mounts answer EINVAL), the folder is moved to ``.<name>.work/old`` and ``next/`` renamed to
  the folder: between the two renames (microseconds) the folder is absent, never doubled; a
  writer killed there leaves ``old/`` and ``next/``, and ``recover`` puts ``next/`` in place.

No Parquet here: the callers write the files. ``sys.audit`` events (``os.rename``,
``os.remove``, ``os.rmdir`` and ``whileai_ray.exchange``) mark every step, which is how the tests
kill a writer between two of them.
"""
from __future__ import annotations

import ctypes
import errno
import os
import secrets
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from ..atomic import StrPath, fsync_dir

__all__ = ["work_folder", "work_owner", "recover", "replace_folder", "write_into", "exchange"]

WORK_SUFFIX = ".work"
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, getattr(errno, "EOPNOTSUPP", errno.EINVAL),
                getattr(errno, "ENOTSUP", errno.EINVAL)}


def _load_renameat2() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2     # glibc 2.28+
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_renameat2 = _load_renameat2()        # None: no exchange here (the tests set it to take the fallback)


def work_folder(folder: StrPath) -> Path:
    """The hidden sibling where the writer of ``folder`` builds what goes into it."""
    folder = Path(folder)
    return folder.with_name("." + folder.name + WORK_SUFFIX)


def work_owner(name: str) -> str | None:
    """The folder name whose work folder ``name`` is (``.a.parquet.work`` -> ``a.parquet``), or None."""
    if name.startswith(".") and name.endswith(WORK_SUFFIX) and len(name) > len(WORK_SUFFIX) + 1:
        return name[1:-len(WORK_SUFFIX)]
    return None


def exchange(a: StrPath, b: StrPath) -> bool:
    """Swap the paths ``a`` and ``b`` atomically; False when this system or filesystem cannot."""
    if _renameat2 is None:
        return False
    sys.audit("whileai_ray.exchange", os.fspath(a), os.fspath(b))
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in _UNSUPPORTED:
        return False
    raise OSError(err, f"{os.strerror(err)} while swapping {os.fspath(a)} with {os.fspath(b)}")


def _remove(path: Path) -> None:
    if os.path.islink(path) or path.is_file():
        path.unlink()                       # a planted link is removed, never followed
    elif path.exists():
        shutil.rmtree(path)


def recover(folder: StrPath) -> None:
    """Undo what a writer killed while changing ``folder`` left: the work folder goes (the folder
    is complete either way); in the fallback's window, where the folder itself is missing, the
    built ``next/`` (complete: the folder was moved only once it was) takes its place."""
    folder = Path(folder)
    work = work_folder(folder)
    if not os.path.lexists(work):
        return
    if not os.path.islink(work) and not os.path.lexists(folder) and (work / "old").is_dir():
        os.rename(work / "next" if (work / "next").is_dir() else work / "old", folder)
        fsync_dir(folder.parent)
    _remove(work)


def write_into(folder: StrPath, name: str, write: Callable[[Path], object]) -> Path:
    """``write(tmp)`` a file in the work folder, then rename it to ``folder/name``: the folder
    only ever holds complete files. Returns the path written."""
    folder = Path(folder)
    work = work_folder(folder)
    work.mkdir(exist_ok=True)
    tmp = work / f"{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        write(tmp)
        os.replace(tmp, folder / name)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
    return folder / name


def replace_folder(folder: StrPath, build: Callable[[Path], object]) -> None:
    """Replace the content of ``folder`` (which exists) with what ``build(path)`` writes into an
    empty folder ``path``, in one step a reader never sees half of (see the module docstring)."""
    folder = Path(folder)
    recover(folder)
    work = work_folder(folder)
    nxt = work / "next"
    nxt.mkdir(parents=True)
    build(nxt)
    fsync_dir(nxt)
    if not exchange(folder, nxt):
        os.rename(folder, work / "old")     # the fallback's window: the folder is absent
        os.rename(nxt, folder)
    fsync_dir(folder.parent)
    _remove(work)
