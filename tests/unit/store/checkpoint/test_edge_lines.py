"""Rows encoded once, where they are built: the Driver appends the lane's bytes (issue 32 item 2).

A landed batch goes to the checkpoint, its ``.keys`` index, the ``output=`` stream and the Parquet
copy either as rows only (the Driver encodes them: resumed rows, graded rows, older lanes) or as
rows with the line and key digest their lane made (``store/checkpoint/edge_lines.py``). Both
must leave every file byte for byte the same, on rows as odd as agents make them: unicode, lone
surrogates, NaN and the infinities (repaired), nested tool results, numpy values, a privileged
block, graded rows (a verdict changes the row on the Driver: its lane's line is stale) and
duplicates within a batch and against the file of an earlier session (a resume).
"""
import copy
import datetime as dt
import json
import pickle

import numpy as np
import pyarrow.parquet as pq

from whileai_ray.core.identity import key_digest, row_key
from whileai_ray.core.rows import stored_row
from whileai_ray.runtime.driver.landing import Landing
from whileai_ray.runtime.messages import RolloutResult
from whileai_ray.runtime.pools.rollout_worker import storable
from whileai_ray.store.checkpoint.edge_lines import encoded, line_text
from whileai_ray.store.checkpoint.jsonl import JsonlCheckpoint, dump_line
from whileai_ray.store.checkpoint.key_index import index_path
from whileai_ray.store.checkpoint.sink import CheckpointSink, StreamSink
from whileai_ray.store.parquet.folder import read_parquet

from planned_units import planned_units
from tests.unit.store.checkpoint.test_jsonl import FP, make_row

VERDICT = {"reward": 0.0, "reason": "said it was shipped", "judge_status": "ok", "markers": ["m"],
           "judge_meta": {"model": "j", "tokens": 12}}


def odd_rows() -> list[dict]:
    """Rows as agents make them, each with the Driver's ``_`` stamps (never stored)."""
    rows = [make_row(i, rollout=i % 3) for i in range(12)]
    rows[0]["prompt"] = "naïve — 漢字 🚀 \u2028 line\nbreak \"quoted\" \\ back"
    rows[1].update(prompt="cut emoji \ud83d", final_text="tail \udc00 alone",
                   steps=[{"text": "half \ud800 of a pair", "tool": "lookup_order",
                           "arguments": {"k\udfff": "v"}, "result": "\ud83d\ude80 whole pair"}])
    rows[2].update(reward=float("nan"), steps=[{"tool": "lookup_order", "arguments": {},
                                                "result": {"score": float("inf"), "low": -float("inf"),
                                                           "deep": [[{"x": float("nan")}]]}}])
    rows[3]["steps"][0]["result"] = {"a": [{"b": {"c": [1, 2, {"d": [None, True, "e" * 300]}]}}],
                                     "hidden_state": {"secret": 1}, "rows": [[1, 2], [3, 4]]}
    rows[4].update(reward=np.float64(0.75), seed=np.int64(7), vector=np.arange(3),
                   steps=[{"tool": "lookup_order", "arguments": {"n": np.int32(2)},
                           "result": {"arr": np.array([1.5, 2.5]), "flag": np.bool_(True)}}])
    rows[5]["privileged"] = {"expected_outcome": "refund", "hidden_state": {"balance": 3}}
    rows[6].update(json_repairs={"earlier": "kept"}, reward=float("-inf"), tags=("a", "b"),
                   at=dt.datetime(2024, 1, 2, 3, 4, 5), tools_used=frozenset({"b", "a"}))
    rows[7].update(scenario_id="sc-\ud800-lone", rollout_index=3, lineage={"eval_run": 2})
    rows[8].update(usage=None, markers=None, reason=None)       # None values: never stored
    for i, row in enumerate(rows):
        row.update(_ordinal=i, _node="n1", _seconds=0.01, _key=["r", i], _landed_s=1.5)
    return rows


def land(folder, sessions, edge: bool, parquet: bool = True):
    """Land ``sessions`` (each a list of batches of ``(row, graded)``) through a Landing with a
    checkpoint and a stream, as the Driver does; one CheckpointSink per session (the second is a
    resume). ``edge``: the results carry the line and digest the lane made (``storable``)."""
    units = planned_units(4)
    for s, batches in enumerate(sessions):
        sink = CheckpointSink(JsonlCheckpoint(folder / "ck.jsonl", FP), parquet=parquet)
        stream = StreamSink(str(folder / f"out{s}.jsonl"))
        landing = Landing(judge_name="truthful", scoring_run_id="s1", label_source="judge", sink=sink,
                          stream=stream, clock=lambda: 10.0)
        for batch in batches:
            for row, graded in batch:
                row = copy.deepcopy(row)
                line, digest = (storable(row)[1] or (None, None))[:2] if edge else (None, None)
                assert (line is not None) == edge
                res = pickle.loads(pickle.dumps(RolloutResult(unit=units[0], row=row, line=line, digest=digest)))
                landing.played(res.with_verdict(dict(VERDICT)) if graded else res)
            landing.flush()
        sink.close()
        stream.close()
    created = json.loads((folder / "ck.jsonl.meta.json").read_bytes())["created"].encode()
    # the files, the time the checkpoint was created aside (the .keys header and the sidecar hold
    # it); the seal (file sizes, inode, times) and the lock describe the file, not what it holds
    return {p.relative_to(folder).as_posix(): p.read_bytes().replace(created, b"<created>")
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.endswith((".lock", ".seal"))}


def sessions(rows):
    first = [[(rows[0], False), (rows[1], True), (rows[2], False), (rows[0], False)],      # a duplicate in a batch
             [(rows[3], False), (rows[4], False), (rows[5], True), (rows[6], False)]]
    again = [[(rows[2], False), (rows[7], False), (rows[8], True), (rows[9], False)],      # rows[2]: on the file
             [(rows[10], False), (rows[5], False), (rows[11], False), (rows[11], True)]]
    return [first, again]


def test_lanes_lines_leave_checkpoint_index_stream_and_parquet_byte_identical(tmp_path):
    rows = odd_rows()
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old = land(tmp_path / "old", sessions(rows), edge=False)
    new = land(tmp_path / "new", sessions(rows), edge=True)
    assert {"ck.jsonl", index_path("ck.jsonl").name, "ck.jsonl.meta.json", "out0.jsonl", "out1.jsonl",
            "ck.parquet/rows.parquet"} == set(old) == set(new)
    for name in old:
        assert old[name] == new[name], name
    lines = old["ck.jsonl"].splitlines(keepends=True)
    assert len(lines) == 12                      # every key once, duplicates skipped the same way
    assert b"json_repairs" in lines[2] and b"\\ufffd" in lines[1] and b"judge_meta" in lines[1]
    table = pq.read_table(tmp_path / "new" / "ck.parquet" / "rows.parquet")
    assert sorted(table.column("row_json").to_pylist()) == sorted(line_text(x) for x in lines)
    assert len(read_parquet(tmp_path / "new" / "ck.parquet")) == 12


def test_the_stream_and_a_checkpoint_without_parquet_take_the_lines_as_they_are(tmp_path):
    rows = odd_rows()
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old = land(tmp_path / "old", sessions(rows), edge=False, parquet=False)
    new = land(tmp_path / "new", sessions(rows), edge=True, parquet=False)
    assert old == new and "ck.parquet/rows.parquet" not in old
    stream = old["out0.jsonl"].splitlines(keepends=True)
    assert len(stream) == 8                       # the stream writes every landed row, duplicates too


def test_a_lanes_line_is_the_old_encoding_of_the_row_that_crosses(tmp_path):
    for row in odd_rows():
        line, digest = encoded(row)
        crossed = pickle.loads(pickle.dumps(row))     # what the Driver gets, stamped after the line was made
        crossed["_landed_s"] = 9.0
        assert line == dump_line(stored_row(crossed))
        assert digest == key_digest(row_key(stored_row(crossed)))
        assert line_text(line) + "\n" == line.decode("ascii")


def test_the_checkpoint_appends_the_given_bytes_and_digests(tmp_path):
    """The lines are used, not made again: the Driver appends bytes (one write, as before)."""
    rows = [stored_row(r) for r in odd_rows()[:3]]
    given = [encoded(r) for r in rows]
    ck = JsonlCheckpoint(tmp_path / "ck.jsonl", FP)
    ck.open()
    marked = [given[0][0], given[1][0].replace(b'"final_text":', b'"marker":1,"final_text":'), None]
    written = ck.append_lines(rows, marked, [g[1] for g in given])
    ck.close()
    body = (tmp_path / "ck.jsonl").read_bytes()
    assert body == marked[0] + marked[1] + dump_line(rows[2])
    assert [w[1] for w in written] == [marked[0], marked[1], dump_line(rows[2])]
    assert [w[2] for w in written] == [g[1] for g in given]


def test_a_verdict_drops_the_lanes_line_and_digest():
    row = odd_rows()[0]
    line, digest = encoded(row)
    res = RolloutResult(unit=None, row=row, line=line, digest=digest)
    graded = res.with_verdict(dict(VERDICT))
    assert graded.line is None and graded.digest is None and graded.verdict == VERDICT
    assert pickle.loads(pickle.dumps(res)) == res
