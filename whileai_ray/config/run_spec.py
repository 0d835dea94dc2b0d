"""The TOML run spec: one file that says everything ``whileai-ray run`` / ``submit`` needs.

A spec names the agent, its tools and system prompt, and the ``simulate()`` arguments::

    agent = "my_agents:support_bot"          # "module:function", or a backend spec string
    # agent_kwargs = { rate = 0.35 }         # present: agent is a factory, called with these
    tools = "my_agents:TOOLS"                # or inline [[tools]] tables (OpenAI schemas)
    system_prompt = "You help customers with orders."
    run_id = "orders-nightly"                # optional; default <file stem>-<content sha>
    # output_dir = "/mnt/whileai/outputs"    # default $WHILEAI_OUTPUT_DIR, else "outputs"
    # checkpoint = "run.jsonl"               # default <output_dir>/<run_id>/checkpoint.jsonl
    # output = "rows.jsonl"                  # default <output_dir>/<run_id>/rows.jsonl

    [simulate]                               # any simulate() keyword argument
    budget = 500
    simulator = false
    grader = "my_agents:grade_row"           # callables are "module:attr" strings

``load_spec(path)`` reads and validates the file (pydantic, ``extra="forbid"``); every error
names the field (``simulate.budgt: unknown simulate() argument; did you mean 'budget'?``) and
is raised as ``SpecError`` (a ValueError). ``spec.build()`` imports what the spec points at
and returns ``(agent, kwargs)`` for ``wai.simulate(agent, **kwargs)``.

Paths: ``checkpoint`` / ``output`` relative paths are under ``output_dir``; ``false`` turns
one off. The run id is a function of the file's bytes, so resubmitting the same spec finds
the same checkpoint and resumes from it.
"""
from __future__ import annotations

import difflib
import importlib
import inspect
import os
import re
import sys
from pathlib import Path
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, create_model, field_validator

from ..core.rng import stable_hash
from ..errors import SpecError
from .arguments import MOVED_NAMES, PASSED_ALIASES, SIMULATE_PARAMS, resolve_config
from .roles import resolve_roles
from .tools import SPEC_PROVIDERS, check_spec, normalize_tools

if sys.version_info >= (3, 11):
    import tomllib
else:                        # Python 3.10: the same parser, as the `tomli` backport (a dependency there)
    import tomli as tomllib

__all__ = ["RunSpec", "SpecError", "load_spec", "parse_spec_text", "import_ref"]

TOP_LEVEL = ("agent", "tools", "system_prompt", "checkpoint", "output")
CALLABLE_ARGS = ("grader", "execute", "on_progress")
_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
_SIMULATE_FIELDS: dict[str, Any] = {name: (Any, None)
                                    for name in SIMULATE_PARAMS + tuple(PASSED_ALIASES) + MOVED_NAMES
                                    if name not in TOP_LEVEL}
if TYPE_CHECKING:
    class SimulateTable(BaseModel):
        """The ``[simulate]`` table: one optional field per simulate() argument (made at runtime)."""
else:
    SimulateTable = create_model("SimulateTable", __config__=ConfigDict(extra="forbid"), **_SIMULATE_FIELDS)


def import_ref(ref: str, field: str) -> Any:
    """``"package.module:attr.sub"`` -> the object; errors name ``field`` and the fix."""
    if not isinstance(ref, str) or not _REF.match(ref):
        raise SpecError(f"{field}: {ref!r} is not a 'module:attribute' reference "
                        f"(e.g. 'my_agents:support_bot')")
    module_name, _, attr_path = ref.partition(":")
    for folder in (os.getcwd(),):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    try:
        obj = importlib.import_module(module_name)
    except ImportError as exc:
        raise SpecError(f"{field}: cannot import module {module_name!r} ({exc}); run from the "
                        f"folder that holds it or add it to PYTHONPATH") from exc
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            raise SpecError(f"{field}: module {module_name!r} has no attribute {attr_path!r}")
        obj = getattr(obj, part)
    return obj


def _is_backend_spec(value: str) -> bool:
    head = value.partition(":")[0].strip().lower()
    return value.lower().startswith(("http://", "https://")) or head in SPEC_PROVIDERS


class RunSpec(BaseModel):
    """One run, as a TOML file describes it (see the module doc for every field)."""
    model_config = ConfigDict(extra="forbid")

    agent: str
    agent_kwargs: dict[str, Any] | None = None
    tools: Any = None
    system_prompt: str | None = None
    simulate: SimulateTable = Field(default_factory=SimulateTable)
    run_id: str | None = None
    output_dir: str | None = None
    checkpoint: str | bool | None = None
    output: str | bool | None = None
    _source_sha: str | None = PrivateAttr(default=None)
    _source_stem: str | None = PrivateAttr(default=None)

    @field_validator("agent")
    @classmethod
    def _agent_form(cls, value: str) -> str:
        value = value.strip()
        if _is_backend_spec(value):
            return check_spec(value, "")
        if not _REF.match(value):
            raise ValueError(f"{value!r} is neither 'module:function' (e.g. "
                             f"'my_agents:support_bot') nor a backend spec ('openai:<model>', "
                             f"'vllm:<model>@<url>', an http(s):// URL)")
        return value

    @field_validator("tools")
    @classmethod
    def _tools_form(cls, value):
        if isinstance(value, str):
            if not _REF.match(value):
                raise ValueError(f"{value!r}: tools is a list of OpenAI function schemas or a "
                                 f"'module:attribute' reference to one (e.g. 'my_agents:TOOLS')")
            return value
        if value is not None:
            try:
                normalize_tools(value)
            except TypeError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("run_id")
    @classmethod
    def _run_id_form(cls, value):
        if value is not None and not _RUN_ID.match(value):
            raise ValueError(f"{value!r}: a run id is 1-63 letters, digits, '_', '.' or '-', "
                             f"starting with a letter or digit")
        return value

    # ------------------------------------------------------------------ derived
    @property
    def agent_is_backend(self) -> bool:
        return _is_backend_spec(self.agent)

    def simulate_args(self) -> dict[str, Any]:
        """The ``[simulate]`` table as written (only the keys the file sets)."""
        return self.simulate.model_dump(exclude_unset=True)

    def resolved_run_id(self) -> str:
        """``run_id``, else ``<file stem>-<sha of the file's bytes>`` (stable per spec)."""
        if self.run_id:
            return self.run_id
        sha = self._source_sha or stable_hash(self.model_dump(mode="json"))
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", self._source_stem or "spec").strip("-.") or "spec"
        return f"{stem[:40]}-{sha[:12]}"

    def paths(self, run_id: str | None = None) -> dict[str, str | None]:
        """Where this run writes: ``{"checkpoint": ..., "output": ...}`` (None: not written)."""
        run_id = run_id or self.resolved_run_id()
        root = Path(self.output_dir or os.environ.get("WHILEAI_OUTPUT_DIR") or "outputs")
        runs = self.simulate_args().get("runs", 1)
        out: dict[str, str | None] = {}
        for name, default in (("checkpoint", "checkpoint.jsonl"), ("output", "rows.jsonl")):
            value = getattr(self, name)
            if value is False or (name == "checkpoint" and value in (None, True) and runs != 1):
                out[name] = None
            elif value in (None, True):
                out[name] = str(root / run_id / default)
            else:
                out[name] = str(root / value)   # an absolute value replaces root
        return out

    def build(self, run_id: str | None = None, *, make_dirs: bool = True
              ) -> tuple[Any, dict[str, Any]]:
        """Import what the spec names; return ``(agent, kwargs)`` for ``wai.simulate``.

        ``make_dirs`` creates the folders the checkpoint and output land in."""
        tools = self.tools
        if isinstance(tools, str):
            tools = import_ref(tools, "tools")
        agent: Any = self.agent
        if not self.agent_is_backend:
            agent = import_ref(self.agent, "agent")
            if self.agent_kwargs is not None:
                agent = _call_factory(agent, dict(self.agent_kwargs), tools)
        elif self.agent_kwargs is not None:
            raise SpecError("agent_kwargs: only a 'module:function' agent takes agent_kwargs")
        kwargs = self.simulate_args()
        for name in CALLABLE_ARGS:
            if isinstance(kwargs.get(name), str):
                kwargs[name] = import_ref(kwargs[name], f"simulate.{name}")
        if isinstance(kwargs.get("budget"), str) and kwargs["budget"].strip().lower() == "none":
            kwargs["budget"] = None      # TOML has no null: budget = "none" runs to saturation
        if tools is not None:
            kwargs["tools"] = tools
        if self.system_prompt is not None:
            kwargs["system_prompt"] = self.system_prompt
        for name, path in self.paths(run_id).items():
            if path is not None:
                if make_dirs:
                    Path(path).parent.mkdir(parents=True, exist_ok=True)
                kwargs[name] = path
        advanced = dict(kwargs.get("advanced") or {})
        advanced.setdefault("run_id", run_id or self.resolved_run_id())   # the Driver actor is named by it
        kwargs["advanced"] = advanced
        return agent, kwargs

    def check(self, agent: Any, kwargs: dict[str, Any]) -> None:
        """Run simulate()'s own argument checks (no Ray, nothing spent); errors name the field."""
        passed = {k: kwargs[k] for k in kwargs if k in PASSED_ALIASES or k in MOVED_NAMES}
        explicit = {k: v for k, v in kwargs.items() if k not in passed}
        try:
            resolve_roles(resolve_config(agent, explicit, passed))
        except (ValueError, TypeError, RuntimeError, NotImplementedError) as exc:
            raise SpecError(f"{_field_of(str(exc))}: {exc}") from exc


def _field_of(message: str) -> str:
    """The spec field a simulate() error message is about (its first ``name=``)."""
    match = re.search(r"\b([a-z_]+)=", message)
    name = match.group(1) if match else ""
    if name in TOP_LEVEL:
        return name
    return f"simulate.{name}" if name else "simulate"


def _call_factory(factory: Any, kwargs: dict, tools: Any) -> Any:
    """``agent_kwargs`` given: build the agent; a factory with a ``tools`` parameter gets them."""
    if not callable(factory):
        raise SpecError(f"agent_kwargs: the agent {factory!r} is not callable, so it cannot be "
                        f"built from agent_kwargs")
    params: Mapping[str, inspect.Parameter]
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}
    if "tools" in params and "tools" not in kwargs:
        kwargs["tools"] = tools
    try:
        return factory(**kwargs)
    except TypeError as exc:
        raise SpecError(f"agent_kwargs: calling the agent factory failed: {exc}") from exc


def _closest(name: str, loc: tuple) -> str:
    if loc[:1] == ("simulate",):
        if name in TOP_LEVEL:
            return f"; {name} goes at the top level of the spec, not in [simulate]"
        known = list(SimulateTable.model_fields)
    else:
        known = list(RunSpec.model_fields)
        if name in SimulateTable.model_fields:
            return f"; {name} is a simulate() argument: put it under [simulate]"
    close = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def format_validation_error(exc: ValidationError, where: str) -> str:
    """One line per problem, each naming the field as a dotted path."""
    lines = []
    for err in exc.errors():
        loc = tuple(str(p) for p in err["loc"])
        field = ".".join(loc) or "(spec)"
        if err["type"] == "extra_forbidden":
            scope = "simulate() argument" if loc[:1] == ("simulate",) else "spec field"
            lines.append(f"{field}: unknown {scope}{_closest(loc[-1], loc)}")
        elif err["type"] == "missing":
            lines.append(f"{field}: required, e.g. agent = \"my_agents:support_bot\"")
        else:
            lines.append(f"{field}: {err['msg'].removeprefix('Value error, ')}")
    return f"{where}: " + "; ".join(lines)


def parse_spec_text(text: str, where: str = "<spec>", stem: str = "spec") -> RunSpec:
    """Validate TOML text as a RunSpec; ``SpecError`` names the field on failure."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{where}: not valid TOML: {exc}") from exc
    try:
        spec = RunSpec.model_validate(table)
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc, where)) from None
    spec._source_sha = stable_hash(text)
    spec._source_stem = stem
    return spec


def load_spec(path: str | os.PathLike) -> RunSpec:
    """Read and validate a TOML run spec file."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(f"{path}: no such spec file; pass the path of a TOML run spec")
    return parse_spec_text(path.read_text(encoding="utf-8"), str(path), path.stem)
