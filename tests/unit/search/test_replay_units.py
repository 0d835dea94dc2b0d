"""Pure parts of a faithful replay: a group played as often as the run it replays, and a
task source that cannot say what was hidden from the agent is flagged (issue 30)."""
from whileai_ray.search.groups import GroupBook
from whileai_ray.search.tasks import build_tasks


def _row(prompt, sid="s1", **extra):
    return {"prompt": prompt, "scenario_id": sid, "reply": "ok", **extra}


def test_a_fixed_group_opened_with_its_own_k_gets_that_many_rollouts():
    book = GroupBook(4, "fixed")
    assert book.open(0, 2) == [0, 1]
    assert book.open(1) == [0, 1, 2, 3]
    assert book.observe(0, "a") == [] and book.status_of(0) == "open"
    assert book.observe(0, "a") == [] and book.status_of(0) == "complete"
    assert book.open(2, 9) == [0, 1, 2, 3]          # never past the book's k


def test_build_tasks_counts_each_ask_and_flags_a_plain_copy_of_public_rows():
    rows = [_row("a"), _row("a"), _row("b"), _row("a")]
    pinned, k, info = build_tasks(rows)
    assert [s.prompt for s, _ in pinned] == ["a", "b"] and info["k_each"] == [3, 1] and k == 3
    assert info["unfaithful"] is True
    hidden = {"reference": "refund issued", "hidden_state": {"world_state": "missing"}}
    _, _, info = build_tasks([_row("a", privileged=hidden), _row("b")])
    assert info["unfaithful"] is False


def test_rows_with_their_privileged_list_beside_them_are_a_faithful_source():
    class RowList(list):
        pass
    rows = RowList([_row("a"), _row("b")])
    rows.privileged = [{"reference": "x"}, {}]
    pinned, _, info = build_tasks(rows)
    assert info["unfaithful"] is False and pinned[0][0].reference == "x"


def test_a_replayed_ask_keeps_its_ids_and_planned_call():
    """A bad-argument ask replays with the call its writer planned, not a fresh valid one."""
    from whileai_ray.situations.situation import Situation
    from whileai_ray.world.context import privileged_block
    planned = {"tool": "cancel_order", "key": "order_id", "ref": "W1234567"}
    sit = Situation(scenario_id="s1", prompt="Cancel W1234567 with reason 'whatever'.", ref_ids=["W1234567"],
                    extra={"call": planned, "broken": {"keyword": "enum", "path": "reason"}, "instance": 3})
    row = _row(sit.prompt, privileged=privileged_block(sit))
    (replayed, _), = build_tasks([row])[0]
    assert replayed.ref_ids == ["W1234567"] and replayed.extra == {"call": planned, "broken": sit.extra["broken"]}
    assert privileged_block(replayed) == row["privileged"]
