"""The near-copy cap: at most ``cap`` prompts per *scenario family*.

A family is every prompt with the same *skeleton*: the words of the prompt with the parts a
writer swaps between worlds blanked out (numbers, ids, amounts, emails, dates, proper names).
``"Check order ORD-41087 for Maria Lopez, paid $44 on March 6."`` and ``"Check order
ORD-20211 for Tom Kim, paid $310 on May 2."`` share a family; they teach the agent the same
thing, so after ``cap`` of them the search spends its slots elsewhere.

``FamilyCap(cap)``: ``family(prompt)`` (the key), ``allowed(prompt)``, ``admit(prompt)`` (count
it if allowed, return whether it was), ``note(prompt)`` (count it regardless: seeds, pinned
tasks and re-rolls must never be refused), ``stats()``. Per call: one regex pass and a dict
lookup. Counts are kept compact: each family as its 40-bit key (an int) with an id, and the
counts in an ``array`` column by id (``state()`` / ``load_state()`` for the planner snapshot).
"""
from __future__ import annotations

import re
from array import array

import numpy as np

from ..core.rng import short_hash
from ..core.digest_table import DigestTable
from ..core.columns import Column, State

__all__ = ["FamilyCap", "skeleton", "family_key"]

_EMAIL = re.compile(r"\S+@\S+")                                        # emails
_AMOUNT = re.compile(r"\$\s?\d[\d,]*(?:\.\d+)?")                         # amounts
# dates: the month names and their short forms as a trie (the first letter picks the branch), then the day
_DATE = re.compile(r"\b(?:j(?:an(?:uary)?|un(?:e)?|ul(?:y)?)|feb(?:ruary)?|ma(?:r(?:ch)?|y)|a(?:pr(?:il)?|ug(?:ust)?)"
                   r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b\.?\s*\d{1,2}(?:st|nd|rd|th)?\b", re.I)
# the same months on lower-cased ASCII text, case-sensitive (a third of _DATE's cost): every date
# starts with one of their first letters, which a lookahead checks before the word boundary
_DATE_LOWER = re.compile(r"(?=[jfmasond])" + _DATE.pattern)
_IDS = re.compile(r"\b[\w-]*?\d[\w-]*\b")                               # ids, numbers
_DIGIT = re.compile(r"\d")
_WORDISH = re.compile(r"[\w-]*")                                          # a run of word characters and "-"
_TOKEN = re.compile(r"[A-Za-z'#$@]+|[.!?]")
_BLANKED = frozenset(("#", "$", "@", "D"))
SENTENCES_KEPT = 20_000              # sentences and their blanked words kept (then forgotten at once)
SENTENCE_CHARS = 400                 # the longest sentence kept: the kept ones hold ~20 MB at most
_SENTENCES: dict[str, str] = {}


def skeleton(prompt: str) -> str:
    """The prompt's words with numbers, ids, amounts, emails, dates and proper names blanked."""
    text = str(prompt)
    if "@" in text:
        text = _EMAIL.sub(" @ ", text)
    if "$" in text:
        text = _AMOUNT.sub(" $ ", text)
    text = _ids_blanked(_dates_blanked(text))
    # sentence by sentence (see _sentence), each one's words blanked once per process
    parts = []
    kept = _SENTENCES
    for sentence in text.replace("!", ".").replace("?", ".").split("."):   # every stop a "." (2 C passes; translate: 7x that)
        out = kept.get(sentence)
        if out is None:
            out = _sentence(sentence)
            if len(sentence) <= SENTENCE_CHARS:        # (a long one, text pasted in a prompt, is not kept)
                if len(kept) >= SENTENCES_KEPT:
                    kept.clear()
                kept[sentence] = out
        if out:
            parts.append(out)
    return " ".join(parts)


def _sentence(text: str) -> str:
    """The blanked words of a stretch of text without a stop (".", "!", "?"), as ``skeleton`` blanks
    them anywhere. Every stop is a token of its own (``_TOKEN``), and the first word after one
    starts afresh: it is never a name (a capitalised word that starts a sentence), so it leaves no
    name behind it to merge with. A text's blanked words are therefore its sentences' blanked
    words, in order: written sentences come back again and again (a template's, with a blank
    where an id or a date was), so each is blanked once and looked up after (``SENTENCES_KEPT``)."""
    out: list[str] = []
    append = out.append
    start = True                       # a capitalised word that starts a sentence is not a name
    name = False                       # the last word kept was a name blank
    for tok in _TOKEN.findall(text):
        if tok in _BLANKED:
            name = False
        elif not start and tok[0].isupper() and tok != "I" and not tok.startswith("I'"):
            if name:                   # "Maria Lopez" -> one name blank
                continue
            tok, name = "N", True
        else:
            tok, name = tok.lower(), False
        append(tok)
        start = False
    return " ".join(out)


def _dates_blanked(text: str) -> str:
    """``_DATE.sub(" D ", text)``. ASCII text is matched lower-cased without ``re.I``: lower-casing
    keeps every ASCII character's place and its class (word, digit, space), so the matches are
    the same spans; other text goes through ``_DATE`` as it is."""
    if not text.isascii():
        return _DATE.sub(" D ", text)
    spans = [m.span() for m in _DATE_LOWER.finditer(text.lower())]
    if not spans:
        return text
    out, at = [], 0
    for start, end in spans:
        out.append(text[at:start])
        out.append(" D ")
        at = end
    out.append(text[at:])
    return "".join(out)


def _ids_blanked(text: str) -> str:
    """``_IDS.sub(" # ", text)``, run only on the stretches of word characters and "-" that hold a
    digit. An id is made of such characters and its ``\\b`` edges look at one on each side, so a
    stretch (bounded by neither kind) matches alone exactly as it does in the text; the others
    cannot match (no digit). Python's ``re`` tries ``_IDS`` at every position of the text
    (~40 ns each); a prompt has a few digits: a third of the cost."""
    m = _DIGIT.search(text)
    if m is None:
        return text
    out, at = [], 0
    while m is not None:
        start = m.start()
        while start > at and (text[start - 1].isalnum() or text[start - 1] in "_-"):   # re's \w: isalnum or _
            start -= 1
        run = _WORDISH.match(text, m.end())            # (always matches: the run may be empty)
        end = run.end() if run is not None else m.end()
        out.append(text[at:start])
        out.append(_IDS.sub(" # ", text[start:end]))
        at = end
        m = _DIGIT.search(text, end)
    out.append(text[at:])
    return "".join(out)


def family_key(prompt: str) -> str:
    """10 hex chars naming the prompt's scenario family (a hash of its skeleton)."""
    return short_hash("family", skeleton(prompt))


class FamilyCap:
    """Counts prompts per family and refuses a family's prompt past ``cap``."""

    def __init__(self, cap: int = 3):
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise ValueError(f"family cap must be an int >= 1 (prompts per scenario family); got {cap!r}")
        self.cap = cap
        self._id = DigestTable(values=True)     # family (its key as an int) -> id
        self._families = Column(np.uint64)      # family keys by id, first seen first
        self._counts = array("i")               # prompts counted per family id
        self._counted = Column(np.int32)        # the family id of every prompt counted, in order
        self.refused = 0
        self._recent: dict[str, str] = {}   # the planner asks allowed() then admit() of a few prompts

    def family(self, prompt: str) -> str:
        key = self._recent.get(prompt)
        if key is None:
            if len(self._recent) >= 16:
                self._recent.clear()
            key = self._recent[prompt] = family_key(prompt)
        return key

    def known(self, prompt: str, key: str) -> None:
        """``family_key(prompt)`` is ``key``, computed elsewhere (an ask written at an edge)."""
        if len(self._recent) >= 16:
            self._recent.clear()
        self._recent[prompt] = key

    def count(self, key: str) -> int:
        """Prompts counted in family ``key`` so far."""
        i = self._id.get(int(key, 16))
        return 0 if i is None else self._counts[i]

    def _bump(self, key: str) -> None:
        k = int(key, 16)
        i = self._id.get(k)
        if i is None:
            i = len(self._counts)
            self._id.add(k, i)
            self._families.append(k)
            self._counts.append(0)
        self._counts[i] += 1
        self._counted.append(i)

    def allowed(self, prompt: str) -> bool:
        """Whether one more prompt of this family fits under the cap (counts nothing)."""
        return self.count(self.family(prompt)) < self.cap

    def admit(self, prompt: str) -> bool:
        """Count the prompt and return True if its family is under the cap; else refuse it."""
        key = self.family(prompt)
        if self.count(key) >= self.cap:
            self.refused += 1
            return False
        self._bump(key)
        return True

    def note(self, prompt: str) -> None:
        """Count a prompt that must run whatever the cap (seeds, pinned tasks)."""
        self._bump(family_key(prompt))

    def stats(self) -> dict:
        """``{"cap", "families", "refused", "largest"}`` for ``search``."""
        return {"cap": self.cap, "families": len(self._counts), "refused": self.refused,
                "largest": max(self._counts, default=0)}

    # ------------------------------------------------------------------ snapshot
    def state(self) -> State:
        """Append-only: the families in first-seen order and the family of each prompt counted."""
        return State(meta={"refused": self.refused},
                     logs={"families": self._families.view(), "counted": self._counted.view()})

    def load_state(self, state: State) -> None:
        families = state.array("families", np.uint64)
        counted = state.array("counted", np.int32)
        if len(counted) and (counted.min() < 0 or counted.max() >= len(families)):
            raise ValueError("snapshot family cap counts a family it does not list")
        self._families, self._counted = Column.of(families, np.uint64), Column.of(counted, np.int32)
        self._id = DigestTable.of(families, np.arange(len(families)))
        self._counts = array("i", np.bincount(counted, minlength=len(families)).astype(np.int32).tobytes())
        self.refused = int(state.meta["refused"])
