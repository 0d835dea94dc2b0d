"""The .keys index beside a checkpoint: a reopened checkpoint knows its keys without decoding
rows, and the checkpoint stays the truth when the index is lost, behind or contradicted."""
import json

import numpy as np

from whileai_ray.store.checkpoint.jsonl import JsonlCheckpoint
from whileai_ray.store.checkpoint.lines import scan_file
from whileai_ray.store.checkpoint.key_index import RECORD, index_path, read_index
from whileai_ray.store.row_key_set import digest_arrays
from whileai_ray.store.schema import row_key

from tests.unit.store.checkpoint.test_jsonl import FP, make_row


def _written(path, n, batches=3):
    rows = [make_row(i) for i in range(n)]
    with JsonlCheckpoint(path, FP) as ck:
        step = max(1, n // batches)
        for i in range(0, n, step):
            ck.append(rows[i:i + step])
    return rows


def _created(path):
    return json.loads((path.parent / (path.name + ".meta.json")).read_text())["created"]


def _header_len(ix):
    return ix.read_bytes().index(b"\n") + 1


def test_reopening_knows_every_key_from_the_index_and_decodes_no_row(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = _written(path, 30)
    assert index_path(path).is_file()
    recs = read_index(index_path(path), _created(path))
    assert len(recs) == 30 and recs["n"][recs["n"] > 0].tolist() == [10, 10, 10]   # one group a batch
    ck = JsonlCheckpoint(path, FP)
    loaded = ck.open()
    a, b = digest_arrays([row_key(r) for r in rows])
    assert (loaded.digests[0] == a).all() and (loaded.digests[1] == b).all()
    assert loaded._decoded == {}                      # nothing decoded while opening
    assert loaded[7] == rows[7] and loaded[-1] == rows[-1]
    assert loaded.keys == [row_key(r) for r in rows]
    assert loaded == rows
    ck.close()


def test_a_lost_or_stale_index_is_rebuilt_from_the_checkpoint(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = _written(path, 20)                         # batches of 6, 6, 6, 2: one group each
    index = index_path(path)
    # index behind the checkpoint (a crash between the two writes): the tail is decoded
    data = index.read_bytes()
    keep = _header_len(index) + 12 * RECORD.itemsize
    index.write_bytes(data[:keep] + data[keep:keep + 7])   # two groups, and a torn record
    ck = JsonlCheckpoint(path, FP)
    loaded = ck.open()
    assert sorted(loaded._decoded) == list(range(12, 20)) and loaded.keys == [row_key(r) for r in rows]
    assert ck.append(rows + [make_row(99)]) == 1      # no key written twice
    ck.close()
    assert len(read_index(index, _created(path))) == 21
    again = JsonlCheckpoint(path, FP)
    assert again.open() == rows + [make_row(99)] and again.open is not None
    again.close()
    index.unlink()                                    # lost: rebuilt whole
    ck = JsonlCheckpoint(path, FP)
    assert ck.open() == rows + [make_row(99)]
    ck.close()
    assert len(read_index(index, _created(path))) == 21
    ck = JsonlCheckpoint(path, FP)
    assert ck.open()._decoded == {}                   # and vouches for every row next time
    ck.close()


def test_a_torn_group_is_left_out_and_its_rows_decoded(tmp_path):
    """An index cut inside a group (its closing record missing) vouches for none of it."""
    path = tmp_path / "ck.jsonl"
    rows = _written(path, 20)
    index = index_path(path)
    data = index.read_bytes()
    index.write_bytes(data[:_header_len(index) + 15 * RECORD.itemsize])    # 2 whole groups + 3 of the third
    assert len(read_index(index, _created(path))) == 12
    ck = JsonlCheckpoint(path, FP)
    loaded = ck.open()
    assert sorted(loaded._decoded) == list(range(12, 20)) and loaded == rows
    ck.close()


def test_an_edited_checkpoint_line_is_named_and_left_out_not_trusted(tmp_path):
    """Issue 28 item 12: the index's row CRCs say which line changed since it was written; that
    row is not used (its unit is played again), and a warning names it."""
    path = tmp_path / "ck.jsonl"
    rows = _written(path, 5)
    text = path.read_text()
    edited = text.replace("sc-0000000003", "sc-0000000009")   # same length: same offsets
    assert len(edited) == len(text)
    path.write_text(edited)
    ck = JsonlCheckpoint(path, FP)
    loaded = ck.open()
    assert [k[0] for k in loaded.keys] == ["sc-0000000000", "sc-0000000001", "sc-0000000002", "sc-0000000004"]
    assert any("line 4" in w and "sc-0000000009" in w and "not trusted" in w for w in ck.warnings), ck.warnings
    assert ck.append([rows[3]]) == 1                   # played again: the true row lands anew
    ck.close()
    again = JsonlCheckpoint(path, FP)
    assert sorted(again.open().keys) == sorted(row_key(r) for r in rows)     # the edit stays disowned
    again.close()


def test_a_changed_digest_in_the_index_falls_back_to_the_lines(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = _written(path, 9)                           # three groups of three
    index = index_path(path)
    data = bytearray(index.read_bytes())
    at = _header_len(index) + 4 * RECORD.itemsize + RECORD.fields["a"][1]   # the fifth row's digest
    data[at] ^= 0xFF
    index.write_bytes(bytes(data))
    ck = JsonlCheckpoint(path, FP)
    loaded = ck.open()
    assert sorted(loaded._decoded) == [3, 4, 5]        # that group's rows, read from the checkpoint
    assert loaded.keys == [row_key(r) for r in rows]
    assert ck.append([rows[4]]) == 0                   # the row is known: never written twice
    ck.close()
    assert len(read_index(index, _created(path))) == 9   # rebuilt
    assert bytes(data) != index.read_bytes()


def test_groups_cut_by_the_scan_blocks_are_still_vouched_for(tmp_path):
    path = tmp_path / "ck.jsonl"
    _written(path, 40, batches=4)
    header = json.loads((path.parent / (path.name + ".meta.json")).read_text())
    for block in (7, 300, 4096, 1 << 25):
        scan = scan_file(path, block=block, header=header)
        assert scan.n == 40 and scan.decoded == {} and not scan.index_stale


def test_an_index_of_another_checkpoint_is_ignored(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _written(a, 6)
    rows_b = [make_row(i + 100) for i in range(6)]
    with JsonlCheckpoint(b, FP) as ck:
        ck.append(rows_b)
    index_path(b).write_bytes(index_path(a).read_bytes())   # wrong created stamp
    ck = JsonlCheckpoint(b, FP)
    assert ck.open() == rows_b
    ck.close()
    head = index_path(b).read_bytes().split(b"\n", 1)[0]
    assert json.loads(head)["created"] == _created(b)
    assert np.array_equal(read_index(index_path(b), _created(b))["a"], digest_arrays([row_key(r) for r in rows_b])[0])


def test_an_index_of_the_older_line_format_is_rebuilt_in_this_one(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = _written(path, 8)
    created = _created(path)
    old = [json.dumps({"_whileai_ray_keys": 2, "created": created})]
    old += [json.dumps([0, 0, *row_key(r)]) for r in rows]       # a JSON line a row, as version 2 wrote
    index_path(path).write_text("\n".join(old) + "\n")
    ck = JsonlCheckpoint(path, FP)
    assert ck.open() == rows
    assert any("key index" in w and "rebuilt" in w for w in ck.warnings)
    ck.close()
    assert len(read_index(index_path(path), created)) == 8


def test_records_read_from_the_written_bytes_are_the_records_of_the_lines():
    from whileai_ray.store.checkpoint.key_index import GROUP_MAX, records_for
    rng = np.random.default_rng(3)
    n = 2 * GROUP_MAX + 17                                   # three groups, the last one short
    lines = [b"x" * int(k) + b"\n" for k in rng.integers(0, 300, n)]
    a = rng.integers(0, 2**63, n, dtype=np.uint64)
    b = rng.integers(-2**62, 2**62, n, dtype=np.int64)
    joined = records_for(lines, 12_345, a, b)
    in_place = records_for(lines, 12_345, a, b, data=b"".join(lines))
    assert in_place.dtype == RECORD and np.array_equal(joined, in_place)
    assert joined["n"][GROUP_MAX - 1] == GROUP_MAX and joined["n"][-1] == 17
    assert joined["start"][0] == 12_345 and joined["end"][-1] == 12_345 + sum(map(len, lines)) - 1
