"""``run_judge``: the judge-contract engine behind ``data.grade(judge=...)`` and ``evaluate``.

    scored = wai.run_judge(rows, judge, run_id="score_nightly_0042")
    scored.pass_at, scored.statuses, scored.rows()

It grades *copies* of existing rows (the source is never modified) with one judge and returns a
:class:`~whileai_ray.scored.ScoredData`. The judge is

* any callable honoring the judge contract (``score/judges/contract.py``): a number in [0, 1] or
  ``{"reward", "reason", "markers", "failure_class"}`` per row (it gets the exported row; a
  judge with ``wants_internal_row = True`` gets the internal one, ``privileged`` included);
* a ``wai.Judge`` (an LLM judge over an OpenAI-compatible endpoint), graded concurrently over
  one HTTP client;
* a rubric string: a ``wai.Judge(rubric, model=model, tools=tools)`` is built (and checked)
  before any row is judged.

A judge that raises, times out (``timeout=`` seconds per verdict) or returns something that is
not a score leaves that row unjudged (``judge_status`` error / timeout / missing_reward /
invalid_result, ``reward`` None), never a 0. Every graded copy carries the lineage stamp:
``scoring_run_id`` (``run_id=`` pins it, for reproducible scoring ids; a fresh
``score_<12 hex>`` otherwise), ``source`` (``source=``, "grade" by default), ``judge``,
``parent`` and, with ``version=``, ``judge_version``.
"""
from __future__ import annotations

import copy
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from numbers import Real

from ...agents.response_cache import STATS, CacheSpec, since, summary
from ..cluster import Cluster, cluster_of
from ..rows_view import RowsView
from ...score.judges.contract import apply_verdict, judge_name as name_of, normalize_judge_result

__all__ = ["run_judge", "source_rows", "MAX_CONCURRENCY"]

MAX_CONCURRENCY = 32


def source_rows(rows) -> tuple[list, str, list]:
    """``(rows, system_prompt, tools)`` of a run (SimulationData / ScoredData), a row list or a
    JSONL / Parquet path (read as data: rows are parsed, never executed)."""
    if hasattr(rows, "trajectories") and isinstance(rows.trajectories, list):
        return rows.trajectories, getattr(rows, "system_prompt", "") or "", list(getattr(rows, "tools", []) or [])
    if isinstance(rows, (str, os.PathLike)):
        from ...store.reader import load_rows
        loaded, meta = load_rows(rows)
        return loaded, meta.get("system_prompt") or "", list(meta.get("tools") or [])
    if isinstance(rows, (list, tuple)):
        bad = next((type(r).__name__ for r in rows if not isinstance(r, dict)), None)
        if bad:
            raise TypeError(f"rows= holds a {bad}; pass row dicts, a SimulationData or a JSONL path")
        return list(rows), getattr(rows, "system_prompt", "") or "", list(getattr(rows, "tools", []) or [])
    raise TypeError(f"rows= takes a SimulationData, a ScoredData, a list of row dicts or a JSONL/Parquet path; "
                    f"got {type(rows).__name__}")


def _check_scale(scale):
    if scale is None:
        return None
    if (not isinstance(scale, (list, tuple)) or len(scale) != 2
            or not all(isinstance(v, Real) and not isinstance(v, bool) for v in scale) or scale[1] <= scale[0]):
        raise ValueError(f"scale= is (lo, hi) with hi > lo, mapping the judge's ratings onto 0..1; got {scale!r}")
    return (float(scale[0]), float(scale[1]))


def _scaled(value, scale):
    lo, hi = scale

    def m(x):
        return (x - lo) / (hi - lo) if isinstance(x, Real) and not isinstance(x, bool) else x
    if isinstance(value, dict):
        return {k: (m(v) if k in ("reward", "score") else v) for k, v in value.items()}
    return m(value)


def _copy(row: dict) -> dict:
    out = dict(row)
    if isinstance(out.get("lineage"), dict):
        out["lineage"] = dict(out["lineage"])
    return out


def _resolve_judge(judge, model, tools, policy, timeout):
    from ...score.judges.llm_judge import Judge
    if isinstance(judge, str):
        if not judge.strip():
            raise ValueError("judge= is a callable, a wai.Judge, or a rubric (non-empty text); got ''")
        judge = Judge(judge, model=model, tools=tools, policy=policy,
                      **({"timeout": float(timeout)} if timeout else {}))
        return judge.check()
    if isinstance(judge, Judge):
        judge.policy = judge.policy or policy or ""
        judge.tools = judge.tools or list(tools or [])
        if timeout:
            judge.timeout = float(timeout)
        return judge
    if not callable(judge):
        raise TypeError("judge= takes a callable row -> {'reward': 0 or 1, 'reason': str, 'markers': {...}} "
                        f"(a bare number works too), a wai.Judge, or a rubric string; got {type(judge).__name__}")
    return judge


def _one_verdict(judge, row: dict, scale, timeout):
    """The normalized verdict of a callable judge on one row, through ``score.grading.call_grader``
    (the one grader call path), in this thread or -- with ``timeout`` -- in a helper thread joined
    with it: a judge past it is marked ``timeout`` and its late answer dropped."""
    from ...score.grading import call_grader
    transform = (lambda raw: _scaled(raw, scale)) if scale is not None else None
    if not timeout:
        return call_grader(judge, row, transform=transform)
    box: dict = {}
    worker = threading.Thread(target=lambda: box.update(v=call_grader(judge, row, transform=transform)),
                              daemon=True, name="run-judge")
    worker.start()
    worker.join(float(timeout))
    if worker.is_alive() or "v" not in box:
        return normalize_judge_result(TimeoutError(f"the judge took longer than {float(timeout):g}s"))
    return box["v"]


def run_judge(rows, judge, *, judge_name: str | None = None, source: str = "grade", model=None,
              run_id: str | None = None, concurrency: int = 8, timeout: float | None = None,
              version: str | None = None, scale=None, tools=None, cluster: Cluster | None = None):
    """Grade copies of ``rows`` with ``judge``; return a ``ScoredData`` (see the module doc).
    ``cluster``: the one the result holds (``result/cluster.py``); when None, that of ``rows``."""
    from ...score.grading import fresh_scoring_run_id
    from .scored import ScoredData
    from ...score.judges.llm_judge import Judge, judge_rows

    if judge is None:
        raise TypeError("run_judge() needs a judge: a callable, a wai.Judge, or a rubric string")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency= is how many rows are judged at once, an int >= 1; got {concurrency!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, Real) or timeout <= 0):
        raise ValueError(f"timeout= is seconds one verdict may take, above 0; got {timeout!r}")
    if run_id is not None and (not isinstance(run_id, str) or not run_id.strip()):
        raise ValueError(f"run_id= pins lineage.scoring_run_id: a non-empty string; got {run_id!r}")
    if not isinstance(source, str) or not source:
        raise ValueError(f"source= is the lineage.source stamp, a non-empty string; got {source!r}")
    scale = _check_scale(scale)
    cluster = cluster if cluster is not None else cluster_of(rows)
    run_cache = (getattr(rows, "coverage", None) or {}).get("cache") if isinstance(rows, RowsView) else None
    rows, policy, own_tools = source_rows(rows)
    tools = list(tools) if tools is not None else own_tools
    judge = _resolve_judge(judge, model, tools, policy, timeout)
    name = judge_name or name_of(judge)
    workers = min(int(concurrency), MAX_CONCURRENCY)
    copies = [_copy(r) for r in rows]
    cache = None
    if isinstance(judge, Judge):
        judge = with_run_cache(judge, run_cache)
        cache = getattr(judge, "response_cache", None)
        before = STATS.snapshot(cache.path) if cache else {}
        verdicts = judge_rows(judge, copies, workers)
        cache = summary(cache, (), since(cache.path, before)) if cache else None
        version = version or judge.version          # 0/1 verdicts: scale= has nothing to map
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="run-judge") as pool:
            verdicts = list(pool.map(lambda r: _one_verdict(judge, r, scale, timeout), copies))
    scoring_id = run_id or fresh_scoring_run_id()
    for row, verdict in zip(copies, verdicts):
        apply_verdict(row, verdict, name, scoring_id)
        row["lineage"]["source"] = source
        row["judge_meta"] = dict(verdict.get("judge_meta") or {"trust": None})
        if version:
            row["lineage"]["judge_version"] = version
    return ScoredData(trajectories=copies, judge_name=name, scoring_run_id=scoring_id, judge_version=version,
                      system_prompt=policy, tools=tools, cache=cache, _cluster=cluster)


def with_run_cache(judge, run_cache):
    """A regrade of a run made with ``advanced={"cache": ...}`` reads the same cache: a copy of a
    ``wai.Judge`` given no ``cache=`` of its own gets the run's (the caller's judge is untouched)."""
    if not run_cache or getattr(judge, "response_cache", None) is not None:
        return judge
    adopted = copy.copy(judge)
    adopted.response_cache = CacheSpec(run_cache["path"], bool(run_cache.get("agent_sampled")))
    return adopted
