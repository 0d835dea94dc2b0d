"""``wai.load(path)``: a saved run (JSONL or Parquet, file or folder) back as a SimulationData.

A file with more rows than a run keeps in memory (``WHILEAI_RAY_SPILL_ROWS``, default the
``spill_rows`` knob) comes back Arrow-backed: a Parquet file read where it is, a JSONL file
spilled to a temporary folder in one pass.

The ``.meta.json`` sidecar is a file like any other: anyone can edit it. Each field is taken
only when it has the type the run writes there (``_META_TYPES``); a field of another type is
left out, with a warning naming it, so a crafted sidecar can neither crash what reads the
result (the report, the notebook view) nor pass text off as a number."""
from __future__ import annotations

import os

from .cluster import Cluster
from .data import SimulationData
from .row_store import open_large_path
from ..store.reader import load_rows

_NUMBER = (int, float)
# the fields a sidecar gives back, with the types a run writes there
_META_TYPES: dict[str, type | tuple[type, ...]] = {"stopped_because": str, "coverage": dict, "search": dict, "warnings": list, "degraded": list,
               "stages": list, "budget": int, "coverage_curve": list, "arm_weights": dict, "arm_yield": dict,
               "writer_model": str, "user_model": str, "system_prompts": dict, "mode": str,
               "repeat_policy": str, "rollouts_per_request": int, "requests_per_situation": int,
               "elapsed_seconds": _NUMBER}
_META_FIELDS = tuple(_META_TYPES)


def _typed(name: str, value) -> bool:
    kind = _META_TYPES[name]
    if isinstance(value, bool) and kind is not bool:
        return False
    if name == "elapsed_seconds":
        return isinstance(value, _NUMBER) and value == value and value not in (float("inf"), float("-inf"))
    return isinstance(value, kind)


def checked_meta(meta: dict, path) -> tuple[dict, list]:
    """``(fields to set, warnings)``: the sidecar's known fields whose type is the run's; the
    others are named in a warning and left out. ``warnings`` keeps its text items only."""
    taken, dropped = {}, []
    for name in _META_FIELDS:
        value = meta.get(name)
        if value is None:
            continue
        if _typed(name, value):
            taken[name] = value
        else:
            dropped.append(name)
    if "warnings" in taken:
        taken["warnings"] = [w for w in taken["warnings"] if isinstance(w, str)]
    notes = [f"{path}: the .meta.json sidecar's {', '.join(dropped)} did not have the type a run writes "
             "there; left out (the file was edited or damaged)"] if dropped else []
    return taken, notes


def load(path, *, cluster: Cluster | None = None) -> SimulationData:
    """Read rows (and the ``.meta.json`` sidecar when there is one) into a SimulationData.
    ``cluster``: what the result grades large batches on and makes Ray datasets with
    (``result/cluster.py``); ``wai.load`` passes this process's Ray, None keeps it in-process."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"wai.load: no file or folder at {path!r}; pass the path a run wrote "
                                "(checkpoint=, output= or data.save())")
    large = open_large_path(path)      # past spill_rows: rows on disk, decoded when used
    rows, meta = large if large is not None else load_rows(path)
    data = SimulationData(trajectories=rows, _cluster=cluster)
    fields, notes = checked_meta(meta, path)
    for name, value in fields.items():
        setattr(data, name, value)
    prompt, tools = meta.get("system_prompt"), meta.get("tools")
    data.system_prompt = prompt if isinstance(prompt, str) else ""
    data.tools = tools if isinstance(tools, list) else []
    data.warnings = list(fields.get("warnings") or []) + notes
    data.path = path
    return data
