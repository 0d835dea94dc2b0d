"""Which asks the planner will write next, known ahead without its future (issue 32).

The cell picker (``search/cell_picker.py``) keeps its cells in four heaps, one per (hard tier?,
faulted?) class, and every pick pops exactly one of them (the one the round's tier debt and the
situation's fault draw ask for) and pushes the popped cell back with one more situation opened.
A cell sits in one heap only, so each heap hands out its ``(cell, instance)`` pairs in an order
fixed by the heap alone: which heap a pick takes from, when the bandit sends a slot elsewhere
(a mutation, a probe), a refused ask picked again... all change only *when* a heap's next pair
is taken, never which pair it is. A copy of each heap run ahead therefore names every ask the
planner will write from the grid, whatever it decides; the planner's own picker is never touched.

``AskForecast(planner).due(window)``: the ``(cell index, instance, phrasing)`` of the asks the
next ``window`` grid picks will most likely write (each pick's competing instances and its other
phrasings too: ``search/ask_batching.py``), those not handed out by an earlier call, or ``[]``
while enough are ahead. A ``SteeredPicker`` (``traces=`` "targeted") is two pickers: both are
run ahead, the whole grid's pairs named as the steered picker names them. Plain logic, no Ray.
"""
from __future__ import annotations

import heapq
import math

from .ask_batching import ALT_INSTANCE_STRIDE, situation_units
from .edge_asks import PROBE
from .traces.steering import BACKGROUND_INSTANCE_OFFSET

__all__ = ["AskForecast", "heap_shares"]

SLACK = 8             # pairs kept ahead of each heap beyond its expected share of the window
REFUSED = 0.25        # picks a new situation may take beyond its own (asks refused as copies or past the cap)
PROBES_AHEAD = 96     # open-ended probes named ahead of the planner's next one (topped up when half are used):
                      # ~4 a round of 64 new situations, so about the grid's window (driver/edge_writing.py);
                      # with 32, 70% of an explore run's probes came too late and the Driver wrote them


def heap_shares(classes, hard_share: float, fault_rate: float) -> dict:
    """The share of picks each heap (``(hard, faulted)`` in ``classes``) takes: the tier and
    fault classes a pick wants, sent to the first heap that exists, as ``pick_index`` does."""
    has_hard = any(h for h, _ in classes)
    has_ordinary = any(not h for h, _ in classes)
    p_hard = (min(1.0, max(0.0, hard_share)) if has_ordinary else 1.0) if has_hard else 0.0
    p_fault = min(1.0, max(0.0, fault_rate))
    shares = dict.fromkeys(classes, 0.0)
    for hard, ph in ((True, p_hard), (False, 1.0 - p_hard)):
        for faulted, pf in ((True, p_fault), (False, 1.0 - p_fault)):
            for key in ((hard, faulted), (hard, not faulted), (not hard, faulted), (not hard, not faulted)):
                if key in shares:
                    shares[key] += ph * pf
                    break
    return shares


class _Run:
    """One heap of one cell picker, run ahead: its own copy, and how far the copy got."""

    def __init__(self, picker, key, offset: int, instance_offset: int, share: float):
        self.picker, self.key, self.share = picker, key, share
        self.offset, self.instance_offset = offset, instance_offset
        self.heap = list(picker._heaps[key])          # entries are tuples: a shallow copy is a copy
        self.ahead = self.taken()                     # pops the copy has made (the real heap's count, now)

    def taken(self) -> int:
        """Pops the planner's heap has made (each entry counts its cell's situations opened)."""
        return sum(e[0] for e in self.picker._heaps[self.key])

    def pop(self) -> tuple[int, int]:
        opened, _tie, index = heapq.heappop(self.heap)
        heapq.heappush(self.heap, (opened + 1, self.picker._tie(index, opened + 1), index))
        self.ahead += 1
        return self.offset + index, opened + self.instance_offset


class AskForecast:
    def __init__(self, planner):
        self.p = planner
        self.runs: list[_Run] = []
        self.probes_named = 0                         # probes 0 .. probes_named - 1 were named
        picker = planner.picker
        if picker is None or planner.pinned_mode:
            return
        parts = [(picker, 0, 0)]
        if hasattr(picker, "aimed"):                  # a SteeredPicker: the aimed cells, then the whole grid's
            parts = [(picker.aimed, 0, 0)]
            if picker.background is not None:
                parts.append((picker.background, len(picker.aimed.cells), BACKGROUND_INSTANCE_OFFSET))
        weight = float(getattr(picker, "weight", 1.0)) if len(parts) > 1 else 1.0
        for n, (part, offset, inst_off) in enumerate(parts):
            mix = weight if n == 0 else 1.0 - weight
            shares = heap_shares(list(part._heaps), part.hard_share, planner.s.fault_rate)
            for key, share in shares.items():
                self.runs.append(_Run(part, key, offset, inst_off, share * mix))

    def probes_due(self) -> list[tuple[int, int, int]]:
        """The asks ``(PROBE, index, 0)`` of the next open-ended probes (the planner opens probe after
        probe, in order, when the bandit's arm is ``open_ended``; only with one phrasing), named
        ``PROBES_AHEAD`` ahead of its next one once fewer than half that are ahead, never past the
        picks the budget holds; ``[]`` otherwise."""
        p = self.p
        if not self.runs or p.s.n != 1 or "open_ended" not in getattr(p.bandit, "arms", ()):
            return []
        nxt = p._probes
        end = nxt + min(PROBES_AHEAD, self.picks_left())
        if 2 * (self.probes_named - nxt) >= PROBES_AHEAD or end <= max(nxt, self.probes_named):
            return []
        first, self.probes_named = max(nxt, self.probes_named), end
        return [(PROBE, i, 0) for i in range(first, end)]

    def skip(self, picks: int) -> None:
        """Run each heap's copy past its share of the next ``picks`` picks without naming their asks:
        the ones the planner makes before any lane could answer (it writes those itself, and a
        lane writing them too would write them for nothing)."""
        for run in self.runs:
            if run.share > 0:
                for _ in range(math.ceil(max(0, picks) * run.share)):
                    run.pop()

    def picks_left(self) -> int:
        """The most grid picks the planner can still make, near enough: a new situation for every
        ``per`` units the budget still holds (and ``situations=`` allows), a quarter more for the
        asks it refuses. Asks past it would be written and never used: a 1,000-row run's lanes
        wrote three times its asks, most of a cold run's CPU."""
        p, s = self.p, self.p.s
        new = -(-p.capacity() // situation_units(p))
        if s.situations is not None:
            new = min(new, max(0, s.situations - p.situations_opened))
        return math.ceil(new * (1 + REFUSED))

    def taken(self) -> int:
        """Grid picks the planner has made so far: how far it got (the picker's own count, not a
        walk of its heaps: the Driver asks after every chunk it settles)."""
        picker = self.p.picker
        return int(picker.picks) if picker is not None else 0

    def due(self, window: int, lead: int = 0, most: int | None = None) -> list[tuple[int, int, int]]:
        """The asks of the next ``window`` grid picks not named before, per heap its share plus
        ``SLACK``; ``[]`` while every heap has at least half of that ahead (calls stay few). The
        window is cut to :meth:`picks_left` (then without the slack; ``[]`` once no pick is left).

        ``lead``: the picks the planner will likely make before asks named now could come back
        (a lane's answer takes time, and the planner does not wait for it): each heap's copy is
        run past its share of them without naming their asks (the planner writes those itself),
        and the window is what is left after them. ``most``: name at most this many picks now,
        the nearest first (in the order the planner will reach them across the heaps); the rest
        of the window is named by the next calls, each with the lead known then."""
        lead = max(0, int(lead))
        left = self.picks_left() - lead
        slack = SLACK if left > window else 0        # (the cut window has its own margin: REFUSED)
        window = min(int(window), left)
        if window <= 0:
            return []
        s = self.p.s
        per_pick = [(j * ALT_INSTANCE_STRIDE, ph) for j in range(max(1, s.novelty_candidates)) for ph in range(s.n)]
        plan = []
        low = False
        for run in self.runs:
            if run.share <= 0:                        # (a heap no pick goes to is asked nothing)
                continue
            want = min(math.ceil(window * run.share) + slack, window)     # (none is asked past the window)
            have = run.ahead - run.taken()
            if have < 0:                              # the planner got past the copy: start again from its heap
                run.heap, run.ahead = list(run.picker._heaps[run.key]), run.taken()
                have = 0
            passed = math.ceil(lead * run.share)      # reached before an answer could come back: not named
            for _ in range(passed - have):
                run.pop()
            have = max(have, passed)
            plan.append((run, have, want - (have - passed)))
            low = low or 2 * (have - passed) < want
        if not low:
            return []
        # the nearest picks first: a heap's k-th pick ahead comes at about k / share picks from now
        order = sorted(((have + k) / run.share, n) for n, (run, have, more) in enumerate(plan) for k in range(max(0, more)))
        if most is not None:
            order = order[:max(0, int(most))]
        out = []
        for _, n in order:
            ci, instance = plan[n][0].pop()
            out += [(ci, instance + step, ph) for step, ph in per_pick]
        return out
