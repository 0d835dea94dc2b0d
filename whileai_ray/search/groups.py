"""Repeat policies: how many rollouts each ask (one prompt) gets.

A *group* is every rollout of one prompt: key ``(scenario_id, phrasing_index)``.

* ``none`` / ``fixed``: all ``k`` rollouts scheduled when the ask opens (explore has k=1
  unless ``repeats`` says otherwise).
* ``successive`` / ``adaptive`` (rl, sft, adaptive modes): ``probe = min(k, advanced['probe'])``
  rollouts first. Their labels (the reward when a grader scored the row, else the behaviour
  signature) decide: two labels -> the group is *mixed* and filled to ``k``; one label ->
  *unanimous*, stopped early unless the run's own split hazard says one more rollout is
  likely to split it. Stopped groups are reopened one rollout at a time when nothing fresh is
  left to open. ``repeats`` is therefore a floor for mixed groups (they always reach k) and
  no prompt ever gets more than k rollouts.

The hazard is estimated from this run. ``mixed_rate`` is the Laplace-smoothed share of probed
groups that split; one rollout spent on a fresh ask therefore finds a split with about
``mixed_rate / probe``. ``hazard(n)`` is the share of unanimous-at-n groups that split on the
next rollout, with a skeptical prior (half the fresh-ask value, weight one). A unanimous group
continues when ``hazard(n) > mixed_rate / probe`` -- when more rollouts on it are a better bet
than a fresh ask -- and, to keep the estimate honest, a seeded 5% of unanimous groups continue
anyway (the evidence the estimate learns from). (The reference's prior of ``1/(n+2)`` keeps
about half of all unanimous groups going in a run that never splits; this one stops them.)
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core.rng import draw

EXPLORE_SHARE = 0.05


@dataclass(slots=True)
class Group:
    gid: tuple
    scheduled: int = 0           # rollout indices handed out (0..scheduled-1)
    done: int = 0                # rollouts observed (landed or lost)
    landed: int = 0
    labels: list = field(default_factory=list)
    status: str = "probe"        # probe / mixed / stopped_unanimous / complete
    target: int = 1              # rollouts this group is meant to reach now


class GroupBook:
    def __init__(self, k: int, policy: str, probe: int = 2, seed: int = 0):
        self.seed = seed
        self.k = max(1, int(k))
        self.policy = policy
        self.probe = min(self.k, max(1, int(probe))) if policy in ("successive", "adaptive") else self.k
        self.groups: dict[tuple, Group] = {}
        self.probed = 0
        self.mixed = 0
        self._cont_obs: dict[int, int] = {}
        self._cont_split: dict[int, int] = {}
        self._stopped: list[tuple] = []          # stopped groups, oldest first

    @property
    def adaptive(self) -> bool:
        return self.policy in ("successive", "adaptive") and self.k > 1

    def open(self, gid: tuple) -> list[int]:
        """Register a new ask; return the rollout indices to schedule now."""
        first = self.probe if self.adaptive else self.k
        g = Group(gid=gid, target=first, status="probe" if self.adaptive else "open")
        self.groups[gid] = g
        return self._hand_out(g, first)

    def _hand_out(self, g: Group, upto: int) -> list[int]:
        upto = min(upto, self.k)
        out = list(range(g.scheduled, upto))
        g.scheduled = max(g.scheduled, upto)
        g.target = max(g.target, upto)
        return out

    def mixed_rate(self) -> float:
        return (self.mixed + 1) / (self.probed + 2)

    def hazard(self, n: int) -> float:
        prior = 0.5 * self.mixed_rate() / self.probe
        return (self._cont_split.get(n, 0) + prior) / (self._cont_obs.get(n, 0) + 1)

    def observe(self, gid: tuple, label) -> list[int]:
        """Record one finished rollout (``label`` None = lost); return rollout indices to add."""
        g = self.groups[gid]
        g.done += 1
        if label is not None:
            g.landed += 1
            before = set(g.labels)
            g.labels.append(label)
            if g.status == "stopped_unanimous" or (g.status == "probe" and g.done > self.probe):
                n = g.landed - 1
                self._cont_obs[n] = self._cont_obs.get(n, 0) + 1
                if before and label not in before:
                    self._cont_split[n] = self._cont_split.get(n, 0) + 1
        if g.done < g.scheduled:
            return []
        if not self.adaptive:
            if g.done >= g.target:
                g.status = "complete"
            return []
        split = len(set(g.labels)) > 1
        if g.status == "probe" and g.done == self.probe:
            self.probed += 1
            if split:
                self.mixed += 1
        if split:
            if g.status != "mixed" and g.status != "complete":
                g.status = "mixed"
            if g.scheduled < self.k:
                return self._hand_out(g, self.k)
            g.status = "complete"
            return []
        if g.scheduled >= self.k:
            g.status = "complete"
            return []
        if g.landed and (self.hazard(g.landed) > self.mixed_rate() / self.probe
                         or draw(self.seed, "explore-hazard", list(gid), g.landed) < EXPLORE_SHARE):
            return self._hand_out(g, g.scheduled + 1)
        if g.status != "stopped_unanimous":
            g.status = "stopped_unanimous"
            self._stopped.append(gid)
        return []

    def covers_a_new_group(self, capacity: int, pending: int, outstanding: int) -> bool:
        """Successive / adaptive policies: a new ask opens only while the budget not yet spent
        (``capacity`` less the ``pending`` units decided but not handed out) covers its k rollouts
        on top of what the probing asks may still need, so an ask that splits is filled to k
        ("repeats is a floor") instead of being cut by the budget (budget=32 at k=4: split asks
        reach 4 and ``tasks=`` inherits k=4, not 2). With nothing in flight or pending, the last
        asks open anyway, so the whole budget is spent."""
        if not self.adaptive or (outstanding == 0 and pending == 0):
            return True
        return capacity - pending - self.reserved() >= self.k

    def reserved(self) -> int:
        """Rollouts the asks still probing may yet need to reach k (not handed out yet)."""
        return sum(self.k - g.scheduled for g in self.groups.values() if g.status == "probe")

    def reopen(self, limit: int) -> list[tuple[tuple, int]]:
        """Nothing fresh is left: give stopped groups one more rollout each, oldest first."""
        out = []
        keep = []
        for gid in self._stopped:
            g = self.groups[gid]
            if len(out) < limit and g.status == "stopped_unanimous" and g.scheduled < self.k and g.done == g.scheduled:
                out.extend((gid, i) for i in self._hand_out(g, g.scheduled + 1))
            if g.status == "stopped_unanimous" and g.scheduled < self.k:
                keep.append(gid)
        self._stopped = keep
        return out

    def stats(self) -> dict:
        gs = list(self.groups.values())
        counts = {s: 0 for s in ("mixed", "stopped_unanimous", "complete", "partial")}
        saved = 0
        for g in gs:
            if g.status == "complete" and len(set(g.labels)) > 1:
                counts["mixed"] += 1
            if g.status == "mixed":
                counts["mixed"] += 1
            if g.status == "stopped_unanimous":
                counts["stopped_unanimous"] += 1
                saved += self.k - g.scheduled
            if g.status == "complete":
                counts["complete"] += 1
            elif g.status in ("probe", "mixed", "open") or g.done < g.scheduled:
                counts["partial"] += 1
        return {"k": self.k, "probe": self.probe, "groups": len(gs), **counts,
                "rollouts_saved": saved, "mixed_rate": round(self.mixed_rate(), 4),
                "hazard": {str(n): round(self.hazard(n), 4) for n in sorted(self._cont_obs)}}

    def cut(self, gid: tuple) -> bool:
        """True when the group did not reach its planned size (budget or clock stopped it)."""
        g = self.groups.get(gid)
        if g is None:
            return False
        if g.status in ("probe", "mixed", "open"):
            return True
        return g.done < g.scheduled
