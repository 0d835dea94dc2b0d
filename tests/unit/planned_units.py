"""``planned_units(n)``: n work units as the planner decides them for the seeded demo tools (seed 3),
for tests that play units on a worker without a run. Imported as ``from planned_units import
planned_units`` (pytest puts ``tests/unit`` on the path for its conftest)."""
from whileai_ray.search.planner.settings import PlanSettings
from whileai_ray.search.planner.planner import Planner
from whileai_ray.situations.grid import build_axes, pairwise_cells
from whileai_ray.situations.template_writer import TemplateWriter
from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS


def planned_units(n: int) -> list:
    axes = build_axes(TOOLS, SYSTEM, None)
    settings = PlanSettings(run_id="r", seed=3, budget=n, round_size=n, tools=TOOLS, axes=axes)
    plan, out, r = Planner(settings, TemplateWriter(TOOLS, SYSTEM, 3), pairwise_cells(axes)), [], 0
    while len(out) < n:                     # the first rounds are small (search/planner/rounds.py)
        out += plan.decide(r)
        r += 1
    return out[:n]
