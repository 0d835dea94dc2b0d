"""CheckpointSink: what the driver appends landed rows to (the rows() form, one fsync a batch)."""
from __future__ import annotations

from .row_builder import export_row


class CheckpointSink:
    def __init__(self, checkpoint):
        self.checkpoint = checkpoint
        self.loaded = checkpoint.open()

    def append(self, rows: list[dict]) -> None:
        self.checkpoint.append([export_row(r) for r in rows])

    def close(self) -> None:
        self.checkpoint.close()
