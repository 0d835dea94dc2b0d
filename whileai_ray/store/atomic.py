"""Writing a file whole or not at all, and saying which file when the disk says no.

``atomic_path(path)`` is the one pattern every writer in ``store`` uses: write ``<path>.tmp``,
fsync, rename over ``path``. On any error the ``.tmp`` is removed, so a full disk leaves the old
file as it was and no half-written sibling behind. ``write_error(path, exc)`` turns an
``OSError`` without a file name (``[Errno 28] No space left on device``, ``[Errno 27] File too
large`` from a size limit) into one that names the path and what to do.
"""
from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

__all__ = ["atomic_path", "write_error", "fsync_file"]

_FULL = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}


def write_error(path, exc: OSError, what: str = "writing") -> OSError:
    """An OSError naming ``path`` (same errno), with a hint when the disk or a quota is full."""
    reason = exc.strerror or str(exc)
    hint = ""
    if exc.errno in _FULL:
        hint = "; the disk, a quota or the file size limit is full: free space and run again"
    err = OSError(exc.errno, f"{reason} while {what} {os.fspath(path)}{hint}")
    err.filename = os.fspath(path)
    return err


def fsync_file(fh) -> None:
    fh.flush()
    os.fsync(fh.fileno())


@contextlib.contextmanager
def atomic_path(path):
    """Yield the temporary path to write; rename it over ``path`` when the body succeeds.

    On an error the temporary file is removed and an ``OSError`` is re-raised naming ``path``.
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
            raise write_error(path, exc) from exc
        raise
