"""A checkpoint's Parquet side on resume: its keys are read only when a question needs them, and
it ends holding every row of the JSONL, once, whatever a crash left."""
import shutil

from whileai_ray.store.checkpoint.jsonl import JsonlCheckpoint
from whileai_ray.store.parquet.folder import read_parquet
from whileai_ray.store.schema import row_key
from whileai_ray.store.checkpoint.sink import CheckpointSink

from tests.unit.store.checkpoint.test_jsonl import FP, make_row


def _keys(folder):
    return sorted(map(row_key, read_parquet(folder)))


def _closed_sink(path, rows):
    """A checkpoint (and its Parquet side) that took ``rows`` and was closed."""
    sink = CheckpointSink(JsonlCheckpoint(path, FP))
    sink.append(rows)
    sink.close()
    return sink


def test_a_resume_never_reads_the_keys_of_a_side_that_mirrors_its_jsonl(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = [make_row(i) for i in range(40)]
    _closed_sink(path, rows[:30])
    again = CheckpointSink(JsonlCheckpoint(path, FP))
    again.append(rows[25:])                          # five it holds, ten new
    again.close()
    assert again.parquet._old is None                # no key of the 30 rows was read
    assert _keys(tmp_path / "ck.parquet") == sorted(map(row_key, rows))
    assert again.checkpoint.duplicates_skipped == 5


def test_rows_a_crash_kept_from_the_side_are_filled_in_from_the_jsonl(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = [make_row(i) for i in range(12)]
    _closed_sink(path, rows)
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
    _closed_sink(path, rows[:6])
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


def test_a_side_holding_rows_its_jsonl_lost_is_not_taken_for_a_mirror(tmp_path):
    """The JSONL cut back (rows the side still holds): the tallies differ, so the rows played
    again are looked up among the side's keys and land there once."""
    import pyarrow.parquet as pq
    path = tmp_path / "ck.jsonl"
    rows = [make_row(i) for i in range(30)]
    _closed_sink(path, rows)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:12]))
    again = CheckpointSink(JsonlCheckpoint(path, FP))
    assert not again.mirrored and len(again.loaded) == 12
    again.append(rows[12:])                          # played again: new to the JSONL, not to the side
    again.close()
    side = tmp_path / "ck.parquet"
    assert pq.ParquetFile(side / "rows.parquet").metadata.num_rows == 30
    assert _keys(side) == sorted(map(row_key, rows))
    third = CheckpointSink(JsonlCheckpoint(path, FP))
    assert third.mirrored                            # the compaction wrote the side's tally again
    third.close()


def test_a_side_without_tallies_is_read_once_and_tallied_by_its_compaction(tmp_path):
    from whileai_ray.store.parquet.folder import write_parquet
    path = tmp_path / "ck.jsonl"
    rows = [make_row(i) for i in range(8)]
    _closed_sink(path, rows)
    write_parquet(rows, tmp_path / "ck.parquet" / "rows.parquet")      # as a grade write-back does
    again = CheckpointSink(JsonlCheckpoint(path, FP))
    assert not again.mirrored
    again.append([make_row(9)])
    again.close()
    assert _keys(tmp_path / "ck.parquet") == sorted(map(row_key, rows + [make_row(9)]))
    third = CheckpointSink(JsonlCheckpoint(path, FP))
    assert third.mirrored
    third.close()
