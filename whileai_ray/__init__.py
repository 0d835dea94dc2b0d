"""whileai_ray: simulate, grade and measure tool-using LLM agents at scale, on Ray.

The public surface, re-exported here and locked by tests/unit/test_public_api.py::

    import whileai_ray as wai
    data = wai.simulate(wai.seeded_agent(TOOLS), tools=TOOLS, simulator=False, budget=32)
"""
from .agents.backends import OpenAI, configure
from .agents.seeded import SEEDED_BEHAVIORS, seeded_agent
from .core.rows import conversation
from .errors import PublishGateError
from .result.data import SimulationData
from .result.grading_paths import grade_llm, llm_grade
from .result.grading_paths import grade_llm as grade
from .result.grading_paths import rank_source as rank
from .result.loading import load
from .result.notebook import notebook_progress
from .result.scored import ScoredData
from .score.compare import compare_runs, delta_report, format_delta_report
from .result.evaluate import evaluate
from .score.llm_judge import Judge
from .score.pass_at import PassAt, pass_at
from .result.run_judge import run_judge
from .score.variance import eval_variance, noise_band
from .simulation import simulate
from .world.current import current_rollout
from .world.mock import World, world

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
