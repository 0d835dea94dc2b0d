"""Every wording the planner opened, by id: how to write it again, its prompt's digest, its faults.

A wording is one prompt the planner opened (a situation's phrasing: a group of rollouts). Ids
count from 0 in the order they open; the group book uses the same ids. Per wording the planner
keeps a *recipe*, a few integers that say how the situation writer made it, instead of the
:class:`~whileai_ray.situations.situation.Situation` itself:

============  ==============================  ======================================
kind          a, b, c                         written again by
============  ==============================  ======================================
``pinned``    index in ``tasks=``             ``settings.pinned[a]``
``seed``      seed index, situation ordinal   ``writer.seed_situation(seeds[a], b)``
``mutation``  parent wording, mutation index  ``writer.mutate(parent, b)``
``probe``     probe index                     ``writer.probe(a)``
``targeted``  shape index, target index       ``shapes.situation(planned[a], b)``
``grid``      cell index, instance, phrasing  ``writer.write(cells[a], b, c)``
============  ==============================  ======================================

plus ``nov``: the novelty (in thousandths) the planner wrote into ``selection_reason``, or -1
when it left the writer's reason alone, and ``sid``: a grid wording's scenario id
(``sc-`` + 10 hex digits) as an int, so its row keys are known without hashing its cell again. The Situation objects themselves are held only while
they can still be needed (their group is open, or a failure waits to be mutated from them);
after a restore from a snapshot they are written again from their recipe when first needed.
A template writer is stateless (the same arguments give the same Situation), which is why
snapshots are taken only with one.
"""
from __future__ import annotations

import json
import re

import numpy as np

from ...situations.situation import Situation
from ...core.columns import Column, State

__all__ = ["KINDS", "Wordings", "UNIT_FIELDS"]

KINDS = ("pinned", "seed", "mutation", "probe", "targeted", "grid")
UNIT_FIELDS = ("group", "rollout_index", "attempt", "faults", "ordinal")   # a unit as a row of ints
_COLS = (("kind", np.uint8), ("a", np.int64), ("b", np.int64), ("c", np.int32), ("nov", np.int16),
         ("fp", np.int32), ("digest", np.uint64), ("sid", np.uint64))
_GRID_SID = re.compile(r"sc-[0-9a-f]{10}")


class Wordings:
    # the recipe columns (_COLS), one entry per wording id; set by name in __init__ / load_state
    kind: Column
    a: Column
    b: Column
    c: Column
    nov: Column
    fp: Column
    digest: Column
    sid: Column

    def __init__(self) -> None:
        for name, dtype in _COLS:
            setattr(self, name, Column(dtype))
        self.plans: list = [None]              # fault plans by id (0: none); shared by its units
        self._plan_id: dict[str, int] = {"null": 0}
        self.held: dict[int, Situation] = {}

    def __len__(self) -> int:
        return len(self.kind)

    def plan_id(self, faults) -> int:
        """The id of a fault plan (interned by its JSON)."""
        if faults is None:
            return 0
        key = json.dumps(faults, sort_keys=True, default=repr)
        i = self._plan_id.get(key)
        if i is None:
            i = self._plan_id[key] = len(self.plans)
            self.plans.append(faults)
        return i

    def add(self, sit: Situation, kind: str, a: int, b: int = 0, c: int = 0, nov: int = -1,
            faults=None, prompt_digest: int = 0) -> int:
        """Register an opened wording; returns its id (the Situation is held until released)."""
        wid = self.kind.append(KINDS.index(kind))
        self.a.append(a), self.b.append(b), self.c.append(c), self.nov.append(nov)
        self.fp.append(self.plan_id(faults))
        self.digest.append(prompt_digest)
        self.sid.append(int(sit.scenario_id[3:], 16) if kind == "grid" and _GRID_SID.fullmatch(sit.scenario_id) else 0)
        self.held[wid] = sit
        return wid

    def faults(self, wid: int):
        return self.plans[int(self.fp[wid])]

    def situation(self, wid: int, planner) -> Situation:
        """The wording's Situation: the one held, else written again from its recipe (and held)."""
        sit = self.held.get(wid)
        if sit is None:
            sit = self.held[wid] = self.write_again(wid, planner)
        return sit

    def write_again(self, wid: int, planner) -> Situation:
        """The wording's Situation written again from its recipe. A mutation needs its parent's:
        the chain of mutations up to a held Situation or another kind is written from its root
        down, in a loop (a long lineage never recurses)."""
        chain = []
        while KINDS[int(self.kind[wid])] == "mutation":
            chain.append(wid)
            wid = int(self.a[wid])
            if wid in self.held:
                break
        sit = self.held[wid] if chain and wid in self.held else self._write_one(wid, planner)
        for w in reversed(chain):
            parent = sit
            sit = planner.writer.mutate(parent, int(self.b[w]))
            sit.extra.setdefault("parent_scenario_id", parent.scenario_id)
            self._noted(w, sit, "mutation")
        return sit

    def _write_one(self, wid: int, planner) -> Situation:
        """A wording of any kind but ``mutation``, written again."""
        kind, a, b, c = KINDS[int(self.kind[wid])], int(self.a[wid]), int(self.b[wid]), int(self.c[wid])
        writer = planner.writer
        if kind == "pinned":
            return planner.s.pinned[a][0]
        if kind == "seed":
            return writer.seed_situation(list(dict.fromkeys(planner.s.seeds))[a], b)
        if kind == "probe":
            sit = writer.probe(a)
        elif kind == "targeted":
            sit = planner.shapes.situation(planner.shapes.planned[a], b)
        else:
            sit = writer.write(planner.picker.cells[a], b, c)
        return self._noted(wid, sit, kind)

    def _noted(self, wid: int, sit: Situation, kind: str) -> Situation:
        """The selection reason the planner wrote when it opened the wording (``nov``)."""
        nov = int(self.nov[wid])
        if nov >= 0:
            what = (f"least-covered cell={sit.scenario_id} tier={sit.tier} instance={int(self.b[wid])}"
                    if kind == "grid" else sit.arm)
            sit.selection_reason = f"{what} novelty={nov / 1000:.3f}"
        return sit

    def key(self, wid: int, planner) -> tuple[str, int]:
        """``(scenario_id, phrasing_index)`` without writing the wording: a grid wording's id is the
        writer's ``scenario_id(cell, instance)``, a pinned one's comes from ``tasks=``, and every
        other kind's id is ``probe_`` and the first 6 hex digits of its prompt's SHA-256 (the
        template writer's rule for asks outside the grid)."""
        kind, a, b = KINDS[int(self.kind[wid])], int(self.a[wid]), int(self.b[wid])
        if kind == "grid":
            code = int(self.sid[wid])
            sid = f"sc-{code:010x}" if code else planner.writer.scenario_id(planner.picker.cells[a], b)
            return sid, int(self.c[wid])
        if kind == "pinned":
            sit = planner.s.pinned[a][0]
            return sit.scenario_id, sit.phrasing_index
        return "probe_" + f"{int(self.digest[wid]):016x}"[:6], 0

    def keys(self, wids, planner) -> dict[int, tuple[str, int, str]]:
        """``{wid: (scenario_id, phrasing_index, prompt_sha)}`` for many wordings at once (what
        ``key`` gives, read from the columns in bulk; ``prompt_sha`` as in a row key)."""
        wids = list(dict.fromkeys(wids))
        idx = np.asarray(wids, dtype=np.int64)
        kinds, sids = self.kind.view()[idx].tolist(), self.sid.view()[idx].tolist()
        phrasing, digests = self.c.view()[idx].tolist(), self.digest.view()[idx].tolist()
        grid, pinned = KINDS.index("grid"), KINDS.index("pinned")
        out = {}
        for wid, kind, sid, p, d in zip(wids, kinds, sids, phrasing, digests):
            sha = f"{d:016x}"
            if kind == grid and sid:
                out[wid] = (f"sc-{sid:010x}", p, sha)
            elif kind == grid or kind == pinned:
                out[wid] = (*self.key(wid, planner), sha)
            else:
                out[wid] = ("probe_" + sha[:6], 0, sha)
        return out

    def release(self, wid: int) -> None:
        self.held.pop(wid, None)

    # ------------------------------------------------------------------ snapshot
    def state(self) -> State:
        plans = self.plans[1:]
        if json.loads(json.dumps(plans)) != plans:
            raise ValueError("a fault plan is not plain JSON data; this run cannot be snapshot")
        return State(meta={"plans": plans}, logs={name: getattr(self, name).view() for name, _ in _COLS})

    def load_state(self, state: State) -> None:
        n = None
        for name, dtype in _COLS:
            arr = state.array(name, dtype)
            n = len(arr) if n is None else n
            if len(arr) != n:
                raise ValueError(f"snapshot wording column {name!r} has {len(arr)} rows, expected {n}")
            setattr(self, name, Column.of(arr, dtype))
        if n and int(self.kind.view().max()) >= len(KINDS):
            raise ValueError("snapshot names a wording kind this version does not know")
        plans = state.meta["plans"]
        if not isinstance(plans, list) or (n and int(self.fp.view().max()) > len(plans)):
            raise ValueError("snapshot fault plans do not match the wordings")
        self.plans = [None, *plans]
        self._plan_id = {json.dumps(p, sort_keys=True, default=repr): i for i, p in enumerate(self.plans)}
        self.held = {}
