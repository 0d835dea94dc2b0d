"""Asks written where the rollouts are: the edge writes, the Driver looks them up (issue 32).

The Driver's planner spends most of its time per new situation on three pure functions of
``(writer settings, cell, instance, phrasing)``: writing the ask (the template writer's draws are
keyed by the seed and the situation), its MinHash ``sketch`` (``search/novelty.py``) and its
scenario family key (``search/family_cap.py``). None of them reads the planner's state, so any
process can compute them and get the very same values. Here:

* :class:`AskBuilder`: what rebuilds the run's template writer and its grid anywhere (shipped
  once per run to each rollout lane, never per call);
* :class:`AskDesk`: the edge side. It keeps the writers it was shown, by token, and
  ``write(token, requests)`` writes ``[(cell index, instance, phrasing)]`` (an open-ended probe
  as ``(PROBE, probe index, 0)``, also a pure function of the writer) into a
  :data:`Batch`: the situations as plain field tuples, their sketches as one array, their
  family keys and their prompts' digests (``columns.prompt_digest``, what the planner's
  exact-copy table holds);
* :class:`WrittenAsks`: the Driver side. ``fill(batch)`` keeps what came back; the planner's
  ``take(cell index, instance, phrasing, family)`` hands out the situation (and tells ``family``
  its key, and keeps its sketch and digest for :meth:`WrittenAsks.sketch` and
  :meth:`WrittenAsks.digest`), or None: the planner then
  writes it itself. Which asks came back, and when, can change only how much the Driver
  computes, never what it decides.

Plain logic, no Ray (the runtime's ``driver/edge_writing.py`` moves the batches).
"""
from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.columns import prompt_digest
from ..situations.situation import Situation
from ..situations.template_writer import TemplateWriter
from .family_cap import family_key
from .novelty import sketch
from .sketch_batch import sketch_many

__all__ = ["AskBuilder", "AskDesk", "WrittenAsks", "Batch", "write_batch", "FIELDS", "CACHE_ASKS", "PROBE"]

FIELDS = Situation.__slots__         # a situation travels as the tuple of its fields, in this order
CACHE_ASKS = 65_536                  # asks the Driver keeps at most (the oldest go first)
HINTS = 16                           # sketches kept for the prompts just handed out
PROBE = -1                           # the "cell index" of an open-ended probe's ask: (PROBE, probe index, 0)

# (keys [(cell index, instance, phrasing)], situations as field tuples, sketches (n, K) uint32,
#  family keys, prompt digests (n,) uint64, CPU seconds spent writing)
Batch = tuple[list[tuple[int, int, int]], list[tuple], np.ndarray, list[str], np.ndarray, float]


@dataclass(frozen=True)
class AskBuilder:
    """What builds the run's template writer (``TemplateWriter(tools, system_prompt, seed)``) and
    the grid its asks are named by (the picker's ``cells``, by index)."""
    tools: list
    system_prompt: str
    seed: int
    cells: list

    def token(self) -> str:
        """Names this builder: an edge that knows the token need not be shown it again."""
        text = repr((self.tools, self.system_prompt, self.seed, self.cells))
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]

    def writer(self) -> TemplateWriter:
        return TemplateWriter(self.tools, self.system_prompt, self.seed)


def write_batch(writer, cells: list, requests: list) -> Batch:
    """Write, sketch, family-key and digest every ``(cell index, instance, phrasing)`` of ``requests``
    (``(PROBE, index, 0)``: open-ended probe ``index``, ``writer.probe(index)``)."""
    t0 = time.thread_time()      # CPU of this thread: a lane's writer thread waits for the GIL too
    keys, rows, families, prompts = [], [], [], []
    for ci, instance, phrasing in requests:
        sit = writer.probe(instance) if ci == PROBE else writer.write(cells[ci], instance, phrasing)
        keys.append((int(ci), int(instance), int(phrasing)))
        rows.append(tuple(getattr(sit, f) for f in FIELDS))
        prompts.append(sit.prompt)
        families.append(family_key(sit.prompt))
    sketches = sketch_many(prompts)              # (each one's novelty.sketch, made in one batch)
    digests = np.fromiter((prompt_digest(t) for t in prompts), dtype=np.uint64, count=len(prompts))
    return keys, rows, sketches, families, digests, time.thread_time() - t0


class AskDesk:
    """The edge side: the writers it was shown (by token) and the batches it writes with them."""

    def __init__(self) -> None:
        self._known: OrderedDict[str, tuple[Any, list]] = OrderedDict()

    def knows(self, token: str) -> bool:
        return token in self._known

    def learn(self, token: str, builder: AskBuilder) -> None:
        """Keep the writer ``builder`` builds under ``token`` (the last 4 runs' are kept)."""
        if not isinstance(builder, AskBuilder):
            raise TypeError(f"an edge writes asks from an AskBuilder, not {type(builder).__name__}")
        self._known[token] = (builder.writer(), list(builder.cells))
        self._known.move_to_end(token)
        while len(self._known) > 4:
            self._known.popitem(last=False)

    def write(self, token: str, requests: list) -> Batch | None:
        """The batch for ``requests``, or None when this desk was never shown ``token``."""
        got = self._known.get(token)
        if got is None:
            return None
        writer, cells = got
        return write_batch(writer, cells, [r for r in requests if 0 <= r[0] < len(cells)
                                           or (r[0] == PROBE and r[1] >= 0 and r[2] == 0)])


class WrittenAsks:
    """The Driver side: asks written elsewhere, by ``(cell index, instance, phrasing)``."""

    def __init__(self, limit: int = CACHE_ASKS):
        self.limit = int(limit)
        # (cell index, instance, phrasing) -> (situation fields, sketch, family key, prompt digest)
        self._asks: OrderedDict[tuple[int, int, int], tuple[tuple, np.ndarray, str, int]] = OrderedDict()
        self._hints: dict[str, tuple[np.ndarray, int]] = {}   # prompt just handed out -> (sketch, digest)
        self.asked: set[tuple[int, int, int]] = set()     # requested, answer not in yet
        self.hits = self.misses = self.filled = self.unused = 0
        self.edge_seconds = 0.0

    def __len__(self) -> int:
        return len(self._asks)

    def wanted(self, requests: list) -> list:
        """Of ``requests``, those neither kept nor already asked for (they are now asked for)."""
        out = [r for r in requests if r not in self._asks and r not in self.asked]
        self.asked.update(out)
        return out

    def fill(self, batch: Batch | None, requests: list | None = None) -> None:
        """Keep a batch that came back (None: the edge did not answer; ``requests`` are then no
        longer awaited)."""
        if requests is not None:
            self.asked.difference_update(requests)
        if batch is None:
            return
        if len(batch) != 6:
            raise ValueError(f"an edge batch has 6 parts (keys, situations, sketches, families, digests, "
                             f"seconds), not {len(batch)}")
        keys, rows, sketches, families, digests, seconds = batch
        if not (len(keys) == len(rows) == len(sketches) == len(families) == len(digests)):
            raise ValueError("an edge batch's keys, situations, sketches, families and digests differ in length")
        self.edge_seconds += float(seconds)
        asks = self._asks
        for key, row, sk, fam, d in zip(keys, rows, sketches, families, np.asarray(digests, dtype=np.uint64).tolist()):
            # (a lane's keys are tuples of ints already: ``write_batch``)
            asks[key if type(key) is tuple else (int(key[0]), int(key[1]), int(key[2]))] = (row, sk, fam, d)
        self.filled += len(keys)
        while len(asks) > self.limit:
            asks.popitem(last=False)
            self.unused += 1

    def take(self, ci: int, instance: int, phrasing: int, family=None) -> Situation | None:
        """The situation written for ``(ci, instance, phrasing)``, once; ``family`` (a FamilyCap)
        is told its family key, :meth:`sketch` and :meth:`digest` keep its sketch and digest. None
        when it was not written."""
        got = self._asks.pop((ci, instance, phrasing), None)
        if got is None:
            self.misses += 1
            return None
        self.hits += 1
        row, sk, fam, d = got
        sit = Situation(*row)
        if len(self._hints) >= HINTS:
            self._hints.clear()
        self._hints[sit.prompt] = (sk, d)
        if family is not None:
            family.known(sit.prompt, fam)
        return sit

    def peek_sketch(self, ci: int, instance: int, phrasing: int) -> np.ndarray | None:
        """The sketch written for ``(ci, instance, phrasing)``, left in place; None when not written
        (the planner's round scores its likely candidates ahead: ``search/round_novelty.py``)."""
        got = self._asks.get((ci, instance, phrasing))
        return None if got is None else got[1]

    def sketch(self, prompt: str) -> np.ndarray:
        """``novelty.sketch(prompt)``: the one that came with an ask just handed out, else computed."""
        hint = self._hints.get(prompt)
        return sketch(prompt) if hint is None else hint[0]

    def digest(self, prompt: str) -> int:
        """``columns.prompt_digest(prompt)``: the one that came with an ask just handed out, else computed."""
        hint = self._hints.get(prompt)
        return prompt_digest(prompt) if hint is None else hint[1]

    def figures(self) -> dict:
        """Hits, misses, hit rate, asks written at the edges, those never used, and the CPU seconds
        the edges spent writing them (their writer threads' own, GIL waits not counted)."""
        taken = self.hits + self.misses
        return {"hits": self.hits, "misses": self.misses, "hit_rate": round(self.hits / taken, 4) if taken else 0.0,
                "written": self.filled, "unused": self.unused + len(self._asks),
                "edge_seconds": round(self.edge_seconds, 3)}
