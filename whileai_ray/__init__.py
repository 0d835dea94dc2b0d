"""whileai_ray: simulate, grade and measure tool-using LLM agents at scale, on Ray.

The public surface, re-exported here and locked by tests/unit/test_public_api.py::

    import whileai_ray as wai
    data = wai.simulate(wai.seeded_agent(TOOLS), tools=TOOLS, simulator=False, budget=32)
"""
from importlib import import_module as _import_module
import typing as _typing

from .world.mock import World, world   # eager: the name ``world`` is also a subpackage's, which would shadow it

if _typing.TYPE_CHECKING:
    # What an editor and mypy see (never run): each lazily exported name below, typed as its
    # module declares it. tests/unit/test_conventions.py checks this list against ``_LAZY``.
    from .agents.backends import OpenAI, configure
    from .agents.seeded import SEEDED_BEHAVIORS, seeded_agent
    from .core.rows import conversation
    from .errors import PublishGateError
    from .export.dataset_export import export_dataset
    from .export.dataset_export import export_dataset as export_training
    from .result.data import SimulationData
    from .result.grading.paths import llm_grade
    from .result.grading.paths import rank_source as rank
    from .result.progress.notebook_bar import notebook_progress
    from .result.grading.scored import ScoredData
    from .score.compare import compare_runs, delta_report, format_delta_report
    from .score.judges.llm_judge import Judge
    from .score.pass_at.estimate import PassAt, pass_at
    from .score.variance import eval_variance, noise_band
    from .simulation import evaluate, grade_llm, load, run_judge, simulate   # handed the runtime's RayCluster
    from .simulation import grade_llm as grade
    from .world.current import current_rollout

# name -> (module, attribute). Loaded on first use (PEP 562): ``import whileai_ray`` stays light,
# and so does every Ray worker that imports one of our modules (a Driver or rollout actor starts
# without loading the result, export and scoring layers it never uses).
_LAZY = {
    "OpenAI": (".agents.backends", "OpenAI"), "configure": (".agents.backends", "configure"),
    "SEEDED_BEHAVIORS": (".agents.seeded", "SEEDED_BEHAVIORS"), "seeded_agent": (".agents.seeded", "seeded_agent"),
    "conversation": (".core.rows", "conversation"), "PublishGateError": (".errors", "PublishGateError"),
    "SimulationData": (".result.data", "SimulationData"), "grade_llm": (".simulation", "grade_llm"),
    "llm_grade": (".result.grading.paths", "llm_grade"), "grade": (".simulation", "grade_llm"),
    "rank": (".result.grading.paths", "rank_source"), "load": (".simulation", "load"),
    "notebook_progress": (".result.progress.notebook_bar", "notebook_progress"), "ScoredData": (".result.grading.scored", "ScoredData"),
    "compare_runs": (".score.compare", "compare_runs"), "delta_report": (".score.compare", "delta_report"),
    "format_delta_report": (".score.compare", "format_delta_report"), "Judge": (".score.judges.llm_judge", "Judge"),
    "export_dataset": (".export.dataset_export", "export_dataset"),
    "export_training": (".export.dataset_export", "export_dataset"),   # one function, two names (as the docs')
    "evaluate": (".simulation", "evaluate"), "run_judge": (".simulation", "run_judge"),
    "PassAt": (".score.pass_at.estimate", "PassAt"), "pass_at": (".score.pass_at.estimate", "pass_at"),
    "eval_variance": (".score.variance", "eval_variance"), "noise_band": (".score.variance", "noise_band"),
    "simulate": (".simulation", "simulate"), "current_rollout": (".world.current", "current_rollout"),
}


def __getattr__(name: str):
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'whileai_ray' has no attribute {name!r}")
    value = getattr(_import_module(target[0], __name__), target[1])
    globals()[name] = value          # once loaded, a plain attribute
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


__version__ = "0.1.0"

__all__ = [
    "Judge",
    "OpenAI",
    "PassAt",
    "PublishGateError",
    "SEEDED_BEHAVIORS",
    "ScoredData",
    "SimulationData",
    "World",
    "compare_runs",
    "configure",
    "conversation",
    "current_rollout",
    "delta_report",
    "eval_variance",
    "evaluate",
    "export_dataset",
    "export_training",
    "format_delta_report",
    "grade",
    "grade_llm",
    "llm_grade",
    "load",
    "noise_band",
    "notebook_progress",
    "pass_at",
    "rank",
    "run_judge",
    "seeded_agent",
    "simulate",
    "world",
]
