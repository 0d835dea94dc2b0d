"""The key index beside a JSONL checkpoint: resume a large run without decoding its rows.

``<checkpoint>.keys`` is one JSON header line, then fixed 48-byte binary records, one per
checkpoint row, appended right after the row's batch is fsynced to the checkpoint::

    {"_whileai_ray_keys": 4, "created": "<the checkpoint header's created stamp>", "record": 48}
    <start u64><end u64><a u64><b i64><crc u32><n u32><row u32><rcrc u32>   (little-endian, ``RECORD``)
    ...

``start``/``end`` are the byte offsets of the row's line in the checkpoint (``end`` is its
newline); ``a``/``b`` are the 128-bit digest of the row's ``row_key`` (``row_key_set.key_digest``).
Records come in groups: the rows of one appended batch, whose lines are contiguous in the
checkpoint. The group's last record carries ``n`` (how many rows the group holds) and ``crc``:
the CRC-32 of the group's bytes in the checkpoint (from its first line's start through its
last newline) continued over the group's digests, so a group vouches for its lines AND the keys
it names; the other records carry ``n = 0``. Each record's ``row`` is the CRC-32 of its own line (newline
included), so a group whose bytes changed can say which of its rows changed; the group's last
record's ``rcrc`` is the CRC-32 of the group's records themselves (``rcrc`` fields zeroed), so a
damaged index (its records garbled) is told from damaged rows (the records sound, the bytes
not). Opening a checkpoint then costs one CRC pass over
large spans (``zlib`` releases the GIL) and a ``numpy`` read of this file, instead of decoding
every row or JSON-parsing a line per row; rows are decoded when used.

The checkpoint stays the truth. A group is used only when its bytes start where the scan is, its
newlines are exactly its rows' ends and its CRC matches; any other line (the index was lost, is
behind after a crash between the two writes, the file was edited, or a digest was changed) is
decoded and its key recomputed, and the index is rewritten whole. A missing, foreign,
older-format (no ``row`` checksums: version 3 and before) or unreadable index is simply rebuilt,
every line trusted as it decodes; a torn last group is ignored. When the index is sound (every
group's ``rcrc`` holds), a decoded line whose CRC no record holds, met before every indexed row
was found, was edited or inserted after it was written: ``jsonl_lines`` leaves it out (its unit is
played again) and names it in a warning. Lines after every indexed row (a crash between the
checkpoint's write and the index's) are trusted.
"""
from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np

from ..atomic import StrPath, atomic_path, fsync_file, real_path

__all__ = ["KEYS_HEADER", "KEYS_VERSION", "RECORD", "GROUP_MAX", "index_path", "read_index", "write_index",
           "group_records", "group_crc", "digest_pairs", "records_for", "records_crc", "sound_groups"]

KEYS_HEADER = "_whileai_ray_keys"
KEYS_VERSION = 4          # 1 checked the line alone, 2 was a JSON line a row, 3 had no row CRCs: all rebuilt
RECORD = np.dtype([("start", "<u8"), ("end", "<u8"), ("a", "<u8"), ("b", "<i8"), ("crc", "<u4"), ("n", "<u4"),
                   ("row", "<u4"), ("rcrc", "<u4")])
GROUP_MAX = 1024          # rows a rebuilt group holds at most


def index_path(checkpoint_path: StrPath) -> Path:
    return Path(real_path(checkpoint_path) + ".keys")


def digest_pairs(recs: np.ndarray) -> bytes:
    """The records' digests, 16 bytes each (``a`` then ``b``), as a group's CRC covers them."""
    pairs = np.empty(len(recs), dtype=[("a", "<u8"), ("b", "<i8")])
    pairs["a"], pairs["b"] = recs["a"], recs["b"]
    return pairs.tobytes()


def group_crc(data: bytes | memoryview, recs: np.ndarray) -> int:
    """The CRC a group's last record stores: ``data`` (the group's bytes in the checkpoint,
    its last newline included) continued over the group's digests."""
    return zlib.crc32(digest_pairs(recs), zlib.crc32(data))


def records_crc(recs: np.ndarray) -> int:
    """The CRC of one group's records themselves (their ``rcrc`` fields counted as 0)."""
    plain = np.array(recs, dtype=RECORD, copy=True)
    plain["rcrc"] = 0
    return zlib.crc32(plain.tobytes())


def group_records(starts: np.ndarray, ends: np.ndarray, a: np.ndarray, b: np.ndarray, data: bytes | memoryview,
                  rows: np.ndarray | None = None) -> np.ndarray:
    """The records of one group: rows whose lines are contiguous in the checkpoint (``data``:
    their bytes, from the first start through the last newline; ``rows``: each line's CRC)."""
    recs = np.zeros(len(starts), dtype=RECORD)
    recs["start"], recs["end"], recs["a"], recs["b"] = starts, ends, a, b
    if rows is not None:
        recs["row"] = rows
    if len(recs):
        recs["n"][-1] = len(recs)
        recs["crc"][-1] = group_crc(data, recs)
        recs["rcrc"][-1] = records_crc(recs)
    return recs


def records_for(lines: list[bytes], start: int, a: list[int] | np.ndarray, b: list[int] | np.ndarray,
                data: bytes | None = None) -> np.ndarray:
    """The records of ``lines`` (bytes, each with its newline) written one after another from
    offset ``start``, with their keys' digests ``a``/``b``: groups of at most ``GROUP_MAX``. Each
    line's CRC is taken here, where the line is written, in the same pass as its group's.
    ``data``: the lines already joined (what was written), read in place instead of joined again."""
    crc32 = zlib.crc32
    lens = np.array([len(line) for line in lines], dtype=np.int64)
    rows = np.array([crc32(line) for line in lines], dtype=np.uint32)
    offsets = np.concatenate(([0], np.cumsum(lens))).tolist()     # each line's place in ``data``, and its end
    starts, ends = start + np.asarray(offsets[:-1], dtype=np.int64), start + np.asarray(offsets[1:], dtype=np.int64) - 1
    a, b = np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.int64)
    view = memoryview(b"".join(lines) if data is None else data)
    parts = [group_records(starts[i:i + GROUP_MAX], ends[i:i + GROUP_MAX], a[i:i + GROUP_MAX], b[i:i + GROUP_MAX],
                           view[offsets[i]:offsets[min(i + GROUP_MAX, len(lines))]], rows[i:i + GROUP_MAX])
             for i in range(0, len(lines), GROUP_MAX)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=RECORD)


def sound_groups(recs: np.ndarray | None) -> bool:
    """Whether every group of ``recs`` (whole groups, file order) is as it was written: its
    records' own CRC (``rcrc``) holds. False: the index itself was damaged, so it cannot say
    which rows changed."""
    if recs is None:
        return False
    last = np.flatnonzero(recs["n"])
    first = np.concatenate([[0], last[:-1] + 1]).tolist()
    stored = recs["rcrc"][last].tolist()
    return all(records_crc(recs[f:l + 1]) == c for f, l, c in zip(first, last.tolist(), stored))


def _header_line(created: str | None) -> bytes:
    return (json.dumps({KEYS_HEADER: KEYS_VERSION, "created": created, "record": RECORD.itemsize},
                       separators=(",", ":")) + "\n").encode("ascii")


def read_index(path: StrPath, created: str | None) -> np.ndarray | None:
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


def write_index(path: StrPath, created: str | None, records: np.ndarray) -> None:
    """Rewrite the whole index atomically from ``records`` (whole groups, ``RECORD``)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(_header_line(created))
        fh.write(np.ascontiguousarray(records, dtype=RECORD).tobytes())
        fsync_file(fh)
