"""Asks written elsewhere (issue 32, "writing and sketching happen where the rollouts are"): a
planner that takes its grid asks, their sketches and family keys from a ``WrittenAsks`` makes
the very plans ``test_planner_exact`` pins (re-pinned when novelty became per round), however the answers arrive: at
once, rounds late, some lost, some cut short. And when they arrive in time, the planner writes
(nearly) none of its grid asks itself."""
import collections
import random

import pytest
import test_planner_exact as exact

from whileai_ray.search.ask_forecast import AskForecast
from whileai_ray.search.edge_asks import AskBuilder, AskDesk, WrittenAsks

WINDOW = 128


def _edge_build(delay: int, drop_every: int, keep_share: float, seen: list):
    """``exact.build`` with a WrittenAsks filled by an AskDesk from the forecast, before each
    decision: answered ``delay`` decisions late, every ``drop_every``-th answer lost, a share
    ``keep_share`` of each answer kept."""
    plain = exact.build

    def build(mode="explore", **kw):
        p = plain(mode, **kw)
        w = p.writer.inner
        builder = AskBuilder(w.tools, w.system_prompt, w.seed, p.picker.cells)
        desk, token = AskDesk(), builder.token()
        desk.learn(token, builder)
        p.asks = asks = WrittenAsks()
        forecast, pending, rnd, decide = AskForecast(p), collections.deque(), random.Random(delay), p.decide
        calls = [0]

        def deciding(r):
            while pending and pending[0][0] <= r:
                asks.fill(*pending.popleft()[1:])
            need = forecast.due(WINDOW) + forecast.probes_due()      # (as driver/edge_writing.py names them)
            if need:
                want = asks.wanted(need)
                calls[0] += 1
                batch = None if drop_every and calls[0] % drop_every == 0 else desk.write(token, want)
                if batch is not None and keep_share < 1.0:
                    keys, rows, sks, fams, digests, sec = batch
                    keep = [i for i in range(len(keys)) if rnd.random() < keep_share]
                    batch = ([keys[i] for i in keep], [rows[i] for i in keep], sks[keep], [fams[i] for i in keep],
                             digests[keep], sec)
                pending.append((r + delay, batch, want))
                while pending and pending[0][0] <= r:
                    asks.fill(*pending.popleft()[1:])
            return decide(r)
        p.decide = deciding
        seen.extend([asks, p])
        return p
    return build


@pytest.mark.parametrize("case", list(exact.CASES))
def test_asks_written_elsewhere_in_time_leave_every_plan_as_it_was(case, monkeypatch):
    seen: list = []
    monkeypatch.setattr(exact, "build", _edge_build(0, 0, 1.0, seen))
    kwargs, expected = exact.CASES[case]
    got, units = exact.plan_digest(units=3000, **kwargs)
    assert units == 3000 and got == expected, f"{case}: the planner's units moved"
    figures = seen[0].figures()
    assert figures["hits"] > 1500 and figures["hit_rate"] > 0.99, figures      # the planner wrote (nearly) none
    rn = seen[1].round_novelty          # and most candidates were scored in a round's batch (round_novelty.py)
    assert rn.answered > 4 * rn.scored and rn.answered > 500, (rn.batched, rn.answered, rn.scored)


@pytest.mark.parametrize("case,delay,drop_every,keep", [
    ("explore", 2, 0, 1.0), ("explore_faults", 1, 3, 0.7), ("sft_phrasings", 3, 2, 0.5),
    ("adaptive_seeds", 1, 0, 0.4), ("rl_seed5", 5, 4, 0.9)])
def test_late_lost_or_partial_answers_leave_every_plan_as_it_was(case, delay, drop_every, keep, monkeypatch):
    seen: list = []
    monkeypatch.setattr(exact, "build", _edge_build(delay, drop_every, keep, seen))
    kwargs, expected = exact.CASES[case]
    got, units = exact.plan_digest(units=3000, **kwargs)
    assert units == 3000 and got == expected, f"{case}: the planner's units moved"
    figures = seen[0].figures()
    assert figures["hits"] > 0 and figures["misses"] > 0, figures              # both paths ran
    rn = seen[1].round_novelty          # batch answers and candidates scored alone, alike
    assert rn.answered > 0 and rn.scored > 0, (rn.batched, rn.answered, rn.scored)


def test_a_run_without_asks_is_untouched():
    p = exact.build("explore")
    assert getattr(p, "asks", None) is None
    got, _ = exact.plan_digest(units=3000, mode="explore")
    assert got == exact.CASES["explore"][1]
