"""SlimRow: a landed row that the Driver holds as a stub; the whole row is its text (issue 32 item 2).

The Driver is the one serial process of a run, and unpickling each landed row's dict (messages,
steps, world state: ~2.7 KB of JSON) was the largest single cost it had left per row. In a run
where the Driver changes nothing in a row but its landing time (no judge in the loop, no lineage
stamp, no shared storage), a rollout lane sends each row as what the Driver writes of it (the
checkpoint line, the spool text) plus a *stub*: only the fields the Driver reads (``STUB_KEYS``),
and the row's fact columns (``score/row_facts.py``), made on the lane. The Driver then:

* appends the line to the checkpoint and the stream (as it did);
* observes the stub (the planner's coverage, key and shape counts; the metrics' node, usage and
  cache counts; the label), which holds every field those read, as the row holds them;
* spools a ``SlimRow``: the stub with ``json`` (the text, its ``_landed_s`` spliced in) and
  ``facts``; a spill writes both as they are, and a row handed out of the spool as a dict is
  ``plain_row``: decoded from its text, which is the whole row (``spill_text.edge_text``: plain
  JSON data only, so the decoded row equals the one the lane built, key order included).

Who reads which stub field on the Driver: ``Landing.played`` (``behavior_signature``, ``_node``,
``_landed_s``), ``metrics.recorder.batch_counts`` (``_node``, ``reward``, ``judge_status``, ``usage``,
``_cache``), ``Planner._observe`` (``row_key``: ``prompt``, ``scenario_id``, ``rollout_index``,
``lineage``; ``CoverageTracker.observe``: ``prompt``, ``scenario_id``, ``behavior_signature``,
``scenario_dimensions``, ``tools_used``, ``arm``), the spool (``_ordinal``). A field the row lacks is
not in its stub either, so ``get`` answers the same.

No pyarrow here: the lanes import it.
"""
from __future__ import annotations

import json
from typing import Callable

from .spill_text import LANDED_KEY, EncodedRow, with_landed

__all__ = ["SlimRow", "STUB_KEYS", "stub_of", "slim_row", "plain_row"]

STUB_KEYS = ("prompt", "scenario_id", "rollout_index", "lineage", "arm", "scenario_dimensions",
             "behavior_signature", "tools_used", "reward", "judge_status", "usage", "_cache",
             "_node", "_ordinal")

_LOADS: Callable[[str], dict] = json.JSONDecoder().decode


class SlimRow(EncodedRow):
    """A stub (``stub_of``) carrying the whole row's ``json`` and its fact values (``facts``:
    ``score.row_facts.FACT_NAMES`` order, its ``landed_s`` not yet known to the lane)."""

    __slots__ = ("facts",)
    facts: tuple


def stub_of(row: dict) -> dict:
    """The fields of ``row`` that the Driver reads (see the module docstring)."""
    return {k: row[k] for k in STUB_KEYS if k in row}


def slim_row(stub: dict, text: str, facts: tuple) -> SlimRow:
    """The spool's form of a slim row: ``stub`` (stamped with its ``_landed_s``), the lane's
    ``text`` with that stamp spliced in, and the lane's fact values."""
    out = SlimRow(stub)
    out.json = with_landed(text, stub[LANDED_KEY])
    out.facts = facts
    return out


def plain_row(row: dict) -> dict:
    """``row`` as the plain dict it stands for: a ``SlimRow`` decoded from its text (the whole
    row), an ``EncodedRow`` as the dict it is, a dict itself."""
    if type(row) is dict:
        return row
    if type(row) is SlimRow:
        return _LOADS(row.json)
    return dict(row)
