"""The public surface is exactly this list: adding or removing a name is a deliberate change."""
import inspect

import whileai_ray as wai

EXPECTED = [
    "Judge", "OpenAI", "PassAt", "PublishGateError", "SEEDED_BEHAVIORS", "ScoredData", "SimulationData", "World",
    "compare_runs", "configure", "conversation", "current_rollout", "delta_report", "eval_variance",
    "evaluate", "export_dataset", "export_training", "format_delta_report", "grade", "grade_llm", "llm_grade", "load", "noise_band", "notebook_progress",
    "pass_at", "rank", "run_judge", "seeded_agent", "simulate", "world",
]


def test_all_is_sorted_and_locked():
    assert wai.__all__ == sorted(wai.__all__)
    assert wai.__all__ == EXPECTED
    for name in wai.__all__:
        assert hasattr(wai, name), name


def test_public_names_not_in_all_are_modules_or_dunders():
    extra = [n for n in dir(wai) if not n.startswith("_") and n not in wai.__all__]
    assert all(inspect.ismodule(getattr(wai, n)) for n in extra), extra


def test_simulate_signature_matches_the_docs():
    sig = inspect.signature(wai.simulate)
    params = list(sig.parameters.values())
    assert params[0].name == "agent" and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD) for p in params[1:])
    defaults = {p.name: p.default for p in params[1:] if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert defaults["budget"] == 1000 and defaults["mode"] == "explore" and defaults["until"] == "compute"
    assert defaults["runs"] == 1 and defaults["strategy"] == "auto" and defaults["grade"] is False
    from whileai_ray.config.arguments import SIMULATE_PARAMS
    assert [p.name for p in params[:-1]] == list(SIMULATE_PARAMS)


def test_importing_the_package_does_not_import_ray():
    import subprocess
    import sys
    code = "import sys, whileai_ray; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_both_result_objects_write_an_html_report():
    for cls in (wai.SimulationData, wai.ScoredData):
        params = list(inspect.signature(cls.to_html).parameters)
        assert params[:3] == ["self", "path", "baseline"] and "max_rows" in params
