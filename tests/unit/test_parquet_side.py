"""A checkpoint's Parquet side on resume: its keys are read only when a question needs them, and
it ends holding every row of the JSONL, once, whatever a crash left."""
import shutil

from whileai_ray.store.jsonl import JsonlCheckpoint
from whileai_ray.store.parquet import read_parquet
from whileai_ray.store.schema import row_key
from whileai_ray.store.sink import CheckpointSink

from test_jsonl import FP, make_row


def _keys(folder):
    return sorted(map(row_key, read_parquet(folder)))


def test_a_resume_never_reads_the_keys_of_a_side_that_mirrors_its_jsonl(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = [make_row(i) for i in range(40)]
    sink = CheckpointSink(JsonlCheckpoint(path, FP))
    sink.append(rows[:30])
    sink.close()
    again = CheckpointSink(JsonlCheckpoint(path, FP))
    again.append(rows[25:])                          # five it holds, ten new
    again.close()
    assert again.parquet._old is None                # no key of the 30 rows was read
    assert _keys(tmp_path / "ck.parquet") == sorted(map(row_key, rows))
    assert again.checkpoint.duplicates_skipped == 5


def test_rows_a_crash_kept_from_the_side_are_filled_in_from_the_jsonl(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = [make_row(i) for i in range(12)]
    sink = CheckpointSink(JsonlCheckpoint(path, FP))
    sink.append(rows)
    sink.close()
    side = tmp_path / "ck.parquet"
    ck = JsonlCheckpoint(path, FP)                   # the JSONL gets rows the side never saw (a crash)
    ck.open()
    ck.append([make_row(50), make_row(51)])
    ck.close()
    again = CheckpointSink(JsonlCheckpoint(path, FP))
    again.append([make_row(52)])
    again.close()
    assert _keys(side) == sorted(map(row_key, rows + [make_row(50), make_row(51), make_row(52)]))


def test_a_compaction_cut_short_loses_nothing_and_adds_no_row_twice(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = [make_row(i) for i in range(10)]
    sink = CheckpointSink(JsonlCheckpoint(path, FP))
    sink.append(rows[:6])
    sink.close()
    side = tmp_path / "ck.parquet"
    again = CheckpointSink(JsonlCheckpoint(path, FP))
    again.append(rows[6:])
    again.parquet.flush()                            # a part file beside rows.parquet
    again.parquet._closed = True                     # (close compacts: stop before it does)
    again.checkpoint.close()
    part = sorted(side.glob("part-*.parquet"))[0]
    keep = tmp_path / "part.keep"
    shutil.copy(part, keep)
    again.parquet._closed = False
    again.parquet.close()                            # compacted: rows.parquet holds all ten...
    shutil.copy(keep, part)                          # ...and the merged part is still there
    third = CheckpointSink(JsonlCheckpoint(path, FP))
    third.append([make_row(20)])
    third.close()
    back = read_parquet(side)
    assert sorted(map(row_key, back)) == sorted(map(row_key, rows + [make_row(20)]))
    import pyarrow.parquet as pq
    assert [f.name for f in side.iterdir()] == ["rows.parquet"]
    assert pq.ParquetFile(side / "rows.parquet").metadata.num_rows == 11       # each row once, on disk too
