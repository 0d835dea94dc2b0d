"""The mock world: answers an agent's tool calls when the caller gave no ``execute=``.

``World.call(tool, arguments)`` reads the active rollout (``current_rollout``) for its fault
plan, world state and ``execute=`` callback, and checks, in this order (reference 3.3):

1. unknown tool -> ``{"status": "error", "reason": "unknown_tool", "tool": ...}``
2. arguments that break the tool's JSON Schema -> ``{"status": "invalid_arguments", "errors":
   [{"path", "message", "keyword"}]}`` (``validation.py``), before anything else answers
3. a scheduled fault (even when ``execute=`` is set)
4. ``execute=`` when the rollout has one (non-dict results wrapped, exceptions reported)
5. the mock: world state (``entity missing`` -> not_found, ``entity already acted on`` ->
   already_done for non-reads), missing or placeholder arguments -> rejected, a tool that names
   no record -> a plain ack, then create / delete / search / read answers. Records the rollout's
   world holds (``entities.py``) are found, and a read returns the ids of the records they link to.

Every call is logged in ``ctx.calls`` as ``{"tool", "status", "fault"}``. Outside a rollout
there are no faults and no world state.
"""
from __future__ import annotations

import ast
import json
import operator

from ..core.rng import stable_hash
from .context import active_context, world_key
from .faults import fault_answer, scheduled_fault
from .options import WorldOptions, world_options
from .entities import EntityBook
from .faults import ARGUMENT_FAULT
from .records import exists, is_placeholder, make_record, record_hash, tool_specs
from .validation import INVALID, argument_errors, refusal, validator_for
from .world_refs import ack, entity_refs, search_ids

__all__ = ["World", "world"]

_FORCE_EXISTS = frozenset(("entity exists", "duplicate entity", "partially completed", "entity already acted on"))
_HINT = "ask the person for the actual value instead of guessing"


class World:
    """A deterministic mock of the systems behind ``tools``. Picklable; safe to share across threads."""

    def __init__(self, tools, seed: int = 0, options=None):
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"world seed must be an int; got {seed!r}")
        self.tools = list(tools or [])
        self.seed = seed
        self._explicit = options is not None
        self.options = world_options(options)
        self._base = (self.options, tool_specs(self.tools, self.options), frozenset(self.options.placeholders))
        self._ctx_cache: tuple = (None, None)
        self._params = {name: _parameters(t) for name, t in _named(self.tools)}
        self.entities = EntityBook(self.tools)

    # -- what the active rollout says -------------------------------------------------------
    @property
    def faults(self) -> dict | None:
        ctx = active_context()
        return None if ctx is None else ctx.faults

    @property
    def world_state(self) -> str | None:
        ctx = active_context()
        return None if ctx is None else ctx.world_state

    def _resolved(self, ctx):
        """Options, specs and placeholders: the constructor's, else the run's advanced['world']."""
        d = None if (self._explicit or ctx is None) else ctx.world_options
        if not d:
            return self._base
        key, val = self._ctx_cache
        if key is d:
            return val
        opts = world_options(d)
        val = (opts, tool_specs(self.tools, opts), frozenset(opts.placeholders))
        self._ctx_cache = (d, val)
        return val

    # -- the call --------------------------------------------------------------------------
    def call(self, tool: str, arguments=None) -> dict:
        ctx = active_context()
        opts, specs, ph = self._resolved(ctx)
        spec = specs.get(tool)
        fault = None
        if spec is None:
            ans = {"status": "error", "reason": "unknown_tool", "tool": tool}
        else:
            args, bad = _parse_arguments(arguments)
            if bad is None:                 # a real API answers a broken call with a 400 first
                errors = argument_errors(self._validator(tool), args)
                if errors:
                    bad = refusal(tool, errors)
            if ctx is not None and ctx.faults:
                fault = scheduled_fault(ctx, tool, len(ctx.calls), opts)
                if fault == ARGUMENT_FAULT:     # the situation aimed at bad arguments: no world fault
                    fault = fault if bad is not None else None
            if fault is not None and fault not in ("stale", ARGUMENT_FAULT):
                ans = fault_answer(fault, tool, args, ctx, opts)
            elif bad is not None:
                ans = bad
            elif ctx is not None and ctx.execute is not None and not ctx.in_execute:
                ans = _execute(ctx, tool, args)
            else:
                ans = self._mock(spec, args, ctx, opts, ph, fault == "stale")
            if fault == "stale":
                ans = fault_answer("stale", tool, args, ctx, opts, base=ans)
        if ctx is not None:
            ctx.calls.append({"tool": tool, "status": ans.get("status") if isinstance(ans, dict) else None,
                              "fault": fault})
        return ans

    def _validator(self, tool: str):
        """The tool's jsonschema validator, built on its first call (not pickled: rebuilt after)."""
        cache = self.__dict__.setdefault("_validators", {})
        if tool not in cache:
            cache[tool] = validator_for(self._params.get(tool))
        return cache[tool]

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_validators", None)
        return state

    def _mock(self, spec, args: dict, ctx, opts: WorldOptions, ph: frozenset, force: bool) -> dict:
        state = ctx.world_state if ctx is not None else None
        run_seed = (ctx.seed or 0) if ctx is not None else 0
        scenario = world_key(ctx)
        memory = ctx.records if ctx is not None else {}
        book = self.entities
        if spec.kind == "calc":
            return _calculate(args)
        named = entity_refs(book, spec, args, ph)
        refs = [str(v) for _, v in named]
        held = {str(v): k for k, v in named if k is not None and book.holds(run_seed, scenario, k, v)}
        if state == "entity missing" and refs and not force:
            return {"status": "not_found", "missing": refs}
        if state == "entity already acted on" and refs and spec.kind not in ("read", "search"):
            return {"status": "already_done", "reason": "already_acted_on"}
        missing = [k for k in spec.required if args.get(k) is None]
        if missing:
            return {"status": "rejected", "reason": "missing_required", "fields": missing}
        # a placeholder where a value is required (or an id is named); an optional "" is "not given"
        bad = [k for k in spec.properties if k in args and is_placeholder(args[k], ph)
               and (k in spec.required or k in spec.ref_keys and args[k] != "")]
        if bad:
            return {"status": "rejected", "reason": "placeholder_argument", "fields": bad, "hint": _HINT}
        if spec.kind == "action" and not named and not book.tool_kinds.get(spec.name) and not spec.ref_keys:
            return ack(spec.name, args)
        if spec.kind == "create":
            ref = "new:" + stable_hash(spec.name, args, len(memory))[:12]   # canonical JSON: key order free
            rec = make_record(record_hash(self.seed, run_seed, ref), ref, spec, args, opts)
            memory[ref] = memory[str(rec["id"])] = "created"
            fmt = book.formats.get(spec.noun)
            if fmt is not None:          # the new record's id, in its kind's format, found by the next call
                new_id = book.invent(run_seed, scenario, spec.noun, len(memory))
                memory[str(new_id)] = "created"
                rec[fmt.name] = new_id
            rec.pop("status")
            return {"status": "created", **rec}
        if spec.kind == "search" and not refs:
            h = record_hash(self.seed, run_seed, "search:" + json.dumps(args, sort_keys=True, default=str))
            lo, hi = opts.search_hits
            n = lo + int(h[:4], 16) % (hi - lo)
            hits = [make_record(record_hash(self.seed, run_seed, f"{h[:16]}:{i}"), "", spec, ids, opts)
                    for i, ids in enumerate(search_ids(book, spec, run_seed, scenario, n))]
            return {"status": "ok", "data": {"results": hits, "count": n}}
        key = refs[0] if refs else "args:" + json.dumps(args, sort_keys=True, default=str)
        gone = [r for r in refs if memory.get(r) == "deleted"]
        if gone:
            if spec.kind == "delete":
                return {"status": "already_done", "reason": "already_deleted"}
            return {"status": "not_found", "missing": gone}
        h = record_hash(self.seed, run_seed, key)
        if refs and not (force or state in _FORCE_EXISTS):
            absent = [r for r in refs if memory.get(r) != "created" and r not in held
                      and not exists(h if r == key else record_hash(self.seed, run_seed, r), opts.exists_share)]
            if absent:
                return {"status": "not_found", "missing": absent}
        rec = make_record(h, key, spec, args, opts)
        if key in held:                  # the linked records of a held one: usable in the next call
            for field, value in book.linked(run_seed, scenario, held[key], key).items():
                rec.setdefault(field, value)
        if spec.kind == "delete":
            for r in refs:
                memory[r] = "deleted"
            return {"status": "deleted", "data": rec}
        if state == "partially completed":
            rec["status"] = "partially completed"
        elif state == "entity already acted on":
            rec["status"] = "completed"
        ans: dict[str, object] = {"status": "ok", "data": rec}
        if state == "duplicate entity" and refs:
            ans["matches"] = 2
        return ans


def world(tools, seed: int = 0) -> World:
    """``wai.world(tools, seed=0)``: the mock world the seeded agent and the engine use."""
    return World(tools, seed=seed)


def _parse_arguments(arguments) -> tuple[dict, dict | None]:
    """Arguments as a dict (JSON strings from model agents are decoded); (args, rejection or None)."""
    if arguments is None:
        return {}, None
    if isinstance(arguments, dict):
        return arguments, None
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed, None
    message = "arguments must be a JSON object of parameter -> value"
    return {}, {"status": INVALID, "reason": "invalid_arguments", "error": message,
                "errors": [{"path": "", "message": message, "keyword": "type"}]}


def _named(tools):
    for t in tools:
        fn = t.get("function", t) if isinstance(t, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            yield fn["name"], fn


def _parameters(fn: dict):
    params = fn.get("parameters")
    return params if isinstance(params, dict) else None


def _execute(ctx, tool: str, args: dict) -> dict:
    """Run the caller's ``execute(tool, arguments)``; its own world calls inside fall back to the mock."""
    ctx.in_execute = True
    try:
        result = ctx.execute(tool, args)
    except Exception as exc:  # the caller's world failing is an answer, not a crash
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    finally:
        ctx.in_execute = False
    return result if isinstance(result, dict) else {"status": "ok", "data": result}


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
        ast.USub: operator.neg, ast.UAdd: operator.pos}


def _eval(node):
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ValueError("exponent too large")
        return _OPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.operand))
    raise ValueError("only numbers and + - * / // % ** ( ) are allowed")


def _calculate(args: dict) -> dict:
    expr = next((v for v in args.values() if isinstance(v, str)), None)
    if expr is None:
        return {"status": "rejected", "reason": "missing_required", "fields": ["expression"]}
    try:
        value = _eval(ast.parse(expr.replace("^", "**").replace("×", "*").replace("÷", "/"), mode="eval"))
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError, TypeError) as exc:
        return {"status": "error", "reason": "invalid_expression", "error": f"{type(exc).__name__}: {exc}"}
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return {"status": "ok", "data": {"expression": expr, "result": value}}
