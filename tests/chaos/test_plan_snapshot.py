"""A planner snapshot beside a checkpoint is data: opening a crafted one runs nothing (issue 11, item 7)."""
import builtins
import json
import pickle

import whileai_ray as wai
from whileai_ray.store.schema import row_key

ADV = {"plan_snapshot_s": 0.2, "progress_every_rows": 10**6, "progress_every_s": 3600.0}


def _plain(rows):
    """Rows without the per-call marks a resume adds."""
    out = []
    for r in rows:
        r = dict(r)
        r["lineage"] = {k: v for k, v in r.get("lineage", {}).items() if k != "resumed"}
        out.append(r)
    return out


def _body(path):
    return [json.loads(x) for x in open(path, encoding="utf-8").read().splitlines()
            if x.strip() and "_whileai_ray_checkpoint" not in x]


def test_a_crafted_pickle_plan_beside_a_checkpoint_is_never_unpickled_and_the_resume_is_exact(
        ray_local, tools, tmp_path):
    agent = wai.seeded_agent(tools)
    ck = tmp_path / "ck.jsonl"
    full = wai.simulate(agent, tools=tools, simulator=False, budget=1500, seed=6, checkpoint=str(ck),
                        advanced=ADV, concurrency=8)
    assert full.search["plan_snapshots"]["written"] >= 1
    lines = ck.read_text().splitlines(keepends=True)
    ck.write_text("".join(lines[:1200]))                   # the run "died" after 1,200 rows (every line a row)

    marker = tmp_path / "code-ran"

    class Payload:                                          # what an attacker puts in a shared folder
        def __reduce__(self):
            return builtins.open, (str(marker), "w")

    plan = tmp_path / "ck.jsonl.plan"
    plan.write_bytes(pickle.dumps({"version": 1, "created": "x", "plan": "y", "planner": Payload()}))
    resumed = wai.simulate(agent, tools=tools, simulator=False, budget=1500, seed=6, checkpoint=str(ck),
                           advanced=ADV, concurrency=32)
    assert not marker.exists()
    assert resumed.search["resume"]["mode"] == "exact"
    assert resumed.search["resume"]["snapshot_round"] is None         # replayed from the seed instead
    assert resumed.search["rollouts"]["resumed"] == 1200
    assert _plain(resumed.rows()) == _plain(full.rows())
    body = _body(ck)
    assert len(body) == 1500 and len({row_key(r) for r in body}) == 1500
    said = [w for w in resumed.warnings if "planner snapshot" in w]
    assert said and "pickle" in said[0] and "replayed" in said[0]
    assert plan.read_bytes()[:8] == b"WAIPLANF"                      # this run wrote a plain-data one over it
