"""The three callable forms (agents/forms.py), the unpicklable-path walker (runtime/caller/travel.py) and
the advanced['<role>_args'] checks, without Ray (ray.cloudpickle is a pickler; Ray is not started)."""
import functools
import threading

import pytest
from ray import cloudpickle

import whileai_ray as wai
from whileai_ray.agents.forms import (RoleBuildError, bind_class_form, build_role, check_class_form,
                                      is_async_callable, is_class_form)
from whileai_ray.runtime.caller.travel import format_path, travel_message, unpicklable_path


class SyncAgent:
    def __init__(self, model_path, temperature=0.0):
        self.model_path, self.temperature = model_path, temperature

    def __call__(self, message):
        return f"{self.model_path}:{message}"


class AsyncAgent:
    def __init__(self):
        pass

    async def __call__(self, message):
        return message


class NoCall:
    def __init__(self):
        pass


async def async_fn(message):
    return message


def test_forms_are_told_apart():
    assert is_class_form(SyncAgent) and is_class_form(functools.partial(SyncAgent, "m"))
    assert not is_class_form(SyncAgent("m")) and not is_class_form(async_fn)
    assert is_async_callable(async_fn) and is_async_callable(functools.partial(async_fn))
    assert is_async_callable(AsyncAgent) and is_async_callable(AsyncAgent())
    assert is_async_callable(functools.partial(AsyncAgent))
    assert not is_async_callable(SyncAgent) and not is_async_callable(SyncAgent("m"))
    assert not is_async_callable(lambda m: m) and not is_async_callable(wai.seeded_agent(wai_tools()))


def test_a_class_is_built_with_its_bound_arguments_and_a_function_is_left_alone():
    bound = bind_class_form(SyncAgent, ("weights.gguf",), {"temperature": 0.5})
    agent = build_role(bound, "agent")
    assert isinstance(agent, SyncAgent) and agent.temperature == 0.5 and agent("hi") == "weights.gguf:hi"
    assert bind_class_form(async_fn, ("ignored",)) is async_fn and build_role(async_fn, "agent") is async_fn
    assert build_role(None, "execute") is None


def test_a_constructor_that_raises_names_the_class_and_the_line():
    class Broken:
        def __init__(self):
            raise FileNotFoundError("no weights")

        def __call__(self, message):
            return message

    with pytest.raises(RoleBuildError) as err:
        build_role(Broken, "agent")
    text = str(err.value)
    assert "agent=" in text and "Broken" in text and "FileNotFoundError: no weights" in text
    assert "test_callable_forms.py" in text and "in __init__" in text


def test_class_forms_are_checked_before_anything_runs():
    check_class_form(SyncAgent, "agent", ("m",), {"temperature": 1.0})
    check_class_form(functools.partial(SyncAgent, "m"), "agent")
    with pytest.raises(TypeError, match=r"cannot be built with .*missing a required argument: 'model_path'"
                                        r".*agent_args"):
        check_class_form(SyncAgent, "agent")
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'temp'"):
        check_class_form(SyncAgent, "agent", ("m",), {"temp": 1})
    with pytest.raises(TypeError, match=r"grader=NoCall is a class without __call__.*__call__\(self, row\)"):
        check_class_form(NoCall, "grader")


def _simulate_config(agent, **kw):
    from whileai_ray.config.arguments import resolve_config
    return resolve_config(agent, {"tools": wai_tools(), "simulator": False, **kw}, {})


def wai_tools():
    return [{"type": "function", "function": {"name": "lookup_order", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}}}}]


def test_constructor_arguments_are_validated_like_every_knob():
    cfg = _simulate_config(SyncAgent, advanced={"agent_args": ["m.gguf"], "agent_kwargs": {"temperature": 0.2}})
    assert cfg.advanced.agent_args == ("m.gguf",) and cfg.advanced.agent_kwargs == {"temperature": 0.2}
    with pytest.raises(ValueError, match=r"advanced\['agent_args'\] is a tuple"):
        _simulate_config(SyncAgent, advanced={"agent_args": "m.gguf"})
    with pytest.raises(ValueError, match=r"advanced\['agent_kwargs'\] is a dict"):
        _simulate_config(SyncAgent, advanced={"agent_kwargs": ["temperature"]})
    with pytest.raises(ValueError, match=r"advanced\['execute_kwargs'\] keys .* 'not a name'"):
        _simulate_config(SyncAgent, advanced={"agent_args": ("m",), "execute_kwargs": {"not a name": 1}})
    with pytest.raises(TypeError, match=r"agent=SyncAgent cannot be built with advanced\['agent_args'\]"):
        _simulate_config(SyncAgent)
    with pytest.raises(ValueError, match=r"advanced\['agent_args'\] holds constructor arguments .* agent= is "
                                         r"async_fn, not a class"):
        _simulate_config(async_fn, advanced={"agent_args": ("m",)})
    with pytest.raises(ValueError, match=r"advanced\['grader_kwargs'\] .* grader= is not set"):
        _simulate_config(async_fn, advanced={"grader_kwargs": {"a": 1}})
    with pytest.raises(TypeError, match=r"execute= is async; the world answers a tool call synchronously"):
        _simulate_config(async_fn, execute=async_fn)


def test_the_path_to_an_unpicklable_object_through_a_closure():
    lock = threading.RLock()

    class Client:
        def __init__(self):
            self._pool = {"conn": [1, 2, lock]}

    client = Client()

    def agent(message):
        return client

    steps, error = unpicklable_path(agent, cloudpickle.dumps, "agent")
    assert steps == ["agent (function test_the_path_to_an_unpicklable_object_through_a_closure.<locals>.agent)",
                     "closure 'client' (Client)", "._pool (dict)", "['conn'] (list)", "[2] (RLock)"]
    assert "RLock" in str(error)
    assert unpicklable_path(wai.seeded_agent(wai_tools()), cloudpickle.dumps) is None


def test_partials_methods_and_defaults_are_followed():
    lock = threading.Lock()

    def play(message, guard=lock):
        return message

    steps, _ = unpicklable_path(functools.partial(play, "x"), cloudpickle.dumps, "execute")
    assert steps[1:] == ["partial.func (function test_partials_methods_and_defaults_are_followed.<locals>.play)",
                         "default 0 (lock)"]

    class Holder:
        __slots__ = ("lock",)

        def __init__(self):
            self.lock = lock

        def grade(self, row):
            return 1.0

    steps, _ = unpicklable_path(Holder().grade, cloudpickle.dumps, "grader")
    assert steps[1:] == ["self (Holder)", ".lock (lock)"]


def test_the_message_is_short_and_names_both_fixes():
    steps = ["agent (function agent)"] + [f".a{i} (T{i})" for i in range(12)]
    line = format_path(steps)
    assert line.startswith("agent (function agent) -> .a0 (T0) -> ... 6 more ... -> .a7 (T7)")
    text = travel_message("agent", steps, TypeError("cannot pickle '_thread.RLock' object"),
                          "this Ray cluster has 3 nodes, and the actors run on them")
    lines = text.splitlines()
    assert len(lines) < 15 and "rollout actors (this Ray cluster has 3 nodes" in lines[0]
    assert "TypeError: cannot pickle '_thread.RLock' object" in text
    assert "build the client inside" in text and "pass a class" in text
    assert "advanced={'agent_args': (...), 'agent_kwargs': {...}}" in text
    assert "judge actors" in travel_message("grader", steps[:2], TypeError("x"), "here")
