"""A run's checkpoint under attack, through ``simulate()``: output= pointed at it, a foreign JSONL
given as one, grading it in place, repairs on open, a corrupt Parquet side, a grader that always
fails, a tool name no server accepts. One test per numbered item of issue 11."""
import json
import os

import pytest

import whileai_ray as wai
from whileai_ray.store.schema import row_key

QUIET = {"progress_every_rows": 10**6, "progress_every_s": 3600.0}


def body_lines(path):
    """The rows on disk (lines that are not JSON, left by a test's vandalism, skipped)."""
    out = []
    for x in open(path, encoding="utf-8").read().splitlines():
        if x.strip() and "_whileai_ray_checkpoint" not in x:
            try:
                out.append(json.loads(x))
            except ValueError:
                pass
    return out


def run(tools, **kw):
    kw.setdefault("advanced", QUIET)
    return wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, **kw)


# -- item 1 -------------------------------------------------------------------------------------
def test_output_that_is_the_checkpoint_or_any_checkpoint_is_refused_before_any_work(ray_local, tools, tmp_path):
    ck = tmp_path / "ck.jsonl"
    run(tools, budget=20, seed=1, checkpoint=str(ck))
    other = tmp_path / "other.jsonl"
    run(tools, budget=5, seed=2, checkpoint=str(other))
    link = tmp_path / "link.jsonl"
    os.symlink(ck, link)
    before, other_before = ck.read_bytes(), other.read_bytes()
    for out in (ck, tmp_path / "sub" / ".." / "ck.jsonl", link, tmp_path / "ck.jsonl.keys",
                tmp_path / "ck.parquet", other):
        with pytest.raises(ValueError, match="output="):
            run(tools, budget=20, seed=1, checkpoint=str(ck), output=str(out))
        assert ck.read_bytes() == before and other.read_bytes() == other_before
    resumed = run(tools, budget=20, seed=1, checkpoint=str(ck))
    assert resumed.search["rollouts"]["resumed"] == 20


# -- item 3 -------------------------------------------------------------------------------------
def test_a_chat_jsonl_given_as_checkpoint_is_refused_and_left_byte_identical(ray_local, tools, tmp_path):
    chats = tmp_path / "chats.jsonl"
    chats.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"}]}) + "\n"
                             for i in range(10)))
    before = chats.read_bytes()
    with pytest.raises(ValueError, match="not a whileai_ray checkpoint"):
        run(tools, budget=10, checkpoint=str(chats))
    assert chats.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chats.jsonl"]


# -- item 4 -------------------------------------------------------------------------------------
def test_grading_a_loaded_checkpoint_keeps_it_a_resumable_checkpoint(ray_local, tools, tmp_path):
    ck = tmp_path / "ck.jsonl"
    first = run(tools, budget=60, seed=3, checkpoint=str(ck))
    loaded = wai.load(ck)
    loaded.grade(lambda row: 1.0 if row.get("final_text") else 0.0)
    assert json.loads((tmp_path / "ck.jsonl.meta.json").read_text()).get("_whileai_ray_checkpoint") == 1
    assert all("reward" in r for r in body_lines(ck))
    resumed = run(tools, budget=60, seed=3, checkpoint=str(ck))
    assert resumed.search["rollouts"]["resumed"] == 60 and resumed.search["rollouts"]["landed"] == 0
    assert [r["final_text"] for r in resumed.rows()] == [r["final_text"] for r in first.rows()]
    assert len(body_lines(ck)) == 60
    other = [{"type": "function", "function": {"name": "cancel_order", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
    with pytest.raises(ValueError, match="different run"):             # still refuses a foreign setup
        wai.simulate(wai.seeded_agent(other), tools=other, simulator=False, budget=10, checkpoint=str(ck))
    # a Parquet file stays Parquet
    side = tmp_path / "ck.parquet" / "rows.parquet"
    data = wai.load(side)
    data.grade(lambda row: 0.0)
    assert side.read_bytes()[:4] == b"PAR1"
    assert {r["reward"] for r in wai.load(side).rows()} == {0.0}


# -- item 9 -------------------------------------------------------------------------------------
def test_repairs_made_while_opening_a_checkpoint_reach_data_warnings(ray_local, tools, tmp_path):
    ck = tmp_path / "ck.jsonl"
    run(tools, budget=30, seed=4, checkpoint=str(ck))
    lines = ck.read_text().splitlines(keepends=True)
    ck.write_text("".join(lines[:21]) + lines[5] + "this is not json\n" + lines[21][:30])
    (tmp_path / "ck.jsonl.keys").unlink()
    data = run(tools, budget=30, seed=4, checkpoint=str(ck))
    said = "\n".join(data.warnings)
    assert "torn last line" in said
    assert "not a JSON object" in said
    assert "duplicate" in said
    assert "index" in said and "rebuilt" in said
    assert len(data.rows()) == 30
    assert len({row_key(r) for r in body_lines(ck)}) == 30 and len(body_lines(ck)) == 31   # the old duplicate stays


# -- item 10 ------------------------------------------------------------------------------------
def test_a_corrupt_parquet_side_never_blocks_a_resume(ray_local, tools, tmp_path):
    ck = tmp_path / "ck.jsonl"
    run(tools, budget=30, seed=5, checkpoint=str(ck))
    side = tmp_path / "ck.parquet" / "rows.parquet"
    side.write_bytes(side.read_bytes()[:200])                   # cut short: not a Parquet file any more
    data = run(tools, budget=40, seed=5, checkpoint=str(ck))
    assert len(data.rows()) == 40
    assert any("ck.parquet" in w and "rebuilt" in w for w in data.warnings), data.warnings
    assert sorted(map(row_key, wai.load(tmp_path / "ck.parquet").rows())) == sorted(map(row_key, body_lines(ck)))


# -- item 12 ------------------------------------------------------------------------------------
def test_a_grader_that_fails_on_every_row_is_a_warning(ray_local, tools):
    def broken(row):
        raise KeyError("score")

    data = run(tools, budget=20, seed=6, grader=broken)
    assert {r["judge_status"] for r in data.rows()} == {"error"}
    note = [w for w in data.warnings if "grader" in w and "every" in w]
    assert note and "KeyError" in note[0], data.warnings
    later = run(tools, budget=20, seed=6)
    later.grade(broken)
    assert any("grader" in w and "every" in w for w in later.warnings), later.warnings


# -- item 14 ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["lookup.order", "look up", "x" * 65, "zamówienie"])
def test_a_tool_name_an_openai_server_would_reject_is_refused_with_the_rule(name):
    bad = [{"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}]
    with pytest.raises(ValueError) as info:
        wai.simulate(lambda m: {"steps": [], "final_text": "ok"}, tools=bad, simulator=False, budget=1)
    assert repr(name)[:40] in str(info.value) and "^[a-zA-Z0-9_-]{1,64}$" in str(info.value)
