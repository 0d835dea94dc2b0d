"""Issue 11 item 6: ``tasks=`` replays the same situations from any of its three forms.

A deterministic agent replayed from the ``SimulationData``, from ``data.rows()``, from the JSONL
``data.save(path)`` wrote and from the run's checkpoint must give identical rows: the expected
outcome and hidden state each situation carries survive the file (and stay out of ``rows()``
and the training exports)."""
import json

import whileai_ray as wai

QUIET = {"progress_every_rows": 10**6, "progress_every_s": 3600.0}


def plain(rows):
    return [{k: v for k, v in r.items() if k != "lineage"} | {"lineage": {
        k: v for k, v in r["lineage"].items() if k not in ("resumed",)}} for r in rows]


def test_replay_from_saved_rows_rows_and_the_run_gives_identical_rows(ray_local, tools, tmp_path):
    agent = wai.seeded_agent(tools)
    ck = tmp_path / "base.jsonl"
    base = wai.simulate(agent, tools=tools, simulator=False, budget=1200, seed=11, mode="rl", repeats=2,
                        checkpoint=str(ck), advanced=QUIET)
    assert any(t.get("privileged", {}).get("reference") for t in base.trajectories)
    saved = tmp_path / "saved.jsonl"
    base.save(str(saved))
    assert all("privileged" not in r for r in base.rows())            # rows() never shows it
    assert all("privileged" not in r for r in wai.load(saved).rows())

    def replay(tasks):
        return wai.simulate(agent, tools=tools, simulator=False, seed=11, tasks=tasks, budget=1200,
                            advanced=QUIET)

    def by_task(rows):           # a checkpoint lists its rows as they landed: compare per task
        return sorted(plain(rows), key=lambda r: (r["prompt"], r["rollout_index"]))

    want = plain(replay(base).rows())
    assert len(want) == 1200
    for name, source in (("rows()", base.rows()), ("save() file", str(saved)), ("checkpoint", str(ck))):
        got = plain(replay(source).rows())
        if name != "checkpoint":                       # listed in the run's order: same rows, same order
            assert got == want, f"{sum(1 for a, b in zip(got, want) if a != b)} of 1200 rows differ ({name})"
        got, wanted = by_task(got), by_task(want)
        differ = sum(1 for a, b in zip(got, wanted) if a != b)
        assert len(got) == 1200 and differ == 0, f"{differ} of 1200 rows differ replaying the {name}"
    # the training export stays free of the privileged block
    base.grade(lambda row: 1.0 if "ORD" in json.dumps(row.get("steps")) else 0.0)
    out = tmp_path / "train.jsonl"
    base.training_set(output=str(out), target=50)
    assert out.exists() and "privileged" not in out.read_text() and "hidden_state" not in out.read_text()
