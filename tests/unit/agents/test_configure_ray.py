"""wai.configure(ray=...) sets default Ray options for every run; bad keys are refused."""
import pytest

import whileai_ray as wai
from whileai_ray.agents.backends import configured_ray_options, reset_configuration


def test_configure_ray_options_round_trip_and_validation():
    try:
        wai.configure(ray={"rollout_actors": 3, "concurrency_per_actor": 16})
        assert configured_ray_options() == {"rollout_actors": 3, "concurrency_per_actor": 16}
        with pytest.raises(ValueError, match="rollout_actor"):
            wai.configure(ray={"rollout_actor": 3})
        with pytest.raises(TypeError):
            wai.configure(ray=3)
        wai.configure(ray=None)
        assert configured_ray_options() == {}
    finally:
        reset_configuration()
