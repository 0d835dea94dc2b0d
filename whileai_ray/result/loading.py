"""``wai.load(path)``: a saved run (JSONL or Parquet, file or folder) back as a SimulationData."""
from __future__ import annotations

import os

from .data import SimulationData
from ..store.reader import load_rows

_META_FIELDS = ("stopped_because", "coverage", "search", "warnings", "degraded", "stages", "budget",
                "coverage_curve", "arm_weights", "arm_yield", "writer_model", "user_model", "system_prompts",
                "mode", "repeat_policy", "rollouts_per_request", "requests_per_situation", "elapsed_seconds")


def load(path) -> SimulationData:
    """Read rows (and the ``.meta.json`` sidecar when there is one) into a SimulationData."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"wai.load: no file or folder at {path!r}; pass the path a run wrote "
                                "(checkpoint=, output= or data.save())")
    rows, meta = load_rows(path)
    data = SimulationData(trajectories=rows)
    for name in _META_FIELDS:
        if name in meta and meta[name] is not None:
            setattr(data, name, meta[name])
    data.system_prompt = meta.get("system_prompt", "") or ""
    data.tools = meta.get("tools", []) or []
    data.warnings = list(meta.get("warnings", []) or [])
    data.path = path
    return data
