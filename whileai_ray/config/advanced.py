"""advanced={...}: the engine knobs, their defaults and bounds, and the non-numeric keys.

Numeric knobs are a table ``name -> (kind, default, floor, ceiling)``; non-numeric keys are
checked by their own rule (``ADVANCED_DEFAULTS`` says what an absent one means). The checked
values become one typed ``Knobs`` (``knobs.py``), so the engine reads ``cfg.advanced.lag``
and a misspelt name is a type-check error. "Moved" keyword names
(``simulate(dimensions=...)``) land here too; the label in a message says which way the value
came in (``dimensions=`` or ``advanced['dimensions']``).
"""
from __future__ import annotations

import difflib
import os
import re
from typing import Any, Callable

from ..core.defaults import MAX_TOKENS
from .rules import as_count, as_int, as_number, as_share, as_text_list, is_number
from .knobs import KNOB_FIELDS, NUMERIC_KNOBS, Knobs
from .tools import check_role

__all__ = ["KNOBS", "ARMS", "ADVANCED_DEFAULTS", "ADVANCED_KEYS", "validate_advanced"]

# name -> (kind, default, floor, ceiling)
KNOBS: dict[str, tuple[str, float, float, float]] = {
    "progress_every_rows": ("int", 10, 1, 10**6),
    "progress_every_s": ("number", 10.0, 0.1, 3600.0),
    "pass_threshold": ("number", 0.5, 0.0, 1.0),
    "dead_agent_errors": ("int", 16, 1, 10**6),
    "per_round": ("int", 64, 1, 10_000),
    "probe": ("int", 2, 1, 64),
    "completions_per_request": ("int", 1, 1, 8),
    "round_size": ("int", 64, 1, 4096),
    "lag": ("int", 8, 1, 64),            # rounds in flight: 8 x 64 = 512 units, 2x a concurrency of 256
    "chunk_size": ("int", 64, 1, 1024),
    "copies_needed": ("int", 5, 1, 1000),
    "judge_concurrency": ("int", 32, 1, 4096),
    "judge_timeout": ("number", 0.0, 0.0, 86400.0),     # seconds one verdict may take; 0 = no limit
    "family_cap": ("int", 3, 1, 1000),
    "plan_snapshot_s": ("number", 10.0, 0.0, 86400.0),  # seconds between planner snapshots; 0 = none
    # rows kept in memory; past this the result's rows spill to a temporary run folder (Parquet)
    "spill_rows": ("int", 50_000, 1, 10**10),
    # rows from which data.grade(fn) / wai.grade(path) grade on the cluster (Ray Data) not in-process
    "cluster_grade_rows": ("int", 100_000, 1, 10**10),
    "caller_timeout_s": ("number", 10.0, 1.0, 86400.0),  # a Driver not polled this long stops (orphan)
}
ARMS = ("structured", "open_ended", "behavior_targeted", "failure_mutation", "llm_guided")
# What an absent non-numeric key means (None: the engine's own choice).
ADVANCED_DEFAULTS: dict[str, Any] = {
    "world": {}, "arm_weights": None, "mutate_failures": True, "mutate_graded_failures": None,
    "prefer_success": False, "model_version": None, "seed_prompts": [], "extra_situations": [],
    "dimensions": None, "ray": {}, "run_id": None, "texture": None, "risk": None, "agent_max_tokens": MAX_TOKENS,
    "opening": "auto", "steering_weight": None, "embedder": None, "llm_spec": None,
    "min_user_turns": None, "user_temperature": None, "writer_temperature": None,
    "tool_choice": None, "metrics": True, "shared_storage": None,
    # the response cache of model calls (agents/response_cache.py): a SQLite file path, and whether
    # the agent's requests at temperature > 0 are cached too
    "cache": None, "cache_agent_sampled": False,
    # constructor arguments of a class given as agent=/grader=/execute= (built once per actor)
    "agent_args": (), "agent_kwargs": {}, "grader_args": (), "grader_kwargs": {},
    "execute_args": (), "execute_kwargs": {},
}
ADVANCED_KEYS = tuple(sorted(set(KNOBS) | set(ADVANCED_DEFAULTS)))


def _knob(name: str, value: Any, label: str) -> int | float:
    kind, default, floor, ceiling = KNOBS[name]
    noun = "an integer" if kind == "int" else "a number"
    ok = is_number(value) and (kind == "number" or float(value).is_integer())
    if not ok:
        raise ValueError(f"{label} is {noun}; got {value!r}; the default is {default}")
    number = int(value) if kind == "int" else float(value)
    if number < floor:
        raise ValueError(f"{label}={number} is below its floor {floor}; the default is {default}")
    if number > ceiling:
        raise ValueError(f"{label}={number} is above its ceiling {ceiling}; "
                         f"the default is {default}")
    return number


def _dict(value: Any, label: str, what: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{label} is a dict of {what}; got {type(value).__name__}")
    return dict(value)


def _bool(value: Any, label: str) -> bool:
    if value is True or value is False:
        return value
    raise ValueError(f"{label} is True or False; got {value!r}")


def _world(value: Any, label: str) -> dict:
    """Mock world options, checked now (an unknown key or a bad value is a ValueError that lists
    the fields) so a typo never runs a whole budget against the default world."""
    options = _dict(value, label, "mock world options")
    from ..world.options import world_options
    world_options(options)
    return options


def _arm_weights(value: Any, label: str) -> dict:
    weights = _dict(value, label, "arm -> weight")
    unknown = sorted(str(arm) for arm in weights if arm not in ARMS)
    if unknown:
        raise ValueError(f"{label} names unknown arm(s) {unknown}; known arms: {', '.join(ARMS)}")
    for arm, weight in weights.items():
        if not is_number(weight) or float(weight) < 0:
            raise ValueError(f"{label}[{arm!r}] is a weight of 0 or more; got {weight!r}")
    if weights and sum(float(w) for w in weights.values()) <= 0:
        raise ValueError(f"{label} needs at least one arm with a weight above 0")
    return {arm: float(weight) for arm, weight in weights.items()}


def _opening(value: Any, label: str) -> str | float:
    if isinstance(value, str) and value.lower() in ("user", "agent", "auto"):
        return value.lower()
    if is_number(value) and 0.0 <= float(value) <= 1.0:
        return float(value)
    raise ValueError(f"{label} is \"user\", \"agent\", \"auto\", or a rate in [0, 1] (the share "
                     f"of conversations the user opens); got {value!r}")


def _dimensions(value: Any, label: str) -> dict:
    if not isinstance(value, dict) or not value:
        raise ValueError(f"{label} must be a non-empty dict of axis -> list of values, "
                         f"e.g. {{'stance': ['adversarial']}}; got {value!r}")
    return value  # contents are checked by situations.grid.validate_dimensions


def _embedder(value: Any, label: str) -> Any:
    if isinstance(value, str) or callable(value):
        return value
    raise TypeError(f"{label} is an embedder name (str) or a callable texts -> vectors; "
                    f"got {type(value).__name__}")


def _reply_budget(value: Any, label: str) -> int:
    tokens = as_int(value, label, "the reply budget in tokens")
    if tokens < 64:
        raise ValueError(f"{label} is the reply budget in tokens (64 or more); got {tokens}")
    return tokens


def _model_version(value: Any, label: str) -> str:
    if isinstance(value, str) and value.strip():
        return value
    raise ValueError(f"{label} is a non-empty string naming the agent version; got {value!r}")


def _tool_choice(value: Any, label: str):
    """OpenAI's tool_choice: "auto" | "required" | "none" | a tool's name | the wire dict."""
    if value in ("auto", "required", "none"):
        return value
    if isinstance(value, str) and value.strip():
        return {"type": "function", "function": {"name": value.strip()}}
    function = value.get("function") if isinstance(value, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if isinstance(name, str) and name:
        return {"type": "function", "function": {"name": name}}
    raise ValueError(f"{label} is 'auto', 'required', 'none', a tool's name, or "
                     f"{{'type': 'function', 'function': {{'name': <tool>}}}}; got {value!r}")


def _shared_storage(value: Any, label: str):
    """True (beside the checkpoint), or a folder every node sees / a pyarrow filesystem URI."""
    if value is True or value is None or value is False:
        return value
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise ValueError(f"{label} is True (shards beside the checkpoint), a folder every node sees, a "
                     f"filesystem URI such as 's3://bucket/runs', or False; got {value!r}")


def _cache_path(value: Any, label: str) -> str | None:
    """The response cache's file: a path (a SQLite file, made when absent), or None for no cache."""
    if value is None or value is False:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str) and value.strip():
        path = os.path.expanduser(value.strip())
        if os.path.isdir(path):
            raise ValueError(f"{label} is a file path for the response cache (a SQLite file); {path!r} is a folder: "
                             f"name a file in it, e.g. {os.path.join(path, 'responses.sqlite')!r}")
        return os.path.abspath(path)
    raise ValueError(f"{label} is the response cache's file path, e.g. 'runs/responses.sqlite', or None; "
                     f"got {value!r}")


def _run_id(value: Any, label: str) -> str:
    """A run names itself (the Driver actor, the Ray Job): letters, digits, '-', '_', '.'."""
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}", value):
        raise ValueError(f"{label} is a run name of letters, digits, '-', '_' or '.' (up to 128 characters); "
                         f"got {value!r}")
    return value


def _ctor_args(value: Any, label: str) -> tuple:
    if isinstance(value, (list, tuple)):
        return tuple(value)
    raise ValueError(f"{label} is a tuple (or list) of positional arguments for the class's constructor, "
                     f"e.g. ('/models/m.gguf',); got {type(value).__name__}")


def _ctor_kwargs(value: Any, label: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{label} is a dict of keyword arguments for the class's constructor, "
                         f"e.g. {{'model_path': '/models/m.gguf'}}; got {type(value).__name__}")
    bad = [k for k in value if not (isinstance(k, str) and k.isidentifier())]
    if bad:
        raise ValueError(f"{label} keys are the constructor's parameter names; {bad[0]!r} is not one")
    return dict(value)


_RULES: dict[str, Callable[[Any, str], Any]] = {
    "world": _world,
    "arm_weights": _arm_weights,
    "mutate_failures": _bool,
    "mutate_graded_failures": _bool,
    "prefer_success": _bool,
    "model_version": _model_version,
    "seed_prompts": lambda v, lab: as_text_list(v, lab, "opening asks"),
    "extra_situations": lambda v, lab: as_text_list(v, lab, "asks to add to the pool"),
    "dimensions": _dimensions,
    "ray": lambda v, lab: _dict(v, lab, "Ray options (address, num_cpus, ...)"),
    "run_id": lambda v, lab: _run_id(v, lab),
    "texture": as_share,
    "risk": as_share,
    "agent_max_tokens": _reply_budget,
    "opening": _opening,
    "steering_weight": lambda v, lab: as_number(v, lab, "a steering weight of 0 or more", low=0.0),
    "embedder": _embedder,
    "llm_spec": check_role,
    "min_user_turns": lambda v, lab: as_count(v, lab, "the fewest user lines per conversation",
                                              floor=0),
    "user_temperature": lambda v, lab: as_number(v, lab, "a sampling temperature", low=0.0),
    "writer_temperature": lambda v, lab: as_number(v, lab, "a sampling temperature", low=0.0),
    "tool_choice": _tool_choice,
    "metrics": _bool,          # Ray metrics (runtime/metrics/recorder.py); False: no metric is recorded
    "agent_args": _ctor_args, "agent_kwargs": _ctor_kwargs, "grader_args": _ctor_args,
    "grader_kwargs": _ctor_kwargs, "execute_args": _ctor_args, "execute_kwargs": _ctor_kwargs,
    "shared_storage": _shared_storage,   # rollout actors write their rows there (store/shards/storage.py)
    "cache": _cache_path,
    "cache_agent_sampled": _bool,
}
assert set(_RULES) == set(ADVANCED_DEFAULTS)
# Knobs' fields are these tables' keys, with the same defaults (an absent key means the field's default).
assert tuple(KNOBS) == NUMERIC_KNOBS and set(KNOB_FIELDS) == set(ADVANCED_KEYS)
assert all(getattr(Knobs(), name) == default and type(getattr(Knobs(), name)) is type(default)
           for name, (_kind, default, _floor, _ceiling) in KNOBS.items())
assert all(getattr(Knobs(), name) == default for name, default in ADVANCED_DEFAULTS.items()
           if name != "mutate_graded_failures")


def _label(name: str, moved: set[str]) -> str:
    return f"{name}=" if name in moved else f"advanced['{name}']"


def validate_advanced(advanced: Any, moved: dict | None = None, *, has_grader: bool = False,
                      has_traces: bool = False) -> Knobs:
    """Merge ``advanced`` with the moved keyword names, check every key, and build the ``Knobs``
    (``given``: the keys passed; ``mutate_graded_failures`` left out means "with a grader").

    ``moved`` holds moved names given as keywords (``{"dimensions": {...}}``); a name given both
    ways with different values is a ValueError.
    """
    if advanced is None:
        advanced = {}
    if not isinstance(advanced, dict):
        raise TypeError(f"advanced= is a dict of engine knobs, e.g. {{'probe': 2}}; "
                        f"got {type(advanced).__name__}")
    merged = dict(advanced)
    for name, value in (moved or {}).items():
        if name in advanced and advanced[name] != value:
            raise ValueError(f"pass {name}= or advanced['{name}'], not both")
        merged[name] = value
    moved_names = set(moved or {})
    unknown = sorted(str(key) for key in merged if key not in ADVANCED_KEYS)
    if unknown:
        key = unknown[0]
        close = difflib.get_close_matches(key, ADVANCED_KEYS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ";"
        raise TypeError(f"advanced has no key {key!r}{hint} known keys: {', '.join(ADVANCED_KEYS)}")
    out: dict = {}
    for name in sorted(merged):
        label = _label(name, moved_names)
        rule = _RULES.get(name)
        out[name] = rule(merged[name], label) if rule else _knob(name, merged[name], label)
    if out.get("mutate_graded_failures") and not has_grader:
        raise ValueError("advanced['mutate_graded_failures']=True needs grader=: without a "
                         "callable grader there is no verdict to mutate on")
    if out.get("cache_agent_sampled") and not out.get("cache"):
        raise ValueError(f"{_label('cache_agent_sampled', moved_names)}=True needs advanced['cache'] (the cache's "
                         f"file path), e.g. advanced={{'cache': 'responses.sqlite', 'cache_agent_sampled': True}}")
    if out.get("steering_weight") is not None and not has_traces:
        raise ValueError(f"{_label('steering_weight', moved_names)} needs traces=: it weighs "
                         f"the pull toward what the traces show; pass traces= or drop it")
    given = frozenset(out)
    out.setdefault("mutate_graded_failures", has_grader)
    return Knobs(given=given, **out)
