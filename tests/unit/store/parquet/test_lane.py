"""The Parquet copy written by a writer of its own (``store/parquet/lane.py``): the Driver hands
it each landed batch as the lines it has just written (issue 32 item 2), and the folder must be
the one ``CheckpointSink`` writes itself, byte for byte: odd rows (unicode, lone surrogates, NaN,
numpy values, nested results, graded rows re-encoded on the Driver), a resume, a run stopped
without compacting (its parts compacted by the next), a lost Parquet side rebuilt from the JSONL,
and a writer that fails (every later call says so; the side never holds a silent gap)."""
import copy
import json
import pickle
import shutil

import pytest

from whileai_ray.core.identity import key_digest, key_string, row_key
from whileai_ray.core.rows import stored_row
from whileai_ray.runtime.driver.landing import Landing
from whileai_ray.runtime.messages import RolloutResult
from whileai_ray.runtime.pools.rollout_worker import storable
from whileai_ray.store.checkpoint.jsonl import JsonlCheckpoint, dump_line
from whileai_ray.store.checkpoint.sink import CheckpointSink
from whileai_ray.store.parquet.folder import read_parquet
from whileai_ray.store.parquet.lane import LocalLane, ParquetLane, unpack
from whileai_ray.store.parquet.lane_protocol import join, pack

from planned_units import planned_units
from tests.unit.store.checkpoint.test_edge_lines import VERDICT, odd_rows, sessions
from tests.unit.store.checkpoint.test_jsonl import FP


def land(folder, sessions, edge=True, lane=None, compact=(True, True)):
    """Land ``sessions`` through a Landing and a CheckpointSink (one per session: the second
    resumes), the Parquet copy written by the sink itself or by ``lane``; the files after."""
    units = planned_units(4)
    for s, batches in enumerate(sessions):
        sink = CheckpointSink(JsonlCheckpoint(folder / "ck.jsonl", FP), lane=lane)
        landing = Landing(judge_name="truthful", scoring_run_id="s1", label_source="judge", sink=sink,
                          clock=lambda: 10.0)
        for batch in batches:
            for row, graded in batch:
                row = copy.deepcopy(row)
                line, digest = (storable(row)[1] or (None, None))[:2] if edge else (None, None)
                res = pickle.loads(pickle.dumps(RolloutResult(unit=units[0], row=row, line=line, digest=digest)))
                landing.played(res.with_verdict(dict(VERDICT)) if graded else res)
            landing.flush()
        sink.close(compact=compact[s])
    created = json.loads((folder / "ck.jsonl.meta.json").read_bytes())["created"].encode()
    return {p.relative_to(folder).as_posix(): p.read_bytes().replace(created, b"<created>")
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.endswith((".lock", ".seal"))}


def normal(rows):
    """The rows as a lane holds them (``agents/row_builder.py`` normalises what an agent returns)."""
    from whileai_ray.core.row_values import json_value
    out = []
    for row in rows:
        stamps = {k: v for k, v in row.items() if k.startswith("_")}
        out.append({**json_value({k: v for k, v in row.items() if not k.startswith("_")})[0], **stamps})
    return out


@pytest.mark.parametrize("edge", [True, False])
@pytest.mark.parametrize("compact", [(True, True), (False, True)])
def test_a_lane_leaves_the_folder_the_sink_leaves_byte_for_byte(tmp_path, edge, compact):
    rows = normal(odd_rows())
    old = land(tmp_path / "old", sessions(rows), edge=edge, compact=compact)
    new = land(tmp_path / "new", sessions(rows), edge=edge, lane=LocalLane, compact=compact)
    assert "ck.parquet/rows.parquet" in old and set(old) == set(new)
    for name in old:
        assert old[name] == new[name], name
    assert len(read_parquet(tmp_path / "new" / "ck.parquet")) == 12


def test_a_run_stopped_without_compacting_leaves_parts_the_next_compacts(tmp_path):
    rows = normal(odd_rows())
    first = sessions(rows)[:1]
    for name, lane in (("old", None), ("new", LocalLane)):
        land(tmp_path / name, first, lane=lane, compact=(False,))
        assert sorted(p.name for p in (tmp_path / name / "ck.parquet").iterdir()) == ["part-00000.parquet"]
    old = land(tmp_path / "old", sessions(rows)[1:], compact=(True,))
    new = land(tmp_path / "new", sessions(rows)[1:], lane=LocalLane, compact=(True,))
    assert old == new and sorted(p.name for p in (tmp_path / "new" / "ck.parquet").iterdir()) == ["rows.parquet"]


def test_a_lost_parquet_side_is_rebuilt_from_the_jsonl_at_close(tmp_path):
    rows = normal(odd_rows())
    for name, lane in (("old", None), ("new", LocalLane)):
        land(tmp_path / name, sessions(rows)[:1], lane=lane)
        shutil.rmtree(tmp_path / name / "ck.parquet")            # lost: every row on disk is missing
    old = land(tmp_path / "old", sessions(rows)[1:])
    new = land(tmp_path / "new", sessions(rows)[1:], lane=LocalLane)
    assert old == new and len(read_parquet(tmp_path / "new" / "ck.parquet")) == 12


def test_pack_sends_lines_and_only_the_rows_made_on_the_driver(tmp_path):
    rows = [stored_row(r) for r in normal(odd_rows())]
    written = [(r, dump_line(r), key_digest(key_string(row_key(r)))) for r in rows]
    blob, dicts = pack(written, {id(rows[3])})
    assert blob == b"".join(dump_line(r) for r in rows) and [d[0] for d in dicts] == [3]
    assert pack(written, set())[1] == [] and [d[0] for d in pack(written, None)[1]] == list(range(12))
    back, texts, digests = unpack(*join([pack(written[:5], None), pack(written[5:], {id(rows[7])})]))
    assert back == rows and digests == [w[2] for w in written]
    assert texts == [w[1][:-1].decode() for w in written]
    assert back[3] is rows[3] and back[7] is rows[7]            # the loose rows cross as they are
    with pytest.raises(ValueError, match="position 12 outside its 12 lines"):
        unpack(blob, [(12, rows[0], written[0][2])])


def test_a_writer_that_failed_says_so_at_every_later_call(tmp_path):
    lane = ParquetLane(str(tmp_path / "ck.parquet"), [], [])
    row = stored_row(normal(odd_rows())[0])
    with pytest.raises(ValueError):
        lane.take(dump_line(row), [(5, row, (1, 2, "k"))])
    for call in (lambda: lane.take(dump_line(row), []), lane.missing, lambda: lane.fill([row]),
                 lambda: lane.close(True)):
        with pytest.raises(RuntimeError, match="stopped at an earlier batch: ValueError"):
            call()


def _window_rig(tmp_path, window=2, send_rows=3):
    """A SendWindow whose writer is a ParquetLane on a thread of its own, held by a gate."""
    from concurrent.futures import ThreadPoolExecutor
    import threading
    from whileai_ray.store.parquet.lane_protocol import SendWindow
    lane = ParquetLane(str(tmp_path / "ck.parquet"), [], [])
    gate = threading.Event()
    pool = ThreadPoolExecutor(1)

    def take(blob, dicts):
        assert gate.wait(30)
        return lane.take(blob, dicts)
    sender = SendWindow(lambda blob, dicts: pool.submit(take, blob, dicts),
                        lambda exc: RuntimeError(f"writer failed: {exc}"), window=window, send_rows=send_rows)
    return lane, gate, sender, pool


def test_the_send_window_keeps_order_and_makes_the_sender_wait_only_when_the_writer_is_behind(tmp_path):
    import threading
    rows = [stored_row(r) for r in normal(odd_rows())]
    lane, gate, sender, pool = _window_rig(tmp_path)
    for r in rows[:2]:                    # gathered: nothing sent yet
        sender.send(dump_line(r), [])
    assert sender.messages == 0
    for r in rows[2:9]:                   # 3 messages of 3 rows: one more than the window of 2
        sender.send(dump_line(r), [])
        if sender.messages == 2:
            break
    assert sender.messages == 2 and sender.waits == 0 and len(sender.flight) == 2
    done = threading.Event()

    def third():
        for r in rows[6:9]:
            sender.send(dump_line(r), [])
        done.set()
    t = threading.Thread(target=third, daemon=True)
    t.start()
    assert not done.wait(0.5)             # the writer is 3 messages behind: the sender waits (backpressure)
    gate.set()
    assert done.wait(30) and sender.waits == 1
    for r in rows[9:]:
        sender.send(dump_line(r), [])
    sender.drain()
    lane.close(True)
    pool.shutdown()
    got = read_parquet(tmp_path / "ck.parquet")
    assert got == json.loads("[" + ",".join(dump_line(r)[:-1].decode() for r in rows) + "]")   # in order


def test_a_failed_message_is_raised_at_the_next_send_in_the_senders_words(tmp_path):
    rows = [stored_row(r) for r in normal(odd_rows())]
    lane, gate, sender, pool = _window_rig(tmp_path, window=8, send_rows=1)
    gate.set()
    sender.send(dump_line(rows[0]), [(3, rows[0], (1, 2, "k"))])      # a bad position: the writer fails
    sender.flight[0].exception(30)
    with pytest.raises(RuntimeError, match="writer failed: packed batch: row position 3"):
        sender.send(dump_line(rows[1]), [])
    sender.send(dump_line(rows[2]), [])
    with pytest.raises(RuntimeError, match="writer failed: the Parquet copy stopped at an earlier batch"):
        sender.drain()
    pool.shutdown()
