"""A row settled from the checkpoint on resume steers the planner as it did when it was played.

The Driver hands the planner an ``Outcome`` per unit; a graded failure among them is a parent to
mutate and its failed markers are counted (``search/planner/planner.py``). ``Landing.played``
reads those from the verdict; ``Landing.resumed`` must read the same from the verdict's fields on
the row as the checkpoint kept it, or a resumed graded run steers differently from the run that
never stopped."""
import copy
import json
import pickle

import pytest

from whileai_ray.runtime.driver.landing import Landing
from whileai_ray.runtime.messages import RolloutResult
from whileai_ray.score.judges.contract import normalize_judge_result
from whileai_ray.testing.seeded_rows import played

from planned_units import planned_units

VERDICTS = {
    "fails, one marker failed": {"reward": 0.0, "reason": "guessed", "markers": {"no_guess": 0.0, "polite": 1.0}},
    "passes": {"reward": 1.0, "reason": "fine", "markers": {"no_guess": 1.0}},
    "fails, no markers": {"reward": 0.2, "reason": "partly"},
    "the judge errored": RuntimeError("boom"),
}


@pytest.mark.parametrize("name", list(VERDICTS))
def test_a_resumed_graded_row_steers_as_the_played_one(name):
    unit = planned_units(1)[0]
    row = played(n_situations=1, k=1, grader=None)[0]
    landing = Landing(judge_name="strict", scoring_run_id="s1", label_source="judge", t0=0.0, clock=lambda: 1.0)
    res = pickle.loads(pickle.dumps(RolloutResult(unit=unit, row=copy.deepcopy(row))))
    now = landing.played(res.with_verdict(normalize_judge_result(VERDICTS[name])))   # as a judge sends it
    on_disk = json.loads(json.dumps(now.row, default=str))        # the row as the checkpoint keeps it
    later = Landing(judge_name="strict", scoring_run_id="s2", label_source="judge").resumed(unit, on_disk)
    assert later.resumed and (later.graded_failure, later.failed_markers, later.label) == \
        (now.graded_failure, now.failed_markers, now.label)
    assert now.graded_failure == name.startswith("fails")


def test_an_ungraded_resumed_row_is_no_graded_failure():
    unit = planned_units(1)[0]
    row = played(n_situations=1, k=1, grader=None)[0]
    out = Landing().resumed(unit, json.loads(json.dumps(row, default=str)))
    assert (out.graded_failure, out.failed_markers) == (False, ())
