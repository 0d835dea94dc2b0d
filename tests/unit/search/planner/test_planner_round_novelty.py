"""Novelty decided per round (search/round_novelty.py, issue 32): the archive is frozen while a
round decides, what the round opens is archived in order when it ends (the tables sequential adds
build), a pick earlier in the round counts against a near-copy later in it, and a planner restored
from a snapshot taken between rounds goes on exactly as the one that never stopped, with or
without asks written at the edges (whose batch answers then score most candidates)."""
import hashlib

import numpy as np
import test_planner_edge_asks as edge
import test_planner_exact as exact

from whileai_ray.core.columns import prompt_digest
from whileai_ray.search.novelty import K, NoveltyIndex, sketch
from whileai_ray.search.planner.outcome import Outcome


def _outcomes(units):
    out = []
    for u in units:
        sit = u.situation
        d = prompt_digest(sit.prompt) ^ u.rollout_index
        row = {"prompt": sit.prompt, "tools_used": ["lookup_order"], "arm": sit.arm, "scenario_dimensions": sit.dims,
               "behavior_signature": "x", "run_id": u.run_id, "scenario_id": sit.scenario_id,
               "rollout_index": u.rollout_index, "eval_run": u.eval_run}
        out.append(Outcome(unit=u, row=row, unusable=None, label=(d >> 3) % 2, fault_parent=d % 5 == 0,
                           graded_failure=d % 7 == 0))
    return out


def _play(p, first: int, rounds: int, h=None):
    h = h or hashlib.sha256()
    for r in range(first, first + rounds):
        units = p.decide(r)
        for u in units:
            h.update(repr((u.key, u.situation.prompt, u.situation.selection_reason, u.faults, u.ordinal)).encode())
        p.observe(_outcomes(units))
    return h


def _tables(ix: NoveltyIndex):
    return ix._bits, ix._heads.tolist(), ix._next.view().tolist(), ix._sk.view().tolist()


def test_the_archive_is_frozen_while_a_round_decides_and_gets_its_picks_in_order_after():
    p = exact.build("explore")
    rn = p.round_novelty
    sizes, opened = [], []
    score, add = rn.similarity, rn.add

    def scoring(text, sk):
        sizes[-1].add(len(p.novelty))
        return score(text, sk)

    def adding(text, sk):
        opened.append(text)
        return add(text, sk)
    rn.similarity, rn.add = scoring, adding
    for r in range(40):
        sizes.append(set())
        before = len(p.novelty)
        p.observe(_outcomes(p.decide(r)))
        assert sizes[-1] <= {before}                     # no call in the round saw an archive that moved
        assert len(p.novelty) == len(opened) == p.situations_opened
    assert sum(1 for s in sizes if s) > 30 and len(opened) > 1100          # (past a table rebuild)
    one = NoveltyIndex(exact=False)
    for t in opened:
        one.add(t)
    assert _tables(p.novelty) == _tables(one)


def test_a_pick_earlier_in_the_round_lowers_a_later_near_copys_novelty():
    p = exact.build("explore")
    _play(p, 0, 6)
    rn = p.round_novelty
    text = "Please cancel order A-77 and refund the card I paid with, it never shipped."
    near = text + " Thanks!"
    sk, near_sk = sketch(text), sketch(near)
    alone = p.novelty.novelty(near, near_sk)
    assert rn.novelty(near, near_sk) == alone                  # nothing picked yet this round
    size = len(p.novelty)
    rn.add(text, sk)
    shared = float((sk >> 16 == near_sk >> 16).sum()) / K
    assert shared > 1.0 - alone                                # (a nearer neighbour than the archive's)
    assert rn.novelty(near, near_sk) == 1.0 - shared < alone
    assert len(p.novelty) == size and p.novelty.similarity(text, sk)[1] < 1.0    # not archived yet
    rn.end()
    assert len(p.novelty) == size + 1 and p.novelty.similarity(text, sk) == (size, 1.0)
    assert rn.novelty(near, near_sk) == p.novelty.novelty(near, near_sk) == 1.0 - shared


def test_a_planner_restored_between_rounds_goes_on_as_the_one_that_never_stopped():
    straight = _play(exact.build("explore"), 0, 60).hexdigest()
    p = exact.build("explore")
    h = _play(p, 0, 25)
    assert len(p.round_novelty) == 0 and len(p.novelty) == p.situations_opened     # nothing waits between rounds
    q = exact.build("explore").restore(p.state())
    assert len(q.round_novelty) == 0
    assert _tables(q.novelty) == _tables(p.novelty)
    assert _play(q, 25, 35, h.copy()).hexdigest() == straight
    assert _play(p, 25, 35, h).hexdigest() == straight


def test_edge_answers_score_most_candidates_in_batches_and_change_no_decision():
    seen: list = []
    p = edge._edge_build(0, 0, 1.0, seen)("explore")
    with_asks = _play(p, 0, 60).hexdigest()
    rn = p.round_novelty
    assert rn.batched > 1000 and rn.answered > 9 * rn.scored, (rn.batched, rn.answered, rn.scored)
    assert with_asks == _play(exact.build("explore"), 0, 60).hexdigest()
    # restored without asks, from a planner that had them: the same continuation
    q = exact.build("explore").restore(p.state())
    assert _play(q, 60, 20).hexdigest() == _play(p, 60, 20).hexdigest()
    assert np.array_equal(q.novelty._heads, p.novelty._heads)
