"""Failure mutation: a new ask built from a failing parent's world.

The mutant keeps the parent's world (dims, world state, reference ids) and asks again in other
words, usually narrower: only the first sentence ("truncate"), one explicit action on the
parent's id ("narrow"), the ask restated under pressure, the ask with the id spelled out, or the
bare ask without the parent's extra context. The mutator is picked by ``index`` (so a run of
indices walks through all of them) and its wording by ``(seed, "mutate", parent, index)``.
"""
from __future__ import annotations

import re

from ..core.rng import unit_rng
from .situation import Situation
from .tool_intent import ToolIntent

__all__ = ["MUTATORS", "mutate_prompt"]

MUTATORS = ("truncate", "narrow", "restate", "clarify", "strip_context")
_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(?:\s|$)")
_NARROW = ("Just {verb} {target} for me, nothing else.", "Only {verb} {target}, please.",
           "One thing: {verb} {target}.", "Can you {verb} {target} and stop there?",
           "All I need is to {verb} {target}.")
_RESTATE = ("Let me try again: {first}", "Again, since it didn't work: {first}",
            "Okay, once more. {first}", "Trying this one more time. {first}",
            "Sorry, I'll ask differently. {first}")
_CLARIFY = ("To be clear, I mean {target} and only that one.", "I'm talking about {target}, nothing else.",
            "Just so we're on the same page: it's {target}.", "The one I mean is {target}.")
_TAILS = ("", " Thanks.", " Please.", " That's all.", " Quick one.", " Cheers.", " Appreciate it.")


def _first_sentence(text: str) -> str:
    m = _FIRST_SENTENCE.match(text.strip())
    return m.group(1) if m else text.strip()


def mutate_prompt(parent: Situation, seed: int, index: int,
                  intent: ToolIntent | None) -> tuple[str, str]:
    """Return ``(new_prompt, mutator_name)``; the new prompt always differs from the parent's."""
    r = unit_rng(seed, "mutate", parent.scenario_id, parent.prompt, index).random
    mutator = MUTATORS[index % len(MUTATORS)]
    first = _first_sentence(parent.prompt)
    ids = list(parent.ref_ids)
    noun = intent.noun if intent else "one"
    verb = intent.verb if intent else "look into"
    target = f"{noun} {ids[0]}" if ids else (f"my {noun}" if intent else "this")
    slots = {"verb": verb, "target": target, "first": first}
    tail = _TAILS[int(r() * len(_TAILS))]
    if mutator == "truncate":
        text = first + tail
    elif mutator == "narrow":
        text = _NARROW[int(r() * len(_NARROW))].format_map(slots) + tail
    elif mutator == "restate":
        text = _RESTATE[int(r() * len(_RESTATE))].format_map(slots)
    elif mutator == "clarify":
        text = first + " " + _CLARIFY[int(r() * len(_CLARIFY))].format_map(slots)
    else:
        kept = [s for s in re.split(r"(?<=[.!?])\s+", parent.prompt.strip())
                if any(i.lower() in s.lower() for i in ids)] or [first]
        text = " ".join(kept[:2]) + tail
    if text.strip() == parent.prompt.strip():
        text = f"{first} (asking again, attempt {index + 2})"
    return text, mutator
