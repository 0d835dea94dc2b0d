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
from ..score.pass_at.estimate import as_rows, task_key_of
from ..store.parquet.folder import rows_to_table
from ..store.run_files import refuse_run_file
from ..store.schema import arrow_schema
from ..core.rows import export_row
from .dataset_store import NAME_RE, DatasetStore, check_name
from .hack_scan import HackScan, check_endorsed
from .row_checks import reward_of
from .selection import group_id_of
from ..errors import PublishGateError

__all__ = ["push", "refuse_hosted_arguments", "load_pushed", "list_datasets", "publish_gate", "calibrate", "PublishGateError", "PURPOSES"]

PURPOSES = ("train", "holdout", "eval")
_NAME_RE = NAME_RE                  # dataset_store.py: matched whole
_ID_RE = re.compile(r"^ds_(.+)_v(\d+)\Z")
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


def _batches(rows):
    batches = getattr(rows, "batches", None)
    return batches() if callable(batches) else (rows,)


def task_rewards(rows) -> dict:
    """``{task: [sum of rewards, graded rows]}`` over the graded rows (one pass)."""
    per_task: dict = {}
    for batch in _batches(rows):
        for row in batch:
            value = reward_of(row)
            if value is not None:
                acc = per_task.setdefault(str(task_key_of(row)), [0, 0])
                acc[0] += value
                acc[1] += 1
    return per_task


def _calibrated(row: dict, per_task: dict) -> dict:
    row = dict(row)
    acc = per_task.get(str(task_key_of(row))) if reward_of(row) is not None else None
    if acc:
        total, n = acc
        row["calibration"] = {"task_id": str(task_key_of(row)), "n": n, "pass_rate": round(total / n, 4),
                              "pass_rate_ci95": [round(x, 4) for x in wilson(total, n)],
                              "student": row.get("policy_version") or row.get("model_version")}
    return row


def calibrate(rows: list) -> list:
    """Copies of ``rows``; each graded one gains ``calibration`` = its task's pass rate, n, the Wilson
    95% interval and the producing policy (``student``)."""
    per_task = task_rewards(rows)
    return [_calibrated(row, per_task) for row in rows]


def publish_gate(rows, mode=None, endorsed=(), strict_hacks: bool = False) -> dict:
    """Check a run before publishing (see the module docstring); returns the gate report. One pass
    over the rows: per group its size and distinct rewards, and the hack scan's sums."""
    rows = as_rows(rows)
    groups: dict = {}
    scan, n, graded = HackScan(), 0, 0
    for batch in _batches(rows):
        for row in batch:
            n += 1
            value = reward_of(row)
            group = groups.get(group_id_of(row))
            if group is None:
                groups[group_id_of(row)] = group = [0, set()]
            group[0] += 1
            if value is not None:
                graded += 1
                group[1].add(value)
            scan.add(row)
    rl_shaped = mode == "rl" or any(size >= 2 for size, _ in groups.values())
    mixed = sum(1 for _, values in groups.values() if len(values) >= 2)
    found = scan.result(endorsed)
    report = {"rl_shaped": rl_shaped, "rows": n, "graded": graded, "groups": len(groups),
              "mixed_groups": mixed, "hack_scan": found, "passed": False}
    if rl_shaped and graded == 0:
        raise PublishGateError(f"ungraded_rl_rows: this RL-shaped run has {n} rows and none is graded; "
                               "grade it (simulate(..., grader=...) or data.grade(grader)) before pushing, "
                               "or pass gate=False to push the rows as they are")
    if rl_shaped and mixed == 0:
        raise PublishGateError(f"no_mixed_group: none of the {len(groups)} prompt groups has rollouts with "
                               "different rewards, so there is nothing to learn from; run more repeats or "
                               "harder situations, or pass gate=False")
    if strict_hacks and found["verdict"] == "suspect":
        raise PublishGateError(f"reward_hack: {found['summary']}; fix the grader, widen endorsed=, "
                               "or pass strict_hacks=False")
    report["passed"] = True
    return report


def _holdout_tasks(rows, share: float, name: str) -> set:
    tasks = sorted({str(task_key_of(r)) for batch in _batches(rows) for r in batch})
    if len(tasks) < 2:
        raise ValueError(f"push(holdout={share}): the run has {len(tasks)} task(s); a holdout needs at least 2 "
                         "distinct scenario_ids")
    n_hold = min(len(tasks) - 1, max(1, round(share * len(tasks))))
    return set(sorted(tasks, key=lambda t: short_hash("holdout", name, t))[:n_hold])


def _published(rows, per_task, keep=None):
    """The rows as published, a batch at a time: scrubbed (``rows()`` form), calibrated when
    the gate ran (``per_task``), only those whose task ``keep`` accepts."""
    for batch in _batches(rows):
        out = []
        for row in batch:
            if keep is not None and not keep(str(task_key_of(row))):
                continue
            row = export_row(row)
            out.append(_calibrated(row, per_task) if per_task is not None else row)
        if out:
            yield out


def _write_version(store: DatasetStore, name: str, batches, meta: dict, info: dict) -> dict:
    version = store.claim_version(name)
    counts, tasks = [0], set()

    def tables():
        for batch in batches:
            counts[0] += len(batch)
            tasks.update(str(task_key_of(r)) for r in batch)
            yield rows_to_table(batch)
    store.write_tables(tables(), store.path(name, f"v{version}", "rows.parquet"), arrow_schema())
    entry = {"datasetId": f"ds_{name}_v{version}", "name": name, "version": version,
             "path": store.location(name, f"v{version}"), "n_rows": counts[0], "n_tasks": len(tasks),
             "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), **info}
    store.write_json(store.path(name, f"v{version}", "meta.json"),
                     {"schema_version": "1", **{k: meta.get(k) for k in _META_KEYS if k in meta}, "dataset": entry})
    store.add_to_index(entry)
    return entry


def refuse_hosted_arguments(api_key=None, publish: bool = False, agent=None) -> None:
    """The docs' ``push`` uploads to a While account (``api_key``) and ``publish=True`` puts a card on
    a public catalog. Here a dataset store is a folder or a pyarrow filesystem URI that you configure
    (``store=``, ``WHILEAI_RAY_DATASETS``), reached with that filesystem's own credentials (the AWS
    variables for ``s3://``, ...). Neither argument is ignored: both are refused, before anything
    is read or written, with what to do instead."""
    if api_key is not None:
        raise ValueError("push(api_key=...): there is no account here; the dataset store is a folder or a pyarrow "
                         "filesystem URI (store= or WHILEAI_RAY_DATASETS), reached with that filesystem's own "
                         "credentials (e.g. the AWS environment for s3://). Drop api_key=.")
    if publish:
        raise ValueError("push(publish=True): there is no public catalog here; push to your store, then publish "
                         "the version folder push() returns (entry['path']) with your own tools "
                         "(e.g. huggingface-cli upload). Drop publish=True.")
    if agent is not None and not isinstance(agent, str):
        raise TypeError(f"push(agent={agent!r}): pass the agent's name as a string; it is recorded on the entry")


def push(rows, meta=None, name: str = "", store=None, parent: str | None = None, purpose: str = "train",
         holdout: float | None = None, gate: bool = True, endorsed=(), strict_hacks: bool = False,
         description: str | None = None, filesystem=None, agent: str | None = None) -> dict:
    """Publish ``rows`` as the next version of dataset ``name``; returns the registry entry. The rows
    are read in passes (the gate, the per-task rates, the write), never all held: a run on disk
    goes to the store a row group at a time. ``agent`` (the producing agent's name) is recorded on
    the entry."""
    refuse_hosted_arguments(agent=agent)
    check_name(name, "push(name=...)")       # whole name (no trailing newline), not the index's
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
    if not len(rows):
        raise ValueError("push(): the run has no rows to publish")
    target = DatasetStore(store, filesystem)
    target.check_new_names(name, holdout is not None)      # never another dataset's holdout
    if target.local:                       # never into a checkpoint, its sidecars or its Parquet copy
        for where in (target.root, target.path(name), target.path(f"{name}-holdout")):
            refuse_run_file(where, "push(store=...)" if where == target.root else "push(name=...)")
    held = _holdout_tasks(rows, float(holdout), name) if holdout is not None else None   # before the gate's work
    gate_report = publish_gate(rows, meta.get("mode"), endorsed, strict_hacks) if gate else None
    per_task = task_rewards(rows) if gate else None
    info = {"purpose": purpose, "parent": parent, "mode": meta.get("mode"), "description": description,
            "gate": gate_report, **({"agent": agent} if agent else {})}
    if held is None:                     # no holdout= asked for
        return _write_version(target, name, _published(rows, per_task), meta, info)
    entry = _write_version(target, name, _published(rows, per_task, lambda t: t not in held), meta, info)
    hold_entry = _write_version(target, f"{name}-holdout", _published(rows, per_task, held.__contains__), meta,
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
    if not _NAME_RE.fullmatch(name):     # the rule push() names with: no '/', no '..', nothing outside the store
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
