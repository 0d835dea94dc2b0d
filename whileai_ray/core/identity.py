"""A row's identity, defined once, in its two forms.

* The unit key ``unit_key(run_id, scenario_id, phrasing_index, rollout_index, eval_run)``
  names a unit inside one run (``Unit.key``; ``row["_key"]`` on a landed row). A key lands
  at most once; re-rolls of it count ``attempt``, which is part of the draw, not of the key.
* The on-disk key ``row_key(row) = (scenario_id, prompt_sha, rollout_index, eval_run)``
  names a row in a checkpoint or a Parquet file. It leaves out ``run_id`` (a resumed run has a
  new one) and stands the prompt's hash for the phrasing index (which rows do not carry), so
  it can be computed from any row, ours or foreign. ``unit_row_key(unit)`` is the on-disk key
  the unit's row will have; ``resumed_unit_key`` gives a row read back from disk its unit key.

Plain Python (no pyarrow), so the planner can test prompts against the keys of a checkpoint.
"""
from __future__ import annotations

import hashlib
import uuid
from typing import TYPE_CHECKING, Any

from .strict_json import clean_str

if TYPE_CHECKING:                 # a type only (unit.py imports this module)
    from .unit import Unit

__all__ = ["new_run_id", "unit_key", "row_key", "prompt_sha", "unit_row_key", "resumed_unit_key", "key_string",
           "key_digest"]


def new_run_id() -> str:
    """A fresh run id (per-invocation identity: never part of a draw, never part of ``row_key``)."""
    return "run_" + uuid.uuid4().hex[:12]


def unit_key(run_id: str, scenario_id: Any, phrasing_index: int, rollout_index: int,
             eval_run: int) -> tuple[Any, ...]:
    """The key of a unit inside one run (see the module doc)."""
    return (run_id, scenario_id, phrasing_index, rollout_index, eval_run)


def prompt_sha(prompt: str) -> str:
    """The prompt part of ``row_key``: 16 hex digits of the prompt's SHA-256 (UTF-8; a lone
    surrogate counts as U+FFFD, the character the strict JSON writer stores in its place, so a
    row keeps its key through a round trip to disk)."""
    return hashlib.sha256(clean_str(prompt).encode("utf-8")).hexdigest()[:16]


def row_key(row: dict[str, Any]) -> tuple[str, str, Any, Any]:
    """The on-disk identity of a row: ``(scenario_id, prompt_sha, rollout_index, eval_run)``.

    Missing fields fall back to ``""`` / 0, so foreign rows still get a stable key. Text is
    taken as the strict JSON writer stores it (a lone surrogate as U+FFFD).
    """
    prompt = row.get("prompt")
    if not isinstance(prompt, str):
        prompt = "" if prompt is None else str(prompt)
    lineage = row.get("lineage")
    eval_run = lineage.get("eval_run", 0) if isinstance(lineage, dict) else 0
    return (
        clean_str(str(row.get("scenario_id") or "")),
        prompt_sha(prompt),
        row.get("rollout_index", 0) or 0,
        eval_run or 0,
    )


def unit_row_key(unit: Unit) -> tuple[str, str, Any, Any]:
    """The ``row_key`` the row of ``unit`` will have (looked up before the unit is played)."""
    s = unit.situation
    return row_key({"scenario_id": s.scenario_id, "prompt": s.prompt, "rollout_index": unit.rollout_index,
                    "lineage": {"eval_run": unit.eval_run}})


def resumed_unit_key(run_id: str, row: dict[str, Any], eval_run: int) -> list[Any]:
    """The unit key of a row read back from disk that no planned unit matched (phrasing unknown: 0)."""
    return list(unit_key(run_id, row.get("scenario_id"), 0, row.get("rollout_index", 0), eval_run))


def key_digest(key: str | tuple[Any, ...]) -> tuple[int, int, str]:
    """``(a, b, text)``: the 128-bit blake2b digest of a ``row_key`` (or of its ``key_string``
    ``text``) as an unsigned and a signed 64-bit int: what the key index, the writers' key sets
    and the planner snapshot keep of a row's identity."""
    text = key if isinstance(key, str) else key_string(key)
    h = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return int.from_bytes(h[:8], "little"), int.from_bytes(h[8:], "little", signed=True), text


def key_string(key: tuple[Any, ...]) -> str:
    """``row_key`` as one string, the form stored in the Parquet ``row_key`` column."""
    if len(key) == 4:                       # the usual row key: one format call
        return f"{key[0]}|{key[1]}|{key[2]}|{key[3]}"
    return "|".join(str(part) for part in key)
