"""Coverage as rows land: unique counts, saturation and until=, pairwise fraction, the curve."""
import pytest

from whileai_ray.search.coverage import UNTIL, CoverageTracker, ignores_exhaustion, validate_until
from whileai_ray.situations.grid import all_pairs, build_axes, cell_key, pairs_in, pairwise_cells
from whileai_ray.testing.seeded_rows import TOOLS

AXES = build_axes(TOOLS)
CELLS = pairwise_cells(AXES)


def _row(i, cell=None, sig=None, tools=("lookup_order",), prompt=None, arm="structured", sid=None):
    return {"prompt": prompt or f"prompt {i}", "scenario_id": sid or f"sc-{i}",
            "behavior_signature": sig or f"sig{i}", "tools_used": list(tools), "arm": arm,
            "scenario_dimensions": dict(cell) if cell else {"tool": "lookup_order", "origin": "realized"}}


def test_unique_counts_follow_the_rows():
    t = CoverageTracker(CELLS[:3], AXES)
    t.observe(_row(0, CELLS[0], sig="a"))
    t.observe(_row(1, CELLS[0], sig="a", prompt="prompt 0", sid="sc-0"))
    t.observe(_row(2, None, sig="b", tools=()))
    t.observe(_row(3, CELLS[1], sig="b", tools=("lookup_order", "lookup_order")))
    keys = t.report_keys()
    assert keys["unique_prompts"] == 3
    assert keys["unique_scenario_ids"] == 3
    assert keys["unique_signatures"] == 2
    assert keys["unique_cells"] == 2                 # the realized row is not a grid cell
    assert keys["unique_shapes"] == 3                # lookup_order, no_tool, lookup_order|lookup_order
    assert t.shapes == {"lookup_order": 2, "no_tool": 1, "lookup_order|lookup_order": 1}
    assert keys["min_cell_copies"] == 0              # CELLS[2] has no row yet


def test_observe_reports_what_was_new():
    t = CoverageTracker(CELLS[:2])
    assert t.observe(_row(0, CELLS[0], sig="a")) == (True, True)
    assert t.observe(_row(1, CELLS[0], sig="a")) == (False, False)
    assert t.observe(_row(2, CELLS[1], sig="a")) == (False, True)
    assert t.observe(_row(3, None, sig="z")) == (True, False)


@pytest.mark.parametrize("until", ["saturation", "first", "compute", "budget_only"])
def test_until_stops_when_coverage_is_done(until):
    t = CoverageTracker(CELLS[:3], copies_needed=2)
    stops = []
    for i in range(6):
        t.observe(_row(i, CELLS[i % 3]))
        stops.append(t.stop_reason(until))
    if until == "first":
        assert stops == [None, None, "saturation", "saturation", "saturation", "saturation"]
    elif until == "saturation":
        assert stops == [None] * 5 + ["saturation"]
    else:
        assert stops == [None] * 6
    assert t.saturated() and t.saturated(1) and not t.saturated(3)
    assert t.report_keys()["saturation"] is True
    assert ignores_exhaustion(until) == (until == "budget_only")


def test_no_planned_cells_never_saturates():
    t = CoverageTracker([])
    t.observe(_row(0, CELLS[0]))
    assert t.stop_reason("first") is None and t.report_keys()["min_cell_copies"] == 0


def test_validate_until_names_the_choices():
    assert [validate_until(u) for u in UNTIL] == list(UNTIL)
    with pytest.raises(ValueError, match="until= must be compute, saturation, first, or budget_only"):
        validate_until("bogus")


def test_pairwise_fraction_matches_the_grid():
    t = CoverageTracker(CELLS, AXES)
    assert t.pairwise() == {"pairs_planned": len(all_pairs(AXES)), "pairs_covered": 0, "fraction": 0.0}
    for i, c in enumerate(CELLS[:10]):
        t.observe(_row(i, c))
    want = len(pairs_in(CELLS[:10]) & all_pairs(AXES))
    assert t.pairwise()["pairs_covered"] == want
    for i, c in enumerate(CELLS):
        t.observe(_row(100 + i, c))
    assert t.pairwise()["fraction"] == 1.0


def test_copy_deficit_predicts_rows_to_saturation():
    t = CoverageTracker(CELLS[:4], copies_needed=5)
    for i in range(6):
        t.observe(_row(i, CELLS[0]))
    t.observe(_row(9, CELLS[1]))
    keys = t.report_keys()
    assert keys["predicted_remaining"] == 0 + 4 + 5 + 5
    assert keys["predicted_to_saturation"] == 7 + 14
    assert keys["copies_needed"] == 5
    with pytest.raises(ValueError, match="copies_needed"):
        CoverageTracker(CELLS, copies_needed=0)


def test_curve_points_every_n_rows_and_a_closing_point():
    t = CoverageTracker(CELLS, AXES, every=4)
    t.note_selection([1.0, 0.5])
    for i in range(4):
        t.observe(_row(i, CELLS[i], prompt="same" if i >= 2 else None), arm_weights={"structured": 1.0})
    t.note_selection([0.2])
    for i in range(4, 6):
        t.observe(_row(i, CELLS[0], prompt="same"))
    curve = t.finish("budget", arm_weights={"structured": 0.9})
    assert [p["n_rows"] for p in curve] == [4, 6]
    first, last = curve
    assert set(first) == {"n_rows", "unique_prompts", "unique_scenario_ids", "unique_behavior_signatures",
                          "unique_cells", "unique_action_shapes", "arm_weights", "batch_fresh_rate",
                          "mean_batch_novelty"}
    assert first["unique_prompts"] == 3 and first["unique_cells"] == 4
    assert first["batch_fresh_rate"] == 0.75 and first["mean_batch_novelty"] == 0.75
    assert first["arm_weights"] == {"structured": 1.0}
    assert last["batch_fresh_rate"] == 0.0 and last["mean_batch_novelty"] == 0.2
    assert last["stopped_because"] == "budget"
    again = CoverageTracker(every=2)
    again.observe(_row(0)); again.observe(_row(1))
    assert again.finish("saturation")[-1] == {**again.curve[0], "stopped_because": "saturation"}
    assert len(again.curve) == 1
    assert cell_key(CELLS[0]) in t.cells


def test_a_state_with_the_row_sets_restores_the_same_counts():
    t = CoverageTracker(CELLS[:3], AXES)
    for i in range(40):
        t.observe(_row(i, CELLS[i % 3], sig="s%d" % (i % 5), prompt="prompt %d" % (i % 17), sid="sc-%d" % (i % 9)))
    state = t.state()                                 # row_sets=True: prompts and scenario ids kept
    assert list(state.logs["prompts"]) == sorted(state.logs["prompts"])
    back = CoverageTracker(CELLS[:3], AXES)
    back.load_state(state)
    assert back.report_keys() == t.report_keys()
    assert back.report_keys()["unique_prompts"] == 17 and back.report_keys()["unique_scenario_ids"] == 9


def test_a_restored_curve_goes_on_like_the_uninterrupted_one_through_more_snapshots():
    def feed(t, lo, hi):
        for i in range(lo, hi):
            t.observe(_row(i, CELLS[i % 3], sig="s%d" % (i % 7)), arm_weights={"structured": 0.5})

    straight = CoverageTracker(CELLS[:3], AXES, every=4)
    feed(straight, 0, 30)
    first = straight.state()
    back = CoverageTracker(CELLS[:3], AXES, every=4)
    back.load_state(first)
    feed(straight, 30, 50)
    feed(back, 30, 50)
    second = back.state()                             # the points made since the restore are logged
    assert bytes(second.logs["curve"]) == bytes(straight.state().logs["curve"])
    again = CoverageTracker(CELLS[:3], AXES, every=4)
    again.load_state(second)
    assert again.state().meta["points"] == len(straight.curve) == 12
    feed(straight, 50, 53)
    feed(again, 50, 53)
    assert again.finish("budget") == straight.finish("budget")
    assert again.curve[-1]["stopped_because"] == "budget" and len(again.curve) == 14
    torn = CoverageTracker(CELLS[:3], AXES, every=4)
    cut = dict(second.logs, curve=second.logs["curve"][:-3])
    with pytest.raises(ValueError, match="curve"):
        torn.load_state(type(second)(second.meta, logs=cut, tables=second.tables))


def test_a_lanes_marks_count_as_the_row_itself():
    """A rollout lane sends each row's ``row_marks`` (digests, cell key, shape: issue 32, the edges
    compute) and the Driver's tracker counts those instead of reading the row: the counts, the
    curve and what each row reports new are the same either way, realized cells, rows without
    a signature and tool-less rows included."""
    from whileai_ray.search.coverage import row_marks
    rows = [_row(i, CELLS[i % 4] if i % 5 else None, sig="s%d" % (i % 6),
                 tools=() if i % 3 == 0 else ("lookup_order",) * (1 + i % 2), sid="sc-%d" % (i % 11))
            for i in range(60)]
    for r in rows[::7]:
        del r["behavior_signature"]                   # (a row without one: no signature counted)
    read, told = CoverageTracker(CELLS[:5], AXES, every=10), CoverageTracker(CELLS[:5], AXES, every=10)
    said_read = [read.observe(r) for r in rows]
    # (what the marks hold left out of the row: counted from the marks or not at all)
    said_told = [told.observe({k: r[k] for k in ("prompt", "arm", "scenario_dimensions")}, None, None, row_marks(r))
                 for r in rows]
    assert said_told == said_read and any(new for new, _cell in said_read) and any(c for _new, c in said_read)
    assert told.report_keys() == read.report_keys() and told.shapes == read.shapes
    assert told.curve == read.curve and told.cells == read.cells
    assert row_marks(_row(1, None))[2] is None and row_marks(_row(2, tools=()))[3] == "no_tool"
