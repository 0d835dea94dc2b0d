"""Knobs: advanced={...} checked once into a typed, frozen object (config/knobs.py).

The engine reads ``cfg.advanced.lag``; a misspelt key is still the "did you mean" TypeError at the
call; ``as_dict()`` is, key for key and in order, the dict ``validate_advanced`` returned before
(the report's ``knobs`` entry reads it), and a Knobs pickles (it travels inside specs to actors)."""
from __future__ import annotations

import dataclasses
import pickle

import pytest

from whileai_ray.config.advanced import ADVANCED_DEFAULTS, ADVANCED_KEYS, KNOBS, validate_advanced
from whileai_ray.config.knobs import Knobs

# Every numeric knob at its default, in the order the old validate_advanced filled them in.
_NUMERIC = [("progress_every_rows", 10), ("progress_every_s", 10.0), ("pass_threshold", 0.5),
            ("dead_agent_errors", 16), ("per_round", 64), ("probe", 2), ("completions_per_request", 1),
            ("round_size", 64), ("lag", 8), ("chunk_size", 64), ("copies_needed", 5), ("judge_concurrency", 32),
            ("judge_timeout", 0.0), ("family_cap", 3), ("plan_snapshot_s", 10.0), ("spill_rows", 50000),
            ("cluster_grade_rows", 100000), ("caller_timeout_s", 10.0)]


def _defaults_less(*given: str) -> list:
    return [(name, value) for name, value in _NUMERIC if name not in given]


# (advanced, moved, flags) -> the dict the base commit's validate_advanced returned (hardcoded from it).
CASES = [
    ({}, None, {}, _defaults_less() + [("mutate_failures", True), ("mutate_graded_failures", False)]),
    ({"probe": 4.0, "opening": 0.3, "arm_weights": {"structured": 2}, "agent_max_tokens": 1024}, None,
     {"has_grader": True},
     [("agent_max_tokens", 1024), ("arm_weights", {"structured": 2.0}), ("opening", 0.3), ("probe", 4)]
     + _defaults_less("probe") + [("mutate_failures", True), ("mutate_graded_failures", True)]),
    ({"mutate_graded_failures": False, "texture": 0.4, "lag": 16, "world": {"exists_share": 0.2},
      "agent_args": ["m"]}, {"dimensions": {"stance": ["adversarial"]}}, {"has_grader": True},
     [("agent_args", ("m",)), ("dimensions", {"stance": ["adversarial"]}), ("lag", 16),
      ("mutate_graded_failures", False), ("texture", 0.4), ("world", {"exists_share": 0.2})]
     + _defaults_less("lag") + [("mutate_failures", True)]),
    ({"steering_weight": 0.5, "seed_prompts": ["hi"], "metrics": False, "judge_timeout": 5, "tool_choice": "lookup"},
     {"prefer_success": True}, {"has_traces": True},
     [("judge_timeout", 5.0), ("metrics", False), ("prefer_success", True), ("seed_prompts", ["hi"]),
      ("steering_weight", 0.5), ("tool_choice", {"type": "function", "function": {"name": "lookup"}})]
     + _defaults_less("judge_timeout") + [("mutate_failures", True), ("mutate_graded_failures", False)]),
]


@pytest.mark.parametrize("advanced, moved, flags, expected", CASES)
def test_as_dict_is_the_old_dict_key_for_key(advanced, moved, flags, expected):
    got = list(validate_advanced(advanced, moved, **flags).as_dict().items())
    assert got == expected
    assert [type(v) for _, v in got] == [type(v) for _, v in expected]     # 5 stays 5.0, 4.0 becomes 4


def test_typed_access_and_what_the_caller_gave():
    knobs = validate_advanced({"lag": 16, "opening": "USER", "seed_prompts": ["hi"]}, {"texture": 0.2})
    assert isinstance(knobs, Knobs)
    assert knobs.lag == 16 and knobs.opening == "user" and knobs.seed_prompts == ["hi"] and knobs.texture == 0.2
    assert knobs.probe == 2 and knobs.agent_max_tokens == ADVANCED_DEFAULTS["agent_max_tokens"]
    assert knobs.passed("lag") and knobs.passed("texture") and not knobs.passed("probe")
    assert not knobs.passed("agent_max_tokens") and knobs.world == {} and knobs.ray == {}
    assert knobs.role_arguments()["agent"] == ((), {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        knobs.lag = 4  # type: ignore[misc]


def test_every_key_is_a_field_with_its_documented_default():
    names = {f.name for f in dataclasses.fields(Knobs)} - {"given"}
    assert names == set(ADVANCED_KEYS)
    plain = Knobs()
    for name, (_kind, default, _floor, _ceiling) in KNOBS.items():
        assert getattr(plain, name) == default and type(getattr(plain, name)) is type(default)
    for name, default in ADVANCED_DEFAULTS.items():
        assert getattr(plain, name) == default, name


def test_an_unknown_key_still_suggests_the_close_one():
    with pytest.raises(TypeError, match=r"advanced has no key 'lagg'; did you mean 'lag'\? known keys: "):
        validate_advanced({"lagg": 4})
    with pytest.raises(TypeError, match=r"advanced has no key 'zzzz'; known keys: "):
        validate_advanced({"zzzz": 4})
    with pytest.raises(ValueError, match=r"advanced\['probe'\] is an integer; got 'two'; the default is 2"):
        validate_advanced({"probe": "two"})


def test_knobs_pickle_round_trip():
    knobs = validate_advanced({"lag": 16, "world": {"exists_share": 0.2}, "agent_kwargs": {"t": 1},
                               "arm_weights": {"structured": 1}, "cache": "runs/c.sqlite"}, has_grader=True)
    back = pickle.loads(pickle.dumps(knobs))
    assert back == knobs and back.given == knobs.given and back.as_dict() == knobs.as_dict()
    assert back.world == {"exists_share": 0.2} and back.mutate_graded_failures is True
