"""The data plane off the Driver: what a rollout actor sends back when it writes its own rows.

With ``advanced={"shared_storage": ...}`` (``store/shards/storage.py``) a rollout actor writes each
chunk's rows to a shard file on shared storage and answers the Driver with one compact JSON
``bytes`` payload (``pack``): the shard file, the node, and per unit either where its row is
(start, end, CRC) with the few facts the planner reads that the Driver cannot know (behaviour
signature, tools used, a fault seen, seconds, a reward or an error when there is one), or why
there is no row (``[None]``: past ``time_budget``'s deadline the actor skipped it unplayed).
About 60 bytes a row, where the row itself is ~2 KB.

The Driver (``DataPlane.unpack``) turns the payload back into the results its loop lands, one
per unit, each row a *stub* built from the unit the Driver sent (prompt, scenario id, rollout
index, dimensions, arm: the row's key and everything coverage counts) plus those facts; the
stub is what the checkpoint keeps (``store/shards/storage.py``). It counts the bytes it received and
the row bytes the actors wrote: ``search["data_plane"]``.

No Ray here: the rollout actor and the Driver's loop call these functions.
"""
from __future__ import annotations

import json

from ...core.strict_json import dumps
from ...store.shards.parquet import publish
from ...store.shards.storage import SHARD_KEY, fill_stubs
from ..messages import RolloutResult

__all__ = ["pack", "DataPlane", "with_full_rows"]

_DECODE = json.JSONDecoder().decode


def pack(results: list[RolloutResult], writer, node: str) -> bytes:
    """A chunk's results as the Driver receives them: the usable rows written to a shard first
    (``writer``: ``store.shards.ShardWriter``), then one entry per unit."""
    rows = [r.row for r in results if r.row is not None]
    name, spans, nbytes = writer.write(rows) if rows else (None, [], 0)
    spans = iter(spans)
    entries: list[list] = []
    for r in results:
        if r.skipped:                    # time_budget ran out before the actor started it: ``[None]``
            entries.append([None])
            continue
        row = r.row
        if row is None:
            entries.append([None, r.unusable, r.timed_out, r.error, round(r.seconds, 4)])
            continue
        start, end, crc = next(spans)
        extra: dict[str, object] = {}
        if r.timed_out:
            extra["t"] = True
        if r.error:
            extra["e"] = str(r.error)[:300]
        if isinstance(row.get("reward"), (int, float)) and not isinstance(row.get("reward"), bool):
            extra["r"] = row["reward"]
        entry = [start, end, crc, row.get("behavior_signature"), row.get("tools_used") or [],
                 1 if r.fault_parent else 0, round(r.seconds, 4)]
        if extra:
            entry.append(extra)
        entries.append(entry)
    return dumps({"f": name, "n": node, "b": nbytes, "u": entries}).encode("ascii")


class DataPlane:
    """The Driver's side: unpack payloads into results, count bytes (see the module doc)."""

    def __init__(self, folder: str):
        self.folder = folder
        self.driver_bytes = 0        # payload bytes the Driver received from rollout actors
        self.row_bytes = 0           # row bytes the actors wrote to shards
        self.rows = 0
        self.parquet_filled = 0
        self.parquet: dict = {}      # what publish() did with the actors' staged Parquet parts
        self.fill_error: str | None = None

    def unpack(self, items: list, payload) -> list[RolloutResult]:
        """``items`` are the flight's ``(round, index, unit)``; ``payload`` what came back."""
        if not isinstance(payload, (bytes, bytearray)):
            raise TypeError("a rollout actor on shared storage answered with rows, not a shard payload")
        self.driver_bytes += len(payload)
        msg = _DECODE(payload.decode("ascii"))
        self.row_bytes += msg["b"]
        out = []
        for (_r, _i, unit), entry in zip(items, msg["u"]):
            if entry[0] is None and len(entry) == 1:     # never started: the clock ran out (search/planner/clock.py)
                out.append(RolloutResult.not_started(unit))
                continue
            if entry[0] is None:
                _, unusable, timed_out, error, seconds = entry
                out.append(RolloutResult(unit=unit, row=None, unusable=unusable, timed_out=bool(timed_out),
                                         error=error, seconds=seconds))
                continue
            start, end, crc, sig, tools, fp, seconds = entry[:7]
            extra = entry[7] if len(entry) > 7 else {}
            out.append(RolloutResult(unit=unit, row=_stub(unit, msg, entry, extra), timed_out=bool(extra.get("t")),
                                     fault_parent=bool(fp), error=extra.get("e"), seconds=seconds))
            self.rows += 1
        return out

    def publish(self, landed: dict | None) -> None:
        """After the pool closed: the actors' staged Parquet parts go into ``<shards>/parquet/``
        holding only the rows the checkpoint took (``landed``: ``CheckpointSink.landed_shards``),
        and the landed rows no part holds (an actor died before writing them) are filled in from
        their JSONL shards (``store/shards/parquet.py``)."""
        try:
            self.parquet = publish(self.folder, landed or {})
            self.parquet_filled += self.parquet["filled"]
        except (OSError, ValueError) as exc:     # the JSONL shards hold the rows; the run's result stands
            self.fill_error = f"{type(exc).__name__}: {exc}"[:300]

    def figures(self) -> dict:
        return {"shared_storage": self.folder, "rows": self.rows, "driver_bytes": self.driver_bytes,
                "row_bytes": self.row_bytes, "parquet_filled": self.parquet_filled,
                **({"parquet_fill_error": self.fill_error} if self.fill_error else {}),
                "driver_share": round(self.driver_bytes / self.row_bytes, 4) if self.row_bytes else None}


def _stub(unit, msg: dict, entry: list, extra: dict) -> dict:
    """The row as the Driver keeps it: key fields and planner facts from the unit it sent."""
    start, end, crc, sig, tools, fp, seconds = entry[:7]
    s = unit.situation
    stub = {"prompt": s.prompt, "scenario_id": s.scenario_id, "rollout_index": unit.rollout_index,
            "arm": s.arm, "behavior_signature": sig, "tools_used": tools}
    if s.dims:
        stub["scenario_dimensions"] = dict(s.dims)
    if "r" in extra:
        stub["reward"] = extra["r"]
    stub.update({"_key": list(unit.key), "_ordinal": unit.ordinal, "_node": msg["n"], "_seconds": seconds,
                 "_fp": fp, SHARD_KEY: [msg["f"], start, end, crc]})
    return stub


def with_full_rows(result, folder: str | None, checkpoint=None):
    """The caller's side: a ``RunResult`` whose stub rows are replaced by the rows they point at
    (read from the shards here, never through the Driver). ``folder`` is the run's shards folder
    (None: a resume without shared_storage, the checkpoint says where). A spilled result's rows
    are filled a batch at a time where it is adopted (``simulation.py``)."""
    import dataclasses
    if not any(SHARD_KEY in r for r in result.rows):
        return result
    rows = list(result.rows)
    fill_stubs(rows, folder, checkpoint)
    return dataclasses.replace(result, rows=rows)
