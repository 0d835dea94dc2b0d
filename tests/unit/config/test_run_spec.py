"""The TOML run spec: what a file may say, what build() hands simulate(), how errors read."""
from pathlib import Path

import pytest

from whileai_ray.config.run_spec import RunSpec, SpecError, load_spec, parse_spec_text

REPO = Path(__file__).resolve().parents[3]
AGENT = 'agent = "whileai_ray.agents.seeded:seeded_agent"\nagent_kwargs = {}\n'
TOOLS = 'tools = "whileai_ray.testing.seeded_rows:TOOLS"\n'


def spec_text(simulate: str = "simulator = false", top: str = "") -> str:
    return AGENT + TOOLS + top + "\n[simulate]\n" + simulate + "\n"


def error_of(text: str) -> str:
    with pytest.raises(SpecError) as info:
        parse_spec_text(text, "run.toml")
    return str(info.value)


def test_example_spec_builds_the_seeded_agent_and_its_arguments(tmp_path):
    spec = load_spec(REPO / "cluster" / "example.toml")
    spec.output_dir = str(tmp_path)
    agent, kwargs = spec.build()
    assert callable(agent) and agent.__name__ == "seeded_agent"
    assert [t["function"]["name"] for t in kwargs["tools"]] == ["lookup_order"]
    assert kwargs["simulator"] is False and kwargs["budget"] == 400 and kwargs["grade"] == "conduct"
    run_id = spec.resolved_run_id()
    assert run_id.startswith("example-")
    assert kwargs["checkpoint"] == str(tmp_path / run_id / "checkpoint.jsonl")
    assert kwargs["output"] == str(tmp_path / run_id / "rows.jsonl")
    assert (tmp_path / run_id).is_dir()
    spec.check(agent, kwargs)      # simulate()'s own checks pass, nothing started


def test_default_run_id_is_stable_per_file_content(tmp_path):
    a = tmp_path / "nightly.toml"
    a.write_text(spec_text("budget = 10"))
    first, again = load_spec(a).resolved_run_id(), load_spec(a).resolved_run_id()
    a.write_text(spec_text("budget = 11"))
    changed = load_spec(a).resolved_run_id()
    assert first == again and first.startswith("nightly-") and changed != first
    named = parse_spec_text(spec_text(top='run_id = "orders-1"'))
    assert named.resolved_run_id() == "orders-1"


@pytest.mark.parametrize("text, field, hint", [
    (spec_text("budgt = 10"), "simulate.budgt", "did you mean 'budget'"),
    (AGENT + "systm_prompt = 'x'\n", "systm_prompt", "did you mean 'system_prompt'"),
    (spec_text("tools = []"), "simulate.tools", "top level"),
    (AGENT + "budget = 5\n", "budget", "under [simulate]"),
    ('agent = "not a reference"\n', "agent", "module:function"),
    ('agent = "OpenAI:gpt-4.1-mini"\n', "agent", "lower case"),
    (AGENT + "tools = [{description = 'no name'}]\n", "tools", "has no name"),
    (AGENT + 'run_id = "has spaces"\n', "run_id", "a run id is"),
    ("tools = []\n", "agent", "required"),
])
def test_errors_name_the_field(text, field, hint):
    message = error_of(text)
    assert message.startswith("run.toml: ")
    assert f"{field}:" in message and hint in message


def test_bad_toml_is_a_spec_error_with_the_position():
    assert "not valid TOML" in error_of('agent = "x:y" trailing\n') and "line 1" in error_of(
        'agent = "x:y" trailing\n')


def test_missing_file_is_a_spec_error(tmp_path):
    with pytest.raises(SpecError, match="no such spec file"):
        load_spec(tmp_path / "absent.toml")


@pytest.mark.parametrize("line, field", [
    ('mode = "fast"', "simulate.mode"),
    ('budget = "lots"', "simulate.budget"),
    ('grade = "yes"', "simulate.grade"),
])
def test_check_runs_simulate_validation_and_names_the_field(line, field):
    spec = parse_spec_text(spec_text("simulator = false\n" + line))
    agent, kwargs = spec.build(make_dirs=False)
    with pytest.raises(SpecError, match=field.replace(".", r"\.")):
        spec.check(agent, kwargs)


def test_callables_are_imported_and_budget_none_means_saturation():
    spec = parse_spec_text(spec_text(
        'simulator = false\nbudget = "none"\ngrader = "whileai_ray.score.conduct:conduct_grader"'))
    _, kwargs = spec.build(make_dirs=False)
    assert callable(kwargs["grader"]) and kwargs["grader"].__name__ == "conduct_grader"
    assert kwargs["budget"] is None


def test_unimportable_references_name_the_field():
    spec = parse_spec_text(spec_text('grader = "no_such_module_xyz:grade"'))
    with pytest.raises(SpecError, match=r"simulate\.grader: cannot import module 'no_such_module_xyz'"):
        spec.build(make_dirs=False)
    spec = parse_spec_text('agent = "whileai_ray.agents.seeded:nope"\n')
    with pytest.raises(SpecError, match="agent: module 'whileai_ray.agents.seeded' has no attribute"):
        spec.build(make_dirs=False)


def test_factory_gets_tools_and_kwargs():
    spec = parse_spec_text(TOOLS + 'agent = "whileai_ray.agents.seeded:seeded_agent"\n'
                           "agent_kwargs = { rate = 0.9, seed = 3 }\n")
    agent, _ = spec.build(make_dirs=False)
    assert "rate=0.9" in repr(agent) and "seed=3" in repr(agent) and "lookup_order" in repr(agent)


def test_backend_agent_is_passed_as_its_spec_string():
    spec = parse_spec_text('agent = "vllm:qwen@http://127.0.0.1:8000/v1"\n')
    agent, _ = spec.build(make_dirs=False)
    assert spec.agent_is_backend and agent == "vllm:qwen@http://127.0.0.1:8000/v1"
    spec = parse_spec_text('agent = "openai:gpt-4.1-mini"\nagent_kwargs = {}\n')
    with pytest.raises(SpecError, match="agent_kwargs"):
        spec.build(make_dirs=False)


def test_paths_follow_output_dir_env_and_switches(tmp_path, monkeypatch):
    monkeypatch.setenv("WHILEAI_OUTPUT_DIR", str(tmp_path / "env"))
    spec = parse_spec_text(spec_text(top='run_id = "r1"\ncheckpoint = "ck.jsonl"\noutput = false'))
    assert spec.paths() == {"checkpoint": str(tmp_path / "env" / "ck.jsonl"), "output": None}
    spec = parse_spec_text(spec_text(top=f'run_id = "r1"\ncheckpoint = "{tmp_path}/abs.jsonl"'))
    assert spec.paths()["checkpoint"] == str(tmp_path / "abs.jsonl")
    several = parse_spec_text(spec_text("runs = 2", top='run_id = "r1"'))
    assert several.paths()["checkpoint"] is None           # one checkpoint holds one run
    _, kwargs = several.build(make_dirs=False)
    assert "checkpoint" not in kwargs
    assert not (tmp_path / "env").exists()                 # make_dirs=False writes nothing


def test_runspec_can_be_built_in_python_too():
    spec = RunSpec(agent="openai:gpt-4.1-mini", simulate={"budget": 5})
    assert spec.simulate_args() == {"budget": 5}
    assert spec.resolved_run_id() == RunSpec(agent="openai:gpt-4.1-mini",
                                             simulate={"budget": 5}).resolved_run_id()
