"""Writing a round's asks in batches, for a situation writer that batches (the LLM writer).

A writer with ``prefetch(requests)`` and ``has(cell, instance, phrasing)`` writes many asks in
one model call; the planner would otherwise make one blocking call per ask. Two helpers over the
planner's state, kept apart from its decisions (which read only what the writer wrote for
``(cell, instance, phrasing)``, so batching never changes them):

* :func:`prefetch_round`: a copy of the cell picker runs ahead over the round's new situations,
  with the same fault and arm draws ``Planner._open_next`` will make, and hands the writer every
  ask they will most likely need. A wrong guess costs one ask written for nothing (or one
  written later, alone);
* :func:`write_ask`: ``writer.write(cell, instance, 0)``; when the writer has not written it yet
  (the guess was wrong: a prompt seen before or a near-copy made the planner pick again), the
  picks most likely to come next are written with it, in one batch.

Asks written where the rollouts are (``search/edge_asks.py``): a planner given ``asks`` (a
``WrittenAsks``, by the Driver) takes the ask from there when it was written (:func:`written`),
with its family key and its sketch (:func:`sketch_of`); else it writes it as before. Both are pure
functions of the writer's settings and ``(cell, instance, phrasing)``, so the plan is the same.
"""
from __future__ import annotations

import copy

from ..core.columns import prompt_digest
from ..core.rng import weyl
from .edge_asks import PROBE
from .novelty import sketch

__all__ = ["situation_units", "prefetch_round", "write_ask", "written", "probe_ask", "sketch_of", "digest_of",
           "ALT_INSTANCE_STRIDE", "RETRY_LOOKAHEAD"]

ALT_INSTANCE_STRIDE = 1_000_003   # a competing candidate is another world of the same cell, far from the next ones
RETRY_LOOKAHEAD = 3               # picks written ahead when a batching writer misses (write_ask)


def situation_units(p) -> int:
    """Units planner ``p`` opens with each new situation (its phrasings times its first
    rollouts: ``probe`` of them when k is adaptive), at least 1."""
    s = p.s
    return max(1, s.n * (min(s.k, s.probe) if p.book.adaptive else s.k))


def prefetch_round(p, round_index: int, room: int) -> None:
    """Hand a batching writer the asks planner ``p``'s round ``round_index`` will most likely need."""
    prefetch = getattr(p.writer, "prefetch", None)
    if prefetch is None or p.picker is None or p.pinned_mode or room <= 0:
        return
    s = p.s
    free = room - len(p._rerolls) - len(p._backlog)
    per = situation_units(p)
    new = -(-max(0, free) // per) - len(p.seeds_left)
    if s.situations is not None:
        new = min(new, s.situations - p.situations_opened)
    if new <= 0:
        return
    picker, requests = copy.deepcopy(p.picker), []
    first = p.situations_opened + len(p.seeds_left)
    for ordinal in range(first, first + new):
        arm = p.bandit.peek(round_index, ordinal)
        if (arm == "failure_mutation" and s.mutate and p._parents) or \
                (arm == "open_ended" and s.n == 1 and ordinal > 0) or \
                (arm == "behavior_targeted" and p.shapes is not None and s.n == 1):
            continue                   # written by the template side, no model call
        cell, instance = picker.pick(weyl(s.seed, ordinal, "fault") < s.fault_rate)
        requests.append((cell, instance, 0))
        requests += [(cell, instance + j * ALT_INSTANCE_STRIDE, 0) for j in range(1, max(1, s.novelty_candidates))]
        requests += [(cell, instance, ph) for ph in range(1, s.n)]
    if requests:
        prefetch(requests)


def write_ask(p, cell: dict, instance: int, faulted: bool, ci: int | None = None):
    """Planner ``p``'s writer's ask for ``(cell, instance)`` (``ci``: the cell's index in the
    picker's cells), batched with the next likely picks when a batching writer missed it."""
    asks = getattr(p, "asks", None)
    if asks is not None and ci is not None:
        sit = asks.take(ci, instance, 0, p.family)
        if sit is not None:
            return sit
    has = getattr(p.writer, "has", None)
    if has is not None and not has(cell, instance, 0):
        picker, wanted = copy.deepcopy(p.picker), [(cell, instance)]
        wanted += [picker.pick(faulted) for _ in range(RETRY_LOOKAHEAD)]
        p.writer.prefetch([(c, i + j * ALT_INSTANCE_STRIDE, 0) for c, i in wanted
                           for j in range(max(1, p.s.novelty_candidates))])
    return p.writer.write(cell, instance, 0)


def written(p, cell: dict, ci: int, instance, phrasing: int):
    """Phrasing ``phrasing`` of ``(cell, instance)``: written at an edge, else by the writer."""
    asks = getattr(p, "asks", None)
    sit = asks.take(ci, instance, phrasing, p.family) if asks is not None else None
    return p.writer.write(cell, instance, phrasing) if sit is None else sit


def probe_ask(p, index: int):
    """Open-ended probe ``index``: written at an edge (``(PROBE, index, 0)``), else by the writer."""
    asks = getattr(p, "asks", None)
    sit = asks.take(PROBE, index, 0, p.family) if asks is not None else None
    return p.writer.probe(index) if sit is None else sit


def digest_of(p, prompt: str) -> int:
    """``columns.prompt_digest(prompt)``: the one that came with an ask written at an edge, else computed."""
    asks = getattr(p, "asks", None)
    return prompt_digest(prompt) if asks is None else asks.digest(prompt)


def sketch_of(p, prompt: str):
    """``novelty.sketch(prompt)``: the one that came with an ask written at an edge, else computed."""
    asks = getattr(p, "asks", None)
    return sketch(prompt) if asks is None else asks.sketch(prompt)
