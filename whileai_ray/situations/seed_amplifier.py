"""Seed amplification: a model rewords a caller's seed into new asks with the same intent and ids.

``simulate(seeds=[...], situations=N)`` with a model writer runs every seed as written and can
fill the remaining situations with variations of the seeds. A variation must keep every id the
seed names (order numbers, emails: the caller's world only knows those), must differ from the
seed and from every other variation (compared case- and space-insensitively), and must not be
junk. The model is asked for at most 10 at a time, and is told which ones it already gave, for a
few rounds; whatever is still missing is filled from the template writer's failure mutations of
the seed (and counted in the writer's ``writer_errors`` as ``amplify_short``), so the caller
always gets ``n`` distinct texts.
"""
from __future__ import annotations

import hashlib
import re

from .situation import Situation
from ..agents.structured import VARIATIONS_SCHEMA
from .writer_prompt import amplify_request, parse_variations, system_message

__all__ = ["SeedAmplifier", "seed_ids"]

_ID = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+|\b[A-Za-z]{1,6}[-_]?\d{3,}\b")
_PER_REQUEST = 10


def seed_ids(text: str) -> list[str]:
    """Ids a seed names (``ORD-1234``, ``A1001``, emails), in order of appearance."""
    return list(dict.fromkeys(_ID.findall(text)))


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w@.-]+", " ", text.lower()).split())


class SeedAmplifier:
    """Amplifies seeds for one :class:`~whileai_ray.situations.llm_writer.LLMWriter`."""

    def __init__(self, writer):
        self.writer = writer

    async def variations(self, seed_text: str, n: int) -> list[tuple[str, str]]:
        """``n`` distinct ``(text, source)`` pairs; source is ``"model"`` or ``"template"``."""
        if not isinstance(seed_text, str) or not seed_text.strip():
            raise ValueError(f"seed_text must be a non-empty prompt string; got {seed_text!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n (variations per seed) must be a whole number >= 0; got {n!r}")
        w = self.writer
        ids = [i.lower() for i in seed_ids(seed_text)]
        seen = {_norm(seed_text)}
        out: list[tuple[str, str]] = []

        def take(text: str, source: str) -> None:
            key = _norm(text)
            if key and key not in seen and all(i in text.lower() for i in ids):
                seen.add(key)
                out.append((text, source))

        rounds = 0
        while len(out) < n and rounds < 2 + (n + _PER_REQUEST - 1) // _PER_REQUEST:
            rounds += 1
            want = min(_PER_REQUEST, n - len(out))
            user = amplify_request(seed_text, want, w._tools_text, w.system_prompt)
            if out:
                user += "\nAlready written (do not repeat):\n" + "\n".join(f"- {t}" for t, _ in out)
            choices, _reason = await w.complete(system_message(amplify=True), user, schema=VARIATIONS_SCHEMA,
                                                name="variations")
            for content, finish in choices:
                found = parse_variations(content)
                if finish == "length":
                    found = found[:-1]       # the last one may be cut off
                for text in found:
                    if len(out) < n:
                        take(text, "model")
        w.written += len(out)
        short = n - len(out)
        if short:
            w.count_error("amplify_short", short)
            parent = w.fallback.seed_situation(seed_text, 0)
            j = 0
            while len(out) < n and j < 10 * n + 10:
                take(w.fallback.mutate(parent, j).prompt, "template")
                j += 1
            while len(out) < n:          # only for seeds too short to mutate apart
                take(f"{seed_text.strip()} (asking again, take {len(out) + 2})", "template")
        return out

    async def situations(self, seed_text: str, seed_index: int, n: int) -> list[Situation]:
        """The variations as cell-less situations (``llm_guided``, ``writer_model=<model>``)."""
        ids = seed_ids(seed_text)
        model = self.writer.name
        out = []
        for j, (text, source) in enumerate(await self.variations(seed_text, n)):
            by_model = source == "model"
            out.append(Situation(
                "probe_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:6], text, 0, {}, "ordinary",
                {}, "tool", None, "", [i for i in ids if i.lower() in text.lower()],
                "llm_guided" if by_model else "open_ended", model if by_model else "template",
                "seed_amplification", None,
                {"seed_index": int(seed_index), "variation": j, "amplified_from": seed_text[:80]}))
        return out
