"""Knobs: ``advanced={...}`` checked once, as one typed, frozen object.

``validate_advanced`` (``advanced.py``) checks every key (unknown ones get a "did you mean"
TypeError) and builds a ``Knobs``; the engine then reads ``cfg.advanced.lag`` instead of
``cfg.advanced["lag"]``, so a misspelt knob is a type-check error (mypy), not a KeyError
halfway through a run. Each field's default is what an absent key means (``KNOBS`` and
``ADVANCED_DEFAULTS`` in ``advanced.py``; ``advanced.py`` asserts the two agree at import).

Two things the old plain dict carried beside the values are kept:

* ``given``: the names the caller passed (``passed(name)``). A few readers care whether a key
  was given at all, not only its value: the report's ``knobs`` entry lists the given numbers.
* ``as_dict()``: the exact dict ``validate_advanced`` used to return (the given keys in sorted
  order, then every numeric knob, ``mutate_failures`` and ``mutate_graded_failures``), for the
  places that need a mapping. Its keys and values must not drift: reports and digests read it.

A ``Knobs`` is plain data: it pickles (it travels inside specs to Ray actors) and compares by value.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ..core.defaults import MAX_TOKENS

__all__ = ["Knobs", "NUMERIC_KNOBS", "ROLE_NAMES", "KNOB_FIELDS"]

# The numeric knobs, in the order validate_advanced filled their defaults (as_dict keeps it).
NUMERIC_KNOBS = ("progress_every_rows", "progress_every_s", "pass_threshold", "dead_agent_errors", "per_round",
                 "probe", "completions_per_request", "round_size", "lag", "chunk_size", "copies_needed",
                 "judge_concurrency", "judge_timeout", "family_cap", "plan_snapshot_s", "spill_rows",
                 "cluster_grade_rows", "caller_timeout_s")
ROLE_NAMES = ("agent", "grader", "execute")


@dataclass(frozen=True)
class Knobs:
    """Every ``advanced=`` key as a typed field; see ``advanced.py`` for what each one means."""

    # ---- numeric knobs (bounds in advanced.KNOBS) ----
    progress_every_rows: int = 10
    progress_every_s: float = 10.0
    pass_threshold: float = 0.5
    dead_agent_errors: int = 16
    per_round: int = 64
    probe: int = 2
    completions_per_request: int = 1
    round_size: int = 64
    lag: int = 8
    chunk_size: int = 64
    copies_needed: int = 5
    judge_concurrency: int = 32
    judge_timeout: float = 0.0            # 0: no limit
    family_cap: int = 3
    plan_snapshot_s: float = 10.0         # 0: no planner snapshots
    spill_rows: int = 50_000
    cluster_grade_rows: int = 100_000
    caller_timeout_s: float = 10.0
    # ---- the other keys (None: the engine's own choice) ----
    world: dict = field(default_factory=dict)
    arm_weights: dict[str, float] | None = None
    mutate_failures: bool = True
    mutate_graded_failures: bool | None = None   # validate_advanced resolves it: True with a grader
    prefer_success: bool = False
    model_version: str | None = None
    seed_prompts: list[str] = field(default_factory=list)
    extra_situations: list[str] = field(default_factory=list)
    dimensions: dict | None = None
    ray: dict = field(default_factory=dict)
    run_id: str | None = None
    texture: float | None = None
    risk: float | None = None
    agent_max_tokens: int = MAX_TOKENS
    opening: str | float = "auto"
    steering_weight: float | None = None
    embedder: Any = None                  # an embedder name or a callable texts -> vectors
    llm_spec: Any = None                  # a backend spec string or a backend object
    min_user_turns: int | None = None
    user_temperature: float | None = None
    writer_temperature: float | None = None
    tool_choice: str | dict | None = None
    metrics: bool = True
    shared_storage: bool | str | None = None
    cache: str | None = None
    cache_agent_sampled: bool = False
    agent_args: tuple = ()
    agent_kwargs: dict = field(default_factory=dict)
    grader_args: tuple = ()
    grader_kwargs: dict = field(default_factory=dict)
    execute_args: tuple = ()
    execute_kwargs: dict = field(default_factory=dict)
    # ---- which keys the caller passed (advanced= or a moved keyword such as dimensions=) ----
    given: frozenset[str] = frozenset()

    def passed(self, name: str) -> bool:
        """Whether the caller gave ``name`` (its value may still equal the default)."""
        return name in self.given

    def role_arguments(self) -> dict[str, tuple[tuple, dict]]:
        """``{"agent": (agent_args, agent_kwargs), "grader": ..., "execute": ...}``: the constructor
        arguments of a class given as that role."""
        return {"agent": (self.agent_args, self.agent_kwargs), "grader": (self.grader_args, self.grader_kwargs),
                "execute": (self.execute_args, self.execute_kwargs)}

    def as_dict(self) -> dict[str, Any]:
        """The dict ``validate_advanced`` returned before ``Knobs`` existed, key for key and in order:
        the given keys (sorted), then the numeric knobs left out, ``mutate_failures`` and
        ``mutate_graded_failures``. Non-numeric keys the caller left out are absent."""
        out: dict[str, Any] = {name: getattr(self, name) for name in sorted(self.given)}
        for name in NUMERIC_KNOBS:
            out.setdefault(name, getattr(self, name))
        out.setdefault("mutate_failures", self.mutate_failures)
        out.setdefault("mutate_graded_failures", self.mutate_graded_failures)
        return out


KNOB_FIELDS = tuple(  # every knob's name (the fields, less ``given``)
    f.name for f in fields(Knobs) if f.name != "given")
