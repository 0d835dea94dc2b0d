"""Issue 28, item 7: a resume is the same run, or it is refused.

The resume check compared tools, system prompt and the agent's ``__name__`` only: another agent
body under the same name, another grader, another ``seed``, ``mode`` or ``fault_rate`` resumed
silently and mixed two runs' rows in one file. Now each is refused before any work, the file
left byte-identical, with a message naming what changed and how to start fresh; what only says
how far or how fast a run goes (``budget``, ``concurrency``, ``timeout``) still resumes, and a
checkpoint written before the check existed still resumes (and is checked from then on). A changed
``grader=`` alone regrades the rows on disk with the new grader and says so.
Each ``simulate()`` runs in a thread joined with a limit, so a hang fails the test.
"""
import json

import pytest

import whileai_ray as wai
from bounded_call import bounded

QUIET = {"progress_every_rows": 10**6, "progress_every_s": 3600.0}
LIMIT_S = 120


def polite():
    def agent(message):
        return {"steps": [], "final_text": f"Happy to help with: {message[:40]}"}
    return agent


def curt():
    def agent(message):                 # the same __name__, another body
        return {"steps": [], "final_text": "No."}
    return agent


def run(agent, tools, ck, **kw):
    args = dict(tools=tools, simulator=False, budget=8, seed=1, checkpoint=str(ck), advanced=QUIET)
    args.update(kw)
    return bounded(lambda: wai.simulate(agent, **args))


def refused(agent, tools, ck, match, **kw):
    before = {p.name: p.read_bytes() for p in ck.parent.iterdir() if p.is_file() and not p.name.endswith(".lock")}
    with pytest.raises(ValueError, match=match) as info:
        run(agent, tools, ck, **kw)
    after = {p.name: p.read_bytes() for p in ck.parent.iterdir() if p.is_file() and not p.name.endswith(".lock")}
    assert after == before, "a refused resume changed the checkpoint's files"
    said = str(info.value)
    assert "different run" in said and "new checkpoint path" in said and "delete" in said, said
    return said


def test_another_agent_body_under_the_same_name_is_refused(ray_local, tools, tmp_path):
    ck = tmp_path / "ck.jsonl"
    one, two = polite(), curt()
    assert one.__name__ == two.__name__ == "agent"
    run(one, tools, ck)
    refused(two, tools, ck, r"agent \(its code")
    assert run(polite(), tools, ck).search["rollouts"]["resumed"] == 8     # the same code, rebuilt: resumes


def test_another_grader_regrades_the_rows_on_disk_and_says_so(ray_local, tools, tmp_path):
    ck = tmp_path / "ck.jsonl"

    def lenient(row):
        return 1.0

    def strict(row):
        return 0.0

    first = run(wai.seeded_agent(tools), tools, ck, grader=lenient)
    assert {r["reward"] for r in first.rows()} == {1.0}
    with pytest.warns(UserWarning, match="8 rows on disk were graded by another grader; they were regraded"):
        again = run(wai.seeded_agent(tools), tools, ck, budget=12, grader=strict)
    assert again.search["rollouts"]["resumed"] == 8 and len(again.rows()) == 12
    assert {r["reward"] for r in again.rows()} == {0.0}                     # no old reward beside the new
    assert {r["reward"] for r in wai.load(str(ck)).rows()} == {0.0}        # on disk too
    assert any("regraded" in str(w) for w in again.warnings)
    said = refused(wai.seeded_agent(tools), tools, ck, "grader", budget=12)   # no grader: cannot regrade
    assert "grade(grader=" in said
    said = refused(wai.seeded_agent(tools), tools, ck, "grader", budget=12, seed=2, grader=lenient)
    assert "seed (1 on disk, 2 now)" in said                                 # with another change: refused


@pytest.mark.parametrize("changed, match", [
    ({"seed": 2}, r"seed \(1 on disk, 2 now\)"),
    ({"mode": "rl"}, r"mode \('explore' on disk, 'rl' now\)"),
    ({"fault_rate": 0.6}, r"fault_rate \(0\.1 on disk, 0\.6 now\)"),
])
def test_another_seed_mode_or_fault_rate_is_refused_naming_it(ray_local, tools, tmp_path, changed, match):
    ck = tmp_path / "ck.jsonl"
    run(wai.seeded_agent(tools), tools, ck)
    refused(wai.seeded_agent(tools), tools, ck, match, **changed)


def test_budget_concurrency_and_timeout_still_resume_but_a_unit_change_does_not(ray_local, tools, tmp_path):
    ck = tmp_path / "ck.jsonl"
    first = run(wai.seeded_agent(tools), tools, ck, concurrency=4)
    more = run(wai.seeded_agent(tools), tools, ck, budget=12, concurrency=2, timeout=30)
    assert more.search["rollouts"]["resumed"] == 8 and len(more.rows()) == 12
    kept = {r["prompt"] for r in first.rows()}
    assert kept <= {r["prompt"] for r in more.rows()}
    refused(wai.seeded_agent(tools), tools, ck, "repeats", budget=12, repeats=3)


def test_a_checkpoint_written_before_the_check_resumes_and_is_checked_from_then_on(ray_local, tools, tmp_path):
    ck = tmp_path / "ck.jsonl"
    run(wai.seeded_agent(tools), tools, ck)
    side = tmp_path / "ck.jsonl.meta.json"
    header = json.loads(side.read_text())
    assert header["fingerprint"]["run"]["seed"] == 1
    for field in ("run",):                             # what a checkpoint written before issue 28 holds
        header["fingerprint"].pop(field)
    side.write_text(json.dumps(header))
    resumed = run(wai.seeded_agent(tools), tools, ck, budget=10)
    assert resumed.search["rollouts"]["resumed"] == 8 and len(resumed.rows()) == 10
    refused(wai.seeded_agent(tools), tools, ck, "seed", budget=10, seed=5)
