"""simulate() arguments -> one resolved, validated RunConfig.

``resolve_config(agent, explicit, passed)`` is the whole front door: ``explicit`` is the dict of
simulate()'s named parameters (missing names take their documented default), ``passed`` its
``**passed`` (aliases and "moved" names). Everything is checked before any work starts, with
messages that name the argument and the fix; the mode presets (reference section 2.5) are
applied here so the engine reads plain numbers: ``cfg.phrasings`` (n), ``cfg.repeats`` (k),
``cfg.repeat_policy``, ``cfg.unique_situations``.

Value rules live in ``rules``, agents and tools in ``tools``, the ``advanced``
table in ``advanced`` (all in this folder).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Callable

from .advanced import ADVANCED_KEYS, validate_advanced
from .knobs import Knobs
from .rules import (MODE_PRESETS, REPEAT_POLICIES, STRATEGIES, UNTIL_CHOICES, as_count,
                           as_int, as_logprobs, as_number, as_patience, as_path, as_share,
                           as_text, as_text_list, check_tasks, check_traces, choice, is_number)
from .tools import agent_kind, check_role, check_simulator, check_spec, normalize_tools
from ..agents.forms import check_role_forms
from ..core.defaults import MAX_TOKENS
from ..store.run_files import check_output

__all__ = ["SIMULATE_PARAMS", "PARAM_DEFAULTS", "PASSED_ALIASES", "MOVED_NAMES", "RunConfig",
           "resolve_config", "knob", "BUDGET_NONE_CAP"]

PARAM_DEFAULTS: dict[str, Any] = {
    "agent": None, "spec": None, "tools": None, "system_prompt": None, "budget": 1000,
    "time_budget": None, "until": "compute", "mode": "explore", "situations": None,
    "requests_per_situation": None, "rollouts_per_request": None, "unique_situations": False,
    "reproducible": None, "grade": False, "llm_grade": False, "traces": None, "grader": None,
    "rubric": None, "strategy": "auto", "seeds": None, "scaffold": None, "execute": None,
    "output": None, "tasks": None, "runs": 1, "checkpoint": None, "on_progress": None,
    "advanced": None, "repeats": None, "phrasings": None, "repeat_policy": None,
    "concurrency": None, "simulator": None, "user_model": None, "backend": None, "seed": None,
    "sampling": None, "max_turns": None, "avg_turns": None, "fault_rate": None,
    "temperature": None, "timeout": None, "logprobs": None, "hard_share": None, "patience": None,
}
SIMULATE_PARAMS: tuple[str, ...] = tuple(PARAM_DEFAULTS)
PASSED_ALIASES: dict[str, str] = {"unique": "unique_situations", "n": "phrasings",
                                  "rollouts_per_prompt": "repeats", "policy": "system_prompt"}
MOVED_NAMES: tuple[str, ...] = (
    "dimensions", "arm_weights", "risk", "texture", "min_user_turns", "agent_max_tokens",
    "llm_spec", "embedder", "seed_prompts", "extra_situations", "prefer_success",
    "steering_weight", "opening")
BUDGET_NONE_CAP = 50_000      # budget=None: run until saturation, at most this many rows
DEFAULT_CONCURRENCY = 32
DEFAULT_HARD_SHARE = 0.40
# Same count under several names: canonical -> (names in the order a message lists them).
_SAME_COUNT = {
    "repeats": ("rollouts_per_request", "repeats", "rollouts_per_prompt"),
    "phrasings": ("requests_per_situation", "phrasings", "n"),
    "system_prompt": ("system_prompt", "policy"),
    "unique_situations": ("unique_situations", "unique"),
}


@dataclass
class RunConfig:
    """Every simulate() argument, resolved: defaults filled, aliases merged, presets applied."""
    agent: Any = None
    agent_kind: str | None = None          # None / "callable" / "spec" / "backend"
    spec: Any = None
    tools: list = field(default_factory=list)           # full OpenAI function schemas
    tool_functions: dict = field(default_factory=dict)  # name -> plain function given in tools=
    system_prompt: str = ""
    budget: int = 1000
    budget_was_none: bool = False
    time_budget: float | None = None
    until: str = "compute"
    mode: str = "explore"
    situations: int | None = None
    phrasings: int = 1
    repeats: int = 1
    repeats_set: bool = False
    phrasings_set: bool = False
    unique_situations: bool = True
    repeat_policy: str = "none"
    reproducible: bool = True
    grade: bool | str = False
    llm_grade: bool = False
    traces: Any = None
    grader: Callable | None = None
    rubric: str | None = None
    strategy: str = "auto"
    seeds: list = field(default_factory=list)
    scaffold: str | None = None
    execute: Callable | None = None
    output: str | None = None
    tasks: Any = None
    runs: int = 1
    checkpoint: str | None = None
    on_progress: Callable | None = None
    advanced: Knobs = field(default_factory=Knobs)       # advanced={...}, checked (config/knobs.py)
    concurrency: int = DEFAULT_CONCURRENCY
    simulator: Any = None
    user_model: Any = None
    backend: Any = None
    seed: int = 0
    sampling: dict | None = None
    max_turns: int | None = None
    avg_turns: float | None = None
    fault_rate: float | None = None
    fault_rate_set: bool = False
    temperature: float | None = None
    timeout: float = 300.0
    timeout_set: bool = False
    agent_max_tokens: int = MAX_TOKENS
    logprobs: bool | str | None = None
    hard_share: float = DEFAULT_HARD_SHARE
    hard_share_set: bool = False
    patience: dict = field(default_factory=lambda: as_patience(None))
    dimensions: dict | None = None
    explicit: frozenset = frozenset()
    notes: list = field(default_factory=list)


def knob(cfg: RunConfig, name: str) -> Any:
    """The knob ``name`` by its name (given, or what an absent key means); an unknown name is a
    KeyError. Code reads ``cfg.advanced.<name>``; this is for a name held in a string."""
    if name not in ADVANCED_KEYS:
        raise KeyError(f"advanced has no knob {name!r}")
    return getattr(cfg.advanced, name)


def _is_set(name: str, value: Any) -> bool:
    """Whether the caller changed ``name`` from its documented default."""
    default = PARAM_DEFAULTS.get(name)
    if default is None or isinstance(default, bool):
        return value is not default
    plain = type(value) in (int, float, str)
    return not (plain and value == default)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # arrays and other values without a plain truth
        return a is b


def _unexpected(name: str) -> TypeError:
    known = SIMULATE_PARAMS + tuple(PASSED_ALIASES) + MOVED_NAMES
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return TypeError(f"simulate() got an unexpected keyword argument {name!r}{hint}")


def _merge_same_count(args: dict, given: set, aliases: dict) -> None:
    """Fold aliases into their canonical name; two names with different values is an error."""
    for canonical, names in _SAME_COUNT.items():
        present = [(n, aliases[n] if n in aliases else args.get(n)) for n in names
                   if n in aliases or (n in given)]
        if not present:
            continue
        first_name, first = present[0]
        for other_name, other in present[1:]:
            if not _same(first, other):
                listed = [n + "=" for n in names if n in dict(present)]
                joined = (" or ".join(listed) if len(listed) == 2
                          else ", ".join(listed[:-1]) + ", or " + listed[-1])
                raise ValueError(f"pass {joined}, not both; they set one thing "
                                 f"({first_name}={first!r} vs {other_name}={other!r})")
        args[canonical] = first
        given.add(canonical)


def resolve_config(agent: Any, explicit: dict, passed: dict) -> RunConfig:
    """Validate simulate()'s arguments and return the resolved RunConfig (see module doc)."""
    for name in passed:
        if name not in PASSED_ALIASES and name not in MOVED_NAMES:
            raise _unexpected(name)
    args = {name: explicit.get(name, default) for name, default in PARAM_DEFAULTS.items()}
    args["agent"] = agent if agent is not None else args["agent"]
    given = {name for name in SIMULATE_PARAMS if _is_set(name, args[name])}
    aliases = {n: v for n, v in passed.items() if n in PASSED_ALIASES}
    moved = {n: v for n, v in passed.items() if n in MOVED_NAMES}
    _merge_same_count(args, given, aliases)
    cfg = RunConfig(explicit=frozenset(given | set(moved) | set(aliases)))
    _resolve_roles(cfg, args)
    _resolve_counts(cfg, args, given)
    _resolve_choices(cfg, args)
    _resolve_callables(cfg, args)
    _resolve_sampling(cfg, args)
    cfg.advanced = validate_advanced(args["advanced"], moved, has_grader=cfg.grader is not None,
                                     has_traces=cfg.traces is not None)
    _apply_advanced(cfg)
    check_role_forms({"agent": cfg.agent if cfg.agent_kind == "callable" else None,
                      "grader": cfg.grader, "execute": cfg.execute}, cfg.advanced.role_arguments())
    _check_shared_storage(cfg)
    return cfg


def _check_shared_storage(cfg: RunConfig) -> None:
    """advanced['shared_storage'] puts the rows in shards the checkpoint points at: it needs the
    checkpoint, and graded rows still travel to the judges through the Driver."""
    if cfg.advanced.shared_storage in (None, False):
        return
    if cfg.checkpoint is None:
        raise ValueError("advanced['shared_storage'] needs checkpoint=: the checkpoint keeps which rows "
                         "landed and where; pass checkpoint='runs/name.jsonl' or drop shared_storage")
    if cfg.grade or cfg.grader is not None:
        raise ValueError("advanced['shared_storage'] does not grade while the run goes (rows reach the judges "
                         "through the Driver); drop grade=/grader= and grade afterwards with data.grade(), "
                         "or drop shared_storage")


def _resolve_roles(cfg: RunConfig, args: dict) -> None:
    cfg.agent_kind = agent_kind(args["agent"], "agent=")
    cfg.agent = args["agent"]
    spec = args["spec"]
    if isinstance(spec, str):
        spec = check_spec(spec, "spec=")
    cfg.spec = spec
    cfg.tools, cfg.tool_functions = normalize_tools(args["tools"])
    cfg.system_prompt = as_text(args["system_prompt"], "system_prompt=", "the agent's policy") or ""
    cfg.backend = check_role(args["backend"], "backend=")
    cfg.user_model = check_role(args["user_model"], "user_model=")
    cfg.simulator = check_simulator(args["simulator"])
    if (cfg.agent is None and cfg.spec is None and cfg.backend is None and not cfg.tools
            and not cfg.system_prompt.strip()):
        raise ValueError("simulate needs an agent, tools=, or a system prompt: pass a callable "
                         "agent, a spec like agent='openai:gpt-4.1-mini', tools=[...], or "
                         "system_prompt='...'")


def _resolve_counts(cfg: RunConfig, args: dict, given: set) -> None:
    budget = args["budget"]
    cfg.budget_was_none = budget is None
    cfg.budget = BUDGET_NONE_CAP if budget is None else as_count(
        budget, "budget=", "a number of rows",
        fix="pass e.g. budget=100, or budget=None to run until saturation")
    time_budget = args["time_budget"]
    if time_budget is not None:
        time_budget = as_number(time_budget, "time_budget=", "a number of seconds")
    cfg.time_budget = time_budget if time_budget and time_budget > 0 else None
    if args["situations"] is not None:
        cfg.situations = as_count(args["situations"], "situations=",
                                  "N, the number of distinct worlds", floor=1,
                                  fix="seed openers go in seeds= or advanced['seed_prompts']")
    cfg.concurrency = DEFAULT_CONCURRENCY if args["concurrency"] is None else as_count(
        args["concurrency"], "concurrency=", "the number of rollouts in flight", floor=1)
    if args["max_turns"] is not None:
        cfg.max_turns = as_count(args["max_turns"], "max_turns=",
                                 "the most agent turns per rollout", floor=1)
    if args["avg_turns"] is not None:
        cfg.avg_turns = as_number(args["avg_turns"], "avg_turns=",
                                  "the mean user lines per conversation, 1 or more", low=1.0)
    cfg.runs = as_count(args["runs"], "runs=", "how many times to replay the task set")
    if cfg.runs < 1:
        raise ValueError(f"runs= is how many times to replay the task set, 1 or more; "
                         f"got {args['runs']!r}")
    cfg.seed = 0 if args["seed"] is None else as_int(args["seed"], "seed=", "the run seed")
    n = k = None
    if "phrasings" in given and args["phrasings"] is not None:
        n = as_count(args["phrasings"], "phrasings=", "n, wordings per situation", floor=1)
    if "repeats" in given and args["repeats"] is not None:
        k = as_count(args["repeats"], "repeats=", "k, rollouts per wording", floor=1)
    cfg.phrasings_set, cfg.repeats_set = n is not None, k is not None
    mode = choice(args["mode"], "mode=", tuple(MODE_PRESETS))
    preset_n, preset_k, policy, unique = MODE_PRESETS[mode]
    cfg.mode = mode
    if args["repeat_policy"] is not None:
        policy = choice(args["repeat_policy"], "repeat_policy=", REPEAT_POLICIES)
    if policy == "unique":
        policy, unique = "none", True
    unique_flag = args["unique_situations"]
    if unique_flag not in (True, False):
        raise ValueError(f"unique_situations= is True or False; got {unique_flag!r}")
    if unique_flag:
        unique = True
        preset_n, preset_k = 1, 1
    cfg.repeat_policy, cfg.unique_situations = policy, unique
    cfg.phrasings = n if n is not None else preset_n
    cfg.repeats = k if k is not None else preset_k


def _resolve_choices(cfg: RunConfig, args: dict) -> None:
    cfg.until = choice(args["until"], "until=", UNTIL_CHOICES)
    check_traces(args["traces"])
    cfg.traces = args["traces"]
    cfg.strategy = choice(args["strategy"], "strategy=", STRATEGIES)
    if cfg.strategy in ("trace", "targeted") and cfg.traces is None:
        raise ValueError(f"strategy={cfg.strategy!r} needs traces= (rows or a JSONL path of "
                         f"production traces); pass traces= or use strategy='auto'")
    reproducible = args["reproducible"]
    if reproducible not in (None, True, False):
        raise ValueError(f"reproducible= is True, False, or None (True unless time_budget= is "
                         f"set); got {reproducible!r}")
    cfg.reproducible = (cfg.time_budget is None) if reproducible is None else bool(reproducible)
    grade = args["grade"]
    if grade is not True and grade is not False and grade != "conduct":
        raise ValueError(f"grade= is True, False, or 'conduct'; got {grade!r}. A callable "
                         f"judge goes in grader=, a rubric in rubric=")
    cfg.grade = grade
    if args["llm_grade"] not in (True, False):
        raise ValueError(f"llm_grade= is True or False; got {args['llm_grade']!r}")
    cfg.llm_grade = bool(args["llm_grade"])
    cfg.rubric = as_text(args["rubric"], "rubric=", "the grading rubric")
    cfg.scaffold = as_text(args["scaffold"], "scaffold=", "generation-only guidance")
    # absolute now: the driver actor that writes them may run with another working directory
    cfg.output = _absolute(as_path(args["output"], "output=", "where the whole run is written"))
    cfg.checkpoint = _absolute(as_path(args["checkpoint"], "checkpoint=", "the JSONL file rows land in"))
    check_output(cfg.output, cfg.checkpoint)       # output= never overwrites a checkpoint (issue 11)
    if cfg.runs > 1 and cfg.checkpoint is not None:
        raise ValueError("checkpoint= holds one run's rows; pass runs=1 with checkpoint=, or "
                         "drop checkpoint= (output= still writes every run)")
    cfg.seeds = as_text_list(args["seeds"], "seeds=", "opening asks")
    check_tasks(args["tasks"])
    cfg.tasks = args["tasks"]
    if cfg.tasks is not None and cfg.seeds:
        raise ValueError("tasks= and seeds= cannot be combined: tasks= replays a fixed task "
                         "set, seeds= opens a new one; pass one of them")
    cfg.patience = as_patience(args["patience"])
    cfg.logprobs = as_logprobs(args["logprobs"])


def _absolute(path: str | None) -> str | None:
    import os
    return os.path.abspath(os.path.expanduser(path)) if path else path


def _resolve_callables(cfg: RunConfig, args: dict) -> None:
    for name, what in (("grader", "a callable row -> {'reward': ...}; to grade with a rubric "
                                  "use grade=True or data.grade()"),
                       ("on_progress", "a callable that receives a dict per progress line"),
                       ("execute", "a callable (tool, arguments) -> result")):
        value = args[name]
        if value is not None and not callable(value):
            raise TypeError(f"{name}= takes {what}; got {type(value).__name__}")
        setattr(cfg, name, value)


def _resolve_sampling(cfg: RunConfig, args: dict) -> None:
    sampling = args["sampling"]
    if sampling is not None and not isinstance(sampling, dict):
        raise ValueError(f"sampling= is a dict of how your agent samples, e.g. "
                         f"{{'temperature': 0.7, 'max_tokens': 768}}; got {sampling!r}")
    cfg.sampling = dict(sampling) if sampling is not None else None
    if args["temperature"] is not None:
        cfg.temperature = as_number(args["temperature"], "temperature=",
                                    "a sampling temperature of 0 or more", low=0.0)
    hard_share = args["hard_share"]
    cfg.hard_share_set = hard_share is not None
    cfg.hard_share = DEFAULT_HARD_SHARE if hard_share is None else as_share(hard_share,
                                                                            "hard_share=")
    fault_rate = args["fault_rate"]
    if fault_rate is not None:
        if not is_number(fault_rate):
            raise ValueError(f"fault_rate= is a share between 0 and 1 (of situations whose "
                             f"scheduled tool fault is kept); got {fault_rate!r}")
        cfg.fault_rate = as_number(fault_rate, "fault_rate=",
                                   "a share between 0 and 1 of situations that keep their fault",
                                   low=0.0)
        cfg.fault_rate_set = True
    if args["timeout"] is not None:
        cfg.timeout = as_number(args["timeout"], "timeout=", "seconds one agent call may take",
                                low=0.0)
        if cfg.timeout <= 0:
            raise ValueError("timeout= is seconds one agent call may take, above 0; leave it "
                             "unset for max(300, agent_max_tokens / 4)")
        cfg.timeout_set = True


def _apply_advanced(cfg: RunConfig) -> None:
    advanced = cfg.advanced
    cfg.dimensions = advanced.dimensions
    cfg.agent_max_tokens = advanced.agent_max_tokens
    if not cfg.timeout_set:
        cfg.timeout = float(max(300.0, cfg.agent_max_tokens / 4))
    risk = advanced.risk
    if risk is not None:
        if cfg.fault_rate_set and cfg.fault_rate != risk:
            cfg.notes.append(f"risk={risk:g} overrides fault_rate={cfg.fault_rate:g}; "
                             f"pass one of them")
        cfg.fault_rate, cfg.fault_rate_set = risk, True
    if cfg.fault_rate is not None and cfg.fault_rate > 1:
        cfg.notes.append(f"fault_rate={cfg.fault_rate:g} is above 1; it is a share of "
                         f"situations, so every scheduled fault is kept (same as 1.0)")
