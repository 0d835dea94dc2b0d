"""Planner snapshots beside a checkpoint: plain data, appended as the run goes, never executed.

A reproducible run with a checkpoint keeps ``<checkpoint>.plan``: the planner's state at a round
boundary (right after round r was observed), so that an exact resume replays only the rounds
after r instead of every unit from the seed (about 0.3 ms a unit: 30 s for 100,000 rows).
It holds the planner (``Planner.state()``: counters, recipes, digests, sketches; no
Situation objects, no writer), the rounds decided after r as rows of ints, and for every row
of the rounds <= r a 64-bit digest of its ``row_key``, its ordinal and its phrasing index.
All those rows are on disk when it is written (rows are fsynced before their round is observed).

The file is a run of frames (``snapshots/frames.py``: JSON header + numeric arrays, Arrow
IPC, zstd, CRC). The first frame is a *base* (the whole state); each later snapshot appends a
*delta*: the new tail of every append-only array (``logs``), the changed rows of every array
that changes in place (``tables``) and the small ``meta`` whole. When the deltas outgrow a
fifth of the base, the next snapshot rewrites the file (to a temporary name, then renamed
over the old one) as a base of the previous snapshot and a delta to this one (compaction: the
step before the last is always kept). So a snapshot costs about what changed since the last
one, and the file stays within about 1.2x of the state's compressed size (zstd level 6).

Reading (``read_snapshot``) checks the file and merges its whole frames, decoding one at a time
(the state after the last one, or after the first ``upto``: a caller whose last state names rows
that are not on disk falls back to an earlier frame); ``merge(frames)`` applies decoded frames.
A file that is not this format (an old pickled snapshot, another version, garbage), or that names
another checkpoint (``created``) or plan (fingerprint), is not used: the caller gets the reason,
which reaches ``data.warnings``, and the run replays from the seed, as without a snapshot. A torn
last frame (a crash while appending) is simply left out. Nothing in the file is unpickled or run.
"""
from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from .frames import MAGIC, decode_errors, decode_frame, decode_header, frame_payloads, write_frame

if TYPE_CHECKING:
    from ..atomic import StrPath

__all__ = ["FORMAT", "snapshot_path", "SnapshotFile", "read_snapshot", "merge"]

FORMAT = 2                         # 1 was a pickle (never read again)
COMPACT_RATIO = 0.2

# the state a file holds after a snapshot: (meta JSON, {log: its length}, {table: array})
_Last: TypeAlias = "tuple[str, dict[str, int], dict[str, np.ndarray]]"
# one frame: (header, {name: array})
_Frame: TypeAlias = "tuple[dict, dict[str, np.ndarray]]"


def snapshot_path(checkpoint_path: StrPath) -> Path:
    from ..atomic import real_path      # the checkpoint's one name: a symlink to it shares its snapshots
    return Path(real_path(checkpoint_path) + ".plan")


class SnapshotFile:
    """Writes one run's snapshots (call ``write`` from one thread at a time)."""

    def __init__(self, path: StrPath, created: str | None, plan_fingerprint: str | None, level: int = 6) -> None:
        self.path, self.created, self.plan, self.level = Path(path), created, plan_fingerprint, level
        self._base: str | None = None        # token of the base frame the file starts with
        self._seq = 0
        self._base_bytes = 0
        self._delta_bytes = 0
        # (meta_json, {log: length}, tables) of the last snapshot written: a log's length only (it
        # is append-only: its content then is a prefix of its content now), never a view of it,
        # which would keep the buffer a column has since outgrown (and let go) alive
        self._last: _Last | None = None
        self.size = 0                        # bytes in the file

    def continue_file(self, snap: dict, last: _Last) -> bool:
        """Go on appending to the file ``read_snapshot`` returned as ``snap`` (a resumed run): its
        frames up to the one read last stay (any after it, which that read left out, and a torn
        tail are cut off), and the next snapshot is a delta from ``last`` (``_last``'s shape: the
        state the file holds after that frame: meta JSON, log lengths, tables) instead of a base
        of the whole state (the million-row resume's largest allocation, at its end). Only while
        the file is as it was read: False (nothing changed) otherwise."""
        sizes = snap.get("sizes") or []
        keep = sum(sizes)
        try:
            if not sizes or self.path.stat().st_size != snap.get("bytes") or keep > snap["bytes"]:
                return False
            if keep < snap["bytes"]:
                with open(self.path, "r+b") as fh:
                    fh.truncate(keep)
                    fh.flush()
                    os.fsync(fh.fileno())
        except OSError:
            return False
        self._base, self._seq = snap["frames"][0]["base"], len(sizes) - 1
        self._base_bytes, self._delta_bytes, self.size = sizes[0], sum(sizes[1:]), keep
        self._last = last
        return True

    def write(self, meta_json: str, logs: dict[str, np.ndarray], tables: dict[str, np.ndarray]) -> int:
        """Write one snapshot; returns the bytes written. ``logs`` are append-only arrays (their
        prefix never changes), ``tables`` arrays taken by copy; ``meta_json`` the small state.

        Usually a delta, appended. The first snapshot is a base; when the deltas outgrow
        ``COMPACT_RATIO`` of the base, the file is rewritten as a base of the *previous*
        snapshot plus a delta to this one, so the file always holds the step before the last
        (a reader whose last state names rows lost from the checkpoint can fall back to it)."""
        last = self._last
        try:
            if last is not None and any(name not in logs or len(logs[name]) < n for name, n in last[1].items()):
                last = None                      # a log that did not only grow: the step before is gone
            if self._base is None or last is None:
                token = secrets.token_hex(8)
                frames = self._replace([self._frame(token, 0, meta_json, logs, tables, None)])
            elif self._delta_bytes > COMPACT_RATIO * self._base_bytes:
                token = secrets.token_hex(8)
                before = {name: logs[name][:n] for name, n in last[1].items()}
                frames = self._replace([self._frame(token, 0, last[0], before, last[2], None),
                                        self._frame(token, 1, meta_json, logs, tables, last)])
            else:
                token = self._base
                with open(self.path, "r+b") as fh:
                    fh.seek(0, os.SEEK_END)
                    frames = [write_frame(fh, *self._frame(token, self._seq + 1, meta_json, logs, tables, last),
                                          self.level)]
                    fh.flush()
                    os.fsync(fh.fileno())
        except BaseException:
            self._base = None                # the file may hold half a frame: next time, a fresh base
            raise
        if token != self._base:                  # (frames: the bytes of each frame written)
            self._base, self._seq, self._base_bytes = token, len(frames) - 1, frames[0]
            self._delta_bytes = sum(frames[1:])
            self.size = sum(frames)
        else:
            self._seq += 1
            self._delta_bytes += frames[0]
            self.size += frames[0]
        self._last = (meta_json, {name: len(arr) for name, arr in logs.items()}, tables)
        return sum(frames)

    def _frame(self, token: str, seq: int, meta_json: str, logs: dict[str, np.ndarray],
               tables: dict[str, np.ndarray], prev: _Last | None) -> _Frame:
        """``(header, arrays)`` of a base frame (``prev`` None) or of a delta from the snapshot
        ``prev`` (``_last``'s shape)."""
        header: dict = {"format": FORMAT, "kind": "delta" if prev else "base", "created": self.created,
                  "plan": self.plan, "base": token, "seq": seq, "meta": meta_json, "roles": {}, "lengths": {},
                  "logs": sorted(logs)}           # (which arrays only grow: SnapshotFile.continue_file)
        prev_logs, prev_tables = (prev[1], prev[2]) if prev else ({}, {})
        arrays: dict[str, np.ndarray] = {}
        for name, arr in logs.items():
            before = prev_logs.get(name)
            if before is None or len(arr) < before:
                header["roles"][name], arrays[name] = "set", arr
            elif len(arr) == before:
                header["roles"][name] = "keep"
            else:
                header["roles"][name], arrays[name] = "append", arr[before:]
        for name, arr in tables.items():
            self._table_delta(name, arr, prev_tables.get(name), header, arrays)
        return header, arrays

    @staticmethod
    def _table_delta(name: str, arr: np.ndarray, prev: np.ndarray | None, header: dict,
                     arrays: dict[str, np.ndarray]) -> None:
        if prev is None or prev.shape[1:] != arr.shape[1:] or len(arr) < len(prev) or not len(prev):
            header["roles"][name], arrays[name] = "set", arr
            return
        m = len(prev)
        diff = prev != arr[:m]
        if diff.ndim > 1:
            diff = diff.reshape(m, -1).any(axis=1)
        idx = np.concatenate((np.flatnonzero(diff), np.arange(m, len(arr)))).astype(np.int64)
        if not len(idx):
            header["roles"][name] = "keep"
            return
        if 2 * len(idx) > len(arr):
            header["roles"][name], arrays[name] = "set", arr
            return
        header["roles"][name], header["lengths"][name] = "patch", len(arr)
        arrays[name + "@i"], arrays[name + "@v"] = idx, arr[idx]

    def _replace(self, frames: list[_Frame]) -> list[int]:
        """A new file of ``frames`` (``(header, arrays)`` each), written aside and renamed over
        the old one; the bytes of each."""
        from ..atomic import unique_tmp
        tmp = unique_tmp(self.path)          # a unique name: never a planted <plan>.tmp link
        with open(tmp, "wb") as fh:
            sizes = [write_frame(fh, header, arrays, self.level) for header, arrays in frames]
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        return sizes


class _Merge:
    """Frames applied one at a time (``add``), each frame's arrays let go once applied, so a
    reader holds the merged state and one frame, not every frame and the state besides."""

    def __init__(self) -> None:
        self.cur: dict[str, list[np.ndarray]] = {}
        self.meta: object = None             # the last frame's meta (its JSON text)
        self.n = 0

    def add(self, header: dict, arrays: dict[str, np.ndarray]) -> None:
        i, cur = self.n, self.cur
        roles, lengths = header.get("roles"), header.get("lengths")
        if not isinstance(roles, dict) or not isinstance(lengths, dict):
            raise ValueError(f"frame {i} has no roles")
        nxt: dict[str, list[np.ndarray]] = {}
        for name, role in roles.items():
            if role == "set":
                nxt[name] = [arrays[name]]
            elif role == "keep":
                nxt[name] = cur[name]
            elif role == "append":
                chunks, new = cur[name], arrays[name]
                if new.dtype != chunks[0].dtype or new.shape[1:] != chunks[0].shape[1:]:
                    raise ValueError(f"frame {i} appends {new.dtype}{new.shape} to {name!r}")
                nxt[name] = chunks + [new] if len(new) else chunks
            elif role == "patch":
                old = np.concatenate(cur[name]) if len(cur[name]) > 1 else cur[name][0]
                idx, val, n = arrays[name + "@i"], arrays[name + "@v"], int(lengths[name])
                if n < len(old) or val.dtype != old.dtype or val.shape != (len(idx),) + old.shape[1:] \
                        or (len(idx) and (idx.dtype != np.int64 or idx.min() < 0 or idx.max() >= n)):
                    raise ValueError(f"frame {i} patches {name!r} out of range")
                out = np.zeros((n,) + old.shape[1:], dtype=old.dtype)
                out[:len(old)] = old
                out[idx] = val
                nxt[name] = [out]
            else:
                raise ValueError(f"frame {i} gives {name!r} the unknown role {role!r}")
        self.cur, self.meta, self.n = nxt, header["meta"], i + 1

    def result(self) -> _Frame:
        """``(meta, {name: array})``; the chunks are joined one array at a time and let go."""
        merged: dict[str, np.ndarray] = {}
        cur = self.cur
        for name in list(cur):
            chunks = cur.pop(name)
            merged[name] = chunks[0] if len(chunks) == 1 else np.concatenate(chunks)
            del chunks
        meta = json.loads(self.meta) if isinstance(self.meta, str) else None
        if not isinstance(meta, dict):
            raise ValueError("the snapshot's meta is not an object")
        return meta, merged


def merge(frames: Iterable[_Frame]) -> _Frame:
    """Apply the frames in order: ``(meta, {name: array})`` after the last one. Raises
    ValueError (or KeyError, TypeError, IndexError) when they do not fit together."""
    m = _Merge()
    for header, arrays in frames:
        m.add(header, arrays)
    return m.result()


def read_snapshot(path: StrPath, created: str | None, plan_fingerprint: str | None, upto: int | None = None,
                  usable: Callable[[dict], tuple[bool, str | None]] | None = None) -> tuple[dict | None, str | None]:
    """``(snapshot, problem)``. ``snapshot`` is ``{"frames", "meta", "arrays", "bytes", "sizes"}`` when the
    file at ``path`` is a snapshot of this checkpoint and plan, else None; ``problem`` says why a
    file that is there was not used (None when there is no file). ``frames``: the headers of the
    frames merged, in order; ``meta`` and ``arrays``: the state after the last of them (after the
    first ``upto`` of them when given: a caller whose last state names rows that are not on disk
    reads an earlier one). The frames are decoded and merged one at a time: the reader holds the
    state and one frame's arrays, never every frame's. ``bytes``: the file's size; ``sizes``: the
    bytes of each frame merged (a writer may go on after them: ``SnapshotFile.continue_file``). ``usable(meta) -> (ok, why_not)``: the state after the last
    frame whose meta (the JSON object) it accepts, found from the frames' headers before any
    arrays are decoded; none accepted: ``(None, why_not)`` of the last frame."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"could not be read ({exc})"
    if not data.startswith(MAGIC):
        what = "a pickle from an older version" if data[:1] == b"\x80" else "not a planner snapshot"
        return None, f"is {what}; it was not opened"
    payloads, stopped = frame_payloads(data)
    if usable is not None:
        last, why = _last_usable(payloads[:upto], usable)
        if last is None:
            return None, why
        upto = last + 1 if last + 1 < len(payloads) else upto
    headers: list[dict] = []
    merging, bad = _Merge(), decode_errors()
    try:
        for k, payload in enumerate(payloads[:upto]):
            try:
                header, arrays = decode_frame(payload)
            except bad as exc:
                pos = sum(len(p) + 16 for p in payloads[:k])     # (a frame's head: 16 bytes)
                stopped = f"an unreadable frame at byte {pos} ({exc})"
                break
            if k == 0:
                if header.get("format") != FORMAT or header.get("kind") != "base":
                    return None, f"is format {header.get('format')!r} ({header.get('kind')}), this version reads {FORMAT}"
                if created is None or header.get("created") != created:
                    return None, "belongs to another checkpoint (its created stamp differs)"
                if header.get("plan") != plan_fingerprint:
                    return None, "was taken for another plan (its fingerprint differs)"
            elif header.get("kind") != "delta" or header.get("base") != headers[0].get("base") or header.get("seq") != k:
                break                                  # deltas of this base, in order, only
            merging.add(header, arrays)
            del arrays
            headers.append({key: v for key, v in header.items() if key != "shapes"})
        if not headers:
            return None, f"has no readable frame ({stopped})"
        size = len(data)
        sizes = [len(p) + 16 for p in payloads[:len(headers)]]       # (a frame's head: 16 bytes)
        del payloads, payload, data              # (the file's bytes go before the chunks are joined)
        meta, arrays = merging.result()
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        return None, f"does not merge ({exc})"
    return {"frames": headers, "meta": meta, "arrays": arrays, "bytes": size, "sizes": sizes}, None


def _last_usable(payloads: list[memoryview],
                 usable: Callable[[dict], tuple[bool, str | None]]) -> tuple[int | None, str | None]:
    """``(index, None)`` of the last frame whose meta ``usable`` accepts (headers only; a frame
    that does not decode ends the search), or ``(None, why)``."""
    last: int | None = None
    why: str | None = "has no readable frame"
    for k, payload in enumerate(payloads):
        try:
            meta = json.loads(decode_header(payload).get("meta") or "null")
        except decode_errors() + (json.JSONDecodeError,):
            break
        ok, why_not = usable(meta if isinstance(meta, dict) else {})
        if ok:
            last = k
        else:
            why = why_not
    return last, (None if last is not None else why)
