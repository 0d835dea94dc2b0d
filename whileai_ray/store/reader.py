"""Read saved rows back (``wai.load``) and write them atomically (``save()``).

``load_rows(path)`` accepts any of what whileai_ray writes:

* a JSONL file: a ``save()`` / ``output=`` file or a ``checkpoint=`` file (its header line
  is skipped; a torn last line is dropped with a warning);
* a Parquet file (``write_parquet`` / a compacted ``rows.parquet``);
* a folder holding ``rows.parquet`` and/or ``part-*.parquet`` files, or else ``*.jsonl``
  files (read in name order).

It returns ``(rows, meta)``: ``meta`` is the sidecar written by ``save(meta=True)`` when one
is found (``<stem>.meta.json`` or ``<path>.meta.json``; for a folder ``meta.json`` or
``rows.meta.json`` inside it), else ``{}``. Warnings raised while reading (torn or invalid
lines) are appended to ``meta["warnings"]``.
"""
from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from types import ModuleType

from ..core.strict_json import dumps
from .atomic import StrPath, atomic_path, fsync_file
from .checkpoint.lines import dump_line, parse_jsonl
from .shards.storage import resolve_stubs

__all__ = ["load_rows", "save_jsonl_atomic", "save_meta_atomic", "meta_path_for", "read_meta", "is_parquet",
           "jsonl_rows"]

log = logging.getLogger(__name__)

_PARQUET_MAGIC = b"PAR1"


def meta_path_for(path: StrPath) -> Path:
    """Where ``save(meta=True)`` puts the sidecar of ``path``: ``a/b.jsonl`` -> ``a/b.meta.json``."""
    path = Path(path)
    if path.suffix in (".jsonl", ".parquet", ".json"):
        return path.with_suffix(".meta.json")
    return path.with_name(path.name + ".meta.json")


def _meta_candidates(path: Path) -> list[Path]:
    if path.is_dir():
        return [path / "meta.json", path / "rows.meta.json"]
    return [meta_path_for(path), path.with_name(path.name + ".meta.json")]


META_MAX_BYTES = 256 << 20     # a sidecar is a few KB to a few MB; past this it is not one a run wrote


def _read_meta(path: Path, warnings: list[str] | None = None) -> dict:
    """The first sidecar candidate that holds a JSON object. One that cannot be read as one (not
    JSON, nested too deep to decode, larger than ``META_MAX_BYTES``) is skipped, and said in
    ``warnings``: the rows are still read."""
    for candidate in _meta_candidates(path):
        if not candidate.is_file():
            continue
        try:
            if candidate.stat().st_size > META_MAX_BYTES:
                raise ValueError(f"larger than {META_MAX_BYTES >> 20} MB")
            with open(candidate, "r", encoding="utf-8") as fh:
                meta = json.load(fh)
        except (OSError, ValueError, RecursionError) as exc:
            why = "nested too deep to decode" if isinstance(exc, RecursionError) else f"{type(exc).__name__}: {exc}"
            if warnings is not None:
                warnings.append(f"{candidate}: the sidecar could not be read ({why[:200]}); ignored")
            continue
        if isinstance(meta, dict):
            return meta
    return {}


def read_meta(path: StrPath, warnings: list[str] | None = None) -> dict:
    """The ``save(meta=True)`` sidecar of a file or folder (``{}`` when there is none, or when it
    cannot be read: then said in ``warnings``)."""
    return _read_meta(Path(path), warnings)


def is_parquet(path: StrPath) -> bool:
    """Is this file Parquet (by its suffix or its magic bytes)?"""
    return _is_parquet(Path(path))


def jsonl_rows(path: StrPath, warnings: list[str]) -> Iterator[dict]:
    """The rows of a JSONL file one at a time, never all held: a checkpoint header, blank lines
    and lines that are not JSON objects are skipped (each invalid line noted in ``warnings``)."""
    from .checkpoint.lines import HEADER_KEY
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except RecursionError:      # a crafted line: more nesting than the decoder walks
                warnings.append(f"{path}: line {number} is nested too deep to decode; skipped as corrupt")
                continue
            except ValueError:
                torn = not line.endswith(b"\n")
                warnings.append(f"{path}: " + (f"dropped a torn last line ({len(line)} bytes, no trailing newline)"
                                               if torn else f"line {number} is not a JSON object; skipped"))
                continue
            if isinstance(obj, dict) and HEADER_KEY not in obj:
                yield obj
            elif not isinstance(obj, dict):
                warnings.append(f"{path}: line {number} is not a JSON object; skipped")


def _parquet() -> ModuleType:
    """``store/parquet/folder.py``, imported on first use: pyarrow costs ~0.3 s, which ``import whileai_ray``
    and a JSONL-only load must not pay."""
    from .parquet import folder as parquet
    return parquet


def _is_parquet(path: Path) -> bool:
    if path.suffix == ".parquet":
        return True
    with open(path, "rb") as fh:
        return fh.read(4) == _PARQUET_MAGIC


def _read_jsonl(path: Path, warnings: list[str]) -> list[dict]:
    contents = parse_jsonl(path.read_bytes(), str(path))
    warnings.extend(contents.warnings)
    return resolve_stubs(contents.rows, path)     # a shared-storage checkpoint: rows from its shards


def load_rows(path: StrPath) -> tuple[list[dict], dict]:
    """Rows and meta from a JSONL file, a Parquet file, or a folder of either."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load(path=...) expects a file or folder path, got {type(path).__name__}")
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"load(path={str(path)!r}): no such file or folder")
    warnings: list[str] = []
    if path.is_file():
        rows = _parquet().read_parquet(path, warnings) if _is_parquet(path) else _read_jsonl(path, warnings)
    elif any(path.glob("*.parquet")) and ((path / _parquet().COMPACT_NAME).is_file()
                                         or any(path.glob("part-*.parquet"))):
        rows = _parquet().read_parquet(path, warnings)
    else:
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise FileNotFoundError(
                f"load(path={str(path)!r}): the folder holds no rows.parquet, part-*.parquet "
                "or *.jsonl files; pass the file or folder a run wrote"
            )
        rows = []
        for file in files:
            rows.extend(_read_jsonl(file, warnings))
    meta = _read_meta(path, warnings)
    if warnings:
        for message in warnings:
            log.warning(message)
        meta["warnings"] = list(meta.get("warnings") or []) + warnings
    return rows, meta


def _atomic_write_bytes(chunks: Iterable[bytes], path: StrPath) -> str:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        for chunk in chunks:
            fh.write(chunk)
        fsync_file(fh)
    return str(path)


def save_jsonl_atomic(rows: Iterable[dict], path: StrPath) -> str:
    """Write rows as JSONL to a unique temporary sibling (``atomic.unique_tmp``: never through a
    link), then rename it over ``path``; return ``str(path)``."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"save(path=...) expects a file path, got {type(path).__name__}")
    if Path(path).is_dir():
        raise ValueError(f"save(path={str(path)!r}) is a folder; pass a file path such as rows.jsonl")
    return _atomic_write_bytes(_line_chunks(rows), path)


def _line_chunks(rows: Iterable[dict], batch: int = 2000) -> Iterator[bytes]:
    """JSONL bytes of ``rows`` (any iterable) 2,000 lines at a time: rows are never all held."""
    it = iter(rows)
    while True:
        chunk = list(islice(it, batch))
        if not chunk:
            return
        yield b"".join(dump_line(r) for r in chunk)


def save_meta_atomic(meta: dict, path: StrPath) -> str:
    """Write the ``save(meta=True)`` sidecar of ``path`` atomically; return the sidecar path."""
    return _atomic_write_bytes([dumps(meta, indent=1).encode("ascii")], meta_path_for(path))
