"""Repeat policies: how many rollouts each ask (one prompt) gets.

A *group* is every rollout of one prompt (one wording the planner opened). Groups are numbered
in the order they open (``0, 1, 2, ...``: the planner's wording ids) and kept as columns
(counters in ``array`` columns, the first label as an id into a small table, a split flag), so
a million groups cost a few bytes each, and the snapshot copies the columns, not objects.

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

from array import array

import numpy as np

from ..core.rng import draw
from ..core.columns import State

EXPLORE_SHARE = 0.05
STATUSES = ("probe", "open", "mixed", "stopped_unanimous", "complete")
PROBE, OPEN, MIXED, STOPPED, COMPLETE = range(len(STATUSES))
_COLUMNS = ("scheduled", "done", "landed", "target", "label", "split", "status")


class GroupBook:
    def __init__(self, k: int, policy: str, probe: int = 2, seed: int = 0, key_of=None):
        self.seed = seed
        self._warm_n: int | None = None      # groups at the last warm(ahead=True)
        # what keys a group's seeded draws: the planner passes [scenario_id, phrasing_index]
        self.key_of = key_of or (lambda gid: [gid])
        self.k = max(1, int(k))
        self.policy = policy
        self.probe = min(self.k, max(1, int(probe))) if policy in ("successive", "adaptive") else self.k
        # one slot per group: rollout indices handed out (0..scheduled-1), rollouts observed (landed
        # or lost), landed, the rollouts it is meant to reach now, its first label (an id into
        # ``_labels``, -1 before any), whether two labels differ, its status (an index of STATUSES)
        self.scheduled, self.done, self.landed = array("i"), array("i"), array("i")
        self.target, self.label = array("i"), array("i")
        self.split, self.status = array("b"), array("b")
        self._labels: list = []                  # distinct labels, first seen first
        self._label_id: dict = {}
        self.probed = 0
        self.mixed = 0
        self._cont_obs: dict[int, int] = {}
        self._cont_split: dict[int, int] = {}
        self._stopped = array("q")               # stopped groups, oldest first
        self._reserve = 0                        # rollouts probing groups may still need (reserved())

    def __len__(self) -> int:
        return len(self.status)

    @property
    def adaptive(self) -> bool:
        return self.policy in ("successive", "adaptive") and self.k > 1

    def status_of(self, gid: int) -> str:
        return STATUSES[self.status[gid]]

    def open(self, gid: int, k: int | None = None) -> list[int]:
        """Register group ``gid`` (the next id: ``len(book)``); return the rollout indices to schedule now.
        ``k`` (fixed policies only) gives this group fewer rollouts than the book's k: a ``runs=``
        replay plays each ask as many times as the first run did."""
        if gid != len(self.status):
            raise ValueError(f"GroupBook.open: groups open in order; expected id {len(self.status)}, got {gid}")
        first = self.probe if self.adaptive else self.k if k is None else max(1, min(int(k), self.k))
        for col in (self.scheduled, self.done, self.landed):
            col.append(0)
        self.target.append(first)
        self.label.append(-1)
        self.split.append(0)
        self.status.append(PROBE if self.adaptive else OPEN)
        if self.adaptive:
            self._reserve += self.k                  # less what _hand_out hands out now
        return self._hand_out(gid, first)

    def _hand_out(self, gid: int, upto: int) -> list[int]:
        upto = min(upto, self.k)
        out = list(range(self.scheduled[gid], upto))
        if self.status[gid] == PROBE:
            self._reserve -= len(out)
        self.scheduled[gid] = max(self.scheduled[gid], upto)
        self.target[gid] = max(self.target[gid], upto)
        return out

    def mixed_rate(self) -> float:
        return (self.mixed + 1) / (self.probed + 2)

    def hazard(self, n: int) -> float:
        prior = 0.5 * self.mixed_rate() / self.probe
        return (self._cont_split.get(n, 0) + prior) / (self._cont_obs.get(n, 0) + 1)

    def _note_label(self, gid: int, label) -> None:
        """Count a landed label; a group's labels are kept as its first label and a split flag
        (all the policy reads: whether they differ, and whether a new one differs from the rest)."""
        status = self.status[gid]
        first = self.label[gid]
        self.landed[gid] += 1
        lid = self._label_id.get(label)
        if lid is None:
            lid = self._label_id[label] = len(self._labels)
            self._labels.append(label)
        # counted groups are unanimous so far (a split one is mixed), so "new label" = "not the first"
        if status == STOPPED or (status == PROBE and self.done[gid] > self.probe):
            n = self.landed[gid] - 1
            self._cont_obs[n] = self._cont_obs.get(n, 0) + 1
            if first >= 0 and lid != first and not self.split[gid]:
                self._cont_split[n] = self._cont_split.get(n, 0) + 1
        if first < 0:
            self.label[gid] = lid
        elif lid != first:
            self.split[gid] = 1

    def observe(self, gid: int, label) -> list[int]:
        """Record one finished rollout (``label`` None = lost); return rollout indices to add."""
        self.done[gid] += 1
        if label is not None:
            self._note_label(gid, label)
        if self.done[gid] < self.scheduled[gid]:
            return []
        if not self.adaptive:
            if self.done[gid] >= self.target[gid]:
                self._set_status(gid, COMPLETE)
            return []
        split = bool(self.split[gid])
        status = self.status[gid]
        if status == PROBE and self.done[gid] == self.probe:
            self.probed += 1
            if split:
                self.mixed += 1
        if split:
            if status != MIXED and status != COMPLETE:
                self._set_status(gid, MIXED)
            if self.scheduled[gid] < self.k:
                return self._hand_out(gid, self.k)
            self._set_status(gid, COMPLETE)
            return []
        if self.scheduled[gid] >= self.k:
            self._set_status(gid, COMPLETE)
            return []
        landed = self.landed[gid]
        if landed and (self.hazard(landed) > self.mixed_rate() / self.probe
                       or draw(self.seed, "explore-hazard", self.key_of(gid), landed) < EXPLORE_SHARE):
            return self._hand_out(gid, self.scheduled[gid] + 1)
        if status != STOPPED:
            self._set_status(gid, STOPPED)
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
        """Rollouts the asks still probing may yet need to reach k (not handed out yet); kept as a
        running count (``_reserve``), so asking costs nothing however many groups are open."""
        return self._reserve

    def _set_status(self, gid: int, status: int) -> None:
        if self.status[gid] == PROBE and status != PROBE:
            self._reserve -= self.k - self.scheduled[gid]       # no longer probing: nothing reserved
        self.status[gid] = status

    def reopen(self, limit: int) -> list[tuple[int, int]]:
        """Nothing fresh is left: give stopped groups one more rollout each, oldest first."""
        out: list[tuple[int, int]] = []
        keep = array("q")
        for gid in self._stopped:
            stopped = self.status[gid] == STOPPED and self.scheduled[gid] < self.k
            if len(out) < limit and stopped and self.done[gid] == self.scheduled[gid]:
                out.extend((gid, i) for i in self._hand_out(gid, self.scheduled[gid] + 1))
            if self.status[gid] == STOPPED and self.scheduled[gid] < self.k:
                keep.append(gid)
        self._stopped = keep
        return out

    def reopenable(self) -> bool:
        """Some stopped group could still get another rollout."""
        if not self.adaptive or not len(self.status):
            return False
        status, scheduled = self._np("status"), self._np("scheduled")
        return bool(np.any((status == STOPPED) & (scheduled < self.k)))

    def _np(self, name: str) -> np.ndarray:
        col = getattr(self, name)
        return np.frombuffer(col, dtype={"b": np.int8, "i": np.int32, "q": np.int64}[col.typecode]).copy()

    def stats(self) -> dict:
        st, split = self._np("status"), self._np("split").astype(bool)
        scheduled, done = self._np("scheduled"), self._np("done")
        complete = st == COMPLETE
        stopped = st == STOPPED
        partial = ~complete & (np.isin(st, (PROBE, MIXED, OPEN)) | (done < scheduled))
        counts = {"mixed": int(np.sum(complete & split) + np.sum(st == MIXED)),
                  "stopped_unanimous": int(stopped.sum()), "complete": int(complete.sum()),
                  "partial": int(partial.sum())}
        saved = int(np.sum(self.k - scheduled[stopped]))
        return {"k": self.k, "probe": self.probe, "groups": len(st), **counts,
                "rollouts_saved": saved, "mixed_rate": round(self.mixed_rate(), 4),
                "hazard": {str(n): round(self.hazard(n), 4) for n in sorted(self._cont_obs)}}

    def cut(self, gid: int) -> bool:
        """True when the group did not reach its planned size (budget or clock stopped it)."""
        if not 0 <= gid < len(self.status):
            return False
        if self.status[gid] in (PROBE, MIXED, OPEN):
            return True
        return self.done[gid] < self.scheduled[gid]

    def cut_groups(self) -> list[int]:
        """Every group :meth:`cut` names, in id order."""
        st, done, scheduled = self._np("status"), self._np("done"), self._np("scheduled")
        return np.flatnonzero(np.isin(st, (PROBE, MIXED, OPEN)) | (done < scheduled)).tolist()

    # ------------------------------------------------------------------ snapshot
    def state(self, scratch: dict | None = None) -> State:
        """The book as one table, a row per group (copied: it changes in place), and its counters.

        ``scratch``: a dict this method keeps its copy's buffer in and reuses next time it gets the
        same dict (a snapshot keeper alternates two, so a table is never rewritten while the last
        snapshot still diffs against it): a fresh 28 MB buffer at a million groups cost ~50 ms of
        page faults in a busy Driver every snapshot, a reused one ~8 ms.

        The copy is made column by column into a column-major buffer and handed out as its
        transpose (a view): contiguous copies, where filling the row-major table a column at a time
        wrote 4 bytes in every 28 (68 ms of a snapshot's pause at a million groups in a busy Driver);
        whoever writes the table out lays it out in rows, off the loop."""
        n = len(self.status)
        buf = self.warm(scratch, touch=False) if scratch is not None else np.empty((len(_COLUMNS), n), dtype=np.int32)
        by_column = buf[:, :n]
        for j, name in enumerate(_COLUMNS):
            col = getattr(self, name)
            by_column[j] = np.frombuffer(col, dtype=np.int8 if col.typecode == "b" else np.int32)
        tables = {"groups": by_column.T, "stopped": self._np("_stopped")}
        return State(meta={"probed": self.probed, "mixed": self.mixed, "labels": list(self._labels),
                           "cont_obs": sorted(self._cont_obs.items()),
                           "cont_split": sorted(self._cont_split.items())}, tables=tables)

    def warm(self, scratch: dict, touch: bool = True, ahead: bool = False) -> np.ndarray:
        """The buffer :meth:`state` copies into with ``scratch``, made (a quarter larger than the
        book) when there is none or it is too small; ``touch``: its pages faulted in now. A resumed
        run calls it before its loop starts: its first two snapshots would otherwise fault a million
        groups' fresh pages inside the loop's pause (19-83 ms measured, against 4-5 ms warm).
        ``ahead``: also when it would be too small once the book grows twice as much again as it
        did since the last such call (a snapshot keeper's writer thread, after each write: the
        buffer outgrown in the loop's pause cost 40-80 ms of page faults at 0.4-0.7 million groups)."""
        n = len(self.status)
        need = n
        if ahead:
            need, self._warm_n = n + 2 * max(0, n - (n if self._warm_n is None else self._warm_n)), n
        buf = scratch.get("groups")
        if buf is None or buf.shape[1] < need:
            scratch.pop("groups", None)          # (the old buffer goes before the new one is touched)
            buf = scratch["groups"] = np.empty((len(_COLUMNS), need + need // 4 + 1024), dtype=np.int32)
            if touch:
                buf[...] = 0                     # (numpy lets go of the GIL for this: the loop goes on)
        return buf

    def load_state(self, state: State) -> None:
        """Continue from :meth:`state` (on a book made with the same k, policy, probe and seed)."""
        m = state.meta
        table = state.array("groups", np.int32, width=len(_COLUMNS))
        n = len(table)
        stopped = state.array("stopped", np.int64)
        split, status = table[:, _COLUMNS.index("split")], table[:, _COLUMNS.index("status")]
        if n and (split.min() < 0 or split.max() > 1 or status.min() < 0 or status.max() > COMPLETE) \
                or len(stopped) and (stopped.min() < 0 or stopped.max() >= n):
            raise ValueError("snapshot group columns are out of range")
        for j, name in enumerate(_COLUMNS):
            code = getattr(self, name).typecode
            setattr(self, name, array(code, table[:, j].astype(np.int8 if code == "b" else np.int32).tobytes()))
        self._stopped = array("q", stopped.tobytes())
        probing = status == PROBE
        self._reserve = int(np.sum(self.k - table[:, _COLUMNS.index("scheduled")][probing])) if n else 0
        labels = m["labels"]
        if not isinstance(labels, list) or (n and int(self._np("label").max()) >= len(labels)):
            raise ValueError("snapshot group labels do not match the label column")
        self._labels = labels
        self._label_id = {label: i for i, label in enumerate(labels)}
        self.probed, self.mixed = int(m["probed"]), int(m["mixed"])
        self._cont_obs = {int(a): int(b) for a, b in m["cont_obs"]}
        self._cont_split = {int(a): int(b) for a, b in m["cont_split"]}
