"""The near-copy cap: at most ``cap`` prompts per *scenario family*.

A family is every prompt with the same *skeleton*: the words of the prompt with the parts a
writer swaps between worlds blanked out (numbers, ids, amounts, emails, dates, proper names).
``"Check order ORD-41087 for Maria Lopez, paid $44 on March 6."`` and ``"Check order
ORD-20211 for Tom Kim, paid $310 on May 2."`` share a family; they teach the agent the same
thing, so after ``cap`` of them the search spends its slots elsewhere.

``FamilyCap(cap)``: ``family(prompt)`` (the key), ``allowed(prompt)``, ``admit(prompt)`` (count
it if allowed, return whether it was), ``note(prompt)`` (count it regardless: seeds, pinned
tasks and re-rolls must never be refused), ``stats()``. Per call: one regex pass and a dict
lookup.
"""
from __future__ import annotations

import re

from ..core.rng import short_hash

__all__ = ["FamilyCap", "skeleton", "family_key"]

_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_BLANKS = (
    (re.compile(r"\S+@\S+"), " @ "),                                  # emails
    (re.compile(r"\$\s?\d[\d,]*(?:\.\d+)?"), " $ "),                   # amounts
    (re.compile(rf"\b(?:{_MONTHS})\b\.?\s*\d{{1,2}}(?:st|nd|rd|th)?\b", re.I), " D "),   # dates
    (re.compile(r"\b[\w-]*\d[\w-]*\b"), " # "),                       # ids, numbers
)


def skeleton(prompt: str) -> str:
    """The prompt's words with numbers, ids, amounts, emails, dates and proper names blanked."""
    text = str(prompt)
    for pattern, blank in _BLANKS:
        text = pattern.sub(blank, text)
    out = []
    start = True                       # a capitalised word that starts a sentence is not a name
    for m in re.finditer(r"[A-Za-z'#$@]+|[.!?]", text):
        tok = m.group(0)
        if tok in ".!?":
            start = True
            continue
        if tok in ("#", "$", "@", "D"):
            pass
        elif not start and tok[:1].isupper() and tok != "I" and not tok.startswith("I'"):
            tok = "N"
        else:
            tok = tok.lower()
        if out and tok == "N" and out[-1] == "N":
            continue                   # "Maria Lopez" -> one name blank
        out.append(tok)
        start = False
    return " ".join(out)


def family_key(prompt: str) -> str:
    """10 hex chars naming the prompt's scenario family (a hash of its skeleton)."""
    return short_hash("family", skeleton(prompt))


class FamilyCap:
    """Counts prompts per family and refuses a family's prompt past ``cap``."""

    def __init__(self, cap: int = 3):
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise ValueError(f"family cap must be an int >= 1 (prompts per scenario family); got {cap!r}")
        self.cap = cap
        self.counts: dict[str, int] = {}
        self.refused = 0
        self._recent: dict[str, str] = {}   # the planner asks allowed() then admit() of a few prompts

    def family(self, prompt: str) -> str:
        key = self._recent.get(prompt)
        if key is None:
            if len(self._recent) >= 16:
                self._recent.clear()
            key = self._recent[prompt] = family_key(prompt)
        return key

    def allowed(self, prompt: str) -> bool:
        """Whether one more prompt of this family fits under the cap (counts nothing)."""
        return self.counts.get(self.family(prompt), 0) < self.cap

    def admit(self, prompt: str) -> bool:
        """Count the prompt and return True if its family is under the cap; else refuse it."""
        key = self.family(prompt)
        n = self.counts.get(key, 0)
        if n >= self.cap:
            self.refused += 1
            return False
        self.counts[key] = n + 1
        return True

    def note(self, prompt: str) -> None:
        """Count a prompt that must run whatever the cap (seeds, pinned tasks)."""
        key = family_key(prompt)
        self.counts[key] = self.counts.get(key, 0) + 1

    def stats(self) -> dict:
        """``{"cap", "families", "refused", "largest"}`` for ``search``."""
        return {"cap": self.cap, "families": len(self.counts), "refused": self.refused,
                "largest": max(self.counts.values(), default=0)}
