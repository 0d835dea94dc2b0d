"""CheckpointSink: what the driver appends landed rows to (the stored form, one fsync a batch)."""
from __future__ import annotations

import os
from array import array
from collections.abc import Iterable, Sequence

from ...core.rows import stored_row
from .edge_lines import Digest, line_text
from .jsonl import JsonlCheckpoint, dump_line
from .lines import SHARD_KEY
from ..parquet.lane_protocol import ROW_GROUP, Lane, LaneOpener, pack
from ..run_files import parquet_folder_for  # noqa: F401  (re-exported)
from ...core.identity import key_string



def note_landed(landed: dict[str, array[int]], stubs: Iterable[dict]) -> None:
    """Add the stubs the checkpoint just took to ``landed`` (shard file -> offsets of its rows)."""
    for stub in stubs:
        pointer = stub.get(SHARD_KEY)
        if pointer:
            landed.setdefault(pointer[0], array("q")).append(pointer[1])


class CheckpointSink:
    """The checkpoint of a run: every landed batch goes to the JSONL file (one write, flush,
    fsync) and, as a row group, to a Parquet part file beside it; ``close()`` compacts the parts
    into ``<stem>.parquet/rows.parquet``. A resumed run appends to both (keys already present
    are skipped), so the two never disagree about which rows exist.

    ``stubs=True`` (shared storage, ``shards/storage.py``): the rows are the Driver's stubs, written to
    the JSONL as they are (their ``_shard`` pointer included); the actors write the Parquet.

    ``lane`` (``LaneOpener``): the Parquet copy is written by a writer of its own (the Driver's:
    ``runtime/driver/parquet_writer.py``; in one process: ``parquet/lane.py``'s ``LocalLane``),
    opened as ``lane(folder, a, b)`` with the digests of the rows on disk; each batch the JSONL
    takes crosses to it as its lines (``parquet/lane_protocol.py``: ``pack``), and ``close()`` asks it for
    the rows on disk it lacks, sends those, and has it compact. The folder it writes is the one
    this sink writes without it, byte for byte."""

    def __init__(self, checkpoint: JsonlCheckpoint, parquet: bool = True, stubs: bool = False,
                 lane: LaneOpener | None = None) -> None:
        from ..parquet.folder import ParquetSink   # lazy: pyarrow, only when a run writes Parquet
        self.checkpoint = checkpoint
        self.stubs = stubs
        parquet = parquet and not stubs
        self.loaded = checkpoint.open()
        self.header = checkpoint.header
        self.warnings = list(checkpoint.warnings)
        self.lane = lane(str(parquet_folder_for(checkpoint.path)), *self.loaded.digests) \
            if parquet and lane is not None else None
        parquet = parquet and self.lane is None
        self.parquet = ParquetSink(parquet_folder_for(checkpoint.path), mode="a") if parquet else None
        self.landed_shards: dict[str, array[int]] = {}   # stubs: shard file -> offsets of its rows taken
                                                          # (shards/parquet.py publishes the landed parts)
        # a side that holds exactly the JSONL's rows (its files' key tallies say so) takes the
        # rows the JSONL takes without looking each up among a million keys
        self.mirrored = self.parquet is not None and self.parquet.mirrors(self.loaded.digests[0])
        if self.parquet is not None:
            self.warnings.extend(self.parquet.warnings)

    def append(self, rows: list[dict], lines: Sequence[bytes | None] | None = None,
               digests: Sequence[Digest | None] | None = None) -> None:
        """Append a landed batch. ``lines[i]``/``digests[i]``, when given, are row ``i``'s stored
        line and key digest, made where it was built (``edge_lines.py``): the JSONL gets those
        bytes, so those rows are not encoded here; the others are. The Parquet copy takes its
        ``row_json`` (the same text) and key digests from the JSONL's, made once either way. A
        stub (shared storage) is stored as itself: its line is made here."""
        if self.stubs:
            taken = self.checkpoint.append_new([_stub(r) for r in rows])
            note_landed(self.landed_shards, taken)
            if self.parquet is not None:
                self.parquet.write(taken, new=self.mirrored)
            return
        if self.parquet is None and lines is not None and digests is not None:
            # a row whose line and digest came with it is written as those bytes: its stored form
            # is made only for the in-process Parquet copy, which this sink has not got
            stored = [r if line is not None and digest is not None else stored_row(r)
                      for r, line, digest in zip(rows, lines, digests, strict=True)]
        else:
            stored = [stored_row(r) for r in rows]
        written = self.checkpoint.append_lines(stored, lines, digests)
        if self.lane is not None and written:        # lines cross; a row whose line was made here too
            loose = None if lines is None else {id(s) for s, line in zip(stored, lines) if line is None}
            self.lane.send(*pack(written, loose))
        if self.parquet is not None and written:   # keys the JSONL just took: new to a mirror
            self.parquet.write([t[0] for t in written], new=self.mirrored, digests=[t[2] for t in written],
                               texts=[line_text(t[1]) for t in written])

    def close(self, compact: bool = True) -> None:
        """Finish the Parquet side, then close the checkpoint (which releases its lock last, so
        the next run never meets a compaction in progress)."""
        try:
            if self.lane is not None:
                self._close_lane(self.lane, compact)
            elif self.parquet is not None and not compact:    # leave the parts; the next run compacts them
                self.parquet.close(compact=False)
            elif self.parquet is not None:
                # rows a crash left in the JSONL but not yet in a part file (usually at most one row
                # group; all of them when the side was lost); only those are decoded
                missing = [] if self.mirrored else self.parquet.missing_digests(*self.loaded.digests,
                                                                                 self.loaded.key_of)
                step = self.parquet.row_group_size      # decoded a row group at a time: a lost side of
                for at in range(0, len(missing), step):  # a million rows is never held whole
                    self.parquet.write([self.loaded[i] for i in missing[at:at + step]])
                self.parquet.close(compact=True)
        finally:
            self.checkpoint.close()

    def _close_lane(self, lane: Lane, compact: bool) -> None:
        """``close`` with the Parquet copy in its own writer: the rows on disk it lacks (the same
        ones, a row group at a time), then its close, whose warnings are the folder's."""
        if compact:
            missing = lane.missing()
            if missing is None:     # two keys share their first 64 bits: the writer needs the texts
                missing = lane.missing([key_string(self.loaded.key_of(i)) for i in range(len(self.loaded))]) or []
            for at in range(0, len(missing), ROW_GROUP):
                lane.fill([self.loaded[i] for i in missing[at:at + ROW_GROUP]])
        self.warnings.extend(lane.close(compact))


def _stub(row: dict) -> dict:
    """A stub as the checkpoint keeps it: None values dropped, as for a stored row."""
    return {k: v for k, v in row.items() if v is not None}


class StreamSink:
    """``output=`` while the run goes: landed rows appended as JSONL, flushed per batch.

    The file is truncated when the run starts; at the end ``save(meta=True)`` rewrites it
    atomically with every row of the run (resumed ones included) plus the sidecar.
    """

    def __init__(self, path: str) -> None:
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        self.path = path
        self._fh = open(path, "wb")

    def append(self, rows: list[dict], lines: Sequence[bytes | None] | None = None) -> None:
        """Write a landed batch; ``lines[i]``, when given, is row ``i``'s stored line (the bytes
        ``dump_line(stored_row(row))`` makes, made where the row was built)."""
        if lines is None:
            self._fh.write(b"".join(dump_line(stored_row(r)) for r in rows))
        else:
            self._fh.write(b"".join(line or dump_line(stored_row(r)) for r, line in zip(rows, lines, strict=True)))
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()
