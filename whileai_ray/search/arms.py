"""Search arms and their weights: which kind of ask the next situation slot is spent on.

An *arm* is a source of asks: ``structured`` (grid cells), ``open_ended`` (probes outside
the grid), ``behavior_targeted`` (asks aimed at a tool-call shape not seen yet),
``failure_mutation`` (new asks from a failing row's world) and ``llm_guided`` (a model
writer; only when one is configured).

:class:`ArmBandit` holds one weight per arm (they sum to 1). ``choose(*slot_key)`` draws an
arm for one slot from a seeded draw keyed by the slot, so the same slot always gets the same
arm. After each batch ``update(yields)`` moves the weights multiplicatively toward the arms
whose rows found something new (new behaviour signatures plus new cells, per row); arms that
ran nothing this batch get the mean yield, so idleness neither rewards nor punishes them.
Every arm stays inside its ``[low, high]`` floor band (grid arms never starve, open-ended
asks stay a small share). ``pinned`` weights (``advanced={"arm_weights": {...}}``) are used
as given and never updated.
"""
from __future__ import annotations

import math

from ..core.rng import KeyedDraw, draw
from ..core.columns import State

__all__ = ["ARMS", "DEFAULT_WEIGHTS", "DEFAULT_FLOORS", "ArmBandit", "validate_arm_weights"]

ARMS = ("structured", "llm_guided", "open_ended", "behavior_targeted", "failure_mutation")
DEFAULT_WEIGHTS = {"structured": 0.42, "llm_guided": 0.42, "open_ended": 0.10,
                   "behavior_targeted": 0.03, "failure_mutation": 0.03}
# arm -> (lowest share, highest share) the update may move it to
DEFAULT_FLOORS = {"structured": (0.15, 1.0), "llm_guided": (0.15, 1.0), "open_ended": (0.05, 0.10),
                  "behavior_targeted": (0.01, 0.08), "failure_mutation": (0.01, 0.08)}


def validate_arm_weights(weights, arms=ARMS) -> dict[str, float]:
    """Check ``advanced['arm_weights']`` and return it normalised to sum 1 over ``arms``.

    Unknown arm names, negative or non-numeric weights, and an all-zero dict are errors that
    say what to pass instead. Arms the dict leaves out get weight 0.
    """
    if not isinstance(weights, dict) or not weights:
        raise TypeError("advanced['arm_weights'] must be a non-empty dict {arm: weight}, "
                        f"arms: {', '.join(arms)}")
    out = {}
    for name, w in weights.items():
        if name not in arms:
            raise ValueError(f"advanced['arm_weights'] names unknown arm {name!r}; "
                             f"use one of: {', '.join(arms)}")
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            raise ValueError(f"advanced['arm_weights'][{name!r}] = {w!r}; give a number >= 0")
        out[name] = float(w)
    total = math.fsum(out.values())
    if total <= 0:
        raise ValueError("advanced['arm_weights'] are all zero; give at least one arm a positive weight")
    return {a: out.get(a, 0.0) / total for a in arms}


def _clamp(weights: dict[str, float], bands: dict[str, tuple[float, float]]) -> dict[str, float]:
    """Normalise to sum 1 with every arm inside its band (water-filling; deterministic order)."""
    arms = list(weights)
    lows = {a: bands[a][0] for a in arms}
    if math.fsum(lows.values()) > 1.0:          # floors that cannot all hold: scale them down
        scale = 1.0 / math.fsum(lows.values())
        lows = {a: v * scale for a, v in lows.items()}
    fixed: dict[str, float] = {}
    for _ in range(len(arms) + 1):
        free = [a for a in arms if a not in fixed]
        if not free:
            break
        room = 1.0 - math.fsum(fixed.values())
        mass = math.fsum(max(weights[a], 1e-12) for a in free)
        trial = {a: room * max(weights[a], 1e-12) / mass for a in free}
        low = [a for a in free if trial[a] < lows[a]]
        high = [a for a in free if trial[a] > bands[a][1]]
        if not low and not high:
            fixed.update(trial)
            break
        for a in low:
            fixed[a] = lows[a]
        if not low:
            for a in high:
                fixed[a] = bands[a][1]
    total = math.fsum(fixed.values())
    return {a: fixed.get(a, 0.0) / total for a in arms}


class ArmBandit:
    """Weights over the active arms, a seeded chooser and a yield-driven update.

    ``arms``: the arms this run can use (e.g. without ``llm_guided`` offline). ``pinned``:
    a weight dict used as given (see :func:`validate_arm_weights`). ``floors``: per-arm
    ``(low, high)`` bands, merged over :data:`DEFAULT_FLOORS`. ``rate``: the step size of
    the multiplicative update (``w *= exp(rate * (yield - mean_yield))``).
    """

    def __init__(self, arms=("structured", "open_ended", "behavior_targeted", "failure_mutation"),
                 seed: int = 0, pinned: dict | None = None, floors: dict | None = None, rate: float = 0.5):
        arms = list(dict.fromkeys(arms))
        if not arms:
            raise ValueError("ArmBandit needs at least one arm")
        unknown = [a for a in arms if a not in ARMS]
        if unknown:
            raise ValueError(f"unknown arm {unknown[0]!r}; arms are: {', '.join(ARMS)}")
        self.arms = arms
        self.seed = int(seed)
        self._round_draw: tuple | None = None      # (round, its KeyedDraw) for peek
        self.rate = float(rate)
        self.bands = {a: DEFAULT_FLOORS[a] for a in arms}
        for name, band in (floors or {}).items():
            if name in self.bands:
                lo, hi = float(band[0]), float(band[1])
                if not 0.0 <= lo <= hi <= 1.0:
                    raise ValueError(f"floors[{name!r}] = {band!r}; give (low, high) with 0 <= low <= high <= 1")
                self.bands[name] = (lo, hi)
        self.pinned = pinned is not None
        if self.pinned:
            self._w = validate_arm_weights(pinned, tuple(ARMS))
            self._w = {a: self._w[a] for a in arms}
            total = math.fsum(self._w.values())
            if total <= 0:
                raise ValueError("advanced['arm_weights'] gives no weight to any arm this run can use "
                                 f"({', '.join(arms)})")
            self._w = {a: w / total for a, w in self._w.items()}
        else:
            self._w = _clamp({a: DEFAULT_WEIGHTS[a] for a in arms}, self.bands)
        self.initial = dict(self._w)
        self._cum = self._cumulative()
        self.updates = 0
        self.chosen = {a: 0 for a in arms}
        self.totals = {a: [0, 0, 0] for a in arms}     # rows, new signatures, new cells

    def _cumulative(self) -> list[tuple[float, str]]:
        acc, out = 0.0, []
        for a in self.arms:
            if self._w[a] > 0:
                acc += self._w[a]
                out.append((acc, a))
        return out

    def weights(self) -> dict[str, float]:
        """Current weights rounded to 4 places for reports, still summing to 1: the ten-thousandths
        left over go to the largest remainders (four weights rounded alone can sum to 1.0001)."""
        units = {a: w * 10000 for a, w in self._w.items()}
        out = {a: int(u) for a, u in units.items()}
        left = round(sum(units.values())) - sum(out.values())
        for a in sorted(units, key=lambda a: out[a] - units[a])[:max(0, left)]:
            out[a] += 1
        return {a: n / 10000 for a, n in out.items()}

    def choose(self, *slot_key) -> str:
        """The arm for one situation slot; the same ``slot_key`` always gives the same arm."""
        arm = self.peek(*slot_key)
        self.chosen[arm] += 1
        return arm

    def peek(self, *slot_key) -> str:
        """The arm ``choose`` would give this slot now, without counting it."""
        if len(slot_key) == 2 and type(slot_key[0]) is int:    # (round, ordinal): the round's draws share a prefix
            head = self._round_draw
            if head is None or head[0] != slot_key[0]:
                head = self._round_draw = (slot_key[0], KeyedDraw(self.seed, "arm", slot_key[0]))
            u = head[1](slot_key[1])
        else:
            u = draw(self.seed, "arm", *slot_key)
        u *= self._cum[-1][0]
        for edge, arm in self._cum:
            if u < edge:
                break
        return arm

    def update(self, yields: dict) -> dict[str, float]:
        """One batch's yield per arm, ``{arm: (rows, new_signatures, new_cells)}``; returns weights.

        Yield = (new signatures + new cells) / rows. Arms absent or with 0 rows get the mean
        yield of the arms that ran. Pinned weights only record the totals.
        """
        per_row = {}
        for arm, got in yields.items():
            if arm not in self.totals:
                continue
            rows, sigs, cells = (int(x) for x in got)
            t = self.totals[arm]
            t[0] += rows; t[1] += sigs; t[2] += cells
            if rows > 0:
                per_row[arm] = (sigs + cells) / rows
        if self.pinned or not per_row:
            return self.weights()
        mean = math.fsum(per_row.values()) / len(per_row)
        moved = {a: w * math.exp(self.rate * (per_row.get(a, mean) - mean)) for a, w in self._w.items()}
        self._w = _clamp(moved, self.bands)
        self._cum = self._cumulative()
        self.updates += 1
        return self.weights()

    def stats(self) -> dict:
        """For ``search``: initial and current weights, updates, picks and yield totals per arm."""
        return {"initial": {a: round(w, 4) for a, w in self.initial.items()}, "weights": self.weights(),
                "pinned": self.pinned, "updates": self.updates, "chosen": dict(self.chosen),
                "yield": {a: {"rows": t[0], "new_signatures": t[1], "new_cells": t[2]}
                          for a, t in self.totals.items()}}

    # ------------------------------------------------------------------ snapshot
    def state(self) -> State:
        return State(meta={"weights": [self._w[a] for a in self.arms], "updates": self.updates,
                           "chosen": [self.chosen[a] for a in self.arms],
                           "totals": [self.totals[a] for a in self.arms]})

    def load_state(self, state: State) -> None:
        """Continue from :meth:`state` (on a bandit made with the same arms, seed and pins)."""
        m = state.meta
        if not all(len(m[k]) == len(self.arms) for k in ("weights", "chosen", "totals")):
            raise ValueError("snapshot bandit has other arms than this run")
        self._w = {a: float(w) for a, w in zip(self.arms, m["weights"])}
        self._cum = self._cumulative()
        self.updates = int(m["updates"])
        self.chosen = {a: int(n) for a, n in zip(self.arms, m["chosen"])}
        self.totals = {a: [int(x) for x in t] for a, t in zip(self.arms, m["totals"])}
