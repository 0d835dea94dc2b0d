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

import numpy as np

from ..unit import Unit
from ..core.columns import Column, State, digest
from .wordings import UNIT_FIELDS

__all__ = ["planner_state", "restore_planner", "encode_units", "decode_units"]

_COUNTERS = ("landed", "outstanding", "scheduled", "timed_out", "agent_errors", "first_agent_error",
             "situations_opened", "_mutations", "_mutation_round", "_probes", "_ordinal", "faulted_situations",
             "_targeted", "_parent_head")
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


def planner_state(p) -> State:
    meta = {name: getattr(p, name) for name in _COUNTERS}
    meta.update({name: list(getattr(p, name).items()) for name in _DICTS})
    meta["mutation_aims"] = p.mutation_aims
    meta["pinned_used"] = len(p.s.pinned) - len(p.pinned_left)
    meta["seeds_used"] = len(dict.fromkeys(p.s.seeds)) - len(p.seeds_left)
    out = State(meta=meta,
                logs={"parent_wid": p._parent_wid.view(), "parent_aim": p._parent_aim.view(),
                      "landed_wid": p._landed_wid.view(), "landed_ri": p._landed_ri.view(),
                      "landed_ordinal": p._landed_ordinal.view()},
                tables={"backlog": encode_units(p, p._backlog), "rerolls": encode_units(p, p._rerolls)})
    out.nest("words", p.words.state())          # after the units: they may add fault plans
    for name in ("book", "picker", "bandit", "family", "shapes"):
        part = getattr(p, name)
        if part is not None:
            out.nest(name, part.state())
    # derived from the wordings and the landed rows, not kept twice: the archive's text keys
    # (the base wordings' digests) and the tracker's row prompts and scenario ids
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
    digests = p.words.digest.view()
    p.novelty.load_state(state.part("novelty"), keys=digests[p.words.c.view() == 0])
    wids = list(dict.fromkeys(landed[0].tolist()))
    p._landed_keys = None
    sids = dict.fromkeys(key[0] for key, _, _ in p.landed_keys())
    p.tracker.load_state(state.part("tracker"), prompts=list(dict.fromkeys(digests[wids].tolist())),
                         scenario_ids=[digest(sid) for sid in sids])
    for name in _COUNTERS:
        value = m[name]
        setattr(p, name, value if name == "first_agent_error" else int(value))
    for name in _DICTS:
        setattr(p, name, {str(k): int(v) for k, v in m[name]})
    p.mutation_aims = {aim: {k: int(v) for k, v in counts.items()} for aim, counts in m["mutation_aims"].items()}
    p.pinned_left = deque(p.s.pinned[int(m["pinned_used"]):])
    p.seeds_left = deque(list(dict.fromkeys(p.s.seeds))[int(m["seeds_used"]):])
    wid, aim = state.array("parent_wid", np.int64), state.array("parent_aim", np.uint8)
    if len(wid) != len(aim) or (len(wid) and (wid.min() < 0 or wid.max() >= n or aim.max() > 1)) \
            or not 0 <= p._parent_head <= len(wid):
        raise ValueError("snapshot parent queue is out of range")
    p._parent_wid, p._parent_aim = Column.of(wid, np.int64), Column.of(aim, np.uint8)
    p._pins = {}
    for w in wid[p._parent_head:].tolist():
        p._pins[w] = p._pins.get(w, 0) + 1
    p._seen = set(p.words.digest.view().tolist())
    p._backlog = deque(decode_units(p, state.array("backlog", np.int64, width=len(UNIT_FIELDS))))
    p._rerolls = deque(decode_units(p, state.array("rerolls", np.int64, width=len(UNIT_FIELDS))))
    p._scored = ("", None, 0.0)
    return p
