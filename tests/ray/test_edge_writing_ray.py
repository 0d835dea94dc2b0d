"""Asks written at the rollout lanes (issue 32: "writing and sketching happen where the rollouts
are", ``runtime/driver/edge_writing.py``): a run whose actors write the planner's next asks lands
exactly the rows, in the same order, and writes exactly the checkpoint lines of the same run with
edge writing off, on 1 and on 2 actors, and a run cut in the middle resumes to the same lines."""
import json

import whileai_ray as wai
from whileai_ray.store.schema import row_key

BUDGET = 700
KW = dict(simulator=False, budget=BUDGET, seed=8, fault_rate=0.2)


def _knobs(actors: int, edge: bool) -> dict:
    return {"ray": {"rollout_actors": actors, "edge_writing": edge}}


def _lines_by_key(path):
    lines = path.read_bytes().splitlines(keepends=True)
    out = {row_key(json.loads(x)): x for x in lines}
    assert len(out) == len(lines)                      # each key once
    return out


def test_edge_writing_lands_the_rows_and_lines_of_a_run_without_it(ray_local, tools, tmp_path):
    agent = wai.seeded_agent(tools)
    plain = wai.simulate(agent, tools=tools, checkpoint=str(tmp_path / "plain.jsonl"), advanced=_knobs(2, False), **KW)
    assert "edge_asks" not in plain.report()["placement"]          # off: the Driver wrote every ask
    rows, lines = plain.rows(), _lines_by_key(tmp_path / "plain.jsonl")
    assert len(rows) == BUDGET
    for actors in (1, 2):
        ck = tmp_path / f"edge{actors}.jsonl"
        data = wai.simulate(agent, tools=tools, checkpoint=str(ck), advanced=_knobs(actors, True), **KW)
        placement = data.report()["placement"]
        assert placement["pool"] == "actors" and placement["rollout_actors"] == actors
        figures = placement["edge_asks"]
        assert figures["hits"] > 0 and figures["failed_calls"] == 0, figures   # the lanes wrote asks it used
        assert data.rows() == rows, f"{actors} actor(s): the rows moved"
        assert _lines_by_key(ck) == lines, f"{actors} actor(s): the checkpoint moved"

        full = ck.read_bytes().splitlines(keepends=True)
        ck.write_bytes(b"".join(full[:300]) + full[300][:25])     # a crash: 300 rows and a torn line
        again = wai.simulate(agent, tools=tools, checkpoint=str(ck), advanced=_knobs(actors, True), **KW)
        assert again.search["rollouts"]["resumed"] == 300 and again.search["rollouts"]["landed"] == BUDGET - 300
        assert _lines_by_key(ck) == lines, f"{actors} actor(s): the resumed checkpoint moved"
        assert again.report()["placement"]["edge_asks"]["hits"] > 0
        assert [r["prompt"] for r in again.rows()] == [r["prompt"] for r in rows]
