"""The .keys index beside a checkpoint: a reopened checkpoint knows its keys without decoding
rows, and the checkpoint stays the truth when the index is lost, behind or contradicted."""
import json

from whileai_ray.store.jsonl import JsonlCheckpoint
from whileai_ray.store.key_index import index_path
from whileai_ray.store.schema import row_key

from test_jsonl import FP, make_row


def _written(path, n, batches=3):
    rows = [make_row(i) for i in range(n)]
    with JsonlCheckpoint(path, FP) as ck:
        step = max(1, n // batches)
        for i in range(0, n, step):
            ck.append(rows[i:i + step])
    return rows


def test_reopening_knows_every_key_from_the_index_and_decodes_no_row(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = _written(path, 30)
    assert index_path(path).is_file()
    ck = JsonlCheckpoint(path, FP)
    loaded = ck.open()
    assert loaded.keys == [row_key(r) for r in rows]
    assert loaded._decoded == {}                      # nothing decoded while opening
    assert loaded[7] == rows[7] and loaded[-1] == rows[-1]
    assert loaded == rows
    ck.close()


def test_a_lost_or_stale_index_is_rebuilt_from_the_checkpoint(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = _written(path, 20)
    index = index_path(path)
    index.unlink()
    ck = JsonlCheckpoint(path, FP)
    assert ck.open() == rows
    ck.close()
    assert len(index.read_text().splitlines()) == 21  # header + one line per row, rebuilt
    # index behind the checkpoint (a crash between the two writes): the tail is decoded
    lines = index.read_text().splitlines(True)
    index.write_text("".join(lines[:11]) + lines[11][:7])  # and a torn last index line
    ck = JsonlCheckpoint(path, FP)
    loaded = ck.open()
    assert loaded.keys == [row_key(r) for r in rows] and sorted(loaded._decoded) == list(range(10, 20))
    assert ck.append(rows + [make_row(99)]) == 1      # no key written twice
    ck.close()
    again = JsonlCheckpoint(path, FP)
    assert again.open() == rows + [make_row(99)]
    again.close()


def test_an_edited_checkpoint_line_is_keyed_from_its_content_not_the_index(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = _written(path, 5)
    text = path.read_text()
    edited = text.replace("sc-0000000003", "sc-0000000009")   # same length: same offsets
    assert len(edited) == len(text)
    path.write_text(edited)
    ck = JsonlCheckpoint(path, FP)
    loaded = ck.open()
    assert [k[0] for k in loaded.keys] == ["sc-0000000000", "sc-0000000001", "sc-0000000002",
                                           "sc-0000000009", "sc-0000000004"]
    ck.close()


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
    assert json.loads(index_path(b).read_text().splitlines()[0])["created"] == \
        json.loads((tmp_path / "b.jsonl.meta.json").read_text())["created"]
