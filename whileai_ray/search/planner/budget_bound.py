"""When the budget starts to shape the plan, and which planner snapshots a resume may continue from.

The plan does not depend on the budget until the run nears its end: there a round is cut to the
units the budget has left (``Planner._decide``: ``room``), and with successive or adaptive repeats
a new ask opens only while the budget covers its k rollouts (``GroupBook.covers_a_new_group``).
The planner notes the first round either happened in (``Planner.budget_bound_round``).

A snapshot taken before that round holds decisions any budget at least as large makes alike, so a
resume with a larger budget (a million-row run given 10,000 more) continues from it and equals the
run that had the larger budget from the start. A snapshot taken after it continues only a resume
with the same budget (a crash-resume); any other resume uses an earlier one, or replays from the
seed (``PlanSnapshots._fits``). So that a larger-budget resume finds one close to the end, the
snapshot keeper (``store/snapshots/keeper.py``) takes one just before the budget may start to
cut (``margin``), and none shortly before it that could still be being written then.
"""
from __future__ import annotations

__all__ = ["margin"]


def margin(planner) -> int:
    """Units of budget left below which the planner's next ``decide`` may be cut by the budget
    (a generous bound: what a round may take, hand out, hold back and reserve). A heuristic for
    when to take that snapshot: the exact answer is ``budget_bound_round``, noted after the fact
    (a snapshot taken too late is only not used by a larger-budget resume)."""
    s, book = planner.s, planner.book
    per_round = s.round_size
    if book.adaptive:
        per_round = 2 * s.round_size * (1 + book.k) + book.k + book.reserved()
    return s.round_size + per_round + len(planner._backlog) + len(planner._rerolls)
