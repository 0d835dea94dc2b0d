"""A Unit and its Situation cross to a rollout lane pickled (``runtime/messages.pack_units``) as
their class and their fields in order (``__reduce__``): every field comes back, none is left out
when a field is added, and the copy module (which reads the same hook) still copies them."""
import copy
import dataclasses
import pickle

from whileai_ray.core.unit import Unit
from whileai_ray.situations.situation import Situation


def _situation() -> Situation:
    # every field away from its default, so a field the hook forgot would come back changed
    values = {"scenario_id": "sc-1", "prompt": "Where is order A-1?", "phrasing_index": 2,
              "dims": {"tool": "lookup_order"}, "tier": "boundary", "tags": {"tone": "curt"}, "ask_family": "vague",
              "world_state": "entity exists", "reference": "look it up", "ref_ids": ["A-1"], "arm": "open_ended",
              "writer_model": "m", "selection_reason": "novelty=0.5", "parent_failure_id": "p-1",
              "extra": {"instance": 3}}
    assert set(values) == {f.name for f in dataclasses.fields(Situation)}
    return Situation(**values)


def _unit(sit: Situation) -> Unit:
    values = {"run_id": "r", "situation": sit, "rollout_index": 3, "eval_run": 1, "attempt": 2,
              "faults": {"*": {"mode": "timeout", "rate": 1.0}}, "seed": 7, "ordinal": 11, "group": 5}
    assert set(values) == {f.name for f in dataclasses.fields(Unit)}
    return Unit(**values)


def test_every_field_comes_back_in_a_pickle_and_in_a_copy():
    sit = _situation()
    unit = _unit(sit)
    for proto in (2, 5):
        back = pickle.loads(pickle.dumps([unit, unit], protocol=proto))
        assert back[0] == unit and back[0].situation == sit and back[0] is back[1]   # (shared once, as before)
    assert copy.copy(unit) == unit and copy.copy(unit).situation is sit
    deep = copy.deepcopy(unit)
    assert deep == unit and deep.situation is not sit and deep.situation.dims is not sit.dims


def test_the_pickle_names_each_class_once_and_no_field_name():
    units = [_unit(_situation()) for _ in range(3)]
    data = pickle.dumps(units, protocol=5)
    assert data.count(b"Situation") == 1 and data.count(b"selection_reason") == 0
