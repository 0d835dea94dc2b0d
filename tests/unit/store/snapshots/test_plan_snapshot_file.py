"""The planner snapshot as plain data (no Ray): state() / restore through a real file, the deltas,
the compaction, and a reader that opens nothing it does not recognise."""
import builtins
import json
import pickle

import numpy as np
import pyarrow as pa
import pytest

from whileai_ray.core.columns import State
from whileai_ray.search.planner.planner import Outcome, PlanSettings, Planner
from whileai_ray.situations.grid import build_axes, pairwise_cells
from whileai_ray.situations.template_writer import TemplateWriter
from whileai_ray.store.snapshots.file import SnapshotFile, merge, read_snapshot
from whileai_ray.store.snapshots.frames import encode_frame, read_frames
from whileai_ray.core.identity import unit_row_key

TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {
    "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]


def _planner(budget=2500, **kw):
    axes = build_axes(TOOLS, "", None)
    s = PlanSettings(run_id="r", seed=3, budget=budget, tools=TOOLS, axes=axes, **kw)
    return Planner(s, TemplateWriter(TOOLS, "", 3), pairwise_cells(axes))


def _outcome(u):
    """A scripted verdict from the unit's key: some units fail, some rows are fault parents."""
    h = int(unit_row_key(u)[1][:6], 16) % 100 + u.attempt
    if h % 20 == 0:
        return Outcome(unit=u, row=None, unusable="agent_error")
    row = {"prompt": u.prompt, "tools_used": ["lookup_order"] * (h % 3), "arm": u.situation.arm,
           "scenario_id": u.situation.scenario_id, "scenario_dimensions": u.situation.dims,
           "behavior_signature": f"sig{h % 7}"}
    return Outcome(unit=u, row=row, label=h % 2, fault_parent=bool(u.faults) and h % 2 == 0,
                   graded_failure=h % 5 == 0, failed_markers=("x",) if h % 11 == 0 else ())


def _step(planner, r):
    units = planner.decide(r)
    planner.observe([_outcome(u) for u in units])
    return [(u.key, u.attempt, u.ordinal, json.dumps(u.faults), u.situation.to_dict()) for u in units]


def _write(file, planner):
    st = planner.state()
    return file.write(json.dumps({"planner": st.meta}), {f"planner.{k}": v for k, v in st.logs.items()},
                      {f"planner.{k}": v for k, v in st.tables.items()})


def _restore(meta, arrays, **kw):
    return _planner(**kw).restore(State({"planner": meta["planner"]}, logs=arrays).part("planner"))


@pytest.mark.parametrize("kw", [{}, {"k": 4, "repeat_policy": "successive"}, {"k": 2, "n": 2, "repeat_policy": "fixed"}])
def test_a_planner_restored_from_its_snapshot_file_decides_what_the_original_decides(tmp_path, kw):
    a = _planner(**kw)
    f = SnapshotFile(tmp_path / "ck.jsonl.plan", "created-1", "plan-1")
    for r in range(24):
        _step(a, r)
        if r % 3 == 2:
            _write(f, a)                          # a base, deltas, and compactions
    snap, problem = read_snapshot(tmp_path / "ck.jsonl.plan", "created-1", "plan-1")
    assert problem is None and len(snap["frames"]) >= 2
    b = _restore(snap["meta"], snap["arrays"], **kw)
    for wid, sit in a.words.held.items():         # every Situation still needed is written again alike
        assert b.words.write_again(wid, b).to_dict() == sit.to_dict()
    assert b.landed_keys() == a.landed_keys()
    ahead = [_step(a, r) for r in range(24, 400) if not a.stop_reason()]
    again = [_step(b, r) for r in range(24, 400) if not b.stop_reason()]
    assert ahead == again and a.landed == b.landed == 2500
    assert a.book.stats() == b.book.stats() and a.tracker.report_keys() == b.tracker.report_keys()
    assert a.family.stats() == b.family.stats() and a.bandit.stats() == b.bandit.stats()
    assert a.tracker.curve == b.tracker.curve


def test_snapshots_append_deltas_and_compaction_keeps_the_step_before_the_last(tmp_path):
    p = _planner()
    path = tmp_path / "x.plan"
    f = SnapshotFile(path, "c", "p")
    for r in range(20):
        _step(p, r)
    sizes, states = [(_write(f, p), path.stat().st_size)], [p.landed]
    for r in range(20, 32):
        _step(p, r)
        sizes.append((_write(f, p), path.stat().st_size))
        states.append(p.landed)
    base = sizes[0][0]
    deltas = [n for (n, size), (_, prev) in zip(sizes[1:], sizes) if size == prev + n]   # appended
    compactions = [n for (n, size), (_, prev) in zip(sizes[1:], sizes) if size == n]   # rewritten
    assert deltas and compactions
    assert all(n < base / 4 for n in deltas)                       # a round's delta costs what changed
    frames, stopped = read_frames(path.read_bytes())
    assert stopped is None and len(frames) >= 2
    before_last, _ = merge(frames[:-1])                           # the step before the last is there
    assert before_last["planner"]["landed"] == states[-2]


def test_a_torn_or_damaged_tail_keeps_the_whole_frames_before_it(tmp_path):
    p = _planner()
    path = tmp_path / "x.plan"
    f = SnapshotFile(path, "c", "p")
    for r in range(4):
        _step(p, r)
        _write(f, p)
    whole = path.read_bytes()
    n = len(read_frames(whole)[0])
    path.write_bytes(whole[:-7])                                   # torn while appending
    snap, problem = read_snapshot(path, "c", "p")
    assert problem is None and len(snap["frames"]) == n - 1
    damaged = bytearray(whole)
    damaged[-20] ^= 0xFF                                           # a flipped bit in the last frame
    frames, stopped = read_frames(bytes(damaged))
    assert len(frames) == n - 1 and "CRC" in stopped


def test_a_planner_snapshot_that_is_not_this_format_is_never_opened(tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):                                      # unpickling would create the marker
            return builtins.open, (str(marker), "w")

    path = tmp_path / "ck.jsonl.plan"
    path.write_bytes(pickle.dumps({"version": 1, "planner": Payload()}))
    snap, problem = read_snapshot(path, "c", "p")
    assert snap is None and "pickle" in problem and not marker.exists()
    path.write_bytes(b"\x00garbage" * 100)
    assert read_snapshot(path, "c", "p")[0] is None
    assert read_snapshot(tmp_path / "absent.plan", "c", "p") == (None, None)
    f = SnapshotFile(path, "c", "p")
    _write(f, _planner())
    assert "another checkpoint" in read_snapshot(path, "other", "p")[1]
    assert "another plan" in read_snapshot(path, "c", "other")[1]
    frame = encode_frame({"format": 99, "kind": "base"}, {})
    path.write_bytes(frame)
    assert "format 99" in read_snapshot(path, "c", "p")[1]


def test_frames_hold_plain_numeric_columns_only(tmp_path):
    with pytest.raises(TypeError, match="snapshot array"):
        encode_frame({}, {"x": np.array(["a", "b"], dtype=object)})
    good = encode_frame({"kind": "base"}, {"ids": np.arange(20, dtype=np.int64), "sk": np.ones((3, 4), np.uint32)})
    (header, arrays), = read_frames(good)[0]
    assert arrays["ids"].tolist() == list(range(20)) and arrays["sk"].shape == (3, 4)
    assert header["diff"] == ["ids"]                               # a rising column is kept as differences
    # a well-formed frame with a string column is refused, not decoded into objects
    import struct
    import zlib
    schema = pa.schema([pa.field("s", pa.list_(pa.string()))],
                       metadata={b"whileai_ray_plan": json.dumps({"shapes": {"s": [1]}}).encode()})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as w:
        w.write_batch(pa.record_batch([pa.array([["x"]], pa.list_(pa.string()))], schema=schema))
    payload = sink.getvalue().to_pybytes()
    frames, stopped = read_frames(struct.pack("<8sII", b"WAIPLANF", len(payload), zlib.crc32(payload)) + payload)
    assert frames == [] and "type" in stopped


def test_reading_frame_by_frame_gives_what_merging_every_decoded_frame_gives_at_each_prefix(tmp_path):
    import struct
    import zlib
    p = _planner()
    path = tmp_path / "x.plan"
    f = SnapshotFile(path, "c", "p")
    for r in range(46):
        _step(p, r)
        if r >= 40:
            _write(f, p)                   # a large base, then deltas smaller than a fifth of it
    frames, _ = read_frames(path.read_bytes())
    assert len(frames) >= 3
    for k in range(1, len(frames) + 1):
        meta, arrays = merge(frames[:k])
        snap, problem = read_snapshot(path, "c", "p", upto=k)
        assert problem is None and len(snap["frames"]) == k and snap["meta"] == meta
        assert snap.keys() == {"frames", "meta", "arrays", "bytes", "sizes"} and set(snap["arrays"]) == set(arrays)
        assert len(snap["sizes"]) == k and sum(snap["sizes"]) <= snap["bytes"]
        for name, arr in arrays.items():
            got = snap["arrays"][name]
            assert got.dtype == arr.dtype and np.array_equal(got, arr)
            assert got.base is None or got.base.base is None     # arrays of their own (a planner adopts them)
    # a frame whose CRC is right but whose payload is not a frame: the frames before it are merged
    junk = b"not arrow at all"
    path.write_bytes(path.read_bytes() + struct.pack("<8sII", b"WAIPLANF", len(junk), zlib.crc32(junk)) + junk)
    snap, problem = read_snapshot(path, "c", "p")
    assert problem is None and len(snap["frames"]) == len(frames) and snap["meta"] == merge(frames)[0]


def test_a_frame_cut_short_while_it_streamed_to_the_file_reads_as_torn_whatever_the_cut(tmp_path):
    import io
    from whileai_ray.store.snapshots.frames import write_frame
    good = encode_frame({"kind": "base"}, {"ids": np.arange(5000, dtype=np.int64)})
    second = io.BytesIO()
    write_frame(second, {"kind": "delta"}, {"sk": np.arange(40_000, dtype=np.uint16).reshape(-1, 8)})
    second = second.getvalue()
    assert read_frames(good + second)[1] is None and len(read_frames(good + second)[0]) == 2
    # a crash leaves the placeholder head (its length no file can satisfy) and part of the payload
    head = b"WAIPLANF" + (0xFFFFFFFF).to_bytes(4, "little") + bytes(4)
    for cut in (len(head), len(head) + 1, len(second) // 2, len(second) - 1):
        frames, stopped = read_frames(good + head + second[len(head):cut])
        assert len(frames) == 1 and "torn" in stopped


def test_snapshots_whose_group_tables_reuse_two_alternating_buffers_restore_what_the_original_decides(tmp_path):
    a = _planner()
    f = SnapshotFile(tmp_path / "ck.jsonl.plan", "c", "p")
    scratch = ({}, {})                            # as PlanSnapshots alternates them
    seen, truth = [], []
    for r in range(60):
        _step(a, r)
        if r >= 20 and r % 2 == 0:              # bases, deltas diffed against the other buffer, compactions
            st = a.state(scratch=scratch[r // 2 % 2])
            seen.append(id(scratch[r // 2 % 2]["groups"]))
            truth.append(np.array(a.book.state().tables["groups"]))         # a copy of its own
            f.write(json.dumps({"planner": st.meta}), {f"planner.{k}": v for k, v in st.logs.items()},
                    {f"planner.{k}": v for k, v in st.tables.items()})
            frames, _ = read_frames((tmp_path / "ck.jsonl.plan").read_bytes())
            assert np.array_equal(merge(frames)[1]["planner.book.groups"], truth[-1])
            if len(frames) > 1:                  # the step before the last is the previous snapshot's
                assert np.array_equal(merge(frames[:-1])[1]["planner.book.groups"], truth[-2])
    assert len(set(seen)) < len(seen)             # the buffers were reused, not made anew each time
    snap, problem = read_snapshot(tmp_path / "ck.jsonl.plan", "c", "p")
    assert problem is None
    b = _restore(snap["meta"], snap["arrays"])
    assert b.book.stats() == a.book.stats() and b.landed_keys() == a.landed_keys()
    ahead = [_step(a, r) for r in range(60, 400) if not a.stop_reason()]
    again = [_step(b, r) for r in range(60, 400) if not b.stop_reason()]
    assert ahead == again and a.landed == b.landed == 2500


def test_a_warmed_scratch_is_the_buffer_the_next_snapshots_copy_into():
    """A resumed run warms the keeper's scratch buffer before its loop (``warm_scratch``): the
    snapshots that follow copy into it, not into fresh memory, and copy the book right."""
    a = _planner()
    for r in range(30):
        _step(a, r)
    scratch = ({}, {})
    for s in scratch:
        a.warm_scratch(s)
    made = [s["groups"] for s in scratch]
    assert all(b.shape[1] >= len(a.book) for b in made) and made[0] is not made[1]
    for r in range(30, 34):
        _step(a, r)
        st = a.state(scratch=scratch[r % 2])
        assert scratch[r % 2]["groups"] is made[r % 2]                  # no new buffer
        assert np.array_equal(st.tables["book.groups"], a.book.state().tables["groups"])


def test_warming_ahead_makes_room_for_twice_the_growth_since_the_last_time():
    """The keeper's writer thread warms the next snapshot's buffer with ``ahead=True`` after each
    write: a book that grew by g groups since then gets a buffer for 2g more, so the snapshot in
    the loop's pause copies into warm memory instead of faulting a larger buffer's pages."""
    a = _planner(budget=5000)
    for r in range(10):
        _step(a, r)
    scratch: dict = {}
    a.warm_scratch(scratch, ahead=True)                   # the first call: room for the book as it is
    first, n0 = scratch["groups"], len(a.book)
    assert first.shape[1] >= n0
    r = 10
    while len(a.book) < first.shape[1] + 50:              # grow past the first buffer
        _step(a, r)
        r += 1
    n1 = len(a.book)
    a.warm_scratch(scratch, ahead=True)
    grown = scratch["groups"]
    assert grown is not first and grown.shape[1] >= n1 + 2 * (n1 - n0) and not grown.any()   # touched
    while len(a.book) < n1 + (n1 - n0):                   # it grows by as much again: the pause reuses it
        _step(a, r)
        r += 1
    st = a.state(scratch=scratch)
    assert scratch["groups"] is grown
    assert np.array_equal(st.tables["book.groups"], a.book.state().tables["groups"])


def test_a_planner_that_keeps_only_its_keys_still_names_every_landed_row(tmp_path):
    """After the run (its figures taken) a resume's planner lets go of what only deciding reads
    before it writes the settled rows; it still names them, the same as before, in order."""
    a = _planner(budget=600)
    f = SnapshotFile(tmp_path / "ck.jsonl.plan", "created-1", "plan-1")
    r = 0
    while not a.stop_reason():
        _step(a, r)
        r += 1
    _write(f, a)
    snap, _ = read_snapshot(tmp_path / "ck.jsonl.plan", "created-1", "plan-1")
    b = _restore(snap["meta"], snap["arrays"], budget=600)
    keys = a.landed_keys()
    stats = b.stats("budget")
    b.keep_only_keys()
    assert b.novelty is None and b.book is None and b.tracker is None and b._landed_ka is None
    assert list(b.iter_landed_keys(len(keys))) == keys and len(keys) == a.landed
    assert stats.landed == a.landed and b.rerolled == a.rerolled and b.lost == a.lost   # what polls read


def _keeper_write(f, planner, scratch=None):
    """A snapshot as the keeper writes it (its meta says the budget and whether it cut the plan)."""
    st = planner.state(scratch=scratch)
    meta = json.dumps({"planner": st.meta, "next_decide": 0, "observed": 0, "settled": len(st.logs["landed_wid"]),
                       "budget": planner.s.budget, "bound": planner.budget_bound_round is not None})
    tables = {f"planner.{k}": v for k, v in st.tables.items()}
    tables.update({"pending": np.zeros((0, 5), dtype=np.int64), "pending_round": np.zeros(0, dtype=np.int64)})
    return f.write(meta, {f"planner.{k}": v for k, v in st.logs.items()}, tables)


@pytest.mark.parametrize("kw", [{}, {"k": 4, "repeat_policy": "successive"}])
def test_the_budget_cuts_the_plan_only_at_the_end_and_a_snapshot_says_so(tmp_path, kw):
    """budget_bound_round stays None while the budget leaves more than budget_margin() (the plan
    does not depend on it) and is kept through a snapshot; a keeper of another budget continues
    only from frames taken before it, or with its own budget."""
    from whileai_ray.store.snapshots.keeper import PlanSnapshots
    a = _planner(budget=1000, **kw)
    f = SnapshotFile(tmp_path / "ck.jsonl.plan", "c", "p")
    r = 0
    while a.budget_bound_round is None and not a.stop_reason():
        near = a.capacity() < a.budget_margin()
        _step(a, r)
        assert a.budget_bound_round is None or near          # never cut without the margin saying so first
        r += 1
        if a.budget_bound_round is None:
            _keeper_write(f, a)
    assert a.budget_bound_round is not None and a.landed < 1000
    while not a.stop_reason():
        _step(a, r)
        r += 1
    _keeper_write(f, a)
    frames, _ = read_frames((tmp_path / "ck.jsonl.plan").read_bytes())
    metas = [json.loads(h["meta"]) for h, _ in frames]
    assert metas[-1]["bound"] and not any(m["bound"] for m in metas[:-1])
    b = _restore(*merge(frames), budget=1000, **kw)
    assert b.budget_bound_round == a.budget_bound_round
    for budget, last in ((1000, len(frames) - 1), (1200, len(frames) - 2), (900, None)):
        keeper = PlanSnapshots(str(tmp_path / "ck.jsonl.plan"), 10, "c", "p", budget=budget)
        snap, problem = read_snapshot(keeper.path, "c", "p", usable=keeper._fits)
        if last is None:                 # a smaller budget than the frames were taken with: none fits
            assert snap is None and "budget=1000" in problem
        else:
            assert len(snap["frames"]) == last + 1


def test_a_resumed_keeper_appends_deltas_to_the_file_it_restored_and_cuts_what_it_did_not_use(tmp_path):
    """A resume goes on writing the file it restored from: the frames it read stay byte for byte,
    what it left out (a frame of another budget) is cut, its next snapshot is a delta, and the
    file then reads as the planner it continued."""
    from whileai_ray.store.snapshots.keeper import PlanSnapshots
    path = tmp_path / "ck.jsonl.plan"
    a = _planner(budget=1000)
    f = SnapshotFile(path, "c", "p")
    r = 0
    while not a.stop_reason():
        _step(a, r)
        r += 1
        if r % 3 == 0 or a.stop_reason():
            _keeper_write(f, a)
    whole = path.read_bytes()
    keeper = PlanSnapshots(str(path), 10, "c", "p", budget=1200)          # the last frame (budget cut) left out
    prepared = keeper.prepare(lambda meta, arrays: (_restore(meta, arrays, budget=1200), {}))
    last = prepared.get("last")
    # the state the file holds, as read: its logs by length, its tables themselves
    assert last is not None and last[0] == prepared["snap"]["frames"][-1]["meta"]
    assert set(last[1]) == set(prepared["snap"]["frames"][-1]["logs"]) and "planner.landed_wid" in last[1]
    assert "planner.book.groups" in last[2] and not set(last[1]) & set(last[2])
    kept = sum(prepared["snap"]["sizes"])
    assert kept < len(whole) and keeper._file.continue_file(prepared["snap"], prepared["last"])
    assert path.read_bytes() == whole[:kept]
    b = prepared["planner"]
    r2 = int(json.loads(prepared["snap"]["frames"][-1]["meta"])["planner"]["landed"])
    for r in range(r, r + 4):
        _step(b, r)
    n = keeper._file.write(*_keeper_args(b))
    data = path.read_bytes()
    assert data[:kept] == whole[:kept] and len(data) == kept + n
    frames, stopped = read_frames(data)
    assert stopped is None and frames[-1][0]["kind"] == "delta" and r2 < b.landed
    c = _restore(*merge(frames), budget=1200)
    assert c.landed_keys() == b.landed_keys() and c.book.stats() == b.book.stats()


def _keeper_args(planner):
    st = planner.state()
    meta = json.dumps({"planner": st.meta, "next_decide": 0, "observed": 0, "settled": len(st.logs["landed_wid"]),
                       "budget": planner.s.budget, "bound": planner.budget_bound_round is not None})
    tables = {f"planner.{k}": v for k, v in st.tables.items()}
    tables.update({"pending": np.zeros((0, 5), dtype=np.int64), "pending_round": np.zeros(0, dtype=np.int64)})
    return meta, {f"planner.{k}": v for k, v in st.logs.items()}, tables
