"""Landing: what happens to a unit's result once it is back on the Driver.

A played unit's result (its row, or why there is none) and, when the run is graded, its verdict
become an ``Outcome`` for the planner; the row is counted on the node that played it and waits
in ``pending`` until the loop ``flush()``es the batch to the checkpoint and the ``output=``
stream (one write, flush and fsync per batch, never per row) and then to the run's ``spool``
(``store/row_spool.py``: in ordinal order, a list while few, Parquet files past the run's
``spill_rows``). A unit whose row is already on disk (a resumed run) lands from the disk
instead, marked ``lineage.resumed``, straight into the spool. The Landing keeps counts, never
the rows: the Outcome the planner gets holds the row only until the planner has observed it.

A row a lane sent with its checkpoint line and key digest (``RolloutResult.line``/``digest``,
``store/checkpoint/edge_lines.py``) keeps them beside it in ``pending``, and the batch goes to the
checkpoint and the stream as those bytes, never encoded again here; a graded row (its verdict
changes public fields here) and a row sent without them are encoded by the sinks, as before.
Likewise the lane's ``RolloutResult.text`` (the whole internal row as the spool writes it) goes to
the spool as an ``EncodedRow`` with this Driver's ``_landed_s`` spliced in
(``store/parquet/spill_text.py``), when that stamp is all the Driver adds to the row: no verdict,
no lineage stamp, no ``_landed_s`` already there. ``edge_texts`` counts the rows that went so.

A *slim* result (``RolloutResult.facts`` set; ``store/parquet/slim_row.py``) brings its row as a stub
of the fields read here and by the planner, with its text and fact values: it lands like the
others and is spooled as a ``SlimRow``. Where the whole row is needed after all (a verdict, a
lineage stamp, a sink making the Parquet copy in this process) it is decoded from its text first.

``lineage`` (``runs=N``, ``tasks=``) is stamped on the spool's copy of every row, never on what
the checkpoint and the stream wrote.

No Ray here: the loop owns a Landing, the Driver actor reads its counts for ``poll()``.
"""
from __future__ import annotations

import time
from typing import Callable

from ...score.judges.contract import apply_verdict, failed_markers, is_graded_failure
from ...search.planner.outcome import Outcome
from ...store.parquet.slim_row import slim_row
from ...store.parquet.spill_text import LANDED_KEY, encoded_row
from ...store.row_spool import RowSpool
from ...world.faults import is_fault_parent
from ..messages import RolloutResult
from .heap_trim import HeapTrim

__all__ = ["Landing", "MAX_ERRORS"]

MAX_ERRORS = 5          # agent errors kept as text (the report shows the first)



class Landing:
    def __init__(self, *, judge_name: str | None = None, scoring_run_id: str | None = None,
                 label_source: str | None = None, sink=None, stream=None, t0: float | None = None,
                 clock: Callable[[], float] = time.monotonic, spool: RowSpool | None = None,
                 lineage: dict | None = None):
        self.judge_name, self.scoring_run_id, self.label_source = judge_name, scoring_run_id, label_source
        self.sink, self.stream = sink, stream
        self.clock = clock
        self.t0 = clock() if t0 is None else t0
        # where the rows go (a spool that never spills when none is given: tests, small runs)
        self.spool = spool if spool is not None else RowSpool(2**62, make_writer=None)
        self.lineage = dict(lineage) if lineage else None
        self.landed = 0                         # rows played and landed here
        self.resumed_count = 0                  # rows settled from the checkpoint
        self.node_rows: dict[str, int] = {}
        self.errors: list[str] = []
        self.first_row_s: float | None = None
        self.last_row_s: float | None = None    # (the Driver's clock, like first_row_s)
        self.pending: list[dict] = []           # landed, not yet written
        self.pending_lines: list[bytes | None] = []     # each one's line from its lane, or None
        self.pending_digests: list[tuple[int, int, str] | None] = []    # and its key digest
        self.pending_texts: list[str | None] = []       # and its spool text (before _landed_s), or None
        self.pending_facts: list[tuple | None] = []     # and its fact values when it came slim (row: its stub)
        # a sink that makes the Parquet copy in this process reads whole rows (a Driver's sends lines)
        self._whole_rows = getattr(sink, "parquet", None) is not None
        self.edge_texts = 0                     # rows spooled with their lane's text (never encoded here)
        self.slim_rows = 0                      # of those, rows that came slim (a stub, never the row's dict)
        self.heap_trim = HeapTrim(clock=clock)  # what each batch freed, back to the system now and then

    def resumed(self, unit, row: dict) -> Outcome:
        """A unit whose row is already on disk: the row comes back as it was, marked resumed."""
        row = dict(row)
        lineage = dict(row.get("lineage") or {})
        lineage["resumed"] = True
        row["lineage"] = lineage
        row["_key"] = list(unit.key)
        row["_ordinal"] = unit.ordinal
        row["_landed_s"] = 0.0
        self.resumed_count += 1
        self.spool.add(self.stamped([row]))
        reward = row.get("reward")
        label = (1 if reward >= 0.5 else 0) if isinstance(reward, (int, float)) and not isinstance(reward, bool) \
            else row.get("behavior_signature")
        stub_fp = row.get("_fp")            # a shared-storage stub carries its flag (pools/dataplane.py)
        # a row the run's judge graded steers as it did when it was played (``played``): a failure
        # is a parent to mutate, its failed markers are counted; read from the verdict's fields on the row
        graded = row.get("judge_status") is not None
        return Outcome(unit=unit, row=row, label=label, resumed=True,
                       fault_parent=bool(stub_fp) if stub_fp is not None else is_fault_parent(row),
                       graded_failure=graded and is_graded_failure(row),
                       failed_markers=tuple(failed_markers(row)) if graded else ())

    def played(self, res: RolloutResult) -> Outcome:
        """A unit's result from a rollout lane (with its verdict when the run is graded)."""
        if res.facts is not None and (res.verdict is not None or self.lineage is not None or self._whole_rows):
            res = res.full()        # a slim result, where the whole row is needed after all
        row = res.row
        verdict = res.verdict
        label = None
        if row is not None:
            if verdict is not None:
                apply_verdict(row, verdict, self.judge_name or "", self.scoring_run_id or "")
                if verdict.get("judge_meta"):
                    row["judge_meta"] = verdict["judge_meta"]
                if self.label_source:
                    row["label_source"] = self.label_source
                r = verdict.get("reward") if verdict.get("judge_status") == "ok" else None
                label = None if r is None else (1 if r >= 0.5 else 0)
            if label is None:
                label = row.get("behavior_signature")
            self.landed += 1
            node = row.get("_node", "?")
            self.node_rows[node] = self.node_rows.get(node, 0) + 1
            now = self.clock() - self.t0
            if self.first_row_s is None:
                self.first_row_s = now
            self.last_row_s = now
            edge = verdict is None          # a verdict changed the row here: its lane's line is stale
            text = res.text if edge and self.lineage is None and LANDED_KEY not in row else None
            row[LANDED_KEY] = round(now, 4)
            self.pending.append(row)
            self.pending_lines.append(res.line if edge else None)
            self.pending_digests.append(res.digest if edge else None)
            self.pending_texts.append(text)
            self.pending_facts.append(res.facts if text is not None else None)
        elif res.error and len(self.errors) < MAX_ERRORS:
            self.errors.append(str(res.error)[:300])
        return Outcome(unit=res.unit, row=row, unusable=res.unusable,
                       timed_out=res.timed_out, label=label,
                       fault_parent=res.fault_parent and row is not None,
                       graded_failure=verdict is not None and bool(verdict) and is_graded_failure(verdict),
                       failed_markers=tuple(failed_markers(verdict)) if verdict else (),
                       key_digest=res.digest if row is not None else None,   # (a verdict keeps the key)
                       marks=res.marks if row is not None else None)     # (a verdict drops them: with_verdict)

    def flush(self, on_batch: Callable[[list], None] | None = None) -> None:
        """Write the rows landed since the last flush: one batch to the checkpoint and the stream,
        then into the spool; ``on_batch(rows)`` hears the batch first (the run's metrics)."""
        if not self.pending:
            return
        if on_batch is not None:
            on_batch(self.pending)
        lines = self.pending_lines if any(line is not None for line in self.pending_lines) else None
        if self.sink is not None:
            self.sink.append(self.pending, lines, self.pending_digests)
        if self.stream is not None:
            self.stream.append(self.pending, lines)
        self.spool.add(self._spooled())
        self.pending, self.pending_lines, self.pending_digests, self.pending_texts = [], [], [], []
        self.pending_facts = []
        self.heap_trim.maybe()

    def _spooled(self):
        """The pending rows as the spool takes them: with their lane's text where they have one."""
        texts = self.pending_texts
        if self.lineage is not None or not any(t is not None for t in texts):
            return self.stamped(self.pending)
        out = [r if t is None else encoded_row(r, t) if f is None else slim_row(r, t, f)
               for r, t, f in zip(self.pending, texts, self.pending_facts)]
        self.edge_texts += sum(t is not None for t in texts)
        self.slim_rows += sum(f is not None for f in self.pending_facts)
        return out

    def release(self, upto: int) -> None:
        """Every unit with an ordinal up to ``upto`` is settled: its row may leave the reorder buffer."""
        self.spool.release(upto)

    def stamped(self, rows):
        """``rows`` (any iterable) with the run's lineage stamp, as copies; as they are without one."""
        if self.lineage is None:
            return rows
        stamp = self.lineage
        return ({**r, "lineage": {**(r.get("lineage") or {}), **stamp}} for r in rows)
