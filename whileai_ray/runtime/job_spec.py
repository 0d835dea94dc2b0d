"""JobSpec: everything one run hands the runtime, as one frozen, typed record.

``simulate()`` builds it (``simulation._run_once``) once every argument is checked and every
role resolved; the runtime reads its fields by name (the Driver, the pools, the players), so a
renamed or missing field fails where the record is built, not in an actor halfway through a run.
It travels to the Driver actor as it is (pickled), so what it holds must pickle when the run's
pools are Ray actors; the caller's own pool (``pools/caller_pool.py``) keeps the callables at home, and
``caller/run.py`` leaves them out of the Driver's copy. So no other field may hold a callable of the
caller's (an agent inside a ``partial``, the run's config), and none holds a function of
``simulate()``'s: the Driver builds its planner from ``planner`` (a ``PlannerRecipe``), opens the
checkpoint from ``checkpoint`` and ``checkpoint_header`` (the agent's fingerprint in place of the
agent, issue 28 item 8) and lands rows into a spool of ``spool_rows`` (``driver/setup.py``).

What the run *asks* about its pool (``rollout_actors``, ``concurrency_per_actor``, the agent's
form) is here; what the pool *is* depends on the cluster, known only once Ray is up, and is a
``PoolPlan`` (``pools/sizing.py``) decided by the caller's side of the runtime.

Plain data, no Ray: simulate() imports this module without paying for Ray.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.unit import RunMeta
from ..search.planner.settings import PlannerRecipe

__all__ = ["JobSpec", "AGENT_FORMS"]

AGENT_FORMS = ("sync", "async", "model")   # a Python function (threads), an async def (one loop), a model backend


@dataclass(frozen=True)
class JobSpec:
    run_id: str                                # names the Driver actor and every unit's key
    cap: int                                   # the budget: rows this run may land
    planner: PlannerRecipe                     # settings, cells, tools, writer: the Driver builds the planner
    meta: RunMeta                              # what every row of the run shares
    agent: Any = None                          # the caller's callable (None for a model backend)
    execute: Any = None                        # execute=: the caller's tools
    grader: Any = None                         # grader=, the conduct check, or a Judge (None: no judging)
    grader_is_callers: bool = False            # grader= came from the caller (not our conduct check or Judge)
    model: Any = None                          # ModelSettings when the agent is a model backend
    agent_form: str = "sync"                   # one of AGENT_FORMS: sizes the pool (pools/sizing.py)
    checkpoint: str | None = None              # its path: opened on the Driver; a live writer is refused
    checkpoint_header: dict | None = None      # its header as plain data: fingerprint, plan, run record
    caller: dict | None = None                 # who the Driver works for (pid, host): it stops without us
    caller_timeout_s: float = 10.0             # no poll for this long: the caller counts as gone
    progress_every_rows: int = 10              # a progress mark every this many events (driver/progress_marks.py)
    metrics: dict | None = None                # Ray metrics tags {"run_id", "mode"}; None: metrics off
    plan_fingerprint: str | None = None        # what decides the plan (an exact resume replays it)
    stream_path: str | None = None             # output=: landed rows appended while the run goes
    spool_rows: int = 10_000                   # rows the Driver's spool keeps as a list; past it, Parquet files
    lineage: dict | None = None                # stamped on every row handed back (runs=N, tasks=)
    shards: str | None = None                  # shared storage: rollout actors write rows here (store/shards/storage.py)
    snapshot: str | None = None                # planner snapshot file (None: no snapshots)
    snapshot_every_s: float = 0.0
    reproducible: bool = True                  # decide round r + lag from what landed by round r only
    lag: int = 8                               # rounds in flight (reproducible mode)
    chunk_size: int = 64                       # units per call to a rollout lane (most)
    concurrency: int = 32                      # rollouts in flight, all lanes together
    time_budget: float | None = None           # seconds from simulate()'s call; None: no clock
    started_at: float | None = None            # wall clock (time.time()) when simulate() was called
    deadline_at: float | None = None           # started_at + time_budget (search/planner/clock.py); None: no clock
    timeout: float | None = None               # one agent call's limit (and the watchdog's base)
    judge_timeout: float | None = None
    judge_concurrency: int = 32                # verdicts in flight per judge lane
    judge_actors: int = 1
    judge_name: str | None = None              # written on graded rows
    scoring_run_id: str | None = None
    label_source: str | None = None            # "conduct" when grade="conduct"
    rollout_actors: int = 0                    # advanced={"ray": {"rollout_actors": N}}; 0: fit the cluster
    concurrency_per_actor: int = 0             # advanced={"ray": {"concurrency_per_actor": N}}; 0: derived
    actor_options: dict = field(default_factory=dict)   # num_cpus, num_gpus, resources, scheduling_strategy ...
    start_timeout_s: float = 60.0              # lanes placed and started (a class's __init__ may load a model)
    edge_writing: bool = True                  # rollout lanes write the planner's next asks (driver/edge_writing.py)

    def __post_init__(self) -> None:
        if self.agent_form not in AGENT_FORMS:
            raise ValueError(f"JobSpec.agent_form must be one of {AGENT_FORMS}; got {self.agent_form!r}")

    def callables(self) -> dict:
        """The caller's own callables by role (``caller/stay_home.py`` looks at them): the agent when it is
        a function or class (not a model backend), ``execute=``, and a ``grader=`` of theirs."""
        return {role: obj for role, obj in (("agent", self.agent if self.model is None else None),
                                            ("execute", self.execute),
                                            ("grader", self.grader if self.grader_is_callers else None))
                if obj is not None}
