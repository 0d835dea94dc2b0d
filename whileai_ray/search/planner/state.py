"""The planner as plain data, and back: what a planner snapshot holds (``Planner.state()``).

``planner_state(planner)`` returns a :class:`~whileai_ray.search.columns.State`: the planner's
counters and small dicts as JSON-able ``meta``; its per-wording recipes, parent queue, digests,
sketches and curve as append-only ``logs`` (views, not copies: rows once written never change);
its group counters, cell counts and queued units as ``tables`` (copies: they change in place).
Each part (wordings, group book, cell picker, bandit, novelty index, family cap, shape targets,
coverage tracker) writes its own piece with ``state()`` and reads it back with ``load_state()``.

``restore_planner(fresh, state)`` fills a planner built from this call's settings, writer and
cells; nothing in the state is code (no pickle): names, numbers and strings, checked as they
are read. Anything out of shape raises ValueError, and the caller replays from the seed.

Units (decided, not yet landed) travel as rows of ints, ``wordings.UNIT_FIELDS``; their
Situations are written again from the wording recipes when the planner is restored.
"""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.unit import Unit
from ...core.columns import Column, State, digest
from ...core.digest_table import DigestTable
from ...store.row_key_set import digest_arrays
from .wordings import UNIT_FIELDS

if TYPE_CHECKING:
    from ..groups import GroupBook
    from .settings import PlanSettings

__all__ = ["PlannerState", "planner_state", "restore_planner", "encode_units", "decode_units", "landed_keys",
           "landed_digests", "iter_landed_keys"]

_COUNTERS = ("landed", "outstanding", "scheduled", "timed_out", "agent_errors", "first_agent_error",
             "situations_opened", "_mutations", "_mutation_round", "_probes", "_ordinal", "faulted_situations",
             "_targeted")
_DICTS = ("rerolled_by", "lost_by", "arm_counts", "allocator", "failure_criteria")


def encode_units(planner, units) -> np.ndarray:
    """Units as an ``(n, 5)`` int64 table: group, rollout index, attempt, fault plan id, ordinal."""
    words = planner.words
    rows = []
    for u in units:
        fp = int(words.fp[u.group]) if 0 <= u.group < len(words) else -1
        if fp < 0 or words.plans[fp] is not u.faults:          # not its wording's own plan object
            fp = words.plan_id(u.faults)
        rows.append((u.group, u.rollout_index, u.attempt, fp, u.ordinal))
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), len(UNIT_FIELDS))


def decode_units(planner, table: np.ndarray) -> list[Unit]:
    """The units :func:`encode_units` wrote, their Situations written again from the recipes."""
    words, s = planner.words, planner.s
    if table.ndim != 2 or table.shape[1] != len(UNIT_FIELDS):
        raise ValueError(f"snapshot units have shape {table.shape}")
    if len(table) and (table[:, 0].min() < 0 or table[:, 0].max() >= len(words)
                       or table[:, 3].min() < 0 or table[:, 3].max() >= len(words.plans)):
        raise ValueError("snapshot units name wordings or fault plans it does not hold")
    return [Unit(run_id=s.run_id, situation=words.situation(wid, planner), rollout_index=ri, eval_run=s.eval_run,
                 attempt=attempt, faults=words.plans[fp], seed=s.seed, ordinal=ordinal, group=wid)
            for wid, ri, attempt, fp, ordinal in table.tolist()]


def landed_keys(p) -> list[tuple[tuple, int, int]]:
    """``(row_key, ordinal, phrasing_index)`` of every landed row the planner observed, in order
    (what a snapshot settled): keys from the wording columns, kept while no new row lands."""
    if p._landed_keys is not None and len(p._landed_keys) == len(p._landed_wid):
        return p._landed_keys
    out = _landed_keys(p, 0, len(p._landed_wid))
    p._landed_keys = out
    return out


def _landed_keys(p, start: int, stop: int) -> list[tuple[tuple, int, int]]:
    wids = p._landed_wid.view()[start:stop].tolist()
    keys = p.words.keys(wids, p)
    er = p.s.eval_run
    out = []
    for wid, ri, ordinal in zip(wids, p._landed_ri.view()[start:stop].tolist(),
                                p._landed_ordinal.view()[start:stop].tolist()):
        sid, phrasing, sha = keys[wid]
        out.append(((sid, sha, ri, er), ordinal, phrasing))
    return out


def iter_landed_keys(p, stop: int, chunk: int = 8192):
    """``landed_keys(p)[:stop]`` a chunk at a time (a million settled rows are never all held as
    tuples)."""
    for start in range(0, stop, chunk):
        yield from _landed_keys(p, start, min(stop, start + chunk))


def land_rows(p, landed: list[tuple]) -> None:
    """The rows ``Planner.observe`` saw land, ``(wid, rollout index, ordinal, key digest a, b)`` each,
    onto the landed columns in order, one extend a column (five appends a row were ~1 us of it)."""
    columns = (p._landed_wid, p._landed_ri, p._landed_ordinal, p._landed_ka, p._landed_kb)
    for column, values in zip(columns, zip(*landed)):
        column.extend(values)


def landed_digests(p) -> tuple[np.ndarray, np.ndarray]:
    """The 128-bit ``row_key`` digests (``identity.key_digest``) of every landed row observed, in
    order, as two arrays: what a resume claims the settled rows on disk by."""
    return p._landed_ka.view(), p._landed_kb.view()


def _first_seen(values: np.ndarray) -> np.ndarray:
    """``values`` without repeats, in the order each first appears."""
    _, first = np.unique(values, return_index=True)
    return values[np.sort(first)]


def planner_state(p, scratch: dict | None = None) -> State:
    meta = {name: getattr(p, name) for name in _COUNTERS}
    meta.update({name: list(getattr(p, name).items()) for name in _DICTS})
    meta["mutation_aims"] = p.mutation_aims
    meta["pinned_used"] = len(p.s.pinned) - len(p.pinned_left)
    meta["seeds_used"] = len(dict.fromkeys(p.s.seeds)) - len(p.seeds_left)
    meta["trace_near_copies"] = p.trace_near_copies
    meta["budget_bound_round"] = p.budget_bound_round
    out = State(meta=meta,
                logs={"landed_wid": p._landed_wid.view(), "landed_ri": p._landed_ri.view(),
                      "landed_ordinal": p._landed_ordinal.view(), "landed_ka": p._landed_ka.view(),
                      "landed_kb": p._landed_kb.view()},
                tables={"backlog": encode_units(p, p._backlog), "rerolls": encode_units(p, p._rerolls)})
    out.nest("words", p.words.state())          # after the units: they may add fault plans
    out.nest("parents", p._parents.state())
    for name in ("book", "picker", "bandit", "family", "shapes"):
        part = getattr(p, name)
        if part is not None:
            out.nest(name, part.state(scratch) if name == "book" else part.state())
    # not kept twice: the archive keeps no text keys (the planner's _seen knows exact copies), the
    # tracker's row prompts are derived from the wordings and the landed rows
    p.round_novelty.end()         # (taken between rounds: nothing waits to be archived; round_novelty.py)
    out.nest("novelty", p.novelty.state(keys=False))
    out.nest("tracker", p.tracker.state(row_sets=False))
    return out


def restore_planner(p, state: State):
    """Fill the freshly built planner ``p`` from ``state``; returns it. Raises ValueError when the
    state does not fit (other parts, columns out of range)."""
    m = state.meta
    p.words.load_state(state.part("words"))
    n = len(p.words)
    for name in ("book", "picker", "bandit", "family", "shapes"):
        part = getattr(p, name)
        if (part is None) != (name not in m):
            raise ValueError(f"snapshot and this run disagree on the planner's {name}")
        if part is not None:
            part.load_state(state.part(name))
    if len(p.book) != n:
        raise ValueError(f"snapshot holds {len(p.book)} groups for {n} wordings")
    landed = [state.array(name, dtype) for name, dtype in
              (("landed_wid", np.int64), ("landed_ri", np.int32), ("landed_ordinal", np.int64))]
    if len({len(a) for a in landed}) != 1 or (len(landed[0]) and (landed[0].min() < 0 or landed[0].max() >= n)):
        raise ValueError("snapshot landed rows are out of range")
    p._landed_wid, p._landed_ri, p._landed_ordinal = (Column.of(a, a.dtype) for a in landed)
    p._landed_keys = None
    if "landed_ka" in state.logs:
        ka, kb = state.array("landed_ka", np.uint64), state.array("landed_kb", np.int64)
        if len(ka) != len(landed[0]) or len(kb) != len(ka):
            raise ValueError("snapshot landed row digests are out of range")
    else:                                   # a snapshot from before the digests were kept
        ka, kb = digest_arrays([key for key, _, _ in p.landed_keys()])
    p._landed_ka, p._landed_kb = Column.of(ka, np.uint64), Column.of(kb, np.int64)
    digests = p.words.digest.view()
    p.novelty.load_state(state.part("novelty"))           # (it keeps no text keys: novelty.py, exact=False)
    wids = _first_seen(landed[0])
    tracker = state.part("tracker")
    sids = None
    if "scenario_log" not in tracker.logs:  # a snapshot from before the log: derived, first seen first
        sids = [digest(sid) for sid in dict.fromkeys(key[0] for key, _, _ in p.landed_keys())]
    p.tracker.load_state(tracker, prompts=_first_seen(digests[wids]), scenario_ids=sids)
    p._landed_keys = None                   # (the fallbacks' tuples: not held through the run)
    for name in _COUNTERS:
        value = m[name]
        setattr(p, name, value if name == "first_agent_error" else int(value))
    for name in _DICTS:
        setattr(p, name, {str(k): int(v) for k, v in m[name]})
    p.trace_near_copies = int(m.get("trace_near_copies", 0))
    bound = m.get("budget_bound_round")
    p.budget_bound_round = None if bound is None else int(bound)
    p.mutation_aims = {aim: {k: int(v) for k, v in counts.items()} for aim, counts in m["mutation_aims"].items()}
    p.pinned_left = deque(p.s.pinned[int(m["pinned_used"]):])
    p.seeds_left = deque(list(dict.fromkeys(p.s.seeds))[int(m["seeds_used"]):])
    p._parents.load_state(state.part("parents"), n)
    p._seen = DigestTable.of(p.words.digest.view())
    p._backlog = deque(decode_units(p, state.array("backlog", np.int64, width=len(UNIT_FIELDS))))
    p._rerolls = deque(decode_units(p, state.array("rerolls", np.int64, width=len(UNIT_FIELDS))))
    p._scored = ("", None, 0.0)
    p.novelty.ready()                       # its tables were built on a thread meanwhile (novelty.py)
    return p


class PlannerState:
    """The planner's snapshot methods (``Planner`` inherits them; this module holds the logic)."""
    book: GroupBook                  # set by Planner.__init__

    if TYPE_CHECKING:                # the constructor from_state calls: Planner's
        def __init__(self, settings: PlanSettings, writer: Any, cells: list[dict]) -> None: ...

    def state(self, scratch: dict | None = None) -> State:
        """The planner as plain data, without its writer or settings. ``scratch``: see
        ``GroupBook.state`` (a caller that alternates two dicts gets buffers reused, not reallocated)."""
        return planner_state(self, scratch)

    def warm_scratch(self, scratch: dict, ahead: bool = False) -> None:
        """Make ``state(scratch)``'s buffers now, pages touched; ``ahead``: with room for what the
        book will grow by before the next snapshot (``GroupBook.warm``)."""
        self.book.warm(scratch, ahead=ahead)

    @classmethod
    def from_state(cls, state: State, settings, writer, cells: list[dict]):
        """A planner that continues from ``state``, with this call's settings, writer and cells."""
        return cls(settings, writer, cells).restore(state)

    def restore(self, state: State):
        """Continue from ``state`` (this freshly built planner is filled in; ValueError if it does not fit)."""
        return restore_planner(self, state)

    def encode_units(self, units) -> np.ndarray:
        """Units decided and not yet landed, as a table of ints (see :func:`encode_units`)."""
        return encode_units(self, units)

    def decode_units(self, table: np.ndarray) -> list[Unit]:
        return decode_units(self, table)

    def landed_keys(self) -> list[tuple[tuple, int, int]]:
        """``(row_key, ordinal, phrasing_index)`` of every landed row observed so far, in order."""
        return landed_keys(self)

    def iter_landed_keys(self, stop: int):
        """The first ``stop`` of ``landed_keys()``, one at a time, computed a chunk at a time."""
        return iter_landed_keys(self, stop)

    def landed_digests(self) -> tuple[np.ndarray, np.ndarray]:
        """The ``row_key`` digests of every landed row observed so far, in order (two arrays)."""
        return landed_digests(self)

    def keep_only_keys(self) -> None:
        """The run is over and its figures are taken: let go of what only deciding reads (the
        novelty archive, the family, coverage and group tables, the digests), keeping what
        ``iter_landed_keys`` reads (the wordings, the landed logs, the writer and the grid). A
        million-row resume writes its settled rows into the result after this, ~400 MB lighter.
        The planner decides and observes nothing after it."""
        for name in ("novelty", "family", "tracker", "book", "bandit", "shapes", "_seen", "_parents",
                     "_landed_ka", "_landed_kb"):
            setattr(self, name, None)
