"""The fact columns written beside every spilled row: what summaries read instead of rows.

A SimulationData's summaries (``pass_at``, the coverage ``report()``, the warnings, the
``search`` counts) read a few values of each row. Extracting them once, when the row is
written (``store/parquet/spill.py`` calls ``row_facts`` per batch), lets Arrow compute aggregate a
million rows in well under a second, where decoding them all back would take most of a
minute and every row's dict at once. The in-memory form builds the same table from its list
(``facts_table``), so both forms share one aggregation and give the same report.

Columns (one value per row):

* ``pa_*``: what ``pass_at`` needs (``score/pass_at/tally.py``);
* ``prompt_sha``, ``scenario_id``, ``signature``: the distinct-prompt / scenario / behaviour counts;
* ``cell_json`` / ``cell_key``: the row's grid cell (None for a realized, off-grid one), as the
  coverage counts key it; ``stance``, ``tier``, ``shape``, ``used_tools``;
* ``faulted``, ``fault_fired``: a fault was scheduled / fired;
* ``step_tools`` / ``step_ok``: each tool step's tool and whether it answered ok (the per-tool report);
* ``landed_s``, ``resumed``, ``ended_on_question``, ``user_left``, ``user_turns``;
* ``gold``: the row has a 0/1 gold label (the trust check reads only those rows);
* ``judge_model``: ``judge_meta["model"]``, when the judge stamped one; ``judge_status`` as it is;
* ``invalid_calls``: the row's tool calls the world refused for breaking the schema (``invalid_calls.py``);
* ``usage_note``: why the run's metrics could not read the row's ``usage`` (``core/usage.py``),
  None when they could: the run warns once for these rows (``warnings_text.py``).
"""
from __future__ import annotations

import threading

from ..core.defaults import TOOL_OK_STATUSES
from ..core.identity import prompt_sha
from ..core.invalid_calls import invalid_call_count
from ..core.usage import usage_problem
from .judges.labels import has_gold_label
from .pass_at.tally import PASS_AT_FACTS, pass_at_facts
from ..situations.grid import cell_key
from ..store.parquet.slim_row import SlimRow
from ..store.parquet.spill_text import LANDED_KEY

__all__ = ["row_facts", "fact_tuples", "facts_schema", "facts_table", "FACT_NAMES", "fact_spill_writer",
           "warm_facts_table", "WARM_THREAD"]

_REPORT_FACTS = (("prompt_sha", "string"), ("scenario_id", "string"), ("signature", "string"),
                 ("cell_json", "string"), ("cell_key", "string"), ("stance", "string"), ("tier", "string"),
                 ("shape", "string"), ("used_tools", "bool"), ("faulted", "bool"), ("fault_fired", "bool"),
                 ("step_tools", "list<string>"), ("step_ok", "list<bool>"), ("landed_s", "float64"),
                 ("resumed", "bool"), ("ended_on_question", "bool"), ("user_left", "bool"),
                 ("user_turns", "int64"), ("gold", "bool"), ("judge_model", "string"), ("judge_status", "string"),
                 ("usage_note", "string"), ("invalid_calls", "int64"))
_FACTS = PASS_AT_FACTS + _REPORT_FACTS
FACT_NAMES = tuple(name for name, _ in _FACTS)
_LANDED = FACT_NAMES.index("landed_s")      # the one fact a slim row's lane cannot know (the Driver stamps it)


def _text(value):
    return value if value is None or isinstance(value, str) else str(value)


def _tool_name(value) -> str:
    """A tool's name as text: an agent may name a tool ``123`` (kept so in its row, never a crash)."""
    return value if isinstance(value, str) else "null" if value is None else str(value)


def _number(value, default=0.0):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _steps(row: dict) -> tuple[list, list]:
    names, oks = [], []
    for s in row.get("steps") or ():
        name = s.get("tool") if isinstance(s, dict) else None
        if name is None:
            continue
        result = s.get("result")
        status = result.get("status") if isinstance(result, dict) else None
        names.append(_tool_name(name))
        oks.append(status in TOOL_OK_STATUSES and not (result or {}).get("stale"))
    return names, oks


def row_facts(rows: list) -> dict:
    """``{column: [value per row]}`` for ``rows`` (internal rows; see the module docstring). A
    ``SlimRow`` (``store/parquet/slim_row.py``) brings its values, made by its lane (``fact_tuples``),
    and only its ``landed_s`` is read here; the other rows are read as below."""
    slim = [type(r) is SlimRow for r in rows]
    if not any(slim):
        return _read_facts(rows)
    if all(slim):                    # (a large run's rows: all slim) the lanes' values, column by column
        columns = [list(column) for column in zip(*[r.facts for r in rows])]
        columns[_LANDED] = [_number(r.get(LANDED_KEY, 0.0)) for r in rows]
        return dict(zip(FACT_NAMES, columns))
    read = iter(zip(*_read_facts([r for r, s in zip(rows, slim) if not s]).values()))
    made = [r.facts[:_LANDED] + (_number(r.get(LANDED_KEY, 0.0)),) + r.facts[_LANDED + 1:] if s else next(read)
            for r, s in zip(rows, slim)]
    return {name: list(column) for name, column in zip(FACT_NAMES, zip(*made))}


def fact_tuples(rows: list) -> list[tuple]:
    """Each row's fact values, as a tuple in ``FACT_NAMES`` order: what a rollout lane sends with
    a slim row (its ``landed_s`` is the Driver's, so it is filled in there)."""
    return list(zip(*_read_facts(rows).values())) if rows else []


def _read_facts(rows: list) -> dict:
    out = pass_at_facts(rows)
    cols: dict[str, list] = {name: [] for name, _ in _REPORT_FACTS}
    out.update(cols)
    for r in rows:
        dims = r.get("scenario_dimensions", {})
        on_grid = (dims or {}).get("origin") != "realized"
        prompt = r.get("prompt")
        cols["prompt_sha"].append(prompt_sha(prompt) if isinstance(prompt, str) else _text(prompt))
        cols["scenario_id"].append(_text(r.get("scenario_id")))
        cols["signature"].append(_text(r.get("behavior_signature")))
        if on_grid:
            key = cell_key(dims or {})
            cols["cell_json"].append(key if isinstance(dims, dict) and dims else cell_key(r.get("scenario_dimensions")))
            cols["cell_key"].append(key)
        else:
            cols["cell_json"].append(None)
            cols["cell_key"].append(None)
        cols["stance"].append(_text((dims or {}).get("stance", "none")))
        cols["tier"].append(_text(r.get("tier", "ordinary")))
        tools_used = r.get("tools_used") or []
        tools_used = tools_used if isinstance(tools_used, list) else [tools_used]
        cols["shape"].append("|".join(map(_tool_name, tools_used)) or "no_tool")
        cols["used_tools"].append(bool(tools_used))
        cols["faulted"].append(bool(r.get("faults")))
        cols["fault_fired"].append(bool(r.get("_fault_fired")))
        names, oks = _steps(r)
        cols["step_tools"].append(names)
        cols["step_ok"].append(oks)
        cols["landed_s"].append(_number(r.get("_landed_s", 0.0)))
        lineage = r.get("lineage")
        cols["resumed"].append(bool(lineage.get("resumed")) if isinstance(lineage, dict) else False)
        asked = bool(r.get("_ended_on_question"))
        cols["ended_on_question"].append(asked)
        cols["user_left"].append(asked and r.get("ended_by") == "user_left")
        turns = r.get("_user_turns", 0)
        cols["user_turns"].append(turns if isinstance(turns, int) and not isinstance(turns, bool) else 0)
        cols["gold"].append(has_gold_label(r))
        meta = r.get("judge_meta")
        cols["judge_model"].append(_text(meta.get("model")) if isinstance(meta, dict) and meta.get("model")
                                   else None)
        cols["judge_status"].append(_text(r.get("judge_status")))
        cols["invalid_calls"].append(invalid_call_count(r))
        cols["usage_note"].append(usage_problem(r.get("usage")))
    return out


def facts_schema():
    """The Arrow fields of the fact columns (pyarrow imported here, on first use)."""
    import pyarrow as pa
    types = {"string": pa.string(), "float64": pa.float64(), "bool": pa.bool_(), "int64": pa.int64(),
             "list<string>": pa.list_(pa.string()), "list<bool>": pa.list_(pa.bool_())}
    return pa.schema([pa.field(name, types[kind]) for name, kind in _FACTS])


def facts_table(rows: list):
    """The fact columns of in-memory rows, as an Arrow table."""
    import pyarrow as pa
    return pa.Table.from_pydict(row_facts(rows), schema=facts_schema())


def fact_spill_writer(folder: str):
    """A ``SpillWriter`` that writes this module's fact columns beside each row: what the Driver's
    row spool and a result's rewrites spill into."""
    from ..store.parquet.spill import SpillWriter
    return SpillWriter(folder, facts=row_facts, facts_schema=facts_schema())


WARM_THREAD = "whileai-warm-facts-table"
_warm_lock = threading.Lock()
_warm: threading.Thread | None = None


def warm_facts_table() -> threading.Thread:
    """Make a first (empty) fact table in a thread, once per process; returns the thread.

    A run's report is built from ``facts_table``, and pyarrow's first ``pa.array`` imports pandas
    (it checks every input against pandas' types). In a process's first ``simulate()`` that import
    came after the last row had landed: 0.4-0.85 s of the latency bench's cold run (1,000 rows of a
    50 ms agent, ~1.6 s of rollouts) with every actor idle. The caller calls this once the run's
    first rows land (its actors are up: the import does not compete with their start), so the
    report finds its modules loaded. The same modules, loaded earlier; nothing else changes."""
    global _warm
    with _warm_lock:
        if _warm is None:
            _warm = threading.Thread(target=_first_table, name=WARM_THREAD, daemon=True)
            _warm.start()
        return _warm


def _first_table() -> None:
    try:
        facts_table([])
    except Exception:               # the report makes its table again, and says what failed
        pass
