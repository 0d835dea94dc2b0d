"""The key index beside a JSONL checkpoint: resume a large run without decoding its rows.

``<checkpoint>.keys`` holds one short JSON line per checkpoint row, written right after the
row's batch is fsynced to the checkpoint::

    {"_whileai_ray_keys": 2, "created": "<the checkpoint header's created stamp>"}
    [end, crc, scenario_id, prompt_sha, rollout_index, eval_run]
    ...

``end`` is the byte offset of the newline that ends the row's line in the checkpoint; the rest
is the row's ``schema.row_key``; ``crc`` is the CRC-32 of the line's bytes continued over the
key (``entry_crc``), so an entry vouches for the line AND the key it names. Opening a
checkpoint then costs a read, a newline scan, a CRC pass and this small file (well under a
second for 100,000 rows) instead of decoding every row (seconds); rows are decoded when used.

The checkpoint stays the truth. An entry is used only when a line of the checkpoint ends at
``end`` and its CRC over that line and the entry's key matches; any other line (the index was
lost, is behind after a crash between the two writes, the file was edited, or an entry's key
was changed) is decoded and its key recomputed, and the index is rewritten whole. A missing,
foreign, older-format or unreadable index is simply rebuilt.
"""
from __future__ import annotations

import json
import zlib
from pathlib import Path

from .atomic import atomic_path, fsync_file

__all__ = ["KEYS_HEADER", "KEYS_VERSION", "index_path", "read_index", "write_index", "entry_line", "line_crc",
           "entry_crc"]

KEYS_HEADER = "_whileai_ray_keys"
KEYS_VERSION = 2          # 1 checked the line alone; its entries are not trusted


def index_path(checkpoint_path) -> Path:
    return Path(str(checkpoint_path) + ".keys")


def line_crc(line: bytes) -> int:
    return zlib.crc32(line)


def entry_crc(crc: int, key: tuple) -> int:
    """The CRC an entry stores: the line's CRC-32 (``line_crc``) continued over its key."""
    sid, sha, ri, er = key
    return zlib.crc32(f"{sid}|{sha}|{ri}|{er}".encode("utf-8", "surrogatepass"), crc)


def entry_line(end: int, crc: int, key: tuple) -> bytes:
    """One index line (ASCII JSON), newline-terminated; ``crc`` is the line's ``line_crc``."""
    return (json.dumps([end, entry_crc(crc, key), *key], ensure_ascii=True, separators=(",", ":"))
            + "\n").encode("ascii")


def _header_line(created) -> bytes:
    return (json.dumps({KEYS_HEADER: KEYS_VERSION, "created": created}, separators=(",", ":")) + "\n").encode("ascii")


def read_index(path, created) -> dict:
    """``{end: (entry_crc, key)}`` from the index at ``path``; ``{}`` when it is missing,
    unreadable, of another format version or of another checkpoint (another ``created``
    stamp). A torn last line is ignored."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return {}
    lines = data.split(b"\n")
    try:
        head = json.loads(lines[0])
    except ValueError:
        return {}
    if not isinstance(head, dict) or head.get(KEYS_HEADER) != KEYS_VERSION or head.get("created") != created:
        return {}
    out = {}
    decode = json.JSONDecoder().decode
    for line in lines[1:]:
        if not line:
            continue
        try:
            end, crc, sid, psha, ri, er = decode(line.decode("ascii"))
        except (ValueError, UnicodeDecodeError):
            continue                      # torn or foreign line: that row is decoded instead
        out[end] = (crc, (sid, psha, ri, er))
    return out


def write_index(path, created, entries) -> None:
    """Rewrite the whole index atomically from ``[(end, crc, key)]``."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(_header_line(created))
        fh.write(b"".join(entry_line(end, crc, key) for end, crc, key in entries))
        fsync_file(fh)
