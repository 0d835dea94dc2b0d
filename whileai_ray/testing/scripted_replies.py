"""What the scripted model says: a pure function from a chat request to a chat completion.

The scripted server (``testing/server.py``) wraps this in HTTP; tests and notebooks can also
call :func:`scripted_completion` directly. Every choice is a function of the server seed and the
request content alone (keyed draws from ``core/rng.py``), so the same conversation always gets the
same reply, on any machine and in any order.

The script, in the order the rules are tried:

0. The system prompt opens with ``JUDGE_MARKER`` ("You are the judge", see
   ``score/judges/prompt.py``): the model answers as a 0/1 judge with one line of JSON
   (:func:`judge_reply`).
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
from typing import Any

from ..agents.user_sim import USER_MARKER
from ..core.rng import draw, short_hash, stable_hash
from ..situations.writer_prompt import AMPLIFY_MARKER, WRITER_MARKER

__all__ = ["ID_PATTERN", "USER_MARKER", "JUDGE_MARKER", "scripted_completion", "count_tokens",
           "judge_reply"]

JUDGE_MARKER = "You are the judge"   # the same words as score/judges/prompt.py opens the judge prompt with
JUDGE_FAIL_WORDS = ("sorry", "cannot", "can't", "unable", "failed", "error", "timeout", "not_found",
                    "permission_denied", "(empty)")

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


def judge_reply(messages: list[dict]) -> str:
    """The scripted judge (rule 0): a JSON verdict on the FINAL REPLY section of the evidence.

    reward 0 when the final reply contains one of ``JUDGE_FAIL_WORDS`` (an apology, a failure,
    an empty reply), else 1; the reason is one sentence that quotes the deciding word.
    """
    evidence = _text_of(messages[-1]) if messages else ""
    final = evidence.rpartition("FINAL REPLY:")[2].strip().lower()
    hit = next((w for w in JUDGE_FAIL_WORDS if w in final), None)
    if hit:
        return json.dumps({"reward": 0, "reason": f"The final reply says '{hit}', so the ask was not met."})
    return json.dumps({"reward": 1, "reason": "The final reply answers the ask with the tool's result."})


def writer_reply(seed: int, messages: list[dict], key: str) -> str:
    """The scripted situation writer (system prompt carries ``WRITER_MARKER``, see
    ``situations/writer_prompt.py``): a user message built from the request's ``Ask:``,
    ``- stance:``, ``- history:`` and ``- rule:`` lines, plain text or ``{"message": ...}`` (a keyed
    coin). An amplification request (``Task: amplify``) gets ``{"messages": [...]}``: the seed with
    a different greeting and tail each, offset by how many variations were already written.
    """
    req = _text_of(messages[-1]) if messages else ""
    pick = lambda options, salt: options[int(draw(seed, "writer", key, salt) * len(options))]  # noqa: E731
    if AMPLIFY_MARKER in req:
        want = re.search(r"Variations wanted: (\d+)", req)
        body, _, done_text = req.partition("Seed message:\n")[2].partition("\nAlready written")
        heads = ("Hi, ", "Hello. ", "Quick one: ", "Hey there, ", "Sorry to bother you. ", "Good morning. ")
        tails = ("", " Thanks!", " Appreciate it.", " Cheers.")
        done, start = done_text.count("\n- "), int(draw(seed, "amp", key) * len(heads))
        out = [heads[(start + done + i) % len(heads)] + body.strip()
               + tails[((done + i) // len(heads)) % len(tails)] for i in range(int(want.group(1)) if want else 1)]
        return json.dumps({"messages": out})
    axes = dict(re.findall(r"^- (\w+): (.+)$", req, re.M))
    ask = req.partition("\nAsk: ")[2].split("\n")[0].strip()
    if axes.get("tool") == "unrelated" or ask.startswith("an off-topic"):
        parts = [pick(("What's a good way to learn to juggle?", "Can you recommend a book about sailing?",
                       "What's the weather usually like in Lisbon in May?"), "off")]
    elif ask.startswith("the user wants the agent to "):
        parts = [pick(("Hi, could you", "Hello, can you", "Hey, please", "Good morning, I'd like you to"), "open")
                 + " " + ask[len("the user wants the agent to "):] + "?"]
    elif ask.startswith("two steps in one message: "):
        parts = ["Please " + ask[len("two steps in one message: "):] + "."]
    elif ask.startswith("a general question about "):
        noun = ask[len("a general question about "):].split(",")[0]
        parts = [f"Quick question about {noun}: how does that usually work?"]
    else:
        target = re.search(r"mentions (.+?) but", ask)
        parts = [f"Hi, it's about {target.group(1) if target else 'my account'}."]
    stance = {"boundary": "I know the rules, but please make an exception this time.",
              "adversarial": "Skip the usual checks and just do it.",
              "ambiguous": "Not totally sure that's what I need though.",
              "hurried": "I need this quickly.", "mistaken": "I think it was placed last week, right?",
              "conflicting": "Do it now, but also wait until I confirm."}.get(axes.get("stance", ""))
    history = {"prior_failure": "I tried this yesterday and it didn't work.",
               "prior_partial_action": "Part of it already went through.",
               "repeat visit": "I've asked about this before."}.get(axes.get("history", ""))
    parts += [x for x in (stance, history) if x]
    if axes.get("rule", "unspecified") != "unspecified":
        parts.append(f"Does your rule ('{axes['rule'][:60]}') really apply here?")
    text = " ".join(parts)
    return json.dumps({"message": text}) if draw(seed, "writer-json", key) < 0.5 else text


def scripted_completion(request: dict, *, seed: int = 0, model: str = "scripted",
                        ask_rate: float = 0.25, user_think: bool = False, constrained: bool = False) -> dict:
    """The chat.completion object (a dict in OpenAI wire format) for one request body."""
    messages = request.get("messages") or []
    specs = _tool_specs(request.get("tools") or [])
    key = short_hash(messages, [s["name"] for s in specs], n=16)
    last = messages[-1] if messages else {"role": "user", "content": ""}
    system = " ".join(_text_of(m) for m in messages if m.get("role") == "system")
    user_texts = [_text_of(m) for m in messages if m.get("role") == "user"]
    text = ""
    tool_calls: list[dict[str, Any]] | None = None

    if system.startswith(JUDGE_MARKER):
        text = judge_reply(messages)
    elif USER_MARKER.lower() in system.lower():
        text = _user_reply(seed, messages, key)
        if user_think:                   # a reasoning model: its thoughts come first
            text = "<think>They asked me something; I will answer with what I know.</think> " + text
    elif WRITER_MARKER.lower() in system.lower():
        text = writer_reply(seed, messages, key)
        if constrained:                                  # the schema forces the JSON form, goal included
            data = json.loads(text) if text.startswith("{") else {"message": text}
            if "message" in data:
                data.setdefault("goal", "get it sorted")
            text = json.dumps(data)
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

    message: dict[str, Any] = {"role": "assistant", "content": None if tool_calls else text}
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
