"""The key index beside a JSONL checkpoint: resume a large run without decoding its rows.

``<checkpoint>.keys`` is one JSON header line, then fixed 40-byte binary records, one per
checkpoint row, appended right after the row's batch is fsynced to the checkpoint::

    {"_whileai_ray_keys": 3, "created": "<the checkpoint header's created stamp>", "record": 40}
    <start u64><end u64><a u64><b i64><crc u32><n u32>      (little-endian, numpy ``RECORD``)
    ...

``start``/``end`` are the byte offsets of the row's line in the checkpoint (``end`` is its
newline); ``a``/``b`` are the 128-bit digest of the row's ``row_key`` (``row_key_set.key_digest``).
Records come in groups: the rows of one appended batch, whose lines are contiguous in the
checkpoint. The group's last record carries ``n`` (how many rows the group holds) and ``crc``:
the CRC-32 of the group's bytes in the checkpoint (from its first line's start through its
last newline) continued over the group's digests, so a group vouches for its lines AND the keys
it names; the other records carry ``n = 0``. Opening a checkpoint then costs one CRC pass over
large spans (``zlib`` releases the GIL) and a ``numpy`` read of this file, instead of decoding
every row or JSON-parsing a line per row; rows are decoded when used.

The checkpoint stays the truth. A group is used only when its bytes start where the scan is, its
newlines are exactly its rows' ends and its CRC matches; any other line (the index was lost, is
behind after a crash between the two writes, the file was edited, or a digest was changed) is
decoded and its key recomputed, and the index is rewritten whole. A missing, foreign,
older-format or unreadable index is simply rebuilt; a torn last group is ignored.
"""
from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np

from .atomic import atomic_path, fsync_file

__all__ = ["KEYS_HEADER", "KEYS_VERSION", "RECORD", "GROUP_MAX", "index_path", "read_index", "write_index",
           "group_records", "group_crc", "digest_pairs", "records_for"]

KEYS_HEADER = "_whileai_ray_keys"
KEYS_VERSION = 3          # 1 checked the line alone, 2 was a JSON line a row: both are rebuilt
RECORD = np.dtype([("start", "<u8"), ("end", "<u8"), ("a", "<u8"), ("b", "<i8"), ("crc", "<u4"), ("n", "<u4")])
GROUP_MAX = 1024          # rows a rebuilt group holds at most


def index_path(checkpoint_path) -> Path:
    return Path(str(checkpoint_path) + ".keys")


def digest_pairs(recs: np.ndarray) -> bytes:
    """The records' digests, 16 bytes each (``a`` then ``b``), as a group's CRC covers them."""
    pairs = np.empty(len(recs), dtype=[("a", "<u8"), ("b", "<i8")])
    pairs["a"], pairs["b"] = recs["a"], recs["b"]
    return pairs.tobytes()


def group_crc(data, recs: np.ndarray) -> int:
    """The CRC a group's last record stores: ``data`` (the group's bytes in the checkpoint,
    its last newline included) continued over the group's digests."""
    return zlib.crc32(digest_pairs(recs), zlib.crc32(data))


def group_records(starts, ends, a, b, data) -> np.ndarray:
    """The records of one group: rows whose lines are contiguous in the checkpoint (``data``:
    their bytes, from the first start through the last newline)."""
    recs = np.zeros(len(starts), dtype=RECORD)
    recs["start"], recs["end"], recs["a"], recs["b"] = starts, ends, a, b
    if len(recs):
        recs["n"][-1] = len(recs)
        recs["crc"][-1] = group_crc(data, recs)
    return recs


def records_for(lines: list, start: int, a, b) -> np.ndarray:
    """The records of ``lines`` (bytes, each with its newline) written one after another from
    offset ``start``, with their keys' digests ``a``/``b``: groups of at most ``GROUP_MAX``."""
    lens = np.fromiter((len(line) for line in lines), dtype=np.int64, count=len(lines))
    ends = start + np.cumsum(lens) - 1
    starts = ends - lens + 1
    a, b = np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.int64)
    parts = [group_records(starts[i:i + GROUP_MAX], ends[i:i + GROUP_MAX], a[i:i + GROUP_MAX], b[i:i + GROUP_MAX],
                           b"".join(lines[i:i + GROUP_MAX])) for i in range(0, len(lines), GROUP_MAX)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=RECORD)


def _header_line(created) -> bytes:
    return (json.dumps({KEYS_HEADER: KEYS_VERSION, "created": created, "record": RECORD.itemsize},
                       separators=(",", ":")) + "\n").encode("ascii")


def read_index(path, created) -> np.ndarray | None:
    """The whole groups of the index at ``path`` (a ``RECORD`` array, file order); None when it is
    missing, unreadable, of another format version or of another checkpoint (another
    ``created`` stamp). A torn last group is left out."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    cut = data.find(b"\n")
    try:
        head = json.loads(data[:cut]) if cut > 0 else None
    except ValueError:
        return None
    if (not isinstance(head, dict) or head.get(KEYS_HEADER) != KEYS_VERSION or head.get("created") != created
            or head.get("record") != RECORD.itemsize):
        return None
    body = memoryview(data)[cut + 1:]
    recs = np.frombuffer(body[:len(body) - len(body) % RECORD.itemsize], dtype=RECORD)
    closing = np.flatnonzero(recs["n"])
    return recs[:closing[-1] + 1] if len(closing) else recs[:0]


def write_index(path, created, records: np.ndarray) -> None:
    """Rewrite the whole index atomically from ``records`` (whole groups, ``RECORD``)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(_header_line(created))
        fh.write(np.ascontiguousarray(records, dtype=RECORD).tobytes())
        fsync_file(fh)
