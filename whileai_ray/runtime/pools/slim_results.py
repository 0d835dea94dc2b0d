"""Which of a chunk's results a rollout lane sends slim (``store/parquet/slim_row.py``, issue 32).

A run's lanes send slim results when its rows go to disk and the Driver changes nothing in a
row but its landing time (``slim_lanes``): a budget past the spool's list (``spool_rows``: a
smaller run's rows are handed to the caller as dicts while it runs, which the Driver would have
to decode from each text: ~25 us a row in its loop, 1.5 points of a 50 ms agent's C/L measured),
no judge grading in the loop (a verdict rewrites public fields), no lineage stamp (``runs=N``,
``tasks=``: stamped on the spool's copy), no shared storage (its rows cross as shard stubs
already, ``pools/dataplane.py``). Of those, a result goes slim when the lane made its
checkpoint line, key digest and spool text (``rollout_worker.py``), and the row holds no
``_landed_s`` of its own (the Driver would encode that row itself); any other crosses whole, as
before. The Driver treats the two alike (``driver/landing.py``), and decodes a slim result's row
from its text should it need the whole row after all (``RolloutResult.full``).

No Ray here: the lanes call it, in an actor or in the caller's own pool.
"""
from __future__ import annotations

from ...score.row_facts import fact_tuples
from ...store.parquet.slim_row import stub_of
from ...store.parquet.spill_text import LANDED_KEY
from ..messages import RolloutResult

__all__ = ["slim_lanes", "slimmed"]


def slim_lanes(spec, plan) -> bool:
    """Whether ``spec``'s rollout lanes send slim results (``plan``: its ``PoolPlan``)."""
    return spec.cap > spec.spool_rows and not plan.graded and spec.lineage is None and not spec.shards


def slimmed(results: list[RolloutResult]) -> list[RolloutResult]:
    """``results``, each one slim where it can be."""
    out = list(results)
    can = [(i, r.row) for i, r in enumerate(results)
           if r.row is not None and r.line is not None and r.digest is not None and r.text is not None
           and r.verdict is None and LANDED_KEY not in r.row]
    for (i, row), facts in zip(can, fact_tuples([row for _i, row in can])):
        out[i] = out[i].slim(stub_of(row), facts)
    return out
