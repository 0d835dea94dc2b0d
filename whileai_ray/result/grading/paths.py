"""Grading after the run: the paths behind ``data.grade(...)``, ``grade()``/``grade_llm()``,
``llm_grade()``, ``rank()`` and ``leak_report()``.

``grade_run(data, ...)`` is ``SimulationData.grade`` in full; it picks a path by what it is given:

* ``grader`` (a callable, or a class built once): scores the trajectories in place (``grading.grade_batch``), runs
  the trust check, rewrites ``path`` (or the run's own path) and returns the run itself;
* ``judge=`` (the contract path): :func:`grade_with_judge` returns a :class:`ScoredData` of
  copies; the run is left untouched and judge failures stay marked per row;
* ``llm=True``: :func:`llm_grade`, advisory ``llm_reward``/``llm_reason``, reward untouched;
* nothing: :func:`grade_llm` with a ``wai.Judge`` (the rubric, or the conduct floor) and the
  judge report dict.

``grade_llm(source)`` takes a run, a row list (in place) or a JSONL/Parquet path (rewritten unless
``output=``); its judge is built and checked before any row is touched (RuntimeError, nothing spent).

A run whose rows are on disk (Arrow-backed, ``row_store.py``), or a path with more rows than a run
keeps in memory, is graded a batch at a time by ``grading/batch.py`` (on the cluster past
``advanced={"cluster_grade_rows": ...}`` rows, through the ``Cluster`` it was given:
``result/cluster.py``; ``grade_llm(path, cluster=...)`` for a path); the results are the same
as the list's.
"""
from __future__ import annotations

import os
from collections import Counter
from functools import partial
from pathlib import Path

from ...agents.backends import redact
from ...agents.response_cache import STATS, since
from ...agents.response_cache import summary as cache_summary
from ...core.defaults import JUDGE_MAX_TOKENS, JUDGE_PAYLOAD_CHARS
from ...core.rows import HIDDEN_KEYS, stored_row
from ...score.grader_health import add_grader_note
from ...score.grading import fresh_scoring_run_id, grade_batch, note_grading
from ...score.judges.contract import judge_name
from ...score.judges.labels import TRUST_MODES, attach_labels, trust_check
from ...score.leak import leak_report
from ...score.judges.llm_judge import Judge, build_judge, judge_rows
from ...score.rank import rank
from ...store.reader import load_rows
from ...store.run_files import write_rows
from ..cluster import Cluster, cluster_of
from .batch import (apply_llm_verdicts, attach_labels_stored, built_grader, grade_llm_stored,
                            grade_stored, llm_grade_stored, rank_stored, stamp_trust)
from ..row_store import grader_note_rows, is_arrow, open_large_path, row_store, spill_rows
from .run_judge import with_run_cache
from .scored import ScoredData

__all__ = ["grade_run", "grade_with_judge", "grade_llm", "llm_grade", "rank_source", "leak_report_of",
           "attach_labels_to"]


def _is_run(source) -> bool:
    rows = getattr(source, "trajectories", None)
    return isinstance(rows, list) or is_arrow(rows)


def _check_trust(trust) -> None:
    if trust not in TRUST_MODES:
        raise ValueError(f"trust={trust!r}: use 'warn' (log when unmeasured or failing), 'require' "
                         "(raise instead) or 'off' (skip the check)")


def _stamp_trust(rows, trust: str) -> dict | None:
    summary = trust_check(rows, trust)
    for row in rows:
        meta = row.get("judge_meta") if isinstance(row.get("judge_meta"), dict) else {}
        row["judge_meta"] = {**meta, "trust": summary}
    return summary


def _export(row: dict) -> dict:
    try:
        return stored_row(row)
    except ValueError:  # a foreign row without prompt/steps/final_text: write what it has
        return {k: v for k, v in row.items() if v is not None and k[:1] != "_" and k not in HIDDEN_KEYS}


def _write(rows, path, source=None) -> str:
    """Rows back to a file in its own format (a checkpoint stays one: ``store/run_files.py``);
    streamed: rows on disk are written a row group at a time."""
    return write_rows((_export(r) for r in rows), path, source=source)


def _save_run(data, path) -> str | None:
    if hasattr(data, "_touch"):
        data._touch()
    target = path or getattr(data, "path", "")
    if not target:
        return None
    data.save(os.fspath(target))
    return os.fspath(target)


def _write_back(source, rows, kind: str, target) -> str | None:
    """A run saves to ``target`` or its own path; a path source is rewritten unless ``target``
    names another file; a row list is written only when ``target`` is given."""
    if kind == "run":
        return _save_run(source, target)
    if kind == "path":
        return _write(rows, target or source, source=source)
    return _write(rows, target) if target else None


def grade_with_judge(data, judge, *, concurrency: int = 32, version: str | None = None, scale=None,
                     trust: str = "warn") -> ScoredData:
    """The contract path: copies of the run's rows graded by ``judge`` (``result/grading/run_judge.py``, the one
    engine behind it and ``evaluate``), plus the trust check; the run is untouched."""
    from .run_judge import run_judge
    _check_trust(trust)
    if not callable(judge):
        raise TypeError("judge= takes a callable row -> {'reward': 0 or 1, 'reason': str, 'markers': {...}} "
                        "(a bare number works too) or a wai.Judge")
    if isinstance(judge, Judge):       # a run made with advanced={"cache": ...}: the regrade reads it too
        judge = with_run_cache(judge, (getattr(data, "coverage", None) or {}).get("cache"))
    if is_arrow(data.trajectories):    # copies on disk too: a new spill, graded a row group at a time
        from types import SimpleNamespace
        scoring_id = fresh_scoring_run_id()
        policy, tools = getattr(data, "system_prompt", "") or "", list(getattr(data, "tools", []) or [])

        def graded_copies(batch):
            part = SimpleNamespace(trajectories=batch, system_prompt=policy, tools=tools)
            return run_judge(part, judge, concurrency=max(1, int(concurrency)), version=version, scale=scale,
                             run_id=scoring_id).trajectories
        copies = spill_rows(r for batch in row_store(data.trajectories).batches() for r in graded_copies(batch))
        store = row_store(copies)
        summary = trust_check([store[i] for i, g in enumerate(store.facts(["gold"]).column(0).to_pylist()) if g],
                              trust)
        store.update(partial(stamp_trust, summary=summary))
        first = store[0] if len(store) else {}
        return ScoredData(trajectories=copies, judge_name=first.get("judge_name") or judge_name(judge),
                          scoring_run_id=scoring_id, judge_version=version or getattr(judge, "version", None),
                          system_prompt=policy, tools=tools, _cluster=cluster_of(data))
    scored = run_judge(data, judge, concurrency=max(1, int(concurrency)), version=version, scale=scale)
    _stamp_trust(scored.trajectories, trust)
    return scored


def _source_rows(source, policy, tools):
    """(rows, policy, tools, kind) for a run, a row list or a path."""
    if _is_run(source):
        return (source.trajectories, policy or getattr(source, "system_prompt", ""),
                tools if tools is not None else getattr(source, "tools", None), "run")
    if isinstance(source, (str, os.PathLike)):
        if Path(source).is_dir():
            raise ValueError(f"grade({os.fspath(source)!r}) is a folder; pass the JSONL or Parquet file")
        large = open_large_path(source)      # a large file: rows read lazily (Parquet) or spilled (JSONL)
        rows, meta = large if large is not None else load_rows(source)
        return (rows, policy or meta.get("system_prompt") or "",
                tools if tools is not None else meta.get("tools"), "path")
    if not isinstance(source, (list, tuple)):
        raise TypeError(f"grade(source=...) takes a SimulationData, a row list, or a JSONL/Parquet path; "
                        f"got {type(source).__name__}")
    return source, policy, tools, "rows"


def _check_limit(limit) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit= is how many rows to grade, an int >= 0; got {limit!r}")


def _limit(rows, limit):
    _check_limit(limit)
    return list(rows) if limit is None else list(rows)[:limit]


def grade_llm(source, spec=None, base_url=None, model=None, concurrency: int = 16, api_key=None, path=None,
              limit=None, output=None, prompt=None, policy: str = "", tools=None, use_privileged: bool = False,
              trust: str = "warn", payload_chars: int = JUDGE_PAYLOAD_CHARS, max_tokens: int = JUDGE_MAX_TOKENS, rubric=None,
              cluster: Cluster | None = None) -> dict:
    """Binary 0/1 grades with an LLM judge; returns the report ``{graded, n0, n1, backend,
    judge_version, warnings, rubric, note?, unjudged, trust, path?}``. ``prompt=`` is the rubric
    under its older name. ``cluster``: where a large source is graded (``result/cluster.py``; a
    run's own when None; ``wai.grade`` passes this process's Ray)."""
    _check_trust(trust)
    rows, policy, tools, kind = _source_rows(source, policy, tools)
    rubric = rubric if rubric is not None else prompt
    judge = build_judge(spec, base_url, model, api_key, rubric, policy, tools, use_privileged,
                         payload_chars, max_tokens)
    judge = with_run_cache(judge, (getattr(source, "coverage", None) or {}).get("cache") if kind == "run" else None)
    cache = getattr(judge, "response_cache", None)
    cache_before = STATS.snapshot(cache.path) if cache else {}
    if is_arrow(rows):
        _check_limit(limit)
        statuses, rewards, summary = grade_llm_stored(source if kind == "run" else rows, judge, concurrency,
                                                      limit, trust, cluster)
    else:
        target = _limit(rows, limit)
        verdicts = judge_rows(judge, target, concurrency)
        apply_llm_verdicts(target, verdicts, judge, fresh_scoring_run_id())
        summary = _stamp_trust(target, trust)
        statuses = Counter(v["judge_status"] for v in verdicts)
        rewards = Counter(v["reward"] for v in verdicts if v["judge_status"] == "ok")
    n_judged = sum(statuses.values())
    dialect = judge.dialect
    if dialect is None and is_arrow(rows):       # judged on the cluster: the rows say what the endpoint spoke
        dialect = next((m.get("structured_output") for m in (rows[i].get("judge_meta") for i in range(min(len(rows), 64)))
                        if isinstance(m, dict) and m.get("structured_output")), None)
    warnings = []
    unjudged = n_judged - statuses.get("ok", 0)
    if unjudged:
        detail = ", ".join(f"{s} {n}" for s, n in sorted(statuses.items()) if s != "ok")
        warnings.append(f"{unjudged} of {n_judged} rows unjudged ({detail}); their reward is None, not 0")
    if sum(rewards.values()) > 1 and len(rewards) == 1:
        warnings.append(f"every graded row scored {next(iter(rewards))}: check the rubric before trusting it")
    if summary is not None and not summary["ok"]:
        warnings.append(summary["note"])
    report = {"graded": statuses.get("ok", 0), "n0": rewards.get(0, 0), "n1": rewards.get(1, 0),
              "backend": f"{judge.backend.provider}:{judge.model}@{redact(judge.backend.base_url)}",
              "judge_version": judge.version, "warnings": warnings,
              "rubric": judge.rubric or "conduct floor", "unjudged": unjudged, "trust": summary,
              "structured_output": dialect}
    from ...agents.structured import dialect_note
    judge_note = dialect_note("judge", judge.backend.base_url, dialect)
    if judge_note:
        warnings.append(judge_note)
    if not judge.rubric:
        report["note"] = "no rubric given: the judge graded the conduct floor only"
    if cache is not None:        # the response cache's lookups of this grading (in this process)
        report["cache"] = cache_summary(cache, (), since(cache.path, cache_before))
    written = _write_back(source, rows, kind, output or path)
    if written:
        report["path"] = written
    return report


def llm_grade(data, spec=None, concurrency: int = 16, api_key=None, path=None, *, base_url=None, model=None,
              rubric=None, use_privileged: bool = False, payload_chars: int = JUDGE_PAYLOAD_CHARS, max_tokens: int = JUDGE_MAX_TOKENS):
    """Advisory LLM scores: ``llm_reward`` (0/1, None when unjudged) and ``llm_reason`` on every row;
    ``reward`` is left as it was. Returns ``data`` (a run or a row list)."""
    rows, policy, tools, kind = _source_rows(data, "", None)
    if kind == "path":
        raise TypeError("llm_grade() takes a SimulationData or a row list; for a file use grade(path)")
    judge = build_judge(spec, base_url, model, api_key, rubric, policy, tools, use_privileged,
                         payload_chars, max_tokens)
    if is_arrow(rows):
        llm_grade_stored(data, judge, concurrency)
    else:
        for row, verdict in zip(rows, judge_rows(judge, rows, concurrency)):
            row["llm_reward"] = verdict["reward"] if verdict["judge_status"] == "ok" else None
            row["llm_reason"] = verdict["reason"]
    if kind == "run" and hasattr(data, "_touch"):
        data._touch()
    if path:
        _write_back(data, rows, kind, path)
    return data


def grade_run(data, grader=None, judge=None, llm: bool = False, llm_spec=None, spec=None, api_key=None,
              path=None, concurrency: int = 32, llm_concurrency: int = 16, version=None,
              use_privileged: bool = False, scale=None, rubric=None, trust: str = "warn",
              payload_chars: int = JUDGE_PAYLOAD_CHARS, max_tokens: int = JUDGE_MAX_TOKENS):
    """``SimulationData.grade`` (see the module docstring for the paths)."""
    _check_trust(trust)
    spec = spec if spec is not None else llm_spec
    if grader is not None and judge is not None:
        raise ValueError("pass grader= (score in place) or judge= (scored copies), not both")
    if judge is not None:
        return grade_with_judge(data, judge, concurrency=concurrency, version=version, scale=scale, trust=trust)
    if grader is not None and not isinstance(grader, Judge):
        if not callable(grader):
            raise TypeError("grader= takes a callable row -> number | {'reward': ..., 'reason': ...}")
        if is_arrow(data.trajectories):
            grade_stored(data, grader, concurrency, trust)
        else:
            name = judge_name(grader)
            grade_batch(data.trajectories, built_grader(grader), name, fresh_scoring_run_id(), concurrency)
            note_grading(data, data.trajectories, name)
            _stamp_trust(data.trajectories, trust)
        if isinstance(getattr(data, "warnings", None), list):
            add_grader_note(data.warnings, grader_note_rows(data.trajectories))
        _save_run(data, path)
        return data
    if llm:
        return llm_grade(data, spec, llm_concurrency, api_key, path, rubric=rubric,
                         use_privileged=use_privileged, payload_chars=payload_chars, max_tokens=max_tokens)
    if isinstance(grader, Judge):
        spec = grader
    return grade_llm(data, spec=spec, concurrency=llm_concurrency, api_key=api_key, path=path,
                     use_privileged=use_privileged, rubric=rubric, trust=trust,
                     payload_chars=payload_chars, max_tokens=max_tokens)


def rank_source(source, output=None, min_quality=None) -> dict:
    """Module ``rank(source, output=, min_quality=)`` and ``data.rank(path=)``: quality scores in place
    (a path is rewritten, or ``output`` written); the summary gains ``path`` when a file was written."""
    rows, _, _, kind = _source_rows(source, "", None)
    summary = rank_stored(rows, min_quality) if is_arrow(rows) else rank(rows, min_quality=min_quality)
    written = _write_back(source, rows, kind, output)
    if written:
        summary["path"] = written
    return summary


def attach_labels_to(data, labels, kind: str = "human", annotator=None, replace: bool = False) -> dict:
    """``data.attach_labels``: in place for a list, a rewrite for rows on disk."""
    if is_arrow(data.trajectories):
        return attach_labels_stored(data, labels, kind, annotator, replace)
    return attach_labels(data.trajectories, labels, kind=kind, annotator=annotator, replace=replace)


def leak_report_of(source, min_len: int = 12):
    """``data.leak_report(min_len)``: reads the trajectories, which still carry ``privileged``."""
    rows = source.trajectories if _is_run(source) else source
    return leak_report(rows, min_len)
