"""The asks the lanes are asked to write stay within what the run can still use (issue 32).

``AskForecast.due`` names the asks of the next grid picks so that the rollout lanes write them
ahead. Asks past the budget, or for picks the planner makes before a lane could answer, are
written and never used: a 1,000-row run of the 50 ms agent had its lanes write 3,264 asks for
1,760 taken (most of a cold run's CPU went there). These tests pin the three cuts: the window is
cut to the picks the budget still allows (``picks_left``), a heap no pick goes to is asked
nothing, and ``skip`` leaves the planner's first picks to the planner. The open-ended probes the
planner opens in order are named ahead too (``probes_due``). Which asks are named
never changes a plan (``search/planner/test_planner_edge_asks.py``)."""
import math

import test_planner_exact as exact

from whileai_ray.search.ask_forecast import PROBES_AHEAD, REFUSED, SLACK, AskForecast
from whileai_ray.search.edge_asks import PROBE

WINDOW = 768                       # the Driver's window for round_size 64 (driver/edge_writing.py)


def _picks(asks: list, planner) -> set:
    """The ``(cell index, instance)`` picks whose asks are named (every competing instance and
    phrasing of a pick is named with it)."""
    per = max(1, planner.s.novelty_candidates) * max(1, planner.s.n)
    assert len(asks) % per == 0
    return {(ci, inst) for ci, inst, ph in asks[::per]}


def _grid_picks(planner, rounds: int) -> list:
    """The grid picks the planner made in its first ``rounds`` rounds, in order."""
    picked = []
    pick = planner.picker.pick_index

    def recording(faulted=None):
        got = pick(faulted)
        picked.append(got)
        return got
    planner.picker.pick_index = recording
    for r in range(rounds):
        planner.decide(r)
    return picked


def test_a_small_budget_names_no_more_picks_than_it_can_play():
    p = exact.build("explore", budget=200)
    forecast = AskForecast(p)
    assert forecast.picks_left() == math.ceil(200 * (1 + REFUSED))
    named = forecast.due(WINDOW)
    # without the cut: the whole window and a slack per heap (768 + 8 a heap picks); with it, the
    # picks left (a quarter over the situations the budget holds) and one more a heap (rounding)
    assert 0 < len(_picks(named, p)) <= forecast.picks_left() + len(forecast.runs)


def test_a_big_budget_still_names_a_whole_window():
    p = exact.build("explore", budget=1_000_000)
    named = AskForecast(p).due(WINDOW)
    assert WINDOW <= len(_picks(named, p)) <= WINDOW + SLACK * 4


def test_nothing_is_named_once_the_budget_is_decided():
    p = exact.build("explore", budget=40)
    r = 0
    while p.capacity() > 0:
        assert p.decide(r), "the planner stopped deciding before its budget"
        r += 1
    forecast = AskForecast(p)
    assert forecast.picks_left() == 0 and forecast.due(WINDOW) == []


def test_situations_cap_the_picks_too():
    p = exact.build("explore", budget=5000, situations=30)
    assert AskForecast(p).picks_left() == math.ceil(30 * (1 + REFUSED))


def test_a_heap_no_pick_goes_to_is_asked_nothing():
    p = exact.build("explore", budget=1_000_000, fault_rate=0.0)
    forecast = AskForecast(p)
    idle = [run for run in forecast.runs if run.share == 0]
    assert idle, "expected a heap no pick goes to (the faulted cells, with fault_rate=0)"
    idle_cells = {run.offset + e[2] for run in idle for e in run.heap}
    named = forecast.due(WINDOW)
    assert named and not idle_cells & {ci for ci, _, _ in named}


def test_skip_leaves_the_first_picks_to_the_planner_and_names_the_next():
    first = 120                                  # ~ what the Driver decides before a first result
    ahead = exact.build("explore", budget=1_000_000)
    made = _grid_picks(ahead, rounds=12)         # 4+4+8+8+16+16+32+32+64*4 units: the first ~450 picks
    assert len(made) > 2 * first

    p = exact.build("explore", budget=1_000_000)
    forecast = AskForecast(p)
    forecast.skip(first)
    named = _picks(forecast.due(WINDOW), p)
    early, later = set(made[:first * 3 // 4]), set(made[first + 4 * SLACK:])
    assert not named & early, "asks of picks the planner makes before any answer were named"
    assert len(named & later) >= 0.9 * len(later), "the picks after the skipped ones were not named"

    plain = AskForecast(exact.build("explore", budget=1_000_000))
    assert set(made[:first]) <= _picks(plain.due(WINDOW), p)     # (without the skip they are named)


def test_the_next_open_ended_probes_are_named_ahead_and_topped_up_at_half():
    p = exact.build("explore", budget=1_000_000)
    forecast = AskForecast(p)
    assert forecast.probes_due() == [(PROBE, i, 0) for i in range(PROBES_AHEAD)]
    assert forecast.probes_due() == []                       # named once
    p._probes = PROBES_AHEAD // 2 - 1                         # (the planner opened 15 probes)
    assert forecast.probes_due() == []                       # more than half still ahead
    p._probes = PROBES_AHEAD // 2 + 1
    assert forecast.probes_due() == [(PROBE, i, 0) for i in range(PROBES_AHEAD, p._probes + PROBES_AHEAD)]


def test_probes_are_named_only_where_the_planner_opens_them_and_within_the_budget():
    sft = exact.build("sft", budget=1_000_000, phrasings=3)
    assert sft.s.n == 3 and AskForecast(sft).probes_due() == []         # several phrasings: no probes
    small = exact.build("explore", budget=8)
    assert len(AskForecast(small).probes_due()) == math.ceil(8 * (1 + REFUSED))


def test_a_lead_leaves_the_picks_made_before_an_answer_to_the_planner():
    """The lanes' answer takes time and the planner does not wait: asks named for the picks it
    makes meanwhile were written twice (a 300-row run on a loaded machine: 604 asks written by
    its lanes, none used). With ``lead`` the forecast names past them."""
    lead = 100
    made = _grid_picks(exact.build("explore", budget=1_000_000), rounds=12)
    p = exact.build("explore", budget=1_000_000)
    named = _picks(AskForecast(p).due(WINDOW, lead=lead), p)
    early, later = set(made[:lead * 3 // 4]), set(made[lead + 4 * SLACK:WINDOW])
    assert not named & early, "asks of picks the planner makes before an answer were named"
    assert len(named & later) >= 0.9 * len(later), "the picks after the lead were not named"


def test_a_lead_past_the_picks_left_names_nothing():
    p = exact.build("explore", budget=200)
    forecast = AskForecast(p)
    assert forecast.due(WINDOW, lead=forecast.picks_left()) == []       # none could come back in time
    assert forecast.due(WINDOW, lead=forecast.picks_left() - 40)         # the last picks can


def test_most_names_the_nearest_picks_first_and_the_next_call_the_ones_after():
    made = _grid_picks(exact.build("explore", budget=1_000_000), rounds=12)
    p = exact.build("explore", budget=1_000_000)
    forecast = AskForecast(p)
    first = _picks(forecast.due(WINDOW, most=96), p)
    assert len(first) == 96
    assert len(first & set(made[:96])) >= 80, "the first call did not name the picks the planner makes first"
    second = _picks(forecast.due(WINDOW, most=96), p)
    assert len(second) == 96 and not first & second
    assert len(second & set(made[96:192])) >= 70, "the second call did not name the picks after the first's"
