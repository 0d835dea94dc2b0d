"""The counts a run's summary needs, aggregated with Arrow compute over the fact columns.

``build_report``, the warnings and ``simulate()``'s notes read a handful of values of every
row (distinct prompts, cell and shape counts, per-tool outcomes, fault shares, ...). They
read them from a ``ReportTally``, made once from the fact columns (``score/row_facts.py``): for a
run on disk, straight from the files; for a list, from the facts of its rows. One
aggregation for both forms, so the report of an Arrow-backed run equals the in-memory one.

Counts keep the rows' first-seen order (``value_counts`` does), as ``dict(Counter(rows))`` did.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..situations.grid import HARD_TIERS

__all__ = ["ReportTally", "report_tally", "REPORT_COLUMNS", "DICTIONARY_COLUMNS"]

REPORT_COLUMNS = ("prompt_sha", "scenario_id", "signature", "cell_json", "cell_key", "shape", "tier", "stance",
                  "faulted", "fault_fired", "used_tools", "step_tools", "step_ok", "landed_s", "resumed",
                  "ended_on_question", "user_left", "user_turns", "usage_note")
# few distinct values in many rows: read dictionary-encoded (never counted with count_distinct)
DICTIONARY_COLUMNS = ("cell_json", "cell_key", "shape", "tier", "stance")


def _counts(column, keep_null: bool = True) -> dict:
    import pyarrow.compute as pc
    if not keep_null:
        column = pc.drop_null(column)
    if not len(column):
        return {}
    vc = pc.value_counts(column)
    return dict(zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()))


def _true(column) -> int:
    import pyarrow as pa
    import pyarrow.compute as pc
    return int(pc.sum(pc.cast(column, pa.int64())).as_py() or 0) if len(column) else 0


def _distinct(column) -> int:
    import pyarrow.compute as pc
    return int(pc.count_distinct(column, mode="all").as_py()) if len(column) else 0


@dataclass
class ReportTally:
    n: int = 0
    unique_prompts: int = 0
    unique_scenario_ids: int = 0
    unique_signatures: int = 0
    cell_counts: dict = field(default_factory=dict)      # cell JSON -> rows (on-grid rows)
    per_cell: dict = field(default_factory=dict)         # cell_key -> rows (on-grid rows)
    shape_counts: dict = field(default_factory=dict)
    region_counts: dict = field(default_factory=dict)    # scenario_id -> rows
    tier_counts: dict = field(default_factory=dict)
    stance_counts: dict = field(default_factory=dict)
    faulted: int = 0
    fired: int = 0
    hard: int = 0
    any_tools_used: bool = False
    tools: dict = field(default_factory=dict)            # tool -> {n, ok, fault_n, injected}, first-seen order
    row_seconds: list = field(default_factory=list)
    resumed: int = 0
    ended_on_question: int = 0
    user_left: int = 0
    user_turns_sum: int = 0
    usage_unread: int = 0                                 # rows whose usage the metrics could not read
    usage_note: str | None = None                        # the first such row's reason (core/usage.py)

    def tools_report(self, tool_names) -> dict:
        """``report()["tools"]``: the declared tools first (zeros when unused), then any other called."""
        out = {name: {"n": 0, "ok": 0, "fault_n": 0, "injected": 0} for name in tool_names}
        for name, counts in self.tools.items():
            out[name] = dict(counts)
        return out


def _tool_counts(table) -> dict:
    """Per tool called: steps, ok steps, steps in rows where a fault fired; first-seen order.
    ``value_counts`` and lookups, no ``group_by`` (``pyarrow.acero`` imports pandas)."""
    import pyarrow.compute as pc
    names, oks = table.column("step_tools"), table.column("step_ok")
    if not len(names):
        return {}
    names, oks = names.combine_chunks(), oks.combine_chunks()
    tools = pc.list_flatten(names)
    if not len(tools):
        return {}
    injected = pc.take(table.column("fault_fired").combine_chunks(), pc.list_parent_indices(names))
    steps = pc.value_counts(tools)                       # first-seen order
    order = steps.field("values")

    def counted(mask) -> list:
        vc = pc.value_counts(pc.filter(tools, mask))
        return pc.fill_null(pc.take(vc.field("counts"), pc.index_in(order, value_set=vc.field("values"))),
                            0).to_pylist()
    ok, inj = counted(pc.list_flatten(oks)), counted(injected)
    return {t: {"n": n, "ok": o, "fault_n": n - o, "injected": i}
            for t, n, o, i in zip(order.to_pylist(), steps.field("counts").to_pylist(), ok, inj)}


def report_tally(table) -> ReportTally:
    """The ``ReportTally`` of rows whose fact columns are ``table`` (``row_store(...).facts()``)."""
    import pyarrow.compute as pc
    t = ReportTally(n=table.num_rows)
    if not t.n:
        return t
    t.unique_prompts = _distinct(table.column("prompt_sha"))
    t.unique_scenario_ids = _distinct(table.column("scenario_id"))
    t.unique_signatures = _distinct(table.column("signature"))
    t.cell_counts = _counts(table.column("cell_json"), keep_null=False)
    t.per_cell = _counts(table.column("cell_key"), keep_null=False)
    t.shape_counts = _counts(table.column("shape"))
    t.region_counts = _counts(table.column("scenario_id"))
    t.tier_counts = _counts(table.column("tier"))
    t.stance_counts = _counts(table.column("stance"))
    t.faulted = _true(table.column("faulted"))
    t.fired = _true(table.column("fault_fired"))
    t.hard = sum(n for tier, n in t.tier_counts.items() if tier in HARD_TIERS)
    t.any_tools_used = bool(_true(table.column("used_tools")))
    t.tools = _tool_counts(table)
    t.row_seconds = table.column("landed_s").to_pylist()
    t.resumed = _true(table.column("resumed"))
    t.ended_on_question = _true(table.column("ended_on_question"))
    t.user_left = _true(table.column("user_left"))
    t.user_turns_sum = int(pc.sum(table.column("user_turns")).as_py() or 0)
    if "usage_note" in table.column_names:
        notes = pc.drop_null(table.column("usage_note"))
        t.usage_unread, t.usage_note = len(notes), (notes[0].as_py() if len(notes) else None)
    return t
