"""The planner: decides, round by round, which work units to play. Pure logic, no Ray.

The driver actor calls ``decide(r)`` to get round r's units and ``observe(outcomes)`` with
what landed. In reproducible mode the driver observes rounds strictly in order and decides
round ``r + lag`` only once rounds ``<= r`` are observed, so every decision is a function of
the seed and the inputs alone: the same units come out at any concurrency, any number of
rollout actors and nodes, in any completion order, while ``lag`` rounds stay in flight.

Budget: a round never schedules more than ``budget - landed - outstanding`` units, so the run
can never overshoot; a lost unit frees its slot for a re-roll or a fresh ask.

It is given a ``PlanSettings`` (``planner/settings.py``), hears back one ``Outcome`` per unit
(``planner/outcome.py``) and reports ``stats()``, a ``PlannerStats`` record (``planner/stats.py``), at the end.
State is kept compact (``planner/wordings.py``: a recipe per opened wording instead of its Situation;
``groups.py``: counters in columns; digests instead of prompt strings), and ``state()`` /
``Planner.from_state()`` (``planner/state.py``) turn it into plain data and back, for the
planner snapshot beside a checkpoint (``store/snapshots/file.py``).
"""
from __future__ import annotations

import time
from collections import deque

import numpy as np

from ...core.columns import Column
from ...core.digest_table import DigestTable
from ...core.defaults import LOST_REASONS, POISON_REASONS, POISON_TRIES, TIMED_OUT
from ...core.identity import key_digest, prompt_sha, row_key
from ...core.rng import draw, weyl
from ...core.unit import Unit
from ...situations.grid import CONDITION_FAULT_MODE
from ...situations.timed_writer import TimedWriter
from ..arms import ArmBandit
from ..ask_batching import ALT_INSTANCE_STRIDE, digest_of, prefetch_round, probe_ask, sketch_of, write_ask, written
from .budget_bound import margin
from ..coverage import CoverageTracker
from ..family_cap import FamilyCap
from ..groups import COMPLETE, GroupBook
from ..novelty import NoveltyIndex
from ..round_novelty import RoundNovelty
from .outcome import Outcome
from .parents import ParentQueue
from .settings import PlanSettings
from .state import PlannerState, land_rows
from .stats import PlannerStatsReport
from .rounds import round_room
from ..targeting import ShapeTargets
from ..traces.steering import make_picker
from .wordings import Wordings

FAULT_MODES = ("timeout", "malformed", "stale", "permission_denied")
REASONS = LOST_REASONS                 # agent reasons (re-rolled) and poison causes (core/defaults.py)
HELD_PARENTS = 4096                # Situations of waiting failures held at most (see _release)
TRACE_RETRIES = 58                # more picks before falling back to a non-fresh ask when traces= guards


class Planner(PlannerState, PlannerStatsReport):
    """Decides units round by round (see the module docstring); ``state()`` / ``from_state()`` /
    ``restore()`` / ``landed_keys()`` and the unit codec come from :class:`PlannerState`."""

    def __init__(self, settings: PlanSettings, writer, cells: list[dict]):
        self.s = settings
        self.writer = TimedWriter(writer)     # scenario_generation_seconds (situations/timed_writer.py)
        self.decide_seconds = 0.0             # writing + selection; selection = this - writer seconds
        self.picker = make_picker(cells, settings) if cells else None    # traces= "targeted": a SteeredPicker
        self.trace_near_copies = 0            # generated asks refused for near-copying a trace
        self.words = Wordings()               # every opened wording, by id (= its group's id)
        self.book = GroupBook(settings.k, settings.repeat_policy, settings.probe, settings.seed,
                              key_of=self._group_key)
        self.landed = settings.precounted
        self.outstanding = 0
        self.scheduled = 0
        self.rerolled_by = {r: 0 for r in REASONS}
        self.lost_by = {r: 0 for r in REASONS}
        self.timed_out = 0
        self.agent_errors = 0
        self.first_agent_error = None
        self.situations_opened = 0
        self.seeds_left = deque(dict.fromkeys(settings.seeds))   # a repeated seed runs once
        self.pinned_left = deque(settings.pinned)
        self.pinned_mode = bool(settings.pinned)
        if self.pinned_mode:
            self.picker = None
        self._backlog: deque = deque()        # units decided but not yet fitted into a round
        self._rerolls: deque = deque()
        self._parents = ParentQueue()         # failures to mutate from, oldest first
        # every landed row observed, in order: its wording, rollout index and ordinal (a snapshot
        # names the rows it settled by these; their keys are derived, see landed_keys()), and its
        # row_key's 128-bit digest (a resume claims the settled rows on disk by it, at once)
        self._landed_wid, self._landed_ri, self._landed_ordinal = Column("int64"), Column("int32"), Column("int64")
        self._landed_ka, self._landed_kb = Column("uint64"), Column("int64")
        self._landed_keys = None              # landed_keys(), kept while no row lands
        self._mutations = 0
        self._mutation_round = -1
        self._probes = self._ordinal = 0
        self.arm_counts: dict[str, int] = {}
        self.allocator = {"explore": 0, "expand": 0, "verify": 0}
        self.mutation_aims = {"world_fault": {"parents": 0, "rows": 0},
                              "graded_failure": {"parents": 0, "rows": 0}}
        self.faulted_situations = 0
        self.failure_criteria: dict[str, int] = {}
        arms = ("structured", "open_ended", "behavior_targeted", "failure_mutation") + \
            (("llm_guided",) if settings.llm_writer else ())
        self.bandit = ArmBandit(arms, settings.seed, pinned=settings.arm_weights)
        # its tables grow with it, whatever the budget (the plan never depends on it); exact copies
        # are known here (_seen), so no text keys of its own; frozen during a round (round_novelty.py)
        self.novelty, self.round_novelty = NoveltyIndex(exact=False), RoundNovelty(self)
        self.family = FamilyCap(settings.family_cap)
        self.shapes = ShapeTargets(settings.tools, settings.seed) if settings.tools else None
        self.tracker = CoverageTracker(cells, settings.axes or None, copies_needed=settings.copies_needed)
        self._targeted = 0
        self._seen = DigestTable()            # digests of opened prompts: a prompt opens at most once
        self._scored: tuple[str, np.ndarray | None, float] = ("", None, 0.0)   # (prompt, sketch, novelty)
        self.budget_bound_round: int | None = None    # the first round the budget cut (planner/budget_bound.py)

    def _group_key(self, wid: int) -> list:
        sit = self.words.situation(wid, self)
        return [sit.scenario_id, sit.phrasing_index]

    def _release(self, wid: int) -> None:
        """Let go of a wording's Situation once its group is complete and no failure waits to be
        mutated from it; it can be written again from its recipe. A template writer writes the
        same Situation again, so past ``HELD_PARENTS`` failures waiting, one more is let go too
        (written again when its turn comes): a long run whose failures outpace its mutation
        slots holds a bounded number of Situations, not one per waiting failure."""
        if self.book.status[wid] != COMPLETE:
            return
        if self._parents.pinned(wid) and (self.s.llm_writer or self._parents.waiting() <= HELD_PARENTS):
            return
        self.words.release(wid)

    # ---------------------------------------------------------------- deciding
    def capacity(self) -> int:
        return max(0, self.s.budget - self.landed - self.outstanding)

    def decide(self, round_index: int) -> list[Unit]:
        t0 = time.perf_counter()
        try:
            return self._decide(round_index)
        finally:
            self.round_novelty.end()          # the round's picks go into the archive, in order
            self.decide_seconds += time.perf_counter() - t0

    def _decide(self, round_index: int) -> list[Unit]:
        full = round_room(self.s.round_size, round_index)
        room = min(full, self.capacity())
        if room < full:
            self._bound(round_index)
        if not self.pinned_mode and self.tracker.stop_reason(self.s.until):
            room = 0                       # until= says coverage is done: finish what is in flight
        prefetch_round(self, round_index, room)     # a batching writer's asks, in one call
        self.round_novelty.begin(room)              # the round's likely candidates scored in one call
        out: list[Unit] = []
        while room > 0 and self._rerolls:
            out.append(self._take(self._rerolls.popleft())); room -= 1
        while room > 0 and self._backlog:
            out.append(self._take(self._backlog.popleft())); room -= 1
        while room > 0 and self._can_open():
            if not self.book.covers_a_new_group(
                    self.capacity(), len(out) + len(self._backlog) + len(self._rerolls), self.outstanding):
                self._bound(round_index)
                break
            self._open_next(round_index)
            while room > 0 and self._backlog:
                out.append(self._take(self._backlog.popleft())); room -= 1
        if room > 0 and not out and self.outstanding == 0 and not self._can_open():
            for wid, ri in self.book.reopen(room):
                out.append(self._take(self._unit_for(wid, ri))); room -= 1
                self.allocator["verify"] += 1
        return out

    def budget_margin(self) -> int:
        """Budget left below which the next round may be cut by it (search/planner/budget_bound.py)."""
        return margin(self)

    def _bound(self, round_index: int) -> None:
        self.budget_bound_round = round_index if self.budget_bound_round is None else self.budget_bound_round

    def _take(self, unit: Unit) -> Unit:
        unit.ordinal = self._ordinal
        self._ordinal += 1
        self.outstanding += 1
        self.scheduled += 1
        return unit

    def _can_open(self) -> bool:
        if self.s.situations is not None and self.situations_opened >= self.s.situations:
            return False
        return self.picker is not None or bool(self.seeds_left) or bool(self.pinned_left)

    def _open_next(self, round_index: int) -> None:
        ordinal = self.situations_opened
        self.situations_opened += 1
        cell = instance = group_k = None
        if self.pinned_left:
            base, faults = self.pinned_left.popleft()
            recipe = ("pinned", len(self.s.pinned) - len(self.pinned_left) - 1, 0)
            group_k = self.s.pinned_k[recipe[1]] if self.s.pinned_k else None    # runs=: as run 0 played it
        elif self.seeds_left:
            text = self.seeds_left.popleft()
            base = self.writer.seed_situation(text, ordinal)
            faults = None
            recipe = ("seed", len(dict.fromkeys(self.s.seeds)) - len(self.seeds_left) - 1, ordinal)
        else:
            faulted = weyl(self.s.seed, ordinal, "fault") < self.s.fault_rate
            base, cell, instance, recipe = self._draw_fresh(round_index, ordinal, faulted)
            faults = self._fault_plan(base, faulted)
        again = not self._seen.add(digest := digest_of(self, base.prompt))     # a seed, task or fallback opened before
        if self._scored[0] is base.prompt:          # scored while choosing between candidates
            _, sk, nov = self._scored
        else:
            sk = sketch_of(self, base.prompt)
            nov = 0.0 if again else self.round_novelty.novelty(base.prompt, sk)
        self.round_novelty.add(base.prompt, sk)
        self.tracker.note_selection([nov])
        nov_milli = -1
        if not base.selection_reason or base.selection_reason in ("failure_mutation",):
            what = (f"least-covered cell={base.scenario_id} tier={base.tier} instance={instance}"
                    if cell is not None else base.arm)
            base.selection_reason = f"{what} novelty={nov:.3f}"
            nov_milli = round(float(f"{nov:.3f}") * 1000)
        if faults:
            self.faulted_situations += 1
        self.arm_counts[base.arm] = self.arm_counts.get(base.arm, 0) + 1
        kind, a, b = recipe
        wordings = [(base, self.words.add(base, kind, a, b, 0, nov_milli, faults, digest))]
        if cell is not None:
            for p in range(1, self.s.n):
                sit = written(self, cell, a, instance, p)
                if self._fresh(sit.prompt):          # two wordings that came out the same run once
                    self._seen.add(digest := digest_of(self, sit.prompt))
                    wordings.append((sit, self.words.add(sit, "grid", a, b, p, -1, faults, digest)))
        for p, (sit, wid) in enumerate(wordings):
            for ri in self.book.open(wid, group_k):
                self._backlog.append(self._unit_for(wid, ri))
                self.allocator["explore" if p == 0 else "expand"] += 1

    def _draw_fresh(self, round_index: int, ordinal: int, faulted: bool):
        """A new situation from the arm the bandit draws for this slot:
        ``(situation, cell, instance, recipe)`` (the recipe as ``planner/wordings.py`` keeps it)."""
        arm = self.bandit.choose(round_index, ordinal)
        if self.s.mutate and self._parents.slot_due(arm):
            pwid, aim = self._parents.pop()
            parent = self.words.situation(pwid, self)
            self._release(pwid)
            self.mutation_aims[aim]["rows"] += 1
            self._mutations += 1
            sit = self.writer.mutate(parent, self._mutations - 1)
            sit.extra.setdefault("parent_scenario_id", parent.scenario_id)
            if self._fresh(sit.prompt):
                return sit, None, None, ("mutation", pwid, self._mutations - 1)
        if arm == "open_ended" and self.s.n == 1 and ordinal > 0:
            self._probes += 1
            sit = probe_ask(self, self._probes - 1)
            if self._fresh(sit.prompt):
                return sit, None, None, ("probe", self._probes - 1, 0)
        if arm == "behavior_targeted" and self.shapes is not None and self.s.n == 1:
            shape = self.shapes.next_target()
            if shape is not None:
                self._targeted += 1
                sit = self.shapes.situation(shape, self._targeted - 1)
                if self._fresh(sit.prompt):
                    return sit, None, None, ("targeted", self.shapes.planned.index(shape), self._targeted - 1)
        best = None
        tries = 6 if self.s.trace_guard is None else 6 + TRACE_RETRIES   # a trace's near-copy is never the fallback
        assert self.picker is not None       # _can_open: no seed or pinned ask left means a grid to pick from
        for attempt in range(tries):
            ci, instance = self.picker.pick_index(faulted)
            cell = self.picker.cells[ci]
            sit = write_ask(self, cell, instance, faulted, ci)
            if not self._fresh(sit.prompt):
                continue
            if attempt < 5 and not self.family.allowed(sit.prompt):
                continue
            best = (sit, cell, instance)
            break
        if best is None:
            return sit, cell, instance, ("grid", ci, instance)
        # novelty-based selection: a second instance of the same cell competes, the more novel
        # wording wins (the index answers in O(1) whatever the archive size)
        sit, cell, instance = best
        sk = sketch_of(self, sit.prompt)
        score = self.round_novelty.novelty(sit.prompt, sk)
        for j in range(1, max(1, self.s.novelty_candidates)):
            alt_instance = instance + j * ALT_INSTANCE_STRIDE
            alt = write_ask(self, cell, alt_instance, faulted, ci)
            if self._fresh(alt.prompt) and self.family.allowed(alt.prompt):
                alt_sk = sketch_of(self, alt.prompt)
                alt_score = self.round_novelty.novelty(alt.prompt, alt_sk)
                if alt_score > score:
                    sit, score, instance, sk = alt, alt_score, alt_instance, alt_sk
        self._scored = (sit.prompt, sk, score)
        self.family.admit(sit.prompt)
        return sit, cell, instance, ("grid", ci, instance)

    def _fresh(self, prompt: str) -> bool:
        if (d := digest_of(self, prompt)) in self._seen:
            return False
        if self.s.trace_guard is not None and self.s.trace_guard.near(prompt)[0]:
            self.trace_near_copies += 1       # held-out traces stay out of the run (and of training)
            self._seen.add(d)
            return False
        return not self.s.avoid_prompt_shas or prompt_sha(prompt) not in self.s.avoid_prompt_shas

    def _fault_plan(self, sit, faulted: bool) -> dict | None:
        if not faulted:
            return None
        cond = (sit.dims or {}).get("tool_condition", "success")
        mode = CONDITION_FAULT_MODE.get(cond)
        if mode is None:
            mode = FAULT_MODES[int(draw(self.s.seed, "fault-mode", sit.scenario_id) * len(FAULT_MODES))]
        return {"*": {"mode": mode, "rate": 1.0}}

    def _unit_for(self, wid: int, rollout_index: int, attempt: int = 0) -> Unit:
        return Unit(run_id=self.s.run_id, situation=self.words.situation(wid, self), rollout_index=rollout_index,
                    eval_run=self.s.eval_run, attempt=attempt, faults=self.words.faults(wid), seed=self.s.seed,
                    group=wid)

    # --------------------------------------------------------------- observing
    def observe(self, outcomes: list[Outcome]) -> None:
        self._observe(outcomes)
        if not self.pinned_mode:
            self.bandit.update(self.tracker.take_yields())

    def _observe(self, outcomes: list[Outcome]) -> None:
        landed: list[tuple] = []           # (wid, rollout index, ordinal, ka, kb) a row: land_rows (state.py)
        try:
            for o in outcomes:
                self.outstanding -= 1
                u = o.unit
                wid = u.group
                if o.row is not None:
                    if not (o.resumed and self.s.precounted):
                        self.landed += 1
                    ka, kb, _ = o.key_digest or key_digest(row_key(o.row))     # (its lane's, when it made one)
                    landed.append((wid, u.rollout_index, u.ordinal, ka, kb))
                    self.tracker.observe(o.row, None, int(self.words.digest[wid]), o.marks)
                    if self.shapes is not None:
                        self.shapes.observe(o.row.get("tools_used"), o.marks[3] if o.marks is not None else None)
                    more = self.book.observe(wid, o.label)
                    if o.fault_parent and self.s.mutate:
                        self._parents.push(wid, "world_fault")
                        self.mutation_aims["world_fault"]["parents"] += 1
                    elif o.graded_failure and self.s.mutate and self.s.mutate_graded:
                        # the verdict steers like a tool fault: the failed ask is mutated into new ones
                        self._parents.push(wid, "graded_failure")
                        self.mutation_aims["graded_failure"]["parents"] += 1
                    for name in o.failed_markers:
                        self.failure_criteria[name] = self.failure_criteria.get(name, 0) + 1
                    for ri in more:
                        self._backlog.append(self._unit_for(wid, ri))
                        self.allocator["verify"] += 1
                    self._release(wid)
                    continue
                reason = o.unusable or "agent_error"
                if reason == "agent_error":
                    self.agent_errors += 1
                    if o.timed_out:                 # an agent error that was a call timeout: said as such
                        self.timed_out += 1
                        reason = TIMED_OUT
                final = reason == "worker_crashed" or (reason in POISON_REASONS and u.attempt + 1 >= POISON_TRIES)
                if u.attempt < self.s.k and not final:
                    self.rerolled_by[reason] = self.rerolled_by.get(reason, 0) + 1    # (a snapshot may predate a reason)
                    self._rerolls.append(Unit(run_id=u.run_id, situation=u.situation,
                                              rollout_index=u.rollout_index, eval_run=u.eval_run,
                                              attempt=u.attempt + 1, faults=u.faults, seed=u.seed, group=wid))
                else:
                    self.lost_by[reason] = self.lost_by.get(reason, 0) + 1
                    for ri in self.book.observe(wid, None):
                        self._backlog.append(self._unit_for(wid, ri))
                    self._release(wid)
        finally:
            land_rows(self, landed)          # the landed columns grow once a call, not five appends a row

    # ------------------------------------------------------------------ stopping
    def stop_reason(self) -> str | None:
        """Why the run must stop now, or None to go on."""
        if self.s.budget <= 0:
            return "writer_failed"
        if self.landed >= self.s.budget:
            return "budget"
        if self.outstanding == 0 and not self.pinned_mode:
            sat = self.tracker.stop_reason(self.s.until)
            if sat:
                return sat
        failures = sum(self.lost_by.values()) + sum(self.rerolled_by.values())
        dead = max(self.s.dead_agent_errors, min(2 * self.s.budget, 200))
        if self.landed == 0 and failures >= dead:
            empties = self.lost_by["empty_reply"] + self.rerolled_by["empty_reply"]
            return "empty_replies" if empties * 2 > failures else "agent_failed"
        if self.outstanding == 0 and not self._backlog and not self._rerolls and not self._can_open():
            if self.book.reopenable():
                return None
            if self.pinned_mode:
                return "tasks_done"
            if self.s.situations is not None:
                return "situations_exhausted"
            return "writer_exhausted"
        return None
