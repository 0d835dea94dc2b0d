"""The Driver's row spool: rows landed in any order come back in ordinal order, as a list while
few and as Parquet files past the threshold, with the rows a restored snapshot settled first
and the rows no unit matched last; the folder it hands over outlives the spool, and a failed
run's folder goes."""
import gc
import os

import pytest

from whileai_ray.result.row_store import adopt_spilled, row_spool
from whileai_ray.store.row_spool import RowSpool


def _row(ordinal: int) -> dict:
    return {"_ordinal": ordinal, "prompt": f"ask {ordinal}", "scenario_id": f"s{ordinal % 7}",
            "steps": [], "final_text": "ok", "lineage": {"run_id": "r"}}


def _land(spool, ordinals, round_size=10):
    """Land rows in a shuffled order within each window of two rounds, releasing a round once
    it and every earlier one are complete (as the Driver's loop does)."""
    landed = set()
    for start in range(0, len(ordinals), round_size * 2):
        window = ordinals[start:start + round_size * 2]
        for o in reversed(window):
            spool.add([_row(o)])
            landed.add(o)
        spool.release(max(window[:round_size]))
    spool.release(max(ordinals))


def test_a_small_run_comes_back_as_a_list_in_ordinal_order(tmp_path):
    spool = row_spool(1000, parent=str(tmp_path))
    _land(spool, list(range(100)))
    rows = spool.finish()
    assert isinstance(rows, list) and [r["_ordinal"] for r in rows] == list(range(100))
    assert os.listdir(tmp_path) == []                          # nothing was written


def test_past_the_threshold_the_rows_go_to_parquet_in_the_same_order(tmp_path):
    spool = row_spool(30, parent=str(tmp_path))
    _land(spool, list(range(100)))
    assert spool.spilled
    out = spool.finish()
    assert out.count == 100 and all(f.startswith(out.folder) and os.path.isfile(f) for f in out.files)
    rows = adopt_spilled(out)
    assert [r["_ordinal"] for r in rows] == list(range(100))
    assert rows[0] == _row(0) and rows.read_columns(["prompt_sha"]).num_rows == 100   # facts written
    folder = out.folder
    del rows
    gc.collect()
    assert not os.path.exists(folder)                          # the adopter's folder goes with it


@pytest.mark.parametrize("threshold", [1000, 30])
def test_head_rows_come_first_and_tail_rows_last(tmp_path, threshold):
    spool = row_spool(threshold, parent=str(tmp_path))
    _land(spool, list(range(50, 100)))
    spool.head(_row(o) for o in [3, 0, 1, 2] + list(range(4, 50)))    # a snapshot's, at the end
    spool.tail([_row(10**9 + i) for i in range(5)])
    out = spool.finish()
    rows = out if isinstance(out, list) else adopt_spilled(out)
    expected = list(range(100)) + [10**9 + i for i in range(5)]
    if isinstance(out, list):
        assert [r["_ordinal"] for r in rows] == expected
    else:       # the head segment is written as it came (a snapshot's rows come in order)
        assert sorted(r["_ordinal"] for r in rows[:50]) == list(range(50))
        assert [r["_ordinal"] for r in rows][50:] == expected[50:]
    assert spool.count == 105


def test_a_large_head_alone_spills(tmp_path):
    spool = row_spool(20, parent=str(tmp_path))
    spool.add([_row(100)])
    spool.head(_row(o) for o in range(50))
    out = spool.finish()
    assert not isinstance(out, list)
    assert [r["_ordinal"] for r in adopt_spilled(out)] == list(range(50)) + [100]


def test_without_a_round_bound_the_window_keeps_memory_bounded(tmp_path):
    spool = RowSpool(10**9, make_writer=None, window=16)
    for o in range(200):
        spool.add([_row(o)])
        assert len(spool._heap) <= 16
    assert [r["_ordinal"] for r in spool.finish()] == list(range(200))


def test_a_failed_run_removes_its_folder_and_finish_is_once(tmp_path):
    spool = row_spool(5, parent=str(tmp_path))
    spool.add([_row(o) for o in range(20)])
    spool.release(19)
    assert len(os.listdir(tmp_path)) == 1
    spool.discard()
    assert os.listdir(tmp_path) == []
    done = row_spool(5, parent=str(tmp_path))
    done.finish()
    with pytest.raises(RuntimeError, match="already"):
        done.finish()
    with pytest.raises(ValueError, match="threshold"):
        RowSpool(-1, make_writer=None)


def test_released_rows_go_to_the_caller_while_few_and_finish_leaves_out_what_it_has(tmp_path):
    """A small run's rows cross with the caller's polls (``released``); the end carries the head
    rows and the released rows past the ones the caller holds, which put back together are the
    rows ``finish()`` alone gives."""
    whole = row_spool(1000, parent=str(tmp_path))
    spool = row_spool(1000, parent=str(tmp_path))
    caller: list = []
    for part in (range(0, 40), range(40, 80)):
        for s in (whole, spool):
            _land(s, list(part))
        caller += spool.released(len(caller), limit=25)       # one poll: at most 25 rows
        assert spool.released(len(caller)) is not None
    assert [r["_ordinal"] for r in caller] == list(range(50))
    for s in (whole, spool):
        s.head(_row(o) for o in (-3, -1, -2))
    expected = whole.finish()
    rest = spool.finish(skip=len(caller))
    head = spool.head_count
    assert head == 3 and [r["_ordinal"] for r in rest[:head]] == [-3, -2, -1]
    assert rest[:head] + caller + rest[head:] == expected and len(rest) == 3 + 30
    from whileai_ray.runtime.caller.run import _with_shipped          # what the caller does with them
    from whileai_ray.runtime.run_result import RunResult
    result = RunResult(rows=rest, stopped_because="budget", elapsed_s=1.0, planner=None, rows_head=head,
                       rows_shipped=len(caller))
    assert _with_shipped(result, caller + [_row(999)]).rows == expected     # a row past what the end counts: dropped
    spilled = row_spool(30, parent=str(tmp_path))
    _land(spilled, list(range(40)))
    assert spilled.released(0) is None                         # on disk: the caller reads them there
