"""What the scripted model says: a pure function from a chat request to a chat completion.

The scripted server (``testing/server.py``) wraps this in HTTP; tests and notebooks can also
call :func:`scripted_completion` directly. Every choice is a function of the server seed and the
request content alone (keyed draws from ``rng.py``), so the same conversation always gets the
same reply, on any machine and in any order.

The script, in the order the rules are tried:

1. The system prompt carries ``USER_MARKER`` ("You are the user", see ``agents/user_sim.py``):
   the model plays the person and answers the agent's question in character, giving the id it
   knows from the conversation when there is one.
2. Tools are offered and the last message is from the user: with probability ``ask_rate``
   (or always, when no id appears in any user message and nothing was asked yet) the model asks
   a clarifying question ending in "?"; otherwise it calls the first tool whose name parts
   (>= 3 chars) all occur in the user's words (else the first tool), with every required
   parameter set to the newest id found by ``ID_PATTERN`` (else "the record").
3. The last message is a tool result: a one-line summary per result, "<tool> for <id>: <status>."
4. Anything else: a short text reply that restates the last message.

Token counts are words (whitespace split) so tests can predict them; ``max_tokens`` truncates
the text and sets ``finish_reason="length"``; ``logprobs=True`` adds one keyed logprob per token.
"""
from __future__ import annotations

import json
import re

from ..agents.user_sim import USER_MARKER
from ..rng import draw, short_hash, stable_hash

__all__ = ["ID_PATTERN", "USER_MARKER", "scripted_completion", "count_tokens"]

ID_PATTERN = re.compile(r"\b[A-Za-z]+[-_]?\d+\b")
CREATED = 1_700_000_000            # fixed timestamp: replies are byte-for-byte reproducible


def count_tokens(text: str) -> int:
    return len(text.split()) if text else 0


def _text_of(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):    # content parts: keep the text parts
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _tool_specs(tools: list) -> list[dict]:
    """Bare function specs ({"name","parameters"}) from wire-format or bare tool schemas."""
    specs = []
    for tool in tools or []:
        fn = tool.get("function", tool) if isinstance(tool, dict) else {}
        if fn.get("name"):
            specs.append(fn)
    return specs


def _pick_tool(specs: list[dict], text: str) -> dict:
    low = text.lower()
    for spec in specs:
        parts = [p for p in spec["name"].lower().split("_") if len(p) >= 3]
        if parts and all(p in low for p in parts):
            return spec
    return specs[0]


def _arguments(spec: dict, ident: str) -> dict:
    params = spec.get("parameters") or {}
    names = list(params.get("required") or [])
    if not names:
        names = list((params.get("properties") or {}).keys())[:1]
    return {name: ident for name in names}


def _newest_id(texts: list[str]) -> str | None:
    for text in reversed(texts):
        found = ID_PATTERN.findall(text)
        if found:
            return found[0]
    return None


def _noun(specs: list[dict]) -> str:
    parts = specs[0]["name"].split("_") if specs else ["record"]
    return parts[-1] if len(parts) > 1 else "record"


def _user_reply(seed: int, messages: list[dict], key: str) -> str:
    ident = _newest_id([_text_of(m) for m in messages])
    if ident:
        options = [f"It's {ident}.", f"The one I mentioned, {ident}.", f"{ident}, please go ahead."]
    else:
        options = ["I don't have the number with me, sorry.", "I'm not sure, it was the most recent one.",
                   "I only know what I already told you."]
    return options[int(draw(seed, "user", key) * len(options))]


def _tool_summary(messages: list[dict]) -> str:
    """Summarize the trailing block of tool results, pairing each with its call."""
    calls = {}
    for m in messages:
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function", {})
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            calls[tc.get("id")] = (fn.get("name", "tool"), args)
    lines = []
    i = len(messages) - 1
    while i >= 0 and messages[i].get("role") == "tool":
        i -= 1
    for m in messages[i + 1:]:
        name, args = calls.get(m.get("tool_call_id"), (m.get("name") or "tool", {}))
        ident = next((str(v) for v in args.values()), "the record")
        try:
            status = (json.loads(_text_of(m)) or {}).get("status", "ok")
        except (ValueError, AttributeError):
            status = "unreadable"
        lines.append(f"{name} for {ident}: {status}.")
    return " ".join(lines) or "Done."


def scripted_completion(request: dict, *, seed: int = 0, model: str = "scripted",
                        ask_rate: float = 0.25) -> dict:
    """The chat.completion object (a dict in OpenAI wire format) for one request body."""
    messages = request.get("messages") or []
    specs = _tool_specs(request.get("tools") or [])
    key = short_hash(messages, [s["name"] for s in specs], n=16)
    last = messages[-1] if messages else {"role": "user", "content": ""}
    system = " ".join(_text_of(m) for m in messages if m.get("role") == "system")
    user_texts = [_text_of(m) for m in messages if m.get("role") == "user"]
    text, tool_calls = "", None

    if USER_MARKER.lower() in system.lower():
        text = _user_reply(seed, messages, key)
    elif specs and last.get("role") == "user":
        ident = _newest_id(user_texts)
        asked = any(m.get("role") == "assistant" and _text_of(m).rstrip().endswith("?") for m in messages)
        if (ident is None and not asked) or draw(seed, "ask", key) < ask_rate:
            noun = _noun(specs)
            text = f"Could you confirm which {noun} you mean and send its ID?"
        else:
            spec = _pick_tool(specs, " ".join(user_texts))
            args = _arguments(spec, ident or "the record")
            tool_calls = [{"id": "call_" + short_hash(key, "call", n=12), "type": "function",
                           "function": {"name": spec["name"], "arguments": json.dumps(args)}}]
    elif last.get("role") == "tool":
        text = _tool_summary(messages)
    else:
        said = _text_of(last).strip()
        text = f"Understood: {said[:80]}" if said else "Hello. How can I help?"

    finish = "tool_calls" if tool_calls else "stop"
    max_tokens = request.get("max_tokens") or request.get("max_completion_tokens")
    words = text.split()
    if max_tokens and len(words) > int(max_tokens):
        words = words[:int(max_tokens)]
        text, finish = " ".join(words), "length"
    completion_tokens = len(words) if not tool_calls else count_tokens(tool_calls[0]["function"]["arguments"]) + 1
    prompt_tokens = sum(count_tokens(_text_of(m)) for m in messages) + 8 * len(specs)

    message = {"role": "assistant", "content": None if tool_calls else text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
    if request.get("logprobs") and not tool_calls:
        choice["logprobs"] = {"content": [
            {"token": w, "logprob": -round(3.0 * draw(seed, "lp", key, i) ** 2, 6),
             "bytes": list(w.encode()), "top_logprobs": []}
            for i, w in enumerate(words)]}
    return {
        "id": "chatcmpl-" + stable_hash(seed, key)[:24], "object": "chat.completion",
        "created": CREATED, "model": model, "choices": [choice],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }
