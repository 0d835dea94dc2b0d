"""Search arms: seeded choice, yield-driven weights with floors, pinned weights."""
import math

import pytest

from whileai_ray.search.arms import ARMS, DEFAULT_FLOORS, ArmBandit, validate_arm_weights
from whileai_ray.search.coverage import CoverageTracker

OFFLINE = ("structured", "open_ended", "behavior_targeted", "failure_mutation")


def _in_bands(weights):
    for arm, w in weights.items():
        lo, hi = DEFAULT_FLOORS[arm]
        assert lo - 1e-4 <= w <= hi + 1e-4, (arm, w)


def test_default_weights_sum_to_one_and_respect_floors():
    for arms in (OFFLINE, ARMS):
        w = ArmBandit(arms, seed=0).weights()
        assert list(w) == list(arms)
        assert math.isclose(sum(w.values()), 1.0, abs_tol=1e-3)
        _in_bands(w)
    full = ArmBandit(ARMS).weights()
    assert full["structured"] == full["llm_guided"] == 0.42
    assert full["open_ended"] == 0.10


def test_choose_is_keyed_by_slot_and_follows_weights():
    a, b = ArmBandit(OFFLINE, seed=3), ArmBandit(OFFLINE, seed=3)
    picks = [a.choose(r, i) for r in range(50) for i in range(400)]
    assert picks == [b.choose(r, i) for r in range(50) for i in range(400)]
    assert a.choose(7, 7) == a.choose(7, 7)
    w = a.weights()
    for arm in OFFLINE:
        assert abs(picks.count(arm) / len(picks) - w[arm]) < 0.01, arm
    other = [ArmBandit(OFFLINE, seed=4).choose(0, i) for i in range(400)]
    assert other != picks[:400]


def test_update_moves_weight_toward_yield_within_floors():
    bandit = ArmBandit(OFFLINE, seed=0)
    start = bandit.weights()
    bandit.update({"structured": (40, 2, 1), "behavior_targeted": (4, 4, 0), "open_ended": (4, 0, 0)})
    moved = bandit.weights()
    assert moved["behavior_targeted"] > start["behavior_targeted"]
    assert moved["open_ended"] <= start["open_ended"]
    for _ in range(200):      # a starving arm keeps its floor; a hot one stays under its cap
        bandit.update({"structured": (40, 40, 0), "behavior_targeted": (4, 8, 8), "open_ended": (4, 8, 8),
                       "failure_mutation": (4, 0, 0)})
    w = bandit.weights()
    _in_bands(w)
    assert w["open_ended"] == pytest.approx(0.10, abs=1e-4)
    assert w["behavior_targeted"] == pytest.approx(0.08, abs=1e-4)
    assert w["failure_mutation"] == pytest.approx(0.01, abs=1e-3)
    assert math.isclose(sum(w.values()), 1.0, abs_tol=1e-3)
    assert bandit.stats()["yield"]["open_ended"] == {"rows": 4 + 800, "new_signatures": 1600, "new_cells": 1600}


def test_idle_arms_get_the_mean_yield():
    bandit = ArmBandit(OFFLINE, seed=0)
    start = bandit.weights()
    assert bandit.update({"structured": (30, 9, 4)}) == start    # only one arm ran: nothing to compare
    assert bandit.update({}) == start


def test_pinned_weights_are_used_as_given_and_never_move():
    bandit = ArmBandit(OFFLINE, seed=1, pinned={"structured": 3, "open_ended": 1})
    assert bandit.weights() == {"structured": 0.75, "open_ended": 0.25, "behavior_targeted": 0.0,
                                "failure_mutation": 0.0}
    picks = {bandit.choose(0, i) for i in range(2000)}
    assert picks == {"structured", "open_ended"}
    bandit.update({"structured": (10, 0, 0), "open_ended": (10, 10, 10)})
    assert bandit.weights()["structured"] == 0.75
    assert bandit.stats()["pinned"] is True


@pytest.mark.parametrize("bad, exc, words", [
    ({"structred": 1}, ValueError, "unknown arm 'structred'"),
    ({"structured": -1}, ValueError, "give a number >= 0"),
    ({"structured": 0, "open_ended": 0}, ValueError, "all zero"),
    ({}, TypeError, "non-empty dict"),
    ([("structured", 1)], TypeError, "non-empty dict"),
])
def test_bad_arm_weights_name_the_fix(bad, exc, words):
    with pytest.raises(exc, match=words):
        validate_arm_weights(bad)


def test_pinning_only_arms_this_run_cannot_use_is_refused():
    with pytest.raises(ValueError, match="no weight to any arm this run can use"):
        ArmBandit(OFFLINE, pinned={"llm_guided": 1.0})
    with pytest.raises(ValueError, match="unknown arm"):
        ArmBandit(("structured", "magic"))


def test_tracker_yields_drive_the_bandit():
    tracker = CoverageTracker()
    bandit = ArmBandit(OFFLINE, seed=0)
    for i in range(20):   # structured rows repeat one signature; targeted rows are all new
        tracker.observe({"prompt": f"s{i}", "arm": "structured", "behavior_signature": "same"})
        tracker.observe({"prompt": f"t{i}", "arm": "behavior_targeted", "behavior_signature": f"sig{i}"})
    yields = tracker.take_yields()
    assert yields == {"behavior_targeted": (20, 20, 0), "structured": (20, 1, 0)}
    assert tracker.take_yields() == {}
    before = bandit.weights()["behavior_targeted"]
    assert bandit.update(yields)["behavior_targeted"] > before


def test_reported_weights_sum_to_one_after_rounding():
    bandit = ArmBandit(ARMS)
    bandit._w = {"structured": 0.85314, "open_ended": 0.06714, "behavior_targeted": 0.03624,
                 "failure_mutation": 0.04348}       # each rounded alone: 0.8531 + 0.0671 + 0.0362 + 0.0435
    w = bandit.weights()
    assert abs(sum(w.values()) - 1.0) < 1e-9 and all(abs(w[a] - bandit._w[a]) <= 1e-4 for a in w)
