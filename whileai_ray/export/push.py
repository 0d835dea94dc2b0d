"""``push()``: publish a run as a versioned dataset; ``load_pushed()``: read one back.

``push(rows, meta, "orders")`` runs the publish gate, stamps ``calibration`` on every graded
row, scrubs the rows to their ``rows()`` form (no ``privileged``) and writes version N+1 of
``orders`` to the dataset store (``dataset_store.py``): ``<store>/orders/vN/rows.parquet`` and
``meta.json``. The registry entry it returns (and lists in ``index.json``) is::

    {"datasetId": "ds_orders_v2", "name": "orders", "version": 2, "path": <version folder>,
     "purpose": "train", "parent": None, "mode": "rl", "n_rows": 120, "n_tasks": 30,
     "created": <UTC ISO time>, "description": None, "gate": {...}, "holdout": {<entry>}}

The publish gate (``gate=True``) refuses, with ``PublishGateError``, an RL-shaped run (mode
``rl``, or prompts with several rollouts) that is ungraded (``ungraded_rl_rows``) or has no
prompt whose rollouts got different rewards (``no_mixed_group``); with ``strict_hacks=True``
also a run whose reward is best explained by an unendorsed feature (``reward_hack``).
``holdout=0.2`` moves a fifth of the tasks (by ``scenario_id``, a keyed hash order) into a
linked ``<name>-holdout`` dataset with purpose ``holdout``.
"""
from __future__ import annotations

import datetime as _dt
import json
import re

from ..core.rng import short_hash
from ..score.intervals import wilson
from ..score.pass_at import as_rows, task_key_of
from ..store.parquet import rows_to_table
from ..core.rows import export_row
from .dataset_store import DatasetStore
from .hack_scan import check_endorsed, hack_scan
from .row_checks import reward_of
from .selection import group_id_of
from ..errors import PublishGateError

__all__ = ["push", "load_pushed", "list_datasets", "publish_gate", "calibrate", "PublishGateError", "PURPOSES"]

PURPOSES = ("train", "holdout", "eval")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_ID_RE = re.compile(r"^ds_(.+)_v(\d+)$")
_META_KEYS = ("system_prompt", "tools", "mode", "seed", "repeat_policy", "rollouts_per_request",
              "writer_model", "stopped_because")


def _meta_dict(meta) -> dict:
    if meta is None:
        return {}
    if isinstance(meta, dict):
        return dict(meta)
    if callable(getattr(meta, "meta_dict", None)):
        return dict(meta.meta_dict())
    return {k: getattr(meta, k) for k in _META_KEYS if hasattr(meta, k)}


def calibrate(rows: list) -> list:
    """Copies of ``rows``; each graded one gains ``calibration`` = its task's pass rate, n, the Wilson
    95% interval and the producing policy (``student``)."""
    per_task: dict = {}
    for row in rows:
        value = reward_of(row)
        if value is not None:
            per_task.setdefault(str(task_key_of(row)), []).append(value)
    out = []
    for row in rows:
        row = dict(row)
        values = per_task.get(str(task_key_of(row))) if reward_of(row) is not None else None
        if values:
            rate = sum(values) / len(values)
            row["calibration"] = {"task_id": str(task_key_of(row)), "n": len(values), "pass_rate": round(rate, 4),
                                  "pass_rate_ci95": [round(x, 4) for x in wilson(sum(values), len(values))],
                                  "student": row.get("policy_version") or row.get("model_version")}
        out.append(row)
    return out


def publish_gate(rows, mode=None, endorsed=(), strict_hacks: bool = False) -> dict:
    """Check a run before publishing (see the module docstring); returns the gate report."""
    rows = as_rows(rows)
    groups: dict = {}
    for row in rows:
        groups.setdefault(group_id_of(row), []).append(reward_of(row))
    rl_shaped = mode == "rl" or any(len(v) >= 2 for v in groups.values())
    graded = sum(1 for v in groups.values() for x in v if x is not None)
    mixed = sum(1 for v in groups.values() if len({x for x in v if x is not None}) >= 2)
    scan = hack_scan(rows, endorsed)
    report = {"rl_shaped": rl_shaped, "rows": len(rows), "graded": graded, "groups": len(groups),
              "mixed_groups": mixed, "hack_scan": scan, "passed": False}
    if rl_shaped and graded == 0:
        raise PublishGateError(f"ungraded_rl_rows: this RL-shaped run has {len(rows)} rows and none is graded; "
                               "grade it (simulate(..., grader=...) or data.grade(grader)) before pushing, "
                               "or pass gate=False to push the rows as they are")
    if rl_shaped and mixed == 0:
        raise PublishGateError(f"no_mixed_group: none of the {len(groups)} prompt groups has rollouts with "
                               "different rewards, so there is nothing to learn from; run more repeats or "
                               "harder situations, or pass gate=False")
    if strict_hacks and scan["verdict"] == "suspect":
        raise PublishGateError(f"reward_hack: {scan['summary']}; fix the grader, widen endorsed=, "
                               "or pass strict_hacks=False")
    report["passed"] = True
    return report


def _split_holdout(rows: list, share: float, name: str) -> tuple[list, list]:
    tasks = sorted({str(task_key_of(r)) for r in rows})
    if len(tasks) < 2:
        raise ValueError(f"push(holdout={share}): the run has {len(tasks)} task(s); a holdout needs at least 2 "
                         "distinct scenario_ids")
    n_hold = min(len(tasks) - 1, max(1, round(share * len(tasks))))
    held = set(sorted(tasks, key=lambda t: short_hash("holdout", name, t))[:n_hold])
    train = [r for r in rows if str(task_key_of(r)) not in held]
    return train, [r for r in rows if str(task_key_of(r)) in held]


def _write_version(store: DatasetStore, name: str, rows: list, meta: dict, info: dict) -> dict:
    version = store.claim_version(name)
    entry = {"datasetId": f"ds_{name}_v{version}", "name": name, "version": version,
             "path": store.location(name, f"v{version}"), "n_rows": len(rows),
             "n_tasks": len({str(task_key_of(r)) for r in rows}),
             "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), **info}
    store.write_table(rows_to_table(rows), store.path(name, f"v{version}", "rows.parquet"))
    store.write_json(store.path(name, f"v{version}", "meta.json"),
                     {"schema_version": "1", **{k: meta.get(k) for k in _META_KEYS if k in meta}, "dataset": entry})
    store.add_to_index(entry)
    return entry


def push(rows, meta=None, name: str = "", store=None, parent: str | None = None, purpose: str = "train",
         holdout: float | None = None, gate: bool = True, endorsed=(), strict_hacks: bool = False,
         description: str | None = None, filesystem=None) -> dict:
    """Publish ``rows`` as the next version of dataset ``name``; returns the registry entry."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"push(name={name!r}): use 1-100 letters, digits, '.', '_' or '-', starting with a "
                         "letter or digit (e.g. 'orders-rl')")
    if purpose not in PURPOSES:
        raise ValueError(f"push(purpose={purpose!r}): use one of {', '.join(PURPOSES)}")
    if parent is not None and (not isinstance(parent, str) or not _ID_RE.match(parent)):
        raise ValueError(f"push(parent={parent!r}): pass a dataset id such as 'ds_orders_v1'")
    if holdout is not None and (isinstance(holdout, bool) or not isinstance(holdout, (int, float))
                                or not 0.0 < holdout < 1.0):
        raise ValueError(f"push(holdout={holdout!r}): pass the share of tasks to hold out, e.g. 0.2")
    endorsed = check_endorsed(endorsed)
    meta = _meta_dict(meta)
    rows = as_rows(rows)
    if not rows:
        raise ValueError("push(): the run has no rows to publish")
    target = DatasetStore(store, filesystem)
    gate_report = publish_gate(rows, meta.get("mode"), endorsed, strict_hacks) if gate else None
    rows = calibrate([export_row(r) for r in rows]) if gate else [export_row(r) for r in rows]
    info = {"purpose": purpose, "parent": parent, "mode": meta.get("mode"), "description": description,
            "gate": gate_report}
    if holdout is None:
        return _write_version(target, name, rows, meta, info)
    train, held = _split_holdout(rows, float(holdout), name)
    entry = _write_version(target, name, train, meta, info)
    hold_entry = _write_version(target, f"{name}-holdout", held, meta,
                                {**info, "purpose": "holdout", "parent": entry["datasetId"], "gate": None})
    entry["holdout"] = hold_entry
    target.write_json(target.path(name, f"v{entry['version']}", "meta.json"),
                      {"schema_version": "1", **{k: meta.get(k) for k in _META_KEYS if k in meta}, "dataset": entry})
    target.add_to_index(entry)
    return entry


def list_datasets(store=None, filesystem=None) -> dict:
    """The registry index: ``{"datasets": {name: [entry, ...]}}`` (versions in order)."""
    return DatasetStore(store, filesystem).index()


def load_pushed(name_or_id: str, store=None, filesystem=None) -> tuple[list, dict]:
    """``(rows, meta)`` of a pushed dataset: ``"orders"`` (latest version) or ``"ds_orders_v2"``."""
    if not isinstance(name_or_id, str) or not name_or_id:
        raise TypeError(f"load_pushed: pass a dataset name or id such as 'ds_orders_v1', got {name_or_id!r}")
    m = _ID_RE.match(name_or_id)
    name, version = (m.group(1), int(m.group(2))) if m else (name_or_id, None)
    if not _NAME_RE.match(name):     # the rule push() names with: no '/', no '..', nothing outside the store
        raise ValueError(f"load_pushed({name_or_id!r}): a dataset name is 1-100 letters, digits, '.', '_' or '-', "
                         "starting with a letter or digit, or an id such as 'ds_orders_v2'; paths are not read")
    target = DatasetStore(store, filesystem)
    versions = target.versions(name)
    if not versions:
        raise FileNotFoundError(f"load_pushed({name_or_id!r}): no dataset {name!r} in {target.uri}; "
                                f"known: {', '.join(sorted(target.index()['datasets'])) or 'none'}")
    version = versions[-1] if version is None else version
    if version not in versions:
        raise FileNotFoundError(f"load_pushed({name_or_id!r}): {name!r} has versions {versions}, not v{version}")
    table = target.read_table(target.path(name, f"v{version}", "rows.parquet"))
    rows = [json.loads(t) for t in table.column("row_json").to_pylist() if t is not None]
    meta = target.read_json(target.path(name, f"v{version}", "meta.json"))
    return rows, meta
