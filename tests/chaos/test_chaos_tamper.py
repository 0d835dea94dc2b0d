"""Tampering with a checkpoint between two runs is noticed (issue 28 item 12), through real runs.

Before the fix, a same-length edit of a landed row with its modification time set back was
taken as is by the resume (the seal trusted size and mtime), and a forged duplicate placed
first won over the row the run wrote. Now the key index holds a CRC of every row's line: the
resume names the rows that do not match (by line and key) and plays their units again, and
``wai.load`` leaves them out with the same warning."""
import json
import os


import whileai_ray as wai
from whileai_ray.store.schema import row_key
from bounded_call import bounded

QUIET = {"progress_every_rows": 10**6, "progress_every_s": 3600.0}


def run(tools, **kw):
    kw.setdefault("advanced", QUIET)
    return bounded(lambda: wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, **kw))


def lines(path):
    return path.read_bytes().splitlines(keepends=True)


def write_keeping_mtime(path, data: bytes):
    st = os.stat(path)
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def by_key(rows):
    return {row_key(r): r for r in rows}


def test_an_edited_row_with_its_mtime_restored_is_named_and_played_again(ray_local, tools, tmp_path):
    ck = tmp_path / "run.jsonl"
    first = run(tools, budget=20, seed=7, checkpoint=str(ck))
    body = lines(ck)
    victim = json.loads(body[4])
    at = body[4].index(b'"final_text":"') + len(b'"final_text":"')
    edited = bytearray(body[4])
    edited[at] = ord("Q") if edited[at] != ord("Q") else ord("Z")          # same length, one letter
    size = ck.stat().st_size
    write_keeping_mtime(ck, b"".join(body[:4]) + bytes(edited) + b"".join(body[5:]))
    assert ck.stat().st_size == size
    loaded = wai.load(ck)                                  # wai.load leaves the edited row out too
    assert row_key(victim) not in by_key(loaded.rows()) and len(loaded.rows()) == 19
    assert any(f"line 5 (scenario_id {victim['scenario_id']!r}" in w for w in loaded.warnings), loaded.warnings
    resumed = run(tools, budget=20, seed=7, checkpoint=str(ck))
    said = "\n".join(resumed.warnings)
    assert f"line 5 (scenario_id {victim['scenario_id']!r}" in said and "not trusted" in said, said
    assert resumed.search["rollouts"]["resumed"] == 19 and resumed.search["rollouts"]["landed"] == 1
    got, want = by_key(resumed.rows()), by_key(first.rows())
    assert got[row_key(victim)]["final_text"] == want[row_key(victim)]["final_text"]   # played again, not the edit
    assert sorted(got) == sorted(want)


def test_a_forged_duplicate_placed_first_does_not_win(ray_local, tools, tmp_path):
    ck = tmp_path / "run.jsonl"
    first = run(tools, budget=20, seed=8, checkpoint=str(ck))
    genuine = json.loads(lines(ck)[3])
    forged = dict(genuine, final_text="FORGED: all refunds approved", reward=1.0)
    write_keeping_mtime(ck, (json.dumps(forged) + "\n").encode() + ck.read_bytes())
    resumed = run(tools, budget=20, seed=8, checkpoint=str(ck))
    said = "\n".join(resumed.warnings)
    assert f"line 1 (scenario_id {genuine['scenario_id']!r}" in said and "not trusted" in said, said
    got = by_key(resumed.rows())
    assert got[row_key(genuine)]["final_text"] == genuine["final_text"] != forged["final_text"]
    assert resumed.search["rollouts"]["resumed"] == 20 and sorted(got) == sorted(by_key(first.rows()))
