"""reproducible=True: the same seed gives the same rows at any concurrency, with any number of
rollout actors, whatever the completion order; a golden value pins the seed-0 draw."""
import hashlib
import json
import random
import time

import whileai_ray as wai



class JitterAgent:
    """The seeded agent with a random 0-6 ms delay: completion order differs on every run."""

    def __init__(self, tools):
        self.inner = wai.seeded_agent(tools)
        self.__name__ = "seeded_agent"
        self.rng = random.Random()          # deliberately unseeded: only the timing varies

    def __call__(self, message):
        time.sleep(self.rng.random() * 0.006)
        return self.inner(message)


def _digest(rows) -> str:
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:16]


def test_same_rows_at_concurrency_1_32_256_and_1_or_4_actors(ray_local, tools):
    agent = JitterAgent(tools)
    kw = dict(tools=tools, simulator=False, seed=11, mode="rl", repeats=4, budget=240,
              grader=lambda r: 0.0 if r.get("seeded") else 1.0)
    runs = [
        wai.simulate(agent, concurrency=1, **kw),
        wai.simulate(agent, concurrency=32, **kw),
        wai.simulate(agent, concurrency=256, **kw),
        wai.simulate(agent, concurrency=32, advanced={"ray": {"rollout_actors": 4}}, **kw),
    ]

    def strip(rows):
        out = []
        for r in rows:
            r = dict(r)
            r["lineage"] = {k: v for k, v in r["lineage"].items() if k != "scoring_run_id"}
            out.append(r)
        return out

    base = strip(runs[0].rows())
    for d in runs[1:]:
        other = strip(d.rows())
        assert len(other) == len(base)
        for i, (a, b) in enumerate(zip(base, other)):
            diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
            assert not diff, f"row {i} differs: {diff}"
    assert len(runs[0].rows()) == 240


def test_reproducible_false_still_fills_the_budget(ray_local, tools):
    data = wai.simulate(JitterAgent(tools), tools=tools, simulator=False, budget=120, reproducible=False)
    assert len(data.rows()) == 120 and data.report()["reproducible"] is False


def test_golden_seed0_draw(ray_local, tools):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, seed=0, budget=50)
    rows = data.rows()
    assert len(rows) == 50
    # Pinned: any change to the writer, the world, the planner or the row schema moves it.
    # Update deliberately (and say why in the commit) when such a change is intended.
    # Moved from e483c3067f92e385 when novelty came to be decided per planner round (issue 32,
    # search/round_novelty.py): novelty scores, and so some of the 50 situations chosen, changed.
    assert _digest(rows) == "893cab86aeb19ff5"


def test_rows_that_crossed_slim_are_the_rows_that_crossed_whole(ray_local, tools, tmp_path):
    """A run whose rows go to disk (budget past ``spill_rows``) sends them slim: the Driver holds a
    stub and the lane's text of each, never its dict (``runtime/pools/slim_results.py``). The same
    run kept in memory sends them whole. Same rows, in the same order, and the same checkpoint."""
    kw = dict(tools=tools, simulator=False, seed=4, budget=200, fault_rate=0.3)
    whole = wai.simulate(wai.seeded_agent(tools), checkpoint=str(tmp_path / "whole.jsonl"), **kw)
    slim = wai.simulate(wai.seeded_agent(tools), checkpoint=str(tmp_path / "slim.jsonl"),
                        advanced={"spill_rows": 40}, **kw)
    a, b = whole.rows(), slim.rows()
    assert len(a) == len(b) == 200 and any(r.get("faults") for r in a)
    for i, (x, y) in enumerate(zip(a, b)):
        assert x == y, f"row {i} differs: {[k for k in set(x) | set(y) if x.get(k) != y.get(k)]}"
    lines = [sorted((tmp_path / f"{name}.jsonl").read_bytes().splitlines()) for name in ("whole", "slim")]
    assert lines[0] == lines[1] and len(lines[0]) == 200
