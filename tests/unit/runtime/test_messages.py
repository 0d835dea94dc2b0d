"""The records that cross process boundaries: they pickle as Ray sends them, and their names for
why a unit was lost agree with the ones the planner and the report count (core/defaults.py)."""
import pickle
from typing import get_args

from planned_units import planned_units

from whileai_ray.core.defaults import POISON_REASONS, TIMED_OUT
from whileai_ray.core.progress import Poll, ProgressSnapshot
from whileai_ray.runtime.messages import (NODE_LOST, ROLLOUT_FAILED, UNSERIALIZABLE, WORKER_CRASHED, LostCause,
                                          PoolChunk, PoolReply, RolloutResult)


def test_lost_causes_are_the_ones_the_planner_and_report_count():
    assert set(get_args(LostCause)) == {NODE_LOST, *POISON_REASONS, TIMED_OUT}
    assert {WORKER_CRASHED, UNSERIALIZABLE, ROLLOUT_FAILED} == set(POISON_REASONS)


def test_messages_pickle_as_ray_sends_them_and_stay_frozen():
    unit = planned_units(1)[0]
    result = RolloutResult(unit=unit, row={"final_text": "ok"}, seconds=0.5).with_verdict({"reward": 1.0})
    poll = Poll(ProgressSnapshot(rows=3, cap=10, lost_by={"timed_out": 1}), marks=(ProgressSnapshot(rows=1, cap=10),),
                new_rows=[{"a": 1}], rows_from=0)
    for message in (result, RolloutResult.not_started(unit), PoolChunk(1, "roll", [unit]),
                    PoolReply(1, None, "RuntimeError: x"), poll):
        assert pickle.loads(pickle.dumps(message)) == message
    try:
        result.row = None                      # type: ignore[misc]
    except AttributeError:
        pass
    else:
        raise AssertionError("a RolloutResult changed after it was made")
    assert result.verdict == {"reward": 1.0} and result.seconds == 0.5


def test_on_progress_gets_the_documented_dict_made_in_one_place():
    poll = Poll(ProgressSnapshot(rows=3, cap=10, landed=2, resumed=1, rerolled_by={"agent_error": 2}),
                marks=(ProgressSnapshot(rows=1, cap=10),))
    out = poll.progress()
    assert out["rows"] == 3 and out["rerolled_by"] == {"agent_error": 2} and out["marks"][0]["rows"] == 1
    assert set(out) == {"rows", "cap", "landed", "resumed", "rerolled", "rerolled_by", "timed_out", "lost",
                        "lost_by", "inflight", "situations", "elapsed_s", "done", "stopped_because", "marks"}
    out["rerolled_by"]["agent_error"] = 99     # the caller's copy: the snapshot is untouched
    assert poll.snapshot.rerolled_by == {"agent_error": 2}
