"""simulate() argument handling: aliases, presets, defaults and every bad-input row (no Ray)."""
from __future__ import annotations

import pytest

from whileai_ray.config.arguments import (MOVED_NAMES, PASSED_ALIASES, SIMULATE_PARAMS, RunConfig, knob,
                                resolve_config)
from whileai_ray.testing.seeded_rows import TOOLS


def agent(message):
    return {"steps": [], "final_text": "ok"}


def call(agent=agent, **kwargs) -> RunConfig:
    """What simulate() does: named parameters go in explicit, the rest in passed."""
    explicit = {k: v for k, v in kwargs.items() if k in SIMULATE_PARAMS}
    passed = {k: v for k, v in kwargs.items() if k not in SIMULATE_PARAMS}
    explicit.setdefault("tools", TOOLS)
    return resolve_config(agent, explicit, passed)


def raises(exc, *names, **kwargs):
    """Call with kwargs, expect ``exc`` whose message contains every one of ``names``."""
    with pytest.raises(exc) as info:
        call(**kwargs)
    for name in names:
        assert name in str(info.value), (name, str(info.value))
    return str(info.value)


# ---- the call surface ------------------------------------------------------------------

def test_params_are_the_documented_signature_in_order():
    assert SIMULATE_PARAMS[:5] == ("agent", "spec", "tools", "system_prompt", "budget")
    assert SIMULATE_PARAMS[-1] == "patience" and len(SIMULATE_PARAMS) == 45
    assert PASSED_ALIASES["unique"] == "unique_situations" and "dimensions" in MOVED_NAMES


@pytest.mark.parametrize("wrong, suggestion", [("repeat", "repeats"), ("budgett", "budget"),
                                               ("phrasing", "phrasings")])
def test_misspelled_keyword_is_a_type_error_with_the_closest_name(wrong, suggestion):
    message = raises(TypeError, f"'{wrong}'", **{wrong: 4})
    assert message == (f"simulate() got an unexpected keyword argument '{wrong}'; "
                       f"did you mean '{suggestion}'?")


def test_unknown_keyword_without_a_close_name_has_no_hint():
    message = raises(TypeError, "'zqxwv'", zqxwv=1)
    assert "did you mean" not in message


def test_defaults():
    cfg = call()
    assert (cfg.budget, cfg.concurrency, cfg.seed, cfg.hard_share) == (1000, 32, 0, 0.40)
    assert cfg.patience == {"level": "normal", "second": 0.35, "later": 0.60}
    assert cfg.reproducible is True and cfg.fault_rate is None and not cfg.fault_rate_set
    assert cfg.timeout == 300.0 and cfg.agent_max_tokens == 768 and not cfg.timeout_set
    assert cfg.until == "compute" and cfg.strategy == "auto" and cfg.agent_kind == "callable"
    assert cfg.advanced.progress_every_rows == 10 and cfg.advanced.probe == 2
    assert cfg.explicit == frozenset({"agent", "tools"})
    assert cfg.notes == [] and cfg.seeds == [] and cfg.system_prompt == ""


# ---- presets ---------------------------------------------------------------------------

@pytest.mark.parametrize("mode, n, k, policy, unique", [
    ("explore", 1, 1, "none", True), ("rl", 1, 8, "successive", False),
    ("sft", 3, 4, "adaptive", False), ("adaptive", 3, 3, "adaptive", False),
    ("RL", 1, 8, "successive", False)])
def test_mode_presets(mode, n, k, policy, unique):
    cfg = call(mode=mode)
    assert (cfg.phrasings, cfg.repeats, cfg.repeat_policy, cfg.unique_situations) == \
        (n, k, policy, unique)
    assert cfg.mode == mode.lower() and not cfg.repeats_set and not cfg.phrasings_set


def test_explicit_counts_override_the_preset():
    cfg = call(mode="sft", repeats=2, phrasings=5, repeat_policy="fixed")
    assert (cfg.phrasings, cfg.repeats, cfg.repeat_policy) == (5, 2, "fixed")
    assert cfg.repeats_set and cfg.phrasings_set


def test_unique_situations_forces_one_by_one_but_keeps_the_policy():
    cfg = call(mode="rl", unique_situations=True)
    assert (cfg.phrasings, cfg.repeats, cfg.repeat_policy, cfg.unique_situations) == \
        (1, 1, "successive", True)
    assert call(mode="rl", unique=True, repeats=4).repeats == 4


def test_repeat_policy_unique_means_none_and_unique():
    cfg = call(mode="sft", repeat_policy="unique")
    assert (cfg.repeat_policy, cfg.unique_situations) == ("none", True)


# ---- aliases ---------------------------------------------------------------------------

def test_aliases_set_their_canonical_argument():
    cfg = call(mode="rl", rollouts_per_prompt=3, n=2, policy="Be brief.", unique=True)
    assert (cfg.repeats, cfg.phrasings, cfg.system_prompt) == (3, 2, "Be brief.")
    assert cfg.unique_situations and cfg.repeats_set and {"n", "policy"} <= cfg.explicit
    assert call(rollouts_per_request=4, requests_per_situation=2).repeats == 4
    assert call(repeats=4, rollouts_per_request=4).repeats == 4   # same value: no conflict


@pytest.mark.parametrize("kwargs, names", [
    ({"repeats": 2, "rollouts_per_request": 3}, ["rollouts_per_request=", "repeats=", "not both"]),
    ({"repeats": 2, "rollouts_per_prompt": 3}, ["repeats=", "rollouts_per_prompt="]),
    ({"phrasings": 2, "requests_per_situation": 3, "n": 4},
     ["requests_per_situation=, phrasings=, or n=", "not both"]),
    ({"system_prompt": "a", "policy": "b"}, ["system_prompt= or policy=", "not both"]),
    ({"unique_situations": True, "unique": False}, ["unique_situations= or unique="]),
])
def test_alias_conflicts(kwargs, names):
    raises(ValueError, *names, **kwargs)


def test_moved_names_land_in_advanced():
    cfg = call(dimensions={"stance": ["adversarial"]}, prefer_success=True, agent_max_tokens=4096)
    assert cfg.dimensions == {"stance": ["adversarial"]}
    assert cfg.advanced.prefer_success is True and "dimensions" in cfg.explicit
    assert cfg.agent_max_tokens == 4096 and cfg.timeout == 1024.0
    raises(ValueError, "texture= or advanced['texture']", texture=0.2,
           advanced={"texture": 0.3})


# ---- counts ----------------------------------------------------------------------------

def test_budget_values():
    assert call(budget=2.5).budget == 2
    assert call(budget="10").budget == 10
    assert call(budget=0).budget == 0 and call(budget=-5).budget == -5
    cfg = call(budget=None)
    assert cfg.budget == 50_000 and cfg.budget_was_none
    message = raises(ValueError, budget="ten")
    assert message.startswith("budget= is a number of rows, an int; got 'ten'")


@pytest.mark.parametrize("bad", ["x", True])
def test_situations_must_be_an_int(bad):
    raises(ValueError, "situations=", "seed_prompts", situations=bad)


def test_clamps():
    assert call(situations=0).situations == 1
    assert call(repeats=0).repeats == 1 and call(repeats=-1).repeats == 1
    assert call(phrasings=0).phrasings == 1
    assert call(concurrency=0).concurrency == 1 and call(concurrency=-3).concurrency == 1
    assert call(max_turns=0).max_turns == 1


@pytest.mark.parametrize("name", ["repeats", "phrasings", "concurrency", "max_turns", "runs",
                                  "seed"])
def test_counts_refuse_words(name):
    raises(ValueError, f"{name}=", "an int", **{name: "a"})


def test_runs():
    raises(ValueError, "runs=", "1 or more", runs=0)
    raises(ValueError, "checkpoint=", "runs=1", runs=2, checkpoint="rows.jsonl")
    assert call(runs=3).runs == 3


def test_time_budget_and_reproducible():
    assert call(time_budget=0).time_budget is None and call(time_budget=-1).reproducible is True
    cfg = call(time_budget=30)
    assert cfg.time_budget == 30.0 and cfg.reproducible is False
    assert call(time_budget=30, reproducible=True).reproducible is True
    raises(ValueError, "time_budget=", time_budget="soon")
    raises(ValueError, "reproducible=", reproducible="yes")


# ---- choices ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, listed", [
    ("mode", "explore, sft, rl, or adaptive"),
    ("repeat_policy", "none, adaptive, successive, fixed, or unique"),
    ("until", "compute, saturation, first, or budget_only"),
    ("strategy", "auto, broad, trace, or targeted")])
def test_bad_choice(name, listed):
    raises(ValueError, f"{name}= must be {listed}", "'bogus'", **{name: "bogus"})


@pytest.mark.parametrize("strategy", ["trace", "targeted"])
def test_trace_strategies_need_traces(strategy):
    raises(ValueError, f"strategy='{strategy}' needs traces=", strategy=strategy)
    rows = [{"prompt": "where is ORD-1?"}]
    assert call(strategy=strategy, traces=rows).strategy == strategy


def test_hard_share():
    raises(ValueError, "hard_share=", "outside 0..1", "share, not a count", hard_share=1.5)
    raises(ValueError, "hard_share=", "fraction between 0 and 1", hard_share="x")
    raises(ValueError, "hard_share=", hard_share=True)
    cfg = call(hard_share=0.7)
    assert cfg.hard_share == 0.7 and cfg.hard_share_set


def test_grade():
    raises(ValueError, "grade=", "'conduct'", "grader=", grade="yes")
    raises(ValueError, "grader=", grade=lambda row: {"reward": 1})
    assert call(grade="conduct").grade == "conduct" and call(grade=True).grade is True


@pytest.mark.parametrize("name", ["grader", "on_progress", "execute"])
def test_non_callables_are_type_errors(name):
    raises(TypeError, f"{name}=", "callable", **{name: "judge"})


def test_fault_rate():
    raises(ValueError, "fault_rate=", "share between 0 and 1", fault_rate="x")
    raises(ValueError, "fault_rate=", fault_rate=-0.2)
    cfg = call(fault_rate=2.0)
    assert cfg.fault_rate == 2.0 and cfg.fault_rate_set
    assert len(cfg.notes) == 1 and "fault_rate=2" in cfg.notes[0]
    cfg = call(fault_rate=0.3, risk=0.6)
    assert cfg.fault_rate == 0.6 and "risk=0.6 overrides fault_rate=0.3" in cfg.notes[0]


def test_sampling_patience_logprobs_temperature_timeout():
    raises(ValueError, "sampling=", "dict", sampling="x")
    assert call(sampling={"temperature": 0.2}).sampling == {"temperature": 0.2}
    raises(ValueError, "patience=", "short", "endless", patience="bogus")
    raises(ValueError, "patience['later']", patience={"second": 0.1, "later": 2})
    assert call(patience="SHORT").patience == {"level": "short", "second": 0.6, "later": 0.9}
    assert call(patience="endless").patience["later"] == 0.0
    assert call(patience={"second": 0.1, "later": 0.2}).patience == \
        {"level": "custom", "second": 0.1, "later": 0.2}
    raises(ValueError, "logprobs= must be False, True, or 'tokens'", logprobs="x")
    assert call(logprobs="tokens").logprobs == "tokens"
    assert call(temperature=5.0).temperature == 5.0
    raises(ValueError, "temperature=", temperature="hot")
    cfg = call(timeout=12)
    assert cfg.timeout == 12.0 and cfg.timeout_set
    raises(ValueError, "timeout=", timeout=0)


# ---- tasks, seeds, traces --------------------------------------------------------------

class FakeData:
    def __init__(self, rows):
        self._rows = rows

    def rows(self):
        return self._rows


def test_tasks():
    raises(ValueError, "tasks= has no rows with a prompt", tasks=[])
    raises(ValueError, "tasks= has no rows with a prompt", tasks=[{"final_text": "hi"}])
    raises(ValueError, "tasks=", tasks="/nonexistent/run.jsonl")
    raises(ValueError, "tasks=", "seeds=", "cannot be combined",
           tasks=[{"prompt": "a"}], seeds=["b"])
    data = FakeData([{"prompt": "where is ORD-1?"}])
    assert call(tasks=data).tasks is data


def test_tasks_path(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text('{"prompt": "a"}\n')
    assert call(tasks=str(path)).tasks == str(path)


def test_seeds():
    raises(ValueError, "seeds=", "wrap one in a list", "seeds=['where is ORD-1?']",
           seeds="where is ORD-1?")
    raises(ValueError, "seeds= item 1", seeds=["ok", ""])
    assert call(seeds=("a", "b")).seeds == ["a", "b"]
    raises(ValueError, "traces=", traces=[])


# ---- agents and tools ------------------------------------------------------------------

def test_needs_an_agent_tools_or_prompt():
    with pytest.raises(ValueError, match="simulate needs an agent, tools=, or a system prompt"):
        resolve_config(None, {}, {})
    assert resolve_config(None, {"system_prompt": "You help."}, {}).system_prompt == "You help."
    assert resolve_config(None, {"tools": TOOLS}, {}).agent_kind is None


def test_agent_spec_strings():
    message = raises(ValueError, "agent='gpt-4.1-mini'", "names no provider",
                     "openai:gpt-4.1-mini", "vllm:", "http", agent="gpt-4.1-mini")
    assert "@" in message
    raises(ValueError, "use a colon: openai:gpt-4.1-mini", agent="openai/gpt-4.1-mini")
    raises(ValueError, "agent='foo:bar'", "openai:<model>", agent="foo:bar")
    raises(ValueError, "vllm:<model>@", agent="vllm:llama")
    raises(ValueError, "lower case, openai:gpt-4.1", agent="OpenAI:gpt-4.1")
    raises(ValueError, "not served here", agent="anthropic:claude")
    for spec in ("openai:gpt-4.1-mini", "vllm:llama@http://127.0.0.1:8000/v1",
                 "vllm:Qwen/Qwen3-8B@localhost:8000", "http://127.0.0.1:8000/v1"):
        assert call(agent=spec).agent_kind == "spec"


class Backend:
    def __init__(self, model):
        self.model = model


def test_backend_objects_and_roles():
    assert call(agent=Backend("gpt-4.1-mini")).agent_kind == "backend"
    raises(TypeError, "agent=", agent=5)
    raises(TypeError, "user_model=", "spec string", user_model=5)
    assert call(user_model="openai:gpt-4.1").user_model == "openai:gpt-4.1"
    raises(ValueError, "user_model=", user_model="gpt-4.1")
    assert call(simulator=False).simulator is False
    assert call(simulator="Hosted").simulator == "hosted"
    raises(ValueError, "simulator=False", simulator=True)
    raises(TypeError, "backend=", backend=3.5)


def test_tools():
    raises(TypeError, "tools=", "@wai.tool", tools="x")
    raises(TypeError, "wrap the schema in a list", tools=TOOLS[0])
    cfg = call(tools=[{"name": "a"}])
    assert cfg.tools == [{"type": "function", "function": {
        "name": "a", "parameters": {"type": "object", "properties": {}}}}]
    raises(ValueError, "tools[0] has no name", tools=[{"parameters": {}}])
    raises(ValueError, "'lookup_order' twice", tools=TOOLS + TOOLS)
    assert call(tools=TOOLS).tools == TOOLS


def test_plain_function_becomes_a_schema():
    def refund(order_id: str, amount: float, note: str = "") -> dict:
        """Refund an order.

        Longer notes that stay out of the description.
        """
        return {}

    cfg = call(tools=[refund])
    assert cfg.tools == [{"type": "function", "function": {
        "name": "refund", "description": "Refund an order.",
        "parameters": {"type": "object", "required": ["order_id", "amount"], "properties": {
            "order_id": {"type": "string"}, "amount": {"type": "number"},
            "note": {"type": "string", "default": ""}}}}}]      # a default shows, as pydantic writes it
    assert cfg.tool_functions == {"refund": refund}


# ---- advanced --------------------------------------------------------------------------

def test_advanced_unknown_key_suggests():
    message = raises(TypeError, "advanced has no key 'progress_every_row'",
                     "did you mean 'progress_every_rows'?", "known keys:",
                     advanced={"progress_every_row": 5})
    assert "chunk_size" in message
    raises(TypeError, "advanced=", advanced=[("probe", 2)])


@pytest.mark.parametrize("key, value, pieces", [
    ("probe", "two", ["advanced['probe'] is an integer", "the default is 2"]),
    ("probe", 2.5, ["advanced['probe'] is an integer"]),
    ("pass_threshold", "x", ["advanced['pass_threshold'] is a number", "the default is 0.5"]),
    ("completions_per_request", 9, ["above its ceiling 8"]),
    ("progress_every_s", 0.01, ["below its floor 0.1"]),
    ("arm_weights", {"structured": 1, "bandit": 2}, ["unknown arm", "'bandit'", "llm_guided"]),
    ("opening", "bogus", ['"user", "agent", "auto", or a rate in [0, 1]']),
    ("agent_max_tokens", 10, ["reply budget in tokens (64 or more)"]),
    ("dimensions", [], ["non-empty dict of axis"]),
    ("world", "x", ["advanced['world'] is a dict"]),
    ("mutate_failures", "yes", ["True or False"]),
    ("seed_prompts", "hi", ["wrap one in a list"]),
    ("texture", 1.5, ["outside 0..1"]),
])
def test_advanced_bad_values(key, value, pieces):
    raises(ValueError, *pieces, advanced={key: value})


def test_advanced_needs_grader_and_traces():
    raises(ValueError, "needs grader=", advanced={"mutate_graded_failures": True})
    cfg = call(grader=lambda row: {"reward": 1.0})
    assert cfg.advanced.mutate_graded_failures is True
    assert call().advanced.mutate_graded_failures is False
    raises(ValueError, "steering_weight= needs traces=", steering_weight=0.5)
    assert call(steering_weight=0.5, traces=[{"prompt": "a"}]).advanced.steering_weight == 0.5


def test_advanced_values_and_knob_helper():
    cfg = call(advanced={"probe": 4.0, "arm_weights": {"structured": 2}, "opening": 0.3,
                         "llm_spec": "openai:gpt-4.1"})
    assert cfg.advanced.probe == 4 and isinstance(cfg.advanced.probe, int)
    assert cfg.advanced.arm_weights == {"structured": 2.0} and cfg.advanced.opening == 0.3
    assert knob(cfg, "chunk_size") == 64 and knob(cfg, "opening") == 0.3
    assert knob(cfg, "seed_prompts") == [] and knob(cfg, "agent_max_tokens") == 768
    with pytest.raises(KeyError):
        knob(cfg, "bogus")
