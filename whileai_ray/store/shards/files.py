"""Which shard files a checkpoint's stubs may make a run read, and how they are opened.

A stub line of a shared-storage checkpoint (``shards/storage.py``) says where its row is:
``"_shard": [file, start, end, crc]``. The checkpoint is a file anyone can edit, so the pointer is
data, not a path to follow: ``file`` must be a name a ``ShardWriter`` makes
(``<12 hex>-<number>.jsonl``, no ``/``, no ``..``), the span two offsets in order, the CRC a
number; and the file is opened only when it resolves inside the run's shards folder and is a
regular file (a link to ``/etc/hostname``, a FIFO that would block the open, ``/dev/zero`` that
would never end a read: each refused unopened). Before this a stub naming
``../../../../dev/zero`` was read until memory ran out.
"""
from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..checkpoint.lines import SHARD_KEY   # a stub's pointer: [file, start, end, crc]

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = ["SHARD_KEY", "SHARD_NAME", "shard_pointer", "bad_pointer", "read_shard", "check_regular", "is_uri", "fs_of", "join",
           "put", "mkdir", "read_bytes", "listing", "delete"]


SHARD_NAME = re.compile(r"[0-9a-f]{12}-[0-9]{6,}\.jsonl")


def shard_pointer(pointer: object) -> tuple[str, int, int, int] | None:
    """``(file, start, end, crc)`` of a stub's ``_shard``, or None when it is not one a run wrote."""
    if not isinstance(pointer, list) or len(pointer) != 4:
        return None
    name, start, end, crc = pointer
    ints = all(type(v) is int for v in (start, end, crc))
    if not (isinstance(name, str) and SHARD_NAME.fullmatch(name) and ints and 0 <= start <= end):
        return None
    return name, start, end, crc


def bad_pointer(pointer: object, folder: object) -> str:
    """The message for a stub whose pointer names no shard file of ``folder``."""
    return (f"a checkpoint stub points at {str(pointer)[:120]!r}, which is not a shard file of {folder} "
            "(a shard is rows/<12 hex>-<number>.jsonl inside the run's shards folder); the checkpoint was "
            "edited or crafted, and nothing outside the shards folder is read. Remove that line, or start "
            "a new checkpoint")


def read_shard(fs: pafs.FileSystem | None, folder: str, name: str) -> bytes:
    """The bytes of shard ``name`` of ``folder`` (``fs``: a pyarrow filesystem, None for a local
    folder), read only when it is a regular file inside the folder; else an OSError, unopened."""
    file = "/".join([folder.rstrip("/"), "rows", name])
    if fs is not None:
        import pyarrow.fs as pafs
        if fs.get_file_info(file).type != pafs.FileType.File:
            raise OSError(f"{file} is not a regular file")
        with fs.open_input_stream(file) as src:
            data: bytes = src.read()
            return data
    root, real = os.path.realpath(folder), os.path.realpath(file)
    if os.path.commonpath([root, real]) != root:
        raise OSError(f"{file} resolves to {real}, outside the run's shards folder {root}")
    fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{file} is not a regular file")
        return fh.read()


def check_regular(folder: str, names: Iterable[str], checkpoint: object) -> None:
    """A resume opens: each shard file ``names`` of a local ``folder`` must be a regular file
    (not a link, FIFO or device put there), or a ValueError naming it, before any budget is spent."""
    for name in sorted(names):
        file = os.path.join(folder, "rows", name)
        if not stat.S_ISREG(os.lstat(file).st_mode):
            raise ValueError(f"{file}: a shard file that rows of checkpoint {checkpoint} point at is not a "
                             "regular file (a link, FIFO or device was put there); it is never opened. "
                             "Put the shard file back, or start a new checkpoint.")


# ------------------------------------------------------------ a folder or a URI, written whole
def is_uri(location: str) -> bool:
    return "://" in str(location)


def fs_of(folder: str) -> tuple[pafs.FileSystem | None, str]:
    """``(filesystem, path)`` for pyarrow; None for a plain local folder (written with fsync)."""
    if not is_uri(folder):
        return None, folder
    import pyarrow.fs as pafs
    fs, path = pafs.FileSystem.from_uri(folder)     # the filesystem and the path inside it
    return fs, path


def join(folder: str, *names: str) -> str:
    return "/".join([folder.rstrip("/"), *names])


def put(fs: pafs.FileSystem | None, path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` whole: a temporary name, then a rename."""
    tmp = path + ".tmp"
    if fs is None:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        return
    with fs.open_output_stream(tmp) as out:
        out.write(data)
    fs.move(tmp, path)


def mkdir(fs: pafs.FileSystem | None, path: str) -> None:
    if fs is None:
        os.makedirs(path, exist_ok=True)
    else:
        fs.create_dir(path, recursive=True)


def read_bytes(fs: pafs.FileSystem | None, path: str) -> bytes:
    if fs is None:
        with open(path, "rb") as fh:
            return fh.read()
    with fs.open_input_stream(path) as src:
        data: bytes = src.read()
        return data


def listing(fs: pafs.FileSystem | None, path: str) -> list[str]:
    """File names in ``path`` (none when it does not exist)."""
    if fs is None:
        try:
            return sorted(os.listdir(path))
        except FileNotFoundError:
            return []
    import pyarrow.fs as pafs
    infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return sorted(info.base_name for info in infos if info.type == pafs.FileType.File)


def delete(fs: pafs.FileSystem | None, path: str) -> None:
    if fs is None:
        os.unlink(path)
    else:
        fs.delete_file(path)
