"""The messages that cross a process boundary during a run, as typed records.

A run has three kinds of process (see README, "How a run flows"): the caller (``caller/``), the
Driver actor (``driver/``) and the lanes that play units (``pools/``: rollout actors, or threads
in the caller's own process). What they send each other is defined here, once, so a wrong field
is a type error where the message is built (``mypy`` in CI), not a ``KeyError`` in an actor
halfway through a run:

* ``pack_units``: a chunk of units, Driver -> rollout actor.
* ``RolloutResult``: one played unit, lane -> Driver (``pools/rollout_worker.py`` builds it, an actor
  sends it as its ``wire()`` tuple, ``pools/dataplane.py`` rebuilds it from a shared-storage payload,
  ``driver/landing.py`` reads it).
* ``LostCause``: why a unit came back without a row, as ``search["rollouts"]["lost_by"]`` names it.
* ``PoolChunk`` / ``PoolReply``: what the caller's own pool and its player say to each other
  (``pools/caller_pool.py`` <-> ``caller/player.py``).
* ``Poll`` / ``ProgressSnapshot`` (``core/progress.py``, so ``result/`` reads them too): Driver ->
  caller, every poll; ``on_progress`` still gets the documented dict, made from it in one place.

Plain data, no Ray: the messages pickle as they are.
"""
from __future__ import annotations

import json
import pickle
from dataclasses import dataclass
from typing import Any, Final, Literal, NamedTuple

__all__ = ["pack_units", "unpack_units", "RolloutResult", "LostCause", "NODE_LOST", "WORKER_CRASHED",
           "UNSERIALIZABLE", "ROLLOUT_FAILED", "TIMED_OUT", "ChunkKind", "PoolChunk", "PoolReply"]

_LOADS = json.JSONDecoder().decode

LostCause = Literal["node_lost", "worker_crashed", "unserializable_result", "rollout_failed", "timed_out"]
NODE_LOST: Final = "node_lost"                  # the node under the lane died: the units are sent again
WORKER_CRASHED: Final = "worker_crashed"        # the lane's process died: its units are tried alone
UNSERIALIZABLE: Final = "unserializable_result"  # the row cannot be stored (circular, too deep, not JSON)
ROLLOUT_FAILED: Final = "rollout_failed"        # our own code failed on this unit's output
TIMED_OUT: Final = "timed_out"                  # the agent call ran past ``timeout=`` and was cut


_NEW = tuple.__new__


class RolloutResult(NamedTuple):
    """One unit as a lane played it. ``row`` is None when no row can land: ``skipped`` (the
    clock ran out before the lane started it), or ``unusable`` says why (a ``LostCause``, or
    the reason the row itself carries in ``_unusable``). ``verdict`` is added on the Driver
    when a judge lane graded the row (``with_verdict``).

    ``line`` and ``digest`` are the row's checkpoint line and key digest, made by the lane that
    built the row (``store/checkpoint/edge_lines.py``), so the Driver appends bytes instead of
    encoding the row again; None where the lane made none (the Driver encodes the row itself).
    ``text`` is the whole internal row as the Driver's spool writes it (``row_json``, before the
    Driver's ``_landed_s``), made by the lane too (``store/parquet/spill_text.py``), or None.

    ``facts`` set means the result is *slim* (``store/parquet/slim_row.py``): ``row`` is then the
    row's stub (the fields the Driver reads), the whole row is ``text``, and ``facts`` its fact
    values (``score/row_facts.py``); ``full()`` gives it back with the whole row.

    A typed tuple, not a dataclass: the Driver makes one per landed row (``from_wire``), and a
    frozen dataclass's ``__init__`` sets its 13 fields one ``object.__setattr__`` call at a time
    (1.5 us against 0.15)."""
    unit: Any                               # core.unit.WorkUnit
    row: dict | None
    skipped: bool = False
    unusable: str | None = None
    timed_out: bool = False
    fault_parent: bool = False              # the world faulted: a failure the search may mutate from
    error: str | None = None
    seconds: float = 0.0
    verdict: dict | None = None
    line: bytes | None = None               # dump_line(stored_row(row)), exactly
    digest: tuple[int, int, str] | None = None   # key_digest(row_key(row))
    text: str | None = None                 # dump_row(row), lane stamps in (store/parquet/spill_text.py)
    facts: tuple | None = None              # a slim result's fact values (row is its stub)
    marks: tuple | None = None              # search.coverage.row_marks(row), made by the lane

    @classmethod
    def not_started(cls, unit: Any) -> "RolloutResult":
        """The run's clock (``time_budget=``) ran out before the lane started this unit."""
        return cls(unit=unit, row=None, skipped=True)

    @classmethod
    def lost(cls, unit: Any, cause: str, error: str | None, seconds: float = 0.0) -> "RolloutResult":
        """No row: ``cause`` says why, ``error`` what was raised."""
        return cls(unit=unit, row=None, unusable=cause, error=error, seconds=seconds)

    def wire(self) -> tuple:
        """This result as a rollout actor answers the Driver (``RolloutWorker.play_chunk``): every
        field but the unit, as a plain tuple. The Driver holds each unit it sent and puts it back
        (``from_wire``), so a unit is not pickled back, nor this class by name."""
        return self[1:]                     # (a tuple's slice is a plain tuple)

    @classmethod
    def from_wire(cls, unit: Any, wire: tuple) -> "RolloutResult":
        """The result ``wire`` (``wire()``) stands for, with ``unit``, the one the Driver sent for it."""
        return _NEW(cls, (unit, *wire))

    def slim(self, stub: dict, facts: tuple) -> "RolloutResult":
        """This result as a slim one: ``stub`` for its row, ``facts`` its fact values."""
        return self._replace(row=stub, facts=facts)

    def full(self) -> "RolloutResult":
        """A slim result with its whole row (decoded from ``text``, which is that row); any other as it is."""
        if self.facts is None or self.text is None:
            return self
        return self._replace(row=_LOADS(self.text), facts=None)

    def with_verdict(self, verdict: dict) -> "RolloutResult":
        """This result with the judge's verdict on its row. The verdict changes the row's public
        fields on the Driver (``driver/landing.py``), so the lane's line, text and marks are dropped:
        the Driver encodes and reads the graded row itself."""
        r = self.full()                     # (a slim result's stub is not the row a verdict changes)
        return r._replace(verdict=verdict, line=None, digest=None, text=None, marks=None)


ChunkKind = Literal["roll", "judge", "asks"]   # "asks": asks to write (driver/edge_writing.py)


def pack_units(units: list) -> list | bytes:
    """A rollout chunk's units as they cross to a rollout actor (``pools/actor_pool.py``), and an
    asks call's ``(cell index, instance, phrasing)`` requests (``driver/edge_writing.py``): pickled
    with plain ``pickle`` (its C pickler: Ray's cloudpickle calls a Python reducer for every object,
    ~2 us a unit more on the Driver; a list of 130 small tuples as a call's argument cost ~250 us
    more to submit than its pickle), or as they are when plain pickle refuses one."""
    try:
        return pickle.dumps(units, protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError):
        return units


def unpack_units(units: list | bytes) -> list:
    """``pack_units``'s answer back as the units (``RolloutWorker.play_chunk``): a Ray message from
    the Driver, never a file."""
    return pickle.loads(units) if isinstance(units, bytes) else units


@dataclass(frozen=True, slots=True)
class PoolChunk:
    """Driver -> the caller's player: units to play (``roll``) or rows to grade (``judge``)."""
    token: int
    kind: ChunkKind
    payload: list


@dataclass(frozen=True, slots=True)
class PoolReply:
    """The caller's player -> Driver: what chunk ``token`` gave (``results``: one
    ``RolloutResult`` per unit, or one verdict per row), or the ``error`` that stopped it."""
    token: int
    results: list | None
    error: str | None = None
