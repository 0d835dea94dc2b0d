"""Conversation tags, drawn and realized: a tag is only stored when the text really shows it.

:func:`draw_tags` draws one phrasing's tags (texture, tone, length, ask and the rarer vagueness,
phrasing, pressure and user tags, at about the reference's rates). :func:`compose` turns the
writer's sentences into the prompt under those tags and returns the tags it realized:

* length: short = opener + the essential sentences (stance, rule); medium adds the instance's
  details, the world state and history sentences and a closer; long adds the tool-condition hint
  and background sentences;
* tone, user, pressure, vagueness and phrasing add their marker sentences (text_bank);
* ask: several asks adds a second question, do several things a second action;
* texture rewrites the text: lowercase (no capitals), abbreviations (pls, u, thx ...), typo (one
  misspelt word, reported in ``notes["typo"]``), no_punctuation (no . , ! ? ; :), run_on (one
  sentence end in the whole text), clipped (articles, pronouns and pleasantries dropped).
"""
from __future__ import annotations

import re

from . import text_bank as tb

__all__ = ["TEXTURES", "LENGTHS", "TONES", "ASKS", "VAGUENESS", "PHRASINGS", "PRESSURES", "USERS",
           "draw_tags", "compose", "apply_texture"]

TEXTURES = ("lowercase", "abbreviations", "typo", "no_punctuation", "run_on", "clipped")
LENGTHS = ("short prompt", "medium prompt", "long prompt")
TONES = tuple(tb.TONE)
ASKS = ("question", "ask", "several asks", "do several things")
VAGUENESS = ("specific", "vague", "underspecified")
PHRASINGS = ("incomplete", "specific", "rambling")
PRESSURES = ("rushed", "insistent", "repeat")
USERS = ("first time", "returning", "in a hurry", "careful", "brief")

_ABBR = {k.lower(): v for k, v in tb.ABBREVIATIONS.items()}
_ABBR_RE = re.compile(r"(?<![\w'-])(" + "|".join(re.escape(k) for k in sorted(_ABBR, key=len, reverse=True))
                      + r")(?![\w'-])", re.I)
_NO_PUNCT = str.maketrans("", "", ".,!?;:")
_SENT_END = re.compile(r"[.!?]+\s+(\S+)")
_CONNECT = (" and", ",", " so", " and then")
_KEEP_CASE = ("I", "I'm", "I've", "I'd", "I'll")


def _pick(rnd, seq):
    return seq[int(rnd() * len(seq))]


def draw_tags(rnd, punct_ids: bool = False) -> dict:
    """One phrasing's tags. ``rnd`` is a bound ``random()``; ``punct_ids`` rules out
    no_punctuation when an id itself carries punctuation (an email address)."""
    tags = {}
    if rnd() < 0.8:
        texture = _pick(rnd, TEXTURES) if rnd() < 0.35 else "standard"
        if texture == "no_punctuation" and punct_ids:
            texture = "lowercase"
        tags["texture"] = texture
        if rnd() < 1 / 3:
            tags["tone"] = _pick(rnd, TONES)
    if rnd() < 0.8:
        tags["length"] = _pick(rnd, LENGTHS)
    if rnd() < 0.2:
        tags["ask"] = _pick(rnd, ASKS)
    if rnd() < 1 / 20:
        tags["vagueness"] = _pick(rnd, VAGUENESS)
    if rnd() < 1 / 20:
        tags["phrasing"] = _pick(rnd, PHRASINGS)
    if rnd() < 1 / 19:
        tags["pressure"] = _pick(rnd, PRESSURES)
    if rnd() < 1 / 17:
        tags["user"] = _pick(rnd, USERS)
        if tags["user"] == "brief":
            tags["length"] = "short prompt"
    return tags


def compose(opener: str, core: list, details: list, context: list, extra: list, closer: str,
            tags: dict, rnd, slots: dict) -> tuple[str, dict, dict]:
    """Assemble the prompt; returns ``(text, realized_tags, notes)``."""
    tags = dict(tags)
    length = tags.get("length", "medium prompt")
    sents = [opener]
    ask = tags.get("ask")
    if ask == "several asks":
        sents.append(_pick(rnd, tb.SECOND_QUESTIONS))
    elif ask == "do several things":
        sents.append(_pick(rnd, tb.MORE_THINGS).format_map(slots))
    user = tags.get("user")
    if user in tb.USER:
        sents.append(_pick(rnd, tb.USER[user]))
    sents.extend(core)
    vague = tags.get("vagueness")
    if length != "short prompt":
        if vague != "underspecified":
            sents.extend(details)
        sents.extend(context)
    if length == "long prompt":
        sents.extend(extra)
    if vague in ("vague", "underspecified") and tags.get("phrasing") == "specific":
        del tags["phrasing"]          # contradicts the vagueness tag, which wins
    if vague == "specific" or tags.get("phrasing") == "specific":
        sents.append(_pick(rnd, tb.SPECIFIC).format_map(slots))
    elif vague == "vague":
        sents.append(_pick(rnd, tb.VAGUE_HEDGE))
    elif vague == "underspecified":
        sents.append(_pick(rnd, tb.UNDERSPECIFIED))
    if tags.get("phrasing") == "rambling":
        sents.append(_pick(rnd, tb.RAMBLING))
    pressure = tags.get("pressure")
    if pressure in tb.PRESSURE:
        sents.append(_pick(rnd, tb.PRESSURE[pressure]))
    elif pressure == "repeat":
        sents.append("Again: " + opener)
    tone = tags.get("tone")
    if tone:
        sents.append(_pick(rnd, tb.TONE[tone]))
    texture = tags.get("texture", "standard")
    if (closer and length != "short prompt" and tone != "curt" and texture != "clipped"
            and tags.get("phrasing") != "incomplete"):
        sents.append(closer)
    if tags.get("phrasing") == "incomplete":
        sents[-1] = sents[-1].rstrip(".!?") + _pick(rnd, tb.INCOMPLETE_TAIL)
    text, notes = apply_texture(sents, texture, rnd)
    if notes.pop("texture", None) == "standard" and "texture" in tags:
        tags["texture"] = "standard"
    return text, tags, notes


def _typo(text: str, rnd) -> tuple[str, dict]:
    words = text.split(" ")
    cands = [i for i, w in enumerate(words) if len(w.strip(".,!?;:'\"")) >= 5
             and w.strip(".,!?;:'\"").isalpha()]
    if not cands:
        return text, {"texture": "standard"}
    i = cands[int(rnd() * len(cands))]
    word = words[i].strip(".,!?;:'\"")
    p = 1 + int(rnd() * (len(word) - 3))
    for q in list(range(p, len(word) - 2)) + list(range(1, p)):
        if word[q] != word[q + 1]:
            bad = word[:q] + word[q + 1] + word[q] + word[q + 2:]
            break
    else:
        bad = word[:p] + word[p + 1:]
    words[i] = words[i].replace(word, bad, 1)
    return " ".join(words), {"typo": [word, bad]}


def _run_on(text: str, rnd) -> str:
    conn = _CONNECT[int(rnd() * len(_CONNECT))]

    def join(m):
        word = m.group(1)
        if word not in _KEEP_CASE and not any(c.isdigit() for c in word):
            word = word[:1].lower() + word[1:]
        return conn + " " + word
    body, end = text[:-1], text[-1:]
    return _SENT_END.sub(join, body) + end


def _clipped(sents: list) -> str:
    out = []
    for s in sents:
        keep: list[str] = []
        for w in s.split():
            core = w.strip(".,!?;:").lower()
            if core in tb.CLIPPED_DROP:
                tail = w[len(w.rstrip(".,!?;:")):]
                if tail and keep:
                    keep[-1] = keep[-1].rstrip(".,!?;:") + tail
                continue
            keep.append(w)
        if keep and keep[0].strip(".,!?;:"):
            keep[0] = keep[0][:1].upper() + keep[0][1:]
            out.append(" ".join(keep))
    return " ".join(out) if out else " ".join(sents)


def apply_texture(sents: list, texture: str, rnd) -> tuple[str, dict]:
    """Join sentences and rewrite them under one texture; returns ``(text, notes)``."""
    if texture == "clipped":
        return _clipped(sents), {}
    text = " ".join(s for s in sents if s)
    if texture == "lowercase":
        return text.lower(), {}
    if texture == "no_punctuation":
        return " ".join(text.translate(_NO_PUNCT).split()), {}
    if texture == "run_on":
        return _run_on(text, rnd), {}
    if texture == "abbreviations":
        out, n = _ABBR_RE.subn(lambda m: _ABBR[m.group(0).lower()], text)
        return (out if n else out + " thx"), {}
    if texture == "typo":
        return _typo(text, rnd)
    return text, {}
