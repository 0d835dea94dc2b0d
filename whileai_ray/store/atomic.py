"""Writing a file whole or not at all, and saying which file when the disk says no.

``atomic_path(path)`` is the one pattern every writer in ``store`` uses: write a temporary
sibling, fsync, rename over ``path``. On any error the temporary file is removed, so a full disk
leaves the old file as it was and no half-written sibling behind. The temporary name is unique
(``<path>.<pid>.<random>.tmp``, created with ``O_EXCL``: ``unique_tmp``), so two writers never
share one, and a symlink planted at a predictable ``<path>.tmp`` is never opened through.

``real_path(path)`` is the one name of a file: every file a run derives from its checkpoint (lock,
sidecar, key index, seal, plan, Parquet side) hangs off it, so a symlink or a second spelling of
the same checkpoint shares its lock. ``refuse_symlink`` and ``open_nofollow`` are how a run's own
files are opened: a symlink found at one of them was planted (the run only ever creates plain
files there) and is refused, never followed into a victim file. ``write_error(path, exc)`` turns an
``OSError`` without a file name (``[Errno 28] No space left on device``, ``[Errno 27] File too
large`` from a size limit) into one that names the path and what to do.
"""
from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, TypeAlias, Union

__all__ = ["atomic_path", "write_error", "fsync_file", "fsync_dir", "real_path", "refuse_symlink", "open_nofollow",
           "unique_tmp", "StrPath"]

StrPath: TypeAlias = Union[str, "os.PathLike[str]"]     # what every store function takes as a path

_FULL = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}


def write_error(path: StrPath, exc: OSError, what: str = "writing") -> OSError:
    """An OSError naming ``path`` (same errno), with a hint when the disk or a quota is full."""
    reason = exc.strerror or str(exc)
    hint = ""
    if exc.errno in _FULL:
        hint = "; the disk, a quota or the file size limit is full: free space and run again"
    err = OSError(exc.errno, f"{reason} while {what} {os.fspath(path)}{hint}")
    err.filename = os.fspath(path)
    return err


def fsync_file(fh: IO[Any]) -> None:
    fh.flush()
    os.fsync(fh.fileno())


def fsync_dir(path: StrPath) -> None:
    """Make a rename or a new file in folder ``path`` durable (best effort: a filesystem that
    cannot sync a folder is left as it is)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def real_path(path: StrPath) -> str:
    """``path`` with ``~``, ``..`` and every symlink resolved: the one name of the file it names."""
    return os.path.realpath(os.path.expanduser(os.fspath(path)))


def refuse_symlink(path: StrPath, what: str = "a checkpoint's own file") -> None:
    """Raise ``ValueError`` when ``path`` is a symlink: it was planted where a run keeps its own
    plain file, and following it would write into whatever it points at."""
    if os.path.islink(path):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        raise ValueError(
            f"{os.fspath(path)!r} is a symbolic link (to {target!r}) where whileai_ray keeps {what}; it is "
            "never followed (writing through it would overwrite the file it points at). Remove the link "
            "and run again.")


def open_nofollow(path: StrPath, flags: int, mode: int = 0o644, what: str = "a checkpoint's own file") -> int:
    """``os.open`` that refuses a symlink at ``path`` (``O_NOFOLLOW``) with ``refuse_symlink``'s error."""
    try:
        return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(path):
            refuse_symlink(path, what)
        raise


def unique_tmp(path: StrPath) -> Path:
    """Create (``O_EXCL``, never through a link) and return an empty temporary sibling of ``path``
    with a name no other writer uses: ``<name>.<pid>.<random>.tmp``."""
    path = Path(path)
    for _ in range(100):
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(f"could not create a temporary file beside {os.fspath(path)!r}")


@contextlib.contextmanager
def atomic_path(path: StrPath) -> Iterator[Path]:
    """Yield the temporary path to write (created empty, ``unique_tmp``); rename it over ``path``
    when the body succeeds.

    On an error the temporary file is removed and an ``OSError`` is re-raised naming ``path``.
    """
    path = Path(path)
    tmp: Path | None = None
    try:
        tmp = unique_tmp(path)
        yield tmp
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
            raise write_error(path, exc) from exc
        raise
