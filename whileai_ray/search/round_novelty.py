"""Novelty decided per planner round, a round's likely candidates scored in one call (issue 32).

The planner scores ~2 candidate asks per new situation against its archive of opened prompts
(``search/novelty.py``) and archives the one it opens. Scored one at a time, each call is a
Python walk of 16 band chains (~32 us), and each archived prompt changes what the next call
sees, so no two calls can be batched. Here the archive is frozen for the length of a round
(``Planner.decide(r)``, rounds are deterministic: ``planner/rounds.py``):

* a candidate's similarity is the larger of its similarity to the frozen archive (the LSH,
  unchanged) and the exact share of equal stored sketch values with each prompt this round has
  opened so far (a small (picks, K) compare: a pick earlier in the round still counts against
  a near-copy later in it). Novelty is 1 - that;
* what the round opens (:meth:`RoundNovelty.add`) waits in a round list and goes into the archive
  in order when the round ends (:meth:`RoundNovelty.end`, ``novelty_batch.add_many``: the tables
  sequential adds would have built). A snapshot is taken between rounds, the list empty;
* at the start of a round (:meth:`RoundNovelty.begin`), when the asks come written from the edges
  with their sketches (``search/edge_asks.py``), the candidates of the round's likely grid picks
  (each cell heap's next picks, as ``search/ask_forecast.py`` runs them ahead) are scored against
  the frozen archive in one vectorised call (``novelty_batch.similarity_many``), with the next
  open-ended probes' when the edges wrote them too, and the answers
  kept for the round. A candidate without an answer is scored alone, to the same value (the
  archive is frozen), so which answers were there never changes a decision. The round's picks
  are compared with the batch as they are opened, one (batch, K) compare a pick, each batch
  candidate keeping its largest count so far: scoring a batch candidate is then two look-ups, not
  a (picks, K) compare a call (the same counts, so the same values).

The planner's index keeps no text keys (``exact=False``: its own digest table knows exact copies),
so an answer is a function of the sketch alone and is kept by the sketch's bytes.
"""
from __future__ import annotations

import heapq
import math

import numpy as np

from .ask_batching import ALT_INSTANCE_STRIDE, situation_units
from .ask_forecast import AskForecast
from .edge_asks import PROBE
from .novelty import K, _stored, sketch
from .novelty_batch import add_many, most_equal_into, similarity_many

__all__ = ["RoundNovelty", "BATCH_SLACK", "PROBES_SCORED"]

BATCH_SLACK = 2          # picks per cell heap scored ahead beyond its share of the round's new situations
PROBES_SCORED = 6        # open-ended probes scored ahead (a round of 64 new situations opens ~4)


class RoundNovelty:
    """One planner's round state: its picks so far and the round's batch answers."""

    def __init__(self, planner):
        self.p = planner
        self._picks = np.zeros((64, K), dtype=np.uint16)      # stored sketches opened this round, in order
        self._texts: list[str] = []
        self._answers: dict[bytes, int] = {}                  # sketch (its bytes) -> its row in the batch
        self._sims: list[float] = []                          # a batch row's similarity to the archive
        self._batch = np.zeros((0, K), dtype=np.uint16)       # the batch's stored sketches
        self._most = np.zeros(0, dtype=np.int64)              # a batch row's most equal values with a pick
        self.batched = self.scored = self.answered = 0        # sketches scored in batches, alone, from a batch

    def __len__(self) -> int:
        return len(self._texts)

    def begin(self, room: int) -> None:
        """A round starts: score the sketches of its likely grid candidates in one call."""
        self._drop_answers()
        p = self.p
        asks = getattr(p, "asks", None)
        if asks is None or p.picker is None or p.pinned_mode or room <= 0 or p.novelty._exact is not None:
            return
        s = p.s
        per = situation_units(p)
        new = -(-max(0, room - len(p._rerolls) - len(p._backlog)) // per)
        if new <= 0:
            return
        sks: dict[bytes, np.ndarray] = {}
        for run in AskForecast(p).runs:
            m = math.ceil(new * run.share) + BATCH_SLACK if run.share > 0 and run.heap else 0
            for ci, instance in _next_picks(run, m):
                for j in range(max(1, s.novelty_candidates)):
                    sk = asks.peek_sketch(ci, instance + j * ALT_INSTANCE_STRIDE, 0)
                    if sk is not None:
                        sks.setdefault(sk.tobytes(), sk)
        if s.n == 1:               # the next open-ended probes, when the edges wrote them (edge_asks.PROBE)
            for j in range(min(PROBES_SCORED, new)):
                sk = asks.peek_sketch(PROBE, p._probes + j, 0)
                if sk is not None:
                    sks.setdefault(sk.tobytes(), sk)
        if sks:
            self._batch = _stored(np.stack(list(sks.values())))
            _, sims = similarity_many(p.novelty, self._batch)
            self._answers = dict(zip(sks, range(len(sks))))
            self._sims = sims.tolist()
            self._most = np.zeros(len(sks), dtype=np.int64)
            self.batched += len(sks)
            for row in self._picks[:len(self._texts)]:      # (none: a round begins with no pick)
                most_equal_into(self._most, self._batch, row)

    def _drop_answers(self) -> None:
        self._answers, self._sims = {}, []
        self._batch, self._most = self._batch[:0], self._most[:0]

    def similarity(self, text: str, sk: np.ndarray) -> float:
        """The larger of ``text``'s similarity to the frozen archive and to this round's picks."""
        sk = np.asarray(sk, dtype=np.uint32)
        row = self._answers.get(sk.tobytes()) if self._answers else None
        if row is not None:                   # answered by the batch, its picks' counts kept by add()
            self.answered += 1
            s = self._sims[row]
            return max(s, float(self._most[row]) / K) if self._texts else s
        stored = _stored(sk)                               # what the archive keeps of it
        picks = self._picks[:len(self._texts)]
        self.scored += 1
        index = self.p.novelty
        if index._exact is None:         # the archive's candidates and the round's picks in one compare
            rows = np.concatenate((index.ready()._sk._a[index._candidates(stored)], picks))
            return float((rows == stored).sum(axis=1).max()) / K if len(rows) else 0.0
        s = index.similarity(text, sk)[1]
        return max(s, float((picks == stored).sum(axis=1).max()) / K) if len(picks) else s

    def novelty(self, text: str, sk: np.ndarray) -> float:
        return 1.0 - self.similarity(text, sk)

    def add(self, text: str, sk: np.ndarray | None = None) -> None:
        """Open ``text`` (its ``sketch``, computed when not given) in this round: archived when it ends."""
        if sk is None:
            sk = sketch(text)
        n = len(self._texts)
        if n == len(self._picks):
            self._picks = np.concatenate((self._picks, np.zeros_like(self._picks)))
        row = self._answers.get(np.asarray(sk, dtype=np.uint32).tobytes()) if self._answers else None
        self._picks[n] = stored = _stored(sk) if row is None else self._batch[row]     # (a batch row: stored)
        self._texts.append(text)
        if len(self._most):                   # each batch candidate's most equal values with a pick
            most_equal_into(self._most, self._batch, stored)

    def end(self) -> None:
        """The round is over: its picks go into the archive, in order; its answers are dropped."""
        self._drop_answers()
        if self._texts:
            texts, self._texts = self._texts, []
            index = self.p.novelty
            add_many(index, self._picks[:len(texts)].copy(), texts if index._exact is not None else None)


def _next_picks(run, m: int) -> list[tuple[int, int]]:
    """About the next ``m`` ``(cell index, instance)`` picks of one cell heap run ahead (``_Run``):
    its ``m`` smallest entries, a cell once (the guess only decides what is scored ahead), or the
    exact pops when the heap holds fewer cells than that."""
    if m > len(run.heap):
        return [run.pop() for _ in range(m)]
    return [(run.offset + index, opened + run.instance_offset) for opened, _tie, index in heapq.nsmallest(m, run.heap)]
