"""Results that survive: checkpoint resume, tasks= replay, runs=, output=, kill -9."""
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

import whileai_ray as wai
from whileai_ray.store.schema import row_key


def _plain(rows):
    """Rows without the per-call marks a resume or replay adds."""
    out = []
    for r in rows:
        r = dict(r)
        r["lineage"] = {k: v for k, v in r.get("lineage", {}).items() if k not in ("resumed",)}
        out.append(r)
    return out


def _body_lines(path):
    return [json.loads(x) for x in open(path, encoding="utf-8").read().splitlines()
            if x.strip() and "_whileai_ray_checkpoint" not in x]


def test_resume_after_a_torn_checkpoint_equals_an_uninterrupted_run(ray_local, tools, tmp_path):
    agent = wai.seeded_agent(tools)
    full = wai.simulate(agent, tools=tools, simulator=False, budget=300, seed=5)
    ck = tmp_path / "ck.jsonl"
    wai.simulate(agent, tools=tools, simulator=False, budget=300, seed=5, checkpoint=str(ck))
    import polars
    assert polars.read_ndjson(ck).height == 300                 # every line a row: no header line
    lines = ck.read_text().splitlines(keepends=True)
    ck.write_text("".join(lines[:120]) + lines[120][:40])      # 120 rows + a torn line
    resumed = wai.simulate(agent, tools=tools, simulator=False, budget=300, seed=5, checkpoint=str(ck))
    assert resumed.search["rollouts"]["resumed"] == 120
    assert resumed.search["rollouts"]["landed"] == 180
    assert len(resumed.rows()) == 300
    assert _plain(resumed.rows()) == _plain(full.rows())
    body = _body_lines(ck)
    assert len(body) == 300 and len({row_key(r) for r in body}) == 300
    kept = {row_key(json.loads(x)) for x in lines[:120]}             # the rows that survived the "crash"
    assert {row_key(r) for r in resumed.rows() if r["lineage"].get("resumed")} == kept
    beside = wai.load(tmp_path / "ck.parquet")                  # the Parquet side, compacted at the end
    assert sorted(map(row_key, beside.rows())) == sorted(map(row_key, body))
    assert polars.read_parquet(tmp_path / "ck.parquet" / "rows.parquet").height == 300


def test_a_checkpoint_from_another_setup_is_refused_untouched(ray_local, tools, tmp_path):
    ck = tmp_path / "ck.jsonl"
    wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=10, checkpoint=str(ck))
    before = ck.read_bytes()
    other = [{"type": "function", "function": {"name": "cancel_order", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
    with pytest.raises(ValueError, match="different run"):
        wai.simulate(wai.seeded_agent(other), tools=other, simulator=False, budget=10, checkpoint=str(ck))
    assert ck.read_bytes() == before


def test_resume_with_other_arguments_counts_disk_rows_and_never_redraws_them(ray_local, tools, tmp_path):
    ck = tmp_path / "ck.jsonl"
    agent = wai.seeded_agent(tools)
    wai.simulate(agent, tools=tools, simulator=False, budget=20, seed=1, checkpoint=str(ck))
    # hard_share changes which units are drawn, not what one is: the plan differs and the rows count
    # (another seed would be another run, refused: issue 28 item 7)
    data = wai.simulate(agent, tools=tools, simulator=False, budget=30, seed=1, hard_share=0.9, checkpoint=str(ck))
    rows = data.rows()
    assert len(rows) == 30 and data.search["rollouts"]["resumed"] == 20
    assert len({r["prompt"] for r in rows}) == 30                # nothing on disk was drawn again


def test_tasks_replay_pins_prompts_faults_and_k(ray_local, tools):
    agent = wai.seeded_agent(tools)
    base = wai.simulate(agent, tools=tools, simulator=False, seed=0, mode="rl", repeats=4, budget=32,
                        fault_rate=0.5)
    rerun = wai.simulate(agent, tools=tools, simulator=False, seed=0, tasks=base, mode="rl")
    prompts = {r["prompt"] for r in base.rows()}
    assert {r["prompt"] for r in rerun.rows()} == prompts
    assert rerun.stopped_because == "tasks_done"
    assert rerun.rollouts_per_request == 4                         # the pinned run's k, not its cut groups
    per = {}
    for r in rerun.rows():
        per.setdefault(r["prompt"], []).append(r)
    assert all(len(v) == 4 for v in per.values())
    src = {r["prompt"]: r for r in base.rows()}
    for r in rerun.rows():
        assert r["scenario_id"] == src[r["prompt"]]["scenario_id"]
        assert r.get("faults") == src[r["prompt"]].get("faults")
        assert r.get("world_state") == src[r["prompt"]].get("world_state")
        assert r["lineage"]["replayed"] is True and r["selection_reason"] == "pinned"
    assert rerun.search["pinned_tasks"]["prompts"] == len(prompts)


def test_runs_replays_the_same_task_set_with_eval_run(ray_local, tools):
    agent = wai.seeded_agent(tools)
    data = wai.simulate(agent, tools=tools, simulator=False, seed=0, budget=20, runs=3)
    rows = data.rows()
    assert len(rows) == 60
    assert data.search["eval_runs"]["runs"] == 3
    assert [p["rows"] for p in data.search["eval_runs"]["per_run"]] == [20, 20, 20]
    by_run = {}
    for r in rows:
        by_run.setdefault(r["lineage"]["eval_run"], []).append(r)
    assert sorted(by_run) == [0, 1, 2]
    texts = [[(r["prompt"], r["final_text"]) for r in by_run[i]] for i in range(3)]
    assert texts[0] == texts[1] == texts[2]                       # a deterministic agent: identical runs
    assert all(r["lineage"]["replayed_from_run"] == 0 for r in by_run[2])
    with pytest.raises(ValueError):
        wai.simulate(agent, tools=tools, simulator=False, budget=20, runs=2, checkpoint="x.jsonl")


def test_output_writes_jsonl_parquet_and_meta_that_load_back(ray_local, tools, tmp_path):
    polars = pytest.importorskip("polars")
    out = tmp_path / "runs" / "out.jsonl"
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=40, output=str(out))
    assert out.exists() and (tmp_path / "runs" / "out.meta.json").exists()
    pq = tmp_path / "runs" / "out.parquet"
    assert polars.read_parquet(pq).height == 40
    for path in (out, pq):
        back = wai.load(path)
        assert back.rows() == data.rows()
    meta = json.loads((tmp_path / "runs" / "out.meta.json").read_text())
    assert meta["stopped_because"] == "budget" and meta["coverage"]["rows"] == 40


# The victim's agent lives in a module the test imports too: a resume is refused unless it plays
# the same agent (issue 28 item 7); it sleeps only in the victim (SLOW_AGENT_DELAY).
SLOW_AGENT = r"""
import os, time, whileai_ray as wai
from whileai_ray.testing.seeded_rows import TOOLS
class Slow:
    def __init__(self):
        self.a = wai.seeded_agent(TOOLS)
        self.__name__ = "seeded_agent"
    def __call__(self, m):
        time.sleep(float(os.environ.get("SLOW_AGENT_DELAY") or 0))
        return self.a(m)
"""

KILL_SCRIPT = r"""
import sys, whileai_ray as wai
from slow_agent import Slow
from whileai_ray.testing.seeded_rows import TOOLS
wai.simulate(Slow(), tools=TOOLS, simulator=False, budget=3000, seed=9, checkpoint=sys.argv[1],
             tasks=sys.argv[2], advanced={"progress_every_rows": 10**6, "progress_every_s": 3600.0})
"""


def test_sigkill_at_a_random_moment_then_resume_gives_exactly_the_uninterrupted_rows(ray_local, tools, tmp_path,
                                                                                     monkeypatch):
    # The kill point is drawn from a seed that is printed (pytest shows it when the test fails);
    # WHILEAI_KILL_SEED=<seed> replays the same kill point.
    seed = int(os.environ.get("WHILEAI_KILL_SEED") or random.SystemRandom().randrange(2**32))
    print(f"kill-point seed {seed}: rerun with WHILEAI_KILL_SEED={seed}")
    agent = wai.seeded_agent(tools)
    task_file = tmp_path / "tasks.jsonl"
    wai.simulate(agent, tools=tools, simulator=False, budget=3000, seed=9).save(str(task_file))
    full = wai.simulate(agent, tools=tools, simulator=False, budget=3000, seed=9, tasks=str(task_file))
    ck = tmp_path / "kill.jsonl"
    script = tmp_path / "victim.py"
    script.write_text(KILL_SCRIPT)
    (tmp_path / "slow_agent.py").write_text(SLOW_AGENT)
    env = dict(os.environ, RAY_ADDRESS=ray_local.get_runtime_context().gcs_address,
               WHILEAI_RAY_NODE_IP="127.0.0.2", RAY_AUTH_MODE="disabled", SLOW_AGENT_DELAY="0.004")
    proc = subprocess.Popen([sys.executable, str(script), str(ck), str(task_file)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    want = random.Random(seed).randint(200, 2500)           # rows on disk (~300 bytes each) before the kill
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if ck.exists() and ck.stat().st_size > want * 300:
            break
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    on_disk = len(_body_lines(ck)) if ck.exists() else 0
    assert on_disk < 3000, f"the victim finished before it was killed (seed {seed})"
    time.sleep(1.0)                                  # let Ray reap the dead job's actors
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slow_agent", raising=False)
    from slow_agent import Slow                      # the victim's agent, without its delay
    resumed = wai.simulate(Slow(), tools=tools, simulator=False, budget=3000, seed=9, tasks=str(task_file),
                           checkpoint=str(ck))
    body = _body_lines(ck)
    assert len(body) == 3000 and len({row_key(r) for r in body}) == 3000, f"seed {seed}, {on_disk} rows at the kill"
    assert len(resumed.rows()) == 3000, f"seed {seed}"
    assert _plain(resumed.rows()) == _plain(full.rows()), f"seed {seed}, {on_disk} rows at the kill"


def test_an_exact_resume_continues_from_the_planner_snapshot_and_equals_the_uninterrupted_run(
        ray_local, tools, tmp_path):
    agent = wai.seeded_agent(tools)
    adv = {"plan_snapshot_s": 0.2, "progress_every_rows": 10**6, "progress_every_s": 3600.0}
    ck = tmp_path / "ck.jsonl"
    full = wai.simulate(agent, tools=tools, simulator=False, budget=3000, seed=4, checkpoint=str(ck),
                        advanced=adv, concurrency=8)
    assert full.search["plan_snapshots"]["written"] >= 1
    plan = tmp_path / "ck.jsonl.plan"
    assert plan.is_file()
    lines = ck.read_text().splitlines(keepends=True)

    def resume_from(kept_rows):
        ck.write_text("".join(lines[:kept_rows]))               # the run "died" here
        return wai.simulate(agent, tools=tools, simulator=False, budget=3000, seed=4, checkpoint=str(ck),
                            advanced=adv, concurrency=32)

    resumed = resume_from(2990)
    assert resumed.search["resume"]["mode"] == "exact"
    assert resumed.search["resume"]["snapshot_round"] is not None      # replayed only the tail
    assert resumed.search["rollouts"]["resumed"] == 2990
    assert _plain(resumed.rows()) == _plain(full.rows())
    body = _body_lines(ck)
    assert len(body) == 3000 and len({row_key(r) for r in body}) == 3000
    # a snapshot newer than the rows on disk (they were lost) is not used: replay from the seed
    lines = ck.read_text().splitlines(keepends=True)
    early = resume_from(50)
    assert early.search["resume"]["snapshot_round"] is None
    assert _plain(early.rows()) == _plain(full.rows())


def test_a_run_that_is_not_reproducible_keeps_every_row_on_disk_when_resumed(ray_local, tools, tmp_path):
    """``reproducible=False`` draws another plan on every call, so a resume cannot replay it: the
    rows on disk count toward the budget and stay in the result (the docs: "the returned
    SimulationData is the union"). Replayed as if it were exact, a 300-row run cut to 120 rows
    left 21 of them out of the result and played 21 more (321 rows in the file)."""
    agent = wai.seeded_agent(tools)
    ck = tmp_path / "ck.jsonl"
    kw = dict(tools=tools, simulator=False, budget=300, seed=3, checkpoint=str(ck), concurrency=16,
              reproducible=False, advanced={"progress_every_rows": 10**6, "progress_every_s": 3600.0})
    wai.simulate(agent, **kw)
    lines = ck.read_text().splitlines(keepends=True)
    ck.write_text("".join(lines[:120]))                          # the run "died" here
    kept = {row_key(json.loads(x)) for x in lines[:120]}
    resumed = wai.simulate(agent, **kw)
    assert resumed.search["resume"]["mode"] == "precount" and resumed.search["rollouts"]["resumed"] == 120
    keys = [row_key(r) for r in resumed.rows()]
    assert len(keys) == 300 and len(set(keys)) == 300 and kept <= set(keys)
    assert {row_key(r) for r in resumed.rows() if r["lineage"].get("resumed")} == kept
    body = _body_lines(ck)
    assert len(body) == 300 and {row_key(r) for r in body} == set(keys)
    assert not any("left out" in w for w in resumed.warnings)


def _strict_grader(row):
    """Fails the seeded agent's guesses, with a marker that says which criterion failed."""
    ok = not row["seeded"]
    return {"reward": 1.0 if ok else 0.0, "markers": {"no_guess": 1.0 if ok else 0.0}}


@pytest.mark.parametrize("mode", ["explore", "rl"])
def test_a_graded_run_resumed_after_a_crash_steers_as_the_uninterrupted_one(ray_local, tools, tmp_path, mode):
    """The grader steers the search (a graded failure is a parent to mutate, its failed markers are
    counted). Rows settled from the checkpoint on resume steered nothing: a graded rl run of 400
    rows cut to its first 150 resumed to 52 rows other than the uninterrupted run's, and a graded
    explore run to the same rows but a search report short of 32 of its 106 graded-failure parents."""
    agent = wai.seeded_agent(tools)
    ck = tmp_path / "ck.jsonl"
    kw = dict(tools=tools, simulator=False, budget=240, seed=3, checkpoint=str(ck), concurrency=8,
              grader=_strict_grader, advanced={"progress_every_rows": 10**6, "progress_every_s": 3600.0},
              **({"mode": "rl", "repeats": 4} if mode == "rl" else {}))
    full = wai.simulate(agent, **kw)
    lines = ck.read_text().splitlines(keepends=True)
    ck.write_text("".join(lines[:90]))                          # the run "died" here
    resumed = wai.simulate(agent, **kw)
    assert resumed.search["rollouts"]["resumed"] == 90
    assert full.search["mutation_aims"]["graded_failure"]["parents"] > 0
    assert resumed.search["mutation_aims"] == full.search["mutation_aims"]
    assert resumed.search["failure_criteria"] == full.search["failure_criteria"] and full.search["failure_criteria"]
    def same_pass(rows):           # lineage.scoring_run_id names each call's scoring pass (the docs)
        return [{**r, "lineage": {k: v for k, v in r["lineage"].items() if k != "scoring_run_id"}}
                for r in _plain(rows)]
    assert same_pass(resumed.rows()) == same_pass(full.rows())
    assert [r["reward"] for r in resumed.rows()] == [r["reward"] for r in full.rows()]


def test_a_larger_budget_resumes_from_the_snapshot_before_the_budget_cut_and_appends_to_it(
        ray_local, tools, tmp_path):
    """A run given more budget afterwards equals the run that had it from the start: it continues
    from the snapshot taken just before the old budget cut its last rounds (the last one, taken
    after, held rounds that budget cut short: continuing from it gave other rows from row 1,001),
    and appends its own snapshots to that file as deltas (writing the whole planner again was a
    million-row resume's largest allocation); the resume after it reads them and is exact too."""
    from whileai_ray.store.snapshots.frames import read_frames
    agent = wai.seeded_agent(tools)
    adv = {"plan_snapshot_s": 0.2, "progress_every_rows": 10**6, "progress_every_s": 3600.0}
    full = wai.simulate(agent, tools=tools, simulator=False, budget=3000, seed=6, advanced=adv, concurrency=8,
                        checkpoint=str(tmp_path / "full.jsonl"))
    ck, plan = tmp_path / "ck.jsonl", tmp_path / "ck.jsonl.plan"

    def run(budget, every_s):
        return wai.simulate(agent, tools=tools, simulator=False, budget=budget, seed=6, checkpoint=str(ck),
                            advanced={**adv, "plan_snapshot_s": every_s}, concurrency=8)

    first = run(1000, 0.2)
    assert first.search["plan_snapshots"]["written"] >= 2 and not first.search["plan_snapshots"]["continued"]
    before = [json.loads(header["meta"]) for header, _ in read_frames(plan.read_bytes())[0]]
    assert before[-1]["bound"] and before[-1]["settled"] == 1000 and not before[-2]["bound"]
    second = run(1100, 3600.0)             # snapshots: one as the budget nears (at once here), one at its end
    snaps = second.search["plan_snapshots"]
    assert snaps["resumed_from_round"] == before[-2]["observed"] and snaps["continued"] and snaps["written"] >= 1
    assert second.search["rollouts"]["resumed"] == 1000
    assert _plain(second.rows()) == _plain(full.rows())[:1100]
    frames, stopped = read_frames(plan.read_bytes())
    after = [json.loads(header["meta"]) for header, _ in frames]
    assert stopped is None and frames[-1][0]["kind"] == "delta" and after[-1]["settled"] == 1100
    assert after[-1]["budget"] == 1100 and before[-1] not in after    # (no run of another budget may use it)
    third = run(3000, 0.2)
    # periodic snapshots through the resumed run too, besides the one as the budget nears and the last
    assert third.search["plan_snapshots"]["resumed_from_round"] is not None and third.search["plan_snapshots"]["written"] >= 3
    assert third.search["rollouts"]["resumed"] == 1100
    assert _plain(third.rows()) == _plain(full.rows())
    body = _body_lines(ck)
    assert len(body) == 3000 and len({row_key(r) for r in body}) == 3000
