"""CheckpointSink: what the driver appends landed rows to (the rows() form, one fsync a batch)."""
from __future__ import annotations

from .row_builder import export_row


class CheckpointSink:
    def __init__(self, checkpoint):
        self.checkpoint = checkpoint
        self.loaded = checkpoint.open()
        self.header = checkpoint.header
        self.warnings = list(checkpoint.warnings)

    def append(self, rows: list[dict]) -> None:
        self.checkpoint.append([export_row(r) for r in rows])

    def close(self) -> None:
        self.checkpoint.close()


class StreamSink:
    """``output=`` while the run goes: landed rows appended as JSONL, flushed per batch.

    The file is truncated when the run starts; at the end ``save(meta=True)`` rewrites it
    atomically with every row of the run (resumed ones included) plus the sidecar.
    """

    def __init__(self, path: str):
        import os
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        self.path = path
        self._fh = open(path, "wb")

    def append(self, rows: list[dict]) -> None:
        from .jsonl import dump_line
        self._fh.write(b"".join(dump_line(export_row(r)) for r in rows))
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()
