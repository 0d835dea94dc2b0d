"""Tampering with a checkpoint is noticed, without Ray (issue 28 item 12): the key index keeps a
CRC of every row's line, so a same-length edit with its mtime set back, or a forged line placed
first, is named in a warning and left out (its unit is played again), while a damaged or older
index, or rows a crash left after the index, are trusted as before."""
import json
import os

import numpy as np

from tests.unit.store.checkpoint.test_jsonl import FP, make_row
from whileai_ray.store.checkpoint.jsonl import JsonlCheckpoint
from whileai_ray.store.checkpoint.key_index import RECORD, index_path
from whileai_ray.store.schema import row_key

ROWS = [make_row(i) for i in range(12)]


def _closed(path, batches=(ROWS[:5], ROWS[5:])):
    with JsonlCheckpoint(path, FP) as ck:
        for batch in batches:
            ck.append(batch)
    return path


def _open(path):
    ck = JsonlCheckpoint(path, FP)
    return ck, ck.open()


def _edit_keeping_mtime(path, old: bytes, new: bytes):
    st = os.stat(path)
    data = path.read_bytes()
    assert len(old) == len(new) and data.count(old) == 1
    path.write_bytes(data.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))      # the mtime set back, as a careful hand would
    assert os.stat(path).st_mtime_ns == st.st_mtime_ns and os.stat(path).st_size == st.st_size


def test_a_same_length_edit_with_its_mtime_restored_is_named_and_left_out(tmp_path):
    path = _closed(tmp_path / "ck.jsonl")
    _edit_keeping_mtime(path, b'"final_text":"done","scenario_id":"sc-0000000007"',
                        b'"final_text":"PAID","scenario_id":"sc-0000000007"')
    ck, rows = _open(path)
    keys = [row_key(r) for r in rows]
    assert row_key(ROWS[7]) not in keys and len(keys) == 11           # not trusted: played again
    assert all(r == ROWS[i if i < 7 else i + 1] for i, r in enumerate(rows))
    said = "\n".join(ck.warnings)
    assert "line 8 (scenario_id 'sc-0000000007', rollout 0)" in said and "not trusted" in said
    assert ck.append([ROWS[7]]) == 1                                   # the replayed row lands
    ck.close()
    ck, rows = _open(path)                                             # and the edit stays disowned
    assert sorted(map(row_key, rows)) == sorted(map(row_key, ROWS))
    assert [r for r in rows if row_key(r) == row_key(ROWS[7])] == [ROWS[7]]
    ck.close()


def test_a_forged_duplicate_placed_first_does_not_win(tmp_path):
    path = _closed(tmp_path / "ck.jsonl")
    forged = dict(ROWS[3], final_text="forged", reward=1.0)
    st = os.stat(path)
    path.write_bytes((json.dumps(forged) + "\n").encode() + path.read_bytes())
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    ck, rows = _open(path)
    assert list(rows) == ROWS                                          # the genuine row, not the forgery
    assert any("line 1 (scenario_id 'sc-0000000003'" in w for w in ck.warnings), ck.warnings
    assert ck.append(ROWS) == 0
    ck.close()
    ck, rows = _open(path)                                             # the rebuilt index still disowns it
    assert list(rows) == ROWS and any("line 1 " in w for w in ck.warnings)
    ck.close()


def test_a_damaged_index_an_older_one_and_a_crash_tail_are_trusted_as_before(tmp_path):
    path = _closed(tmp_path / "ck.jsonl")
    # rows a crash left after the index (the checkpoint written, the index not): trusted
    extra = [make_row(100), make_row(101)]
    with open(path, "ab") as fh:
        fh.write(b"".join((json.dumps(r) + "\n").encode() for r in extra))
    ck, rows = _open(path)
    assert list(rows) == ROWS + extra and not any("not trusted" in w for w in ck.warnings)
    ck.close()
    # an edit AND a garbled index record: the index cannot vouch, every line is trusted (as before)
    _edit_keeping_mtime(path, b'"sc-0000000002"', b'"sc-0000000099"')
    ix = index_path(path)
    data = ix.read_bytes()
    head = data.index(b"\n") + 1
    recs = np.frombuffer(data[head:], dtype=RECORD).copy()
    recs["start"][1] += 1
    ix.write_bytes(data[:head] + recs.tobytes())
    ck, rows = _open(path)
    assert len(rows) == len(ROWS) + 2 and not any("not trusted" in w for w in ck.warnings)
    assert "sc-0000000099" in [r["scenario_id"] for r in rows]
    ck.close()
    # an index of the older format (no row CRCs): a full rescan, every line trusted, rewritten as new
    created = json.loads(ix.read_bytes()[:ix.read_bytes().index(b"\n")])["created"]
    old = np.zeros(len(ROWS) + 2, dtype=[("start", "<u8"), ("end", "<u8"), ("a", "<u8"), ("b", "<i8"),
                                          ("crc", "<u4"), ("n", "<u4")])
    ix.write_bytes(json.dumps({"_whileai_ray_keys": 3, "created": created, "record": 40}).encode() + b"\n"
                   + old.tobytes())
    ck, rows = _open(path)
    assert len(rows) == len(ROWS) + 2 and any("rebuilt" in w for w in ck.warnings)
    ck.close()
    assert json.loads(ix.read_bytes()[:ix.read_bytes().index(b"\n")])["_whileai_ray_keys"] == 4


def test_wai_load_of_a_tampered_checkpoint_leaves_the_disowned_rows_out_and_says_so(tmp_path):
    import whileai_ray as wai

    path = _closed(tmp_path / "ck.jsonl")
    _edit_keeping_mtime(path, b'"final_text":"done","scenario_id":"sc-0000000004"',
                        b'"final_text":"PAID","scenario_id":"sc-0000000004"')
    data = wai.load(path)
    assert [r["scenario_id"] for r in data.trajectories] == [r["scenario_id"] for r in ROWS if r is not ROWS[4]]
    assert any("line 5 (scenario_id 'sc-0000000004'" in w for w in data.warnings), data.warnings
    plain = tmp_path / "copy.jsonl"                      # the same bytes without a sidecar: plain JSONL
    plain.write_bytes(path.read_bytes())
    assert len(wai.load(plain).trajectories) == len(ROWS)
