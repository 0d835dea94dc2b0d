"""Multi-turn play of one work unit against an OpenAI-compatible model (async, no Ray).

The conversation: the run's system prompt, the tools, and the situation's opening ask. Each
model reply is either tool calls, answered by ``world_call(tool, arguments)`` (the caller's
function: faults first, then the mock world or ``execute=``; it may be sync or return an
awaitable), or text. Text that asks a question ("...?") goes to the simulated user, whose
answer is the next user turn, until the turn cap or the person's patience runs out; any other
text ends the conversation.

Turn cap (user turns, the opening included): drawn per unit from a geometric law with mean
``avg_turns`` (so ``avg_turns=1`` is one user line and one reply), never above ``max_turns``.
The draw is keyed by the unit, like every draw. Tool rounds per user turn are capped at
``MAX_TOOL_ROUNDS``; a unit that hits it ends with ``finish_reason="tool"``.

Each call goes through the client's raw ``post`` and comes back as a plain dict in the OpenAI
wire format (see ``chat_call.py`` for why: the typed ``create`` costs more CPU than the wait).

Errors: connection failures are retried (3 tries, 0.25 s then 0.5 s backoff); a call that
runs past ``timeout`` raises :class:`AgentTimeout` (a TimeoutError); HTTP errors
(``openai.APIStatusError``) propagate; a body that is not a chat completion raises
:class:`AgentReplyError`. The caller counts any of these as an agent error.
"""
from __future__ import annotations

import asyncio
import inspect
import json
import math

from ..core.defaults import MAX_TOKENS, TEMPERATURE
from ..core.rng import draw
from .chat_call import AgentReplyError, chat_completion

__all__ = ["play_model_unit", "AgentTimeout", "AgentReplyError", "turn_cap", "wire_tools",
           "is_question", "MAX_TOOL_ROUNDS"]

MAX_TOOL_ROUNDS = 8
DEFAULT_TEMPERATURE = TEMPERATURE
DEFAULT_MAX_TOKENS = MAX_TOKENS
DEFAULT_AVG_TURNS = 12
_HARD_TURN_CAP = 64
_RETRIES = 3


class AgentTimeout(TimeoutError):
    """The model call ran past the agent timeout."""


def wire_tools(tools: list) -> list[dict]:
    """Tools in OpenAI wire format; accepts bare ``{"name","parameters"}`` schemas too."""
    return [t if "function" in t else {"type": "function", "function": t} for t in tools or []]


def is_question(text: str) -> bool:
    return bool(text) and text.rstrip().rstrip("\"')*_ ").endswith("?")


def turn_cap(seed: int, draw_key, avg_turns: float | None, max_turns: int | None) -> int:
    """User turns this unit may have: geometric with mean ``avg_turns``, capped by ``max_turns``."""
    avg = DEFAULT_AVG_TURNS if avg_turns is None else float(avg_turns)
    if avg <= 1:
        cap = 1
    else:
        u = draw(seed, list(draw_key), "turn-cap")
        cap = 1 + int(math.log(1.0 - u) / math.log(1.0 - 1.0 / avg))
    return max(1, min(cap, max_turns or _HARD_TURN_CAP, _HARD_TURN_CAP))


async def _complete(client, request: dict, timeout: float) -> dict:
    """One model call (a chat-completion dict), retrying connection errors only."""
    import openai   # lazy: openai (~0.5 s), only when a model is called

    for attempt in range(_RETRIES):
        try:
            return await asyncio.wait_for(chat_completion(client, request, timeout), timeout)
        except (openai.APITimeoutError, asyncio.TimeoutError) as exc:
            raise AgentTimeout(f"model call to {request['model']!r} took longer than {timeout:g} s") from exc
        except openai.APIConnectionError:
            if attempt == _RETRIES - 1:
                raise
            await asyncio.sleep(0.25 * 2 ** attempt)
    raise AssertionError("unreachable")


def _tool_calls(message: dict) -> list[dict]:
    """The reply's tool calls in wire format (``[]`` when none); AgentReplyError when malformed."""
    raw = message.get("tool_calls")
    if not raw:
        return []
    try:
        return [{"id": tc.get("id") or "", "type": "function",
                 "function": {"name": tc["function"]["name"],
                              "arguments": tc["function"].get("arguments") or ""}}
                for tc in raw]
    except (AttributeError, KeyError, TypeError):
        raise AgentReplyError("model endpoint sent tool_calls that are not "
                              "[{id, function: {name, arguments}}]") from None


async def _answer_tool(world_call, name: str, raw_args: str):
    try:
        args = json.loads(raw_args or "{}")
        if not isinstance(args, dict):
            raise ValueError("arguments must be a JSON object")
    except ValueError:
        return {"raw": raw_args}, {"status": "rejected", "error": "arguments are not a valid JSON object"}
    try:
        result = world_call(name, args)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:   # the caller's world failed: the agent sees a tool error
        result = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    return args, result


def _logprob_fields(choice: dict, want: bool | str) -> dict:
    content = (choice.get("logprobs") or {}).get("content") if want else None
    if not content:
        return {}
    out = {"logprob": round(sum(t["logprob"] for t in content), 6), "n_tokens": len(content)}
    if want == "tokens":
        out["token_logprobs"] = [{"token": t["token"], "logprob": t["logprob"]} for t in content]
    return out


async def play_model_unit(client, backend, unit, meta, *, world_call, max_turns: int | None = None,
                          avg_turns: float | None = None, temperature: float | None = None,
                          max_tokens: int | None = None, timeout: float | None = None,
                          logprobs: bool | str = False, user=None, tool_choice=None,
                          min_user_turns: int | None = None) -> dict:
    """Play ``unit`` against ``backend`` through ``client`` (an openai.AsyncOpenAI); a trajectory.

    ``user``: a :class:`~whileai_ray.agents.user_sim.SimulatedUser` or None (a question then
    ends the conversation). ``logprobs``: True adds ``logprob``/``n_tokens``; ``"tokens"`` also
    ``token_logprobs`` (a list of ``{"token","logprob"}``). ``tool_choice`` (OpenAI's request
    field: ``"auto"``, ``"required"`` or ``{"type": "function", "function": {"name": ...}}``) is
    sent on the first request of each user turn only; the requests after a tool round leave it
    out, so a forced call cannot loop. ``min_user_turns``: the person keeps the conversation
    going (answers a reply that is not a question too) until it has this many user lines,
    within the turn cap; patience still applies from the second answer on.
    """
    sampling = dict(meta.sampling or {})
    temperature = sampling.get("temperature", DEFAULT_TEMPERATURE) if temperature is None else temperature
    max_tokens = sampling.get("max_tokens", DEFAULT_MAX_TOKENS) if max_tokens is None else max_tokens
    timeout = max(300.0, max_tokens / 4) if timeout is None else float(timeout)
    cap = turn_cap(unit.seed, unit.draw_key(), avg_turns, max_turns)
    least = max(1, int(min_user_turns or 1))
    cap = max(cap, min(least, max_turns or _HARD_TURN_CAP))

    system = meta.agent_system_prompt() if hasattr(meta, "agent_system_prompt") else meta.system_prompt
    messages = ([{"role": "system", "content": system}] if system else [])
    messages.append({"role": "user", "content": unit.prompt})
    request = {"model": backend.model, "messages": messages, "temperature": temperature,
               "max_tokens": max_tokens}
    if meta.tools:
        request["tools"] = wire_tools(meta.tools)
    if logprobs:
        request["logprobs"] = True

    steps: list[dict] = []
    usage: dict[str, int | float] = {"input_tokens": 0, "output_tokens": 0}    # (+ "cost" when reported)
    logprob_total, n_tokens_total, token_logprobs = 0.0, 0, []   # summed over the agent's text replies
    user_turns, rounds, ended_by, finish = 0, 0, None, "stop"
    while True:
        if tool_choice is not None and meta.tools and rounds == 0:
            request["tool_choice"] = tool_choice
        else:
            request.pop("tool_choice", None)
        response = await _complete(client, request, timeout)
        choice = response["choices"][0]
        message = choice["message"]
        content = message.get("content")
        reply_usage = response.get("usage") or {}
        tokens_in = reply_usage.get("prompt_tokens") or 0
        tokens_out = reply_usage.get("completion_tokens") or 0
        usage["input_tokens"] += tokens_in
        usage["output_tokens"] += tokens_out
        cost = reply_usage.get("cost")     # some endpoints (OpenRouter, proxies) report what a call cost
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            usage["cost"] = usage.get("cost", 0.0) + cost
        counts = {"input_tokens": tokens_in, "output_tokens": tokens_out}

        calls = _tool_calls(message)
        if calls:
            rounds += 1
            messages.append({"role": "assistant", "content": content or "", "tool_calls": calls})
            for i, call in enumerate(calls):
                name = call["function"]["name"]
                args, result = await _answer_tool(world_call, name, call["function"]["arguments"])
                step = {"tool": name, "arguments": args, "result": result}
                if i == 0:
                    if content:
                        step["text"] = content
                    step.update(counts)
                steps.append(step)
                messages.append({"role": "tool", "tool_call_id": call["id"],
                                 "content": json.dumps(result, default=str)})
            if rounds >= MAX_TOOL_ROUNDS:
                finish = "tool"
                break
            continue

        text = content or ""
        step = {"text": text, **counts, **_logprob_fields(choice, logprobs)}
        logprob_total += step.get("logprob", 0)
        n_tokens_total += step.get("n_tokens", 0)
        token_logprobs.extend(step.pop("token_logprobs", []))
        if choice.get("finish_reason") == "length":
            step["truncated"] = True
            finish = "length"
        steps.append(step)
        messages.append({"role": "assistant", "content": text})
        more = is_question(text) or user_turns + 1 < least
        if not more or user is None or user_turns + 1 >= cap or finish == "length":
            break
        answer = await user.reply(text, messages)
        if answer is None:
            ended_by = "user_left"
            break
        user_turns += 1
        rounds = 0
        steps.append({"user": answer})
        messages.append({"role": "user", "content": answer})

    final_text = steps[-1].get("text", "") if steps and "tool" not in steps[-1] else ""
    trajectory = {
        "steps": steps, "final_text": final_text, "finish_reason": finish, "usage": usage,
        "sampling": {"temperature": temperature, "max_tokens": max_tokens, "model": backend.model},
        "ended_on_question": is_question(final_text), "user_turns": user_turns,
    }
    if ended_by:
        trajectory["ended_by"] = ended_by
    if logprobs and n_tokens_total:
        trajectory["logprob"] = round(logprob_total, 6)
        trajectory["n_tokens"] = n_tokens_total
        if logprobs == "tokens":
            trajectory["token_logprobs"] = token_logprobs
    return trajectory
