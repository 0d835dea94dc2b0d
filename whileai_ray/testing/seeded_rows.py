"""The one-tool demo setup and seeded rows played in-process, shared by the tests and the bench.

``TOOLS`` is the ``lookup_order`` tool every example starts from. ``played()`` plays
``n_situations`` template situations ``k`` times each against the seeded agent (35% seeded
mistakes), in this thread and without Ray, and grades them with ``truthful`` (the seeded
agent's ground truth) unless ``grader=None``: real internal rows for tests of what comes after
a run (selection, export, push) without paying for one.
"""
from __future__ import annotations

from ..agents.play_callable import play_callable_unit
from ..agents.seeded import seeded_agent
from ..core.unit import RunMeta, Unit
from ..score.judges.contract import apply_verdict, normalize_judge_result
from ..situations.grid import build_axes, pairwise_cells
from ..situations.template_writer import TemplateWriter

__all__ = ["TOOLS", "SYSTEM", "META", "truthful", "played"]

TOOLS = [{"type": "function", "function": {
    "name": "lookup_order",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                   "required": ["order_id"]}}}]
SYSTEM = "You help customers with orders."
META = RunMeta(run_id="r", seed=0, tools=TOOLS, system_prompt=SYSTEM, model_version="seeded_agent")


def truthful(row: dict) -> float:
    """Ground truth of the seeded agent: a row passes when it made no seeded mistake."""
    return 0.0 if row.get("seeded") else 1.0


def played(n_situations: int = 12, k: int = 4, grader=truthful) -> list[dict]:
    """``n_situations * k`` internal rows of the seeded agent, graded by ``grader`` (None: ungraded)."""
    writer = TemplateWriter(TOOLS, SYSTEM, seed=0)
    agent = seeded_agent(TOOLS, rate=0.35, seed=0)
    cells = pairwise_cells(build_axes(TOOLS, SYSTEM))
    rows = []
    for i in range(n_situations):
        s = writer.write(cells[i % len(cells)], i)
        for j in range(k):
            row = play_callable_unit(agent, Unit(run_id="r", situation=s, rollout_index=j), META)
            if grader is not None:
                apply_verdict(row, normalize_judge_result(grader(row)), "truthful", "score_t")
            rows.append(row)
    return rows
