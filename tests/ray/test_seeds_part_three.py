"""The seeds, part three: documented behaviours checked as a user meets them (issue 30).

* ``runs=N`` replays the same units (same asks, the same number of rollouts each), so a
  deterministic agent under a deterministic grader has a zero re-run band in every mode and
  repeat policy;
* ``tasks=`` from a plain copy of the public rows says the replay is not faithful;
* the grader steers the search at the budgets users run: graded failures are mutated;
* ``report()`` shows the arguments the docs call "None unless you set it" as None, with what
  the run resolved them to kept apart.
"""
from __future__ import annotations

import zlib
from collections import Counter

import pytest

import whileai_ray as wai
from whileai_ray.search.tasks import UNFAITHFUL
from whileai_ray.testing.seeded_rows import TOOLS


def third_fail(row) -> bool:
    """A deterministic grader that fails about a third of the asks (by the prompt's CRC)."""
    return zlib.crc32((row.get("prompt") or "").encode()) % 3 != 0


def _run(**kw):
    return wai.simulate(wai.seeded_agent(TOOLS), tools=TOOLS, simulator=False, **kw)


@pytest.mark.parametrize("mode, policy", [("explore", None), ("rl", "successive"), ("rl", "fixed")])
def test_runs_replay_the_same_units_and_a_deterministic_agent_has_a_zero_band(ray_local, mode, policy):
    kw = dict(mode=mode, budget=80, runs=3, grader=third_fail, seed=7)
    if mode == "rl":
        kw.update(repeats=4, repeat_policy=policy)
    rows = _run(**kw).rows()
    per_run = [Counter(r["prompt"] for r in rows if r["lineage"]["eval_run"] == e) for e in range(3)]
    assert per_run[0] and per_run[0] == per_run[1] == per_run[2]     # same asks, same k each
    band = wai.eval_variance(rows)
    assert band.n_runs == 3 and band.run_std == 0.0 and band.stability == "deterministic"


def test_tasks_from_a_plain_copy_of_the_rows_warn_that_the_replay_is_not_faithful(ray_local):
    base = _run(budget=12, seed=2)
    copied = [dict(r) for r in base.rows()]
    with pytest.warns(UserWarning, match="expected outcomes"):
        replay = _run(tasks=copied, budget=12, seed=2)
    assert UNFAITHFUL in replay.warnings
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)      # the faithful forms say nothing of it
        for source in (base, base.rows()):
            try:
                faithful = _run(tasks=source, budget=12, seed=2)
            except UserWarning as w:
                assert "expected outcomes" not in str(w)
                continue
            assert UNFAITHFUL not in faithful.warnings


def test_the_grader_steers_the_search_at_200_rows(ray_local):
    graded = _run(budget=200, grader=third_fail, seed=3)
    aims = graded.search["mutation_aims"]
    mutated = sum(1 for r in graded.rows() if r.get("arm") == "failure_mutation")
    assert aims["graded_failure"]["rows"] > 0 and mutated > 0
    assert mutated == aims["graded_failure"]["rows"] + aims["world_fault"]["rows"]
    plain = _run(budget=200, seed=3)
    assert plain.search["mutation_aims"]["graded_failure"] == {"parents": 0, "rows": 0}
    assert plain.search["mutation_aims"] != aims


def test_report_shows_unset_arguments_as_none_and_what_they_resolved_to_apart(ray_local):
    rep = _run(budget=10).report()
    for name in ("concurrency", "seed", "sampling", "temperature", "timeout", "logprobs", "fault_rate",
                 "max_turns", "avg_turns"):
        assert rep[name] is None, name
    assert rep["resolved"]["timeout"] == 300.0 and rep["resolved"]["concurrency"] == 32
    assert rep["resolved"]["fault_rate"] == pytest.approx(0.1) and rep["resolved"]["seed"] == 0
    rl = _run(budget=10, mode="rl", repeats=2).report()
    assert rl["fault_rate"] is None and rl["resolved"]["fault_rate"] > 0
    asked = _run(budget=10, timeout=5, fault_rate=0.3, seed=4, concurrency=2).report()
    assert (asked["timeout"], asked["fault_rate"], asked["seed"], asked["concurrency"]) == (5.0, 0.3, 4, 2)
    assert asked["resolved"]["timeout"] == 5.0


def test_on_progress_every_10_rollouts_over_60_rows_at_concurrency_2(ray_local):
    seen = []
    _run(budget=60, concurrency=2, on_progress=seen.append, seed=5)
    counts = [d["landed"] + d["rerolled"] + d["lost"] for d in seen]
    assert counts == sorted(counts) and counts[-1] == 60 and seen[-1]["stopped_because"] == "budget"
    # A line every ~10 events, not every poll (a 0.2 s poll saw ~30 rows of this run at a time): a
    # mark is noted on the chunk that passes a multiple of 10, so each mark is in a decade of its
    # own. A chunk that settles a whole round's re-rolls with its rows may pass 20 on its way from
    # 10 to 23, so single steps may exceed 10, not the typical one.
    assert len(seen) >= 4, counts
    assert len({c // 10 for c in counts[:-1]}) == len(counts) - 1, counts
    steps = sorted(b - a for a, b in zip(counts, counts[1:]))
    assert steps[len(steps) // 2] <= 12, counts


def test_a_handler_on_the_documented_logger_receives_the_progress_lines(ray_local):
    import logging
    lines = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append((record.name, record.getMessage()))

    log, handler = logging.getLogger("whileai.simulations"), Keep()
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        _run(budget=30, concurrency=2, seed=6)
    finally:
        log.removeHandler(handler)
        log.setLevel(logging.NOTSET)
    progress = [m for name, m in lines if " rollouts, " in m]
    assert len(progress) >= 3 and progress[-1].startswith("30/30 rollouts") and "ended: budget" in progress[-1]
