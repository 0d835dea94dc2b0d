"""A run's own files under real runs (issue 28 items 5, 6 and the CheckpointBusy part of 14).

* item 5: ``training_set(output=)``, ``save()``, ``to_html()`` and ``push()`` never write onto the
  checkpoint, its sidecars or its Parquet copy: each is refused, naming the argument, with every
  byte left as it was, and the next resume is the same run;
* item 6: two runs on ``real.jsonl`` and on a symlink to it: one writes, the other is refused
  (before the fix both wrote, every row twice); symlinks planted at the sidecar paths are refused
  or never followed (before, the victim file was truncated);
* item 14: the refusal of a second run in this very process says "held by a run in this process".
"""
import json
import os
import threading
import time

import pytest

import whileai_ray as wai
from whileai_ray.store.checkpoint.lock import CheckpointBusy, probe
from whileai_ray.store.schema import row_key
from bounded_call import bounded

QUIET = {"progress_every_rows": 10**6, "progress_every_s": 3600.0}


def run(tools, agent=None, **kw):
    kw.setdefault("advanced", QUIET)
    return bounded(lambda: wai.simulate(agent or wai.seeded_agent(tools), tools=tools, simulator=False, **kw))


def body(path):
    return [json.loads(x) for x in open(path, encoding="utf-8").read().splitlines() if x.strip()]


def files_of(folder):
    """Every plain file under ``folder`` and its bytes (symlinks left out)."""
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_symlink()}


def binary(row):
    return {"reward": 1.0 if row.get("final_text") else 0.0}


# -- item 5 -------------------------------------------------------------------------------------
def test_exports_never_write_onto_a_runs_checkpoint_its_sidecars_or_its_parquet_copy(ray_local, tools, tmp_path):
    ck = tmp_path / "run.jsonl"
    data = run(tools, budget=20, seed=5, checkpoint=str(ck), grader=binary)
    link = tmp_path / "alias.jsonl"
    os.symlink(ck, link)
    side = sorted((tmp_path / "run.parquet").glob("*.parquet"))
    assert side, "the run keeps a Parquet copy"
    own = [ck, link, tmp_path / "run.jsonl.keys", tmp_path / "run.jsonl.meta.json", tmp_path / "run.jsonl.lock",
           side[0]]
    before = files_of(tmp_path)
    for target in own:
        with pytest.raises(ValueError, match=r"training_set\(output=\.\.\.\).*Nothing was written"):
            data.training_set(output=str(target))
        with pytest.raises(ValueError, match=r"to_html\(path=\.\.\.\)"):
            data.to_html(str(target))
        with pytest.raises(ValueError, match=r"save\(path="):
            data.save(str(target))
    with pytest.raises(ValueError, match=r"push\(store=\.\.\.\)"):
        data.push("orders", store=str(tmp_path / "run.parquet"), gate=False)
    with pytest.raises(ValueError, match=r"push\(name=\.\.\.\)"):
        data.push("run.parquet", store=str(tmp_path), gate=False)
    assert files_of(tmp_path) == before                       # not a byte of the run's files changed
    resumed = run(tools, budget=20, seed=5, checkpoint=str(ck), grader=binary)
    assert resumed.search["rollouts"]["resumed"] == 20 and len(body(ck)) == 20
    # the other direction: a training file given as a checkpoint is refused, untouched
    train = tmp_path / "train.jsonl"
    data.training_set(output=str(train))
    written = train.read_bytes()
    with pytest.raises(ValueError, match="not a whileai_ray checkpoint"):
        run(tools, budget=5, seed=5, checkpoint=str(train))
    assert train.read_bytes() == written


# -- items 6 and 14 -----------------------------------------------------------------------------
def test_two_names_for_one_checkpoint_get_one_writer_and_the_refusal_names_this_process(ray_local, tools, tmp_path):
    inner = wai.seeded_agent(tools)

    def agent(message):
        time.sleep(0.15)
        return inner(message)
    agent.__name__ = "seeded_agent"

    real = tmp_path / "real.jsonl"
    link = tmp_path / "link.jsonl"
    os.symlink(real, link)
    out, errors = {}, []

    def first():
        try:
            out["data"] = run(tools, agent, budget=40, seed=9, concurrency=2, checkpoint=str(real))
        except BaseException as exc:              # surfaced by the assertions below
            errors.append(exc)
    thread = threading.Thread(target=first, daemon=True)
    thread.start()
    deadline = time.monotonic() + 90
    while probe(real) is None and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert probe(real) is not None, f"the first run never held its checkpoint ({errors})"
    with pytest.raises(CheckpointBusy, match="held by a run in this process"):
        run(tools, agent, budget=40, seed=9, concurrency=2, checkpoint=str(link))
    thread.join(timeout=180)
    assert not thread.is_alive(), "the first run did not finish"
    assert not errors, errors
    keys = [row_key(r) for r in body(real)]
    assert len(keys) == 40 and len(set(keys)) == 40          # rows twice: 0
    assert not (tmp_path / "link.jsonl.lock").exists() and not (tmp_path / "link.jsonl.keys").exists()
    resumed = run(tools, agent, budget=40, seed=9, concurrency=2, checkpoint=str(link))   # by the other name
    assert resumed.search["rollouts"]["resumed"] == 40 and len(body(real)) == 40


def test_symlinks_planted_at_sidecar_paths_are_refused_or_never_followed(ray_local, tools, tmp_path):
    victims = {}
    for name in ("run.jsonl.lock", "run.jsonl.meta.json.tmp", "run.jsonl.keys.tmp"):
        victim = tmp_path / f"victim-{name}.txt"
        victim.write_text("precious data\n")
        os.symlink(victim, tmp_path / name)
        victims[name] = victim
    ck = tmp_path / "run.jsonl"
    with pytest.raises(ValueError, match=r"run\.jsonl\.lock.*symbolic link"):
        run(tools, budget=10, seed=2, checkpoint=str(ck))
    assert not ck.exists()                                    # refused before any budget was spent
    os.unlink(tmp_path / "run.jsonl.lock")
    data = run(tools, budget=10, seed=2, checkpoint=str(ck))  # links at temporary names: never opened
    assert len(data.rows()) == 10 and len(body(ck)) == 10
    for name, victim in victims.items():
        assert victim.read_text() == "precious data\n", name
