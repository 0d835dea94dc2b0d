"""``wai.export_dataset`` (also ``wai.export_training``, one function under two names): graded
rows to a trainer-ready chat JSONL (or Parquet), gated so a broken row never reaches the trainer.

The docs name it beside ``grade(judge=...)``: a ``ScoredData`` "feeds export_dataset" directly.
Where ``data.training_set()`` first *selects* the rows worth training on, this writes the rows
it is given, every one that passes the gate (tool calls that round-trip to structured
arguments; ``export/training.py``), and returns the same export report.

* ``source``: a ``SimulationData`` or ``ScoredData`` (its system prompt and tools are used), a
  row list, or a JSONL / Parquet path (its meta line gives the system prompt and tools when it
  has one; else pass them).
* ``output``: the file to write (``*.parquet`` writes Parquet). A path source with no ``output``
  writes ``<name>.train.jsonl`` beside it; a source in memory with no ``output`` writes nothing
  and returns the report. It never writes onto the source, nor onto a run's checkpoint, its
  sidecars or its Parquet copy (refused before anything is written).
"""
from __future__ import annotations

import os
from pathlib import Path

from ..store.reader import load_rows
from ..store.run_files import refuse_run_file
from .training import export_training

__all__ = ["export_dataset"]


def _from_source(source, system_prompt, tools) -> tuple:
    """``(rows, system_prompt, tools, source path or None)``."""
    if hasattr(source, "trajectories"):
        sp = getattr(source, "system_prompt", "") if system_prompt is None else system_prompt
        return source.trajectories, sp or "", getattr(source, "tools", None) if tools is None else tools, None
    if isinstance(source, (str, os.PathLike)):
        rows, meta = load_rows(source)
        sp = meta.get("system_prompt", "") if system_prompt is None else system_prompt
        return rows, sp or "", meta.get("tools") if tools is None else tools, Path(source)
    if isinstance(source, (list, tuple)) or hasattr(source, "__len__"):
        return list(source), system_prompt or "", tools, None
    raise TypeError(f"export_dataset(source=...): pass a SimulationData, a ScoredData, a row list or a JSONL/Parquet "
                    f"path, not {type(source).__name__}")


def _default_output(src: Path) -> Path:
    stem = src.name[:-len(src.suffix)] if src.suffix else src.name
    return src.with_name(f"{stem}.train.jsonl")


def export_dataset(source, output=None, *, system_prompt: str | None = None, tools=None,
                   validate: bool = True) -> dict:
    """Write ``source``'s rows as training data; returns the export report (``n``, ``path``,
    ``rewards``, ``tool_call_roundtrip``, ``privileged_leaks``, ...)."""
    rows, sp, tools, src = _from_source(source, system_prompt, tools)
    if output is None and src is not None and src.is_file():
        output = _default_output(src)
    if output is not None:
        if src is not None and Path(output).resolve() == src.resolve():
            raise ValueError(f"export_dataset(output={os.fspath(output)!r}) is the source itself; nothing was "
                             "written: pass another path")
        refuse_run_file(output, "export_dataset(output=...)")
    return export_training(rows, output, system_prompt=sp, tools=tools, validate=validate)
