"""simulate(): arguments -> RunConfig -> a job on Ray -> SimulationData.

This module stays thin: validation lives in ``config``, the plan in ``search``, the writer in
``situations``, the distributed loop in ``runtime``, the summary in ``result/report.py``.

It is also where the two layers meet: ``result/`` may not import the runtime, so a result is
handed the runtime's ``RayCluster`` (``runtime/data/services.py``, the ``Cluster`` of
``result/cluster.py``) by whoever makes it. ``simulate()`` gives it to the SimulationData it
builds; ``load``, ``grade_llm``, ``evaluate`` and ``run_judge`` below are the public
``wai.load``, ``wai.grade``/``wai.grade_llm``, ``wai.evaluate`` and ``wai.run_judge``: the
result layer's functions with ``cluster=RayCluster()`` passed in.
"""
from __future__ import annotations

import dataclasses
import functools
import time
import warnings as _warnings
from functools import partial
from typing import Any, Callable, ParamSpec, TypeVar

from .agents.backends import configured_ray_options
from .agents.forms import bound_role, is_async_callable, is_class_form
from .agents.model_settings import ModelSettings
from .agents.response_cache import cache_spec
from .agents.response_cache import summary as cache_summary
from .config.arguments import RunConfig, resolve_config
from .config.roles import resolve_roles
from .config.run_identity import run_identity
from .config.run_plan import lineage, plan_fingerprint, plan_settings, resolve_fault_rate, seeds_that_fit
from .core.defaults import TEMPERATURE
from .core.identity import new_run_id
from .core.progress import ProgressDict
from .core.rows import stored_row
from .core.run_warning import raised
from .core.strict_json import gc_paused
from .core.unit import RunMeta
from .result.data import SimulationData
from .result import loading as _loading
from .result.grading import evaluate as _evaluate
from .result.grading import paths as _paths
from .result.grading import run_judge as _run_judge
from .result.progress.lines import ProgressReporter, logger
from .result.progress.display import choose_display
from .result.grading.run_judge import with_run_cache
from .result.run_notes import add_resume_and_replay_notes
from .result.report import build_report
from .result.report_tally import DICTIONARY_COLUMNS, REPORT_COLUMNS
from .result.role_notes import add_role_notes
from .result.row_store import adopt_spilled, grader_note_rows, is_arrow, land_runs, row_store
from .result.warnings_text import rubric_unused_note
from .runtime.data.services import RayCluster
from .runtime.job_spec import JobSpec
from .runtime.run_result import RunResult, merge_results
from .score.conduct import conduct_grader
from .score.row_facts import warm_facts_table
from .score.grader_health import add_grader_note
from .score.grading import fresh_scoring_run_id
from .score.judges.contract import judge_name
from .score.judges.llm_judge import Judge
from .search.planner.settings import PlannerRecipe
from .search.tasks import UNFAITHFUL, build_tasks
from .search.traces.report import apply_trace_plan, drop_trace_copies
from .search.traces.steering import plan_traces
from .situations.covering import fold_fault_cells
from .situations.grid import build_axes, pairwise_cells, validate_dimensions
from .store.checkpoint.lock import caller_identity
from .store.checkpoint.meta import read_sidecar, write_sidecar
from .store.checkpoint.fingerprint import GRADER_ONLY, RUN_KEY, fingerprint, fingerprint_mismatch, with_grader
from .store.checkpoint.lines import HEADER_KEY
from .store.snapshots.file import snapshot_path
from .store.shards.storage import fill_stubs, shards_folder, shards_of


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _on_ray(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """``fn`` with ``cluster=RayCluster()`` unless the caller passed one (see the module docstring)."""
    @functools.wraps(fn)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        kwargs.setdefault("cluster", RayCluster())
        return fn(*args, **kwargs)
    return call


load = _on_ray(_loading.load)
grade_llm = _on_ray(_paths.grade_llm)
evaluate = _on_ray(_evaluate.evaluate)
run_judge = _on_ray(_run_judge.run_judge)
# Rows a Driver hands back as a list; past it they come as Parquet files, and a run still under
# advanced={"spill_rows": ...} is read back into a list here (a list of 50,000 rows held by the
# Driver, pickled and held again here, was most of both processes' memory).
DRIVER_LIST_ROWS = 10_000
CLASS_BUILD_S = 600.0                     # how long a class's __init__ (a model load) may take per actor


def simulate(agent: Any = None, *, spec: Any = None, tools: list[dict] | None = None,
             system_prompt: str | None = None, budget: int | None = 1000,
             time_budget: float | None = None, until: str = "compute", mode: str = "explore",
             situations: int | None = None, requests_per_situation: int | None = None,
             rollouts_per_request: int | None = None, unique_situations: bool = False,
             reproducible: bool | None = None, grade: bool | str = False, llm_grade: bool = False,
             traces: Any = None, grader: Any = None, rubric: str | None = None,
             strategy: str = "auto", seeds: list | None = None, scaffold: str | None = None,
             execute: Callable | None = None, output: str | None = None, tasks: Any = None,
             runs: int = 1, checkpoint: str | None = None,
             on_progress: Callable[[dict], None] | None = None, advanced: dict | None = None,
             repeats: int | None = None, phrasings: int | None = None,
             repeat_policy: str | None = None, concurrency: int | None = None,
             simulator: Any = None, user_model: Any = None, backend: Any = None,
             seed: int | None = None, sampling: dict | None = None, max_turns: int | None = None,
             avg_turns: float | None = None, fault_rate: float | None = None,
             temperature: float | None = None, timeout: float | None = None,
             logprobs: bool | None = None, hard_share: float | None = None,
             patience: str | None = None, **passed: Any) -> SimulationData:
    """Generate situations for an agent, roll them out, and return the rows.

    ``agent`` is a callable ``message -> {"steps": [...], "final_text": str}`` (or a backend
    spec): a function (run in threads), an ``async def`` function (awaited on its pool's event
    loop) or a class (built once per rollout actor with ``advanced["agent_args"/"agent_kwargs"]``,
    then called per rollout); see ``agents/forms.py``. Where each runs: ``runtime/pools/sizing.py``.
    Every other argument is keyword-only and documented in the seeds' ``simulate.md``. Nothing
    is spent before every argument has been checked.
    """
    explicit = {k: v for k, v in locals().items() if k not in ("agent", "passed")}
    started = time.time()                   # time_budget= counts from this call (search/planner/clock.py)
    cfg = resolve_config(agent, explicit, passed)
    unused = rubric_unused_note(cfg)
    if unused:
        _warnings.warn(unused, UserWarning, stacklevel=2)
    keep_fault_cells = isinstance(advanced, dict) and advanced.get("prefer_success") is False
    dims = validate_dimensions(cfg.dimensions, cfg.tools) if cfg.dimensions else None
    # traces= read and planned now: a file that holds no trace stops the run before any budget
    trace_plan = None
    if cfg.traces is not None:
        axes, cells = _grid(cfg, dims, keep_fault_cells)
        trace_plan = plan_traces(cfg, axes, cells, keep_fault_cells)
    roles = resolve_roles(cfg)              # every endpoint checked before any budget is spent
    return _run(cfg, dims, roles, keep_fault_cells, started, trace_plan)


def _grid(cfg, dims, keep_fault_cells: bool):
    """The grid's axes and its pairwise cells (fault cells folded outside rl unless asked)."""
    axes = build_axes(cfg.tools, cfg.system_prompt, dims)
    cells = pairwise_cells(axes)
    if cfg.mode != "rl" and not keep_fault_cells:
        cells = fold_fault_cells(cells)          # advanced={"prefer_success": False} keeps them
    return axes, cells


def agent_model_version(cfg: RunConfig, roles=None) -> str:
    if cfg.advanced.model_version:
        return str(cfg.advanced.model_version)
    if roles is not None and roles.agent is not None:
        return roles.agent.model or "model"
    agent = cfg.agent
    while isinstance(agent, partial):       # functools.partial(MyAgent, ...): named by MyAgent
        agent = agent.func
    name = getattr(agent, "__name__", None)
    return name if isinstance(name, str) and name else "callable-agent"


def _run(cfg: RunConfig, dims, roles, keep_fault_cells: bool = False, started: float | None = None,
         trace_plan=None) -> SimulationData:

    t_start = time.monotonic()
    run_id = cfg.advanced.run_id or new_run_id()
    axes, cells = _grid(cfg, dims, keep_fault_cells)
    traces = trace_plan if trace_plan is not None else plan_traces(cfg, axes, cells, keep_fault_cells)
    cells = traces.cells
    pinned: list = []
    pinned_k: list = []
    k, pinned_info = cfg.repeats, None
    if cfg.tasks is not None:
        pinned, source_k, pinned_info = build_tasks(cfg.tasks)
        if pinned_info["unfaithful"]:          # said before anything runs; listed in data.warnings too
            _warnings.warn(UNFAITHFUL, UserWarning, stacklevel=3)
        k = cfg.repeats if cfg.repeats_set else source_k
    seeds, dropped = seeds_that_fit(cfg, k)
    results, run_rows = [], []
    for eval_run in range(cfg.runs):
        settings = plan_settings(cfg, run_id, seeds, k, pinned, eval_run, axes, roles.writer is not None, traces,
                             pinned_k)
        result, rows, facts = _run_once(cfg, settings, cells, run_id, eval_run, roles,
                                 started if eval_run == 0 and started is not None else time.time())
        results.append(result)
        run_rows.append(rows)
        if eval_run == 0 and cfg.runs > 1 and not pinned:
            # the later runs replay run 0's units: its asks, each as many times as run 0 played it
            # (rl's successive policy stopped some early), so a deterministic agent repeats exactly
            pinned, _, pinned_info = build_tasks(rows)
            pinned_k = pinned_info["k_each"]
            k = max([k, *pinned_k])
            seeds = []
    result = merge_results(results)
    assert result.stopped_because is not None, "every run says why it stopped"
    data = SimulationData(trajectories=land_runs(run_rows, cfg.advanced.spill_rows),
                          stopped_because=result.stopped_because,
                          _cluster_grade_rows=cfg.advanced.cluster_grade_rows, _cluster=RayCluster())
    rows, leaked = drop_trace_copies(data.trajectories, traces)
    if leaked:
        data = SimulationData(trajectories=rows, stopped_because=result.stopped_because,
                              _cluster_grade_rows=cfg.advanced.cluster_grade_rows, _cluster=RayCluster())
    _k_cfg = cfg if k == cfg.repeats else _with_repeats(cfg, k)
    notes, tally = build_report(data, _k_cfg, result, axes=axes, cells=cells, seeds=seeds, dropped=dropped,
                                fault_rate=traces.fault_rate_or(resolve_fault_rate(cfg)), run_id=run_id,
                                t_start=t_start, facts=facts if cfg.runs == 1 and not leaked else None)
    apply_trace_plan(data, cfg, traces, leaked)
    add_resume_and_replay_notes(data, cfg, result, pinned_info, results, tally)
    first = results[0]
    data.search["timings"] = {
        "driver_start_s": round(first.driver_started_at - t_start, 3),
        "first_row_s": round(first.driver_started_at - t_start + (first.first_row_s or 0.0), 3),
        "last_row_s": (round(results[-1].driver_started_at - t_start + results[-1].last_row_s, 3)
                       if results[-1].last_row_s is not None else None),
        "elapsed_s": round(time.monotonic() - t_start, 3)}
    if first.data_plane is not None:           # shared storage: what reached the Driver vs the rows written
        data.search["data_plane"] = first.data_plane
    add_role_notes(data, cfg, roles, results, model_version=agent_model_version(cfg, roles), tally=tally)
    cache = cache_spec(cfg.advanced.cache, cfg.advanced.cache_agent_sampled)
    if cache is not None:       # the response cache: the counts on the rows (agent, user, judge) and the writer's
        written = [r.writer["cache"] for r in results if r.writer and r.writer.get("cache")]
        data.coverage["cache"] = cache_summary(cache, data.trajectories, {"writer": {
            k: sum(c[k] for c in written) for k in ("hits", "misses")}} if written else None)
    add_grader_note(data.warnings, grader_note_rows(data.trajectories))
    for w in data.warnings:
        logger.warning(w)
    for w in raised(notes):
        _warnings.warn(str(w), UserWarning, stacklevel=3)
    if cfg.llm_grade:
        data.llm_grade()
    if cfg.output:
        from .store.parquet.folder import write_parquet   # lazy: pyarrow, only when output= is set
        data.save(cfg.output, meta=True)
        write_parquet((stored_row(t) for t in data.trajectories), _parquet_path(cfg.output))
    return data


def _with_repeats(cfg, k):
    return dataclasses.replace(cfg, repeats=k)


def _parquet_path(output: str) -> str:
    return (output[:-6] if output.endswith(".jsonl") else output) + ".parquet"


def _run_once(cfg: RunConfig, settings, cells, run_id, eval_run, roles, started: float | None = None) -> tuple[RunResult, Any, Any]:
    """Play one evaluation run; return its ``RunResult``, its rows (a list, or ``ArrowRows``
    over the Driver's spill, whose folder this process now owns) and, when a spill became that
    list unchanged, the report's fact columns read from it (else None). ``started``: when
    simulate() was called (wall clock)."""
    from .runtime.caller.run import execute_job   # lazy: ray (~1 s), loaded when a run starts, not on import
    spec = _job_spec(cfg, settings, cells, run_id, eval_run, roles, started)
    regraded = _regrade_on_disk(spec)
    knobs = cfg.advanced
    reporter = ProgressReporter(cfg.on_progress, every_rows=knobs.progress_every_rows,
                                every_s=knobs.progress_every_s, display=choose_display(cfg.on_progress))
    last = ProgressDict()

    def on_snapshot(snap: ProgressDict) -> None:
        reporter.update(snap)                # (takes the Driver's progress marks out of the snapshot)
        last.update(snap)
        if snap.get("landed"):               # the report's imports load while the run plays
            warm_facts_table()

    try:
        result = execute_job(spec, on_snapshot)
    except BaseException:
        reporter.close()
        raise
    rows, facts = (result.rows if result.spilled is None else adopt_spilled(result.spilled)), None
    if result.spilled is not None and cfg.runs == 1 and result.row_count <= knobs.spill_rows:
        # the report's columns, as the spill holds them (computing them again from the list: ~1 s of 20,000 rows)
        if is_arrow(rows) and rows.has_columns(REPORT_COLUMNS):
            facts = row_store(rows).facts(REPORT_COLUMNS, DICTIONARY_COLUMNS)
        with gc_paused():
            rows = list(rows)                # a run under spill_rows is a list, as it always was
    if result.spilled is not None and (spec.shards or spec.checkpoint and shards_of(spec.checkpoint)):
        # shared storage: the spill holds stubs; the rows they point at are read here, a batch at a time
        row_store(rows).update(partial(fill_stubs, folder=spec.shards, checkpoint=spec.checkpoint))
        facts = None                         # (the spill held stubs)
    result = dataclasses.replace(result, rows=[], spilled=None,
                                 checkpoint_warnings=[*([regraded] if regraded else []), *result.checkpoint_warnings])
    cut = {tuple(g) for g in result.planner.group_cut}
    if cut and settings.k > 1:
        def mark(batch):
            for r in batch:
                if (r.get("scenario_id"), r["_key"][2]) in cut:
                    r["group_cut"] = True
        row_store(rows).update(mark)         # rows on disk: rewritten a batch at a time
        # (the facts read from the spill stand: ``group_cut`` is no report column, REPORT_COLUMNS)
    n, resumed = result.row_count, result.resumed_count
    final = last.copy()                      # the last line says it ended, and why
    final.update({"rows": n, "landed": n - resumed, "resumed": resumed, "inflight": 0, "cap": max(0, cfg.budget),
                  "elapsed_s": round(result.elapsed_s, 1), "stopped_because": result.stopped_because})
    reporter.emit(final)
    reporter.close(final)
    return result, rows, facts


def _job_spec(cfg: RunConfig, settings, cells, run_id, eval_run, roles, started: float | None = None) -> JobSpec:
    """What the runtime needs to play this evaluation run (``runtime/job_spec.py``); ``started``
    is when simulate() was called (wall clock): time_budget= counts from it."""
    knobs = cfg.advanced
    sampling, model = cfg.sampling, None
    if roles.agent is not None:
        sampling = {"temperature": cfg.temperature if cfg.temperature is not None else TEMPERATURE,
                    "max_tokens": cfg.agent_max_tokens, "model": roles.agent.model, **(cfg.sampling or {})}
        model = ModelSettings(roles.agent, roles.user, max_turns=cfg.max_turns, avg_turns=cfg.avg_turns,
                              temperature=sampling["temperature"], max_tokens=sampling["max_tokens"],
                              timeout=cfg.timeout, logprobs=cfg.logprobs or False, patience=cfg.patience,
                              tool_choice=knobs.tool_choice,
                              min_user_turns=knobs.min_user_turns,
                              user_temperature=knobs.user_temperature, cache=cache_spec(knobs.cache, knobs.cache_agent_sampled))
    meta = RunMeta(run_id=run_id, seed=cfg.seed, tools=cfg.tools, system_prompt=cfg.system_prompt,
                   model_version=agent_model_version(cfg, roles), sampling=sampling,
                   world_options=dict(knobs.world or {}), agent_timeout=cfg.timeout,
                   scaffold=(cfg.scaffold or "") if roles.agent is not None else "")
    grader = cfg.grader
    if cfg.grade == "conduct":
        grader = conduct_grader
    elif cfg.grade is True and grader is None:
        grader = roles.judge
    graders = grader is not None and grader is cfg.grader
    # a class given as agent=/execute=/grader= travels with its constructor arguments (agents/forms.py)
    agent = bound_role(cfg.agent, (knobs.agent_args, knobs.agent_kwargs)) if model is None else cfg.agent
    execute = bound_role(cfg.execute, (knobs.execute_args, knobs.execute_kwargs))
    grader = bound_role(grader, (knobs.grader_args, knobs.grader_kwargs)) if graders else grader
    form = "model" if model is not None else "async" if is_async_callable(agent) else "sync"
    ray_opts = {**configured_ray_options(), **(knobs.ray or {})}
    plan_fp = plan_fingerprint(cfg, settings)
    # the checkpoint's header, worked out here: the Driver gets plain data, never the callables
    # (a closure over a client stays home; issue 28 item 8), and a resume must match it (item 7)
    setup = None
    if cfg.checkpoint:
        setup = {**fingerprint(cfg.tools, cfg.system_prompt, agent_model_version(cfg, roles)), "plan": plan_fp,
                 RUN_KEY: run_identity(cfg, settings, roles, agent=agent, grader=grader, execute=execute,
                                       sampling=sampling, model=model)}
    caller = caller_identity()                 # who the Driver works for (its lock says so; it stops without us)
    job_run_id = run_id if eval_run == 0 else f"{run_id}_r{eval_run}"
    storage = knobs.shared_storage      # rollout actors write the rows (store/shards/storage.py)
    shards = shards_folder(cfg.checkpoint, storage) if storage not in (None, False) and cfg.checkpoint else None
    cache = cache_spec(knobs.cache, knobs.cache_agent_sampled)
    if cache is not None and isinstance(grader, Judge):    # grader=wai.Judge(...) reads the run's cache too
        grader = with_run_cache(grader, {"path": cache.path, "agent_sampled": cache.agent_sampled})
    return JobSpec(
        run_id=job_run_id, cap=max(0, cfg.budget),
        planner=PlannerRecipe(settings, cfg.tools, cfg.system_prompt, cfg.seed, cells, roles.writer),
        meta=meta, agent=agent, execute=execute, grader=grader, grader_is_callers=graders, model=model,
        agent_form=form, start_timeout_s=CLASS_BUILD_S if any(map(is_class_form, (agent, execute, grader)))
        else 60.0,
        shards=shards,
        checkpoint=cfg.checkpoint, checkpoint_header=setup, caller=caller, caller_timeout_s=knobs.caller_timeout_s,
        progress_every_rows=knobs.progress_every_rows,
        # Ray metrics tagged by this run (runtime/metrics/recorder.py); advanced={"metrics": False} turns them off
        metrics={"run_id": job_run_id, "mode": cfg.mode} if knobs.metrics else None,
        plan_fingerprint=plan_fp, stream_path=cfg.output if cfg.runs == 1 and not shards else None,
        # rows: a list up to spill_rows (a Driver keeps at most DRIVER_LIST_ROWS), Parquet past it
        spool_rows=min(knobs.spill_rows, DRIVER_LIST_ROWS),
        lineage=lineage(cfg, eval_run),
        # planner snapshots (store/snapshots/file.py): reproducible runs with a checkpoint and a
        # stateless (template) situation writer
        snapshot=(str(snapshot_path(cfg.checkpoint)) if cfg.checkpoint and cfg.reproducible
                  and roles.writer is None and knobs.plan_snapshot_s > 0 else None),
        snapshot_every_s=knobs.plan_snapshot_s, reproducible=cfg.reproducible, lag=knobs.lag,
        chunk_size=knobs.chunk_size, concurrency=cfg.concurrency, time_budget=cfg.time_budget,
        started_at=started, deadline_at=(started or time.time()) + cfg.time_budget if cfg.time_budget else None,
        timeout=cfg.timeout, judge_timeout=knobs.judge_timeout or None,
        judge_concurrency=knobs.judge_concurrency, judge_actors=int(ray_opts.pop("judge_actors", 1)),
        judge_name=judge_name(grader) if grader is not None else None,
        scoring_run_id=fresh_scoring_run_id() if grader is not None else None,
        label_source="conduct" if cfg.grade == "conduct" else None,
        rollout_actors=int(ray_opts.pop("rollout_actors", 0) or 0),
        concurrency_per_actor=int(ray_opts.pop("concurrency_per_actor", 0) or 0),
        edge_writing=bool(ray_opts.pop("edge_writing", True)), actor_options=ray_opts)


def _regrade_on_disk(spec) -> str | None:
    """A resume whose only change is the caller's ``grader=`` regrades the rows on disk with it (in
    place, under the checkpoint's lock: ``store/run_files.py``), records that grader in the header
    and says so; any other change is left to the Driver, which refuses it (``store/checkpoint/fingerprint.py``)."""
    side = read_sidecar(spec.checkpoint, HEADER_KEY) if spec.checkpoint_header and spec.grader_is_callers else None
    stored = (side or {}).get("fingerprint")
    if side is None or not isinstance(stored, dict) or spec.checkpoint_header is None \
            or fingerprint_mismatch(stored, spec.checkpoint_header) != GRADER_ONLY:
        return None
    from .result.loading import load      # lazy: reading a checkpoint back is rare here
    data = load(spec.checkpoint)
    n = len(data.trajectories)
    data.grade(grader=spec.grader)        # written back to the checkpoint, sidecar and key index kept
    write_sidecar(spec.checkpoint, with_grader(side, spec.checkpoint_header))
    note = (f"checkpoint={spec.checkpoint!r}: its {n} rows on disk were graded by another grader; they were "
            "regraded with this grader= before the run resumed, so every row carries this grader's reward")
    _warnings.warn(note, UserWarning, stacklevel=4)
    return note
