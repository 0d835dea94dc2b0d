"""What a tool is for, in words a user would say: ``lookup_order`` -> "check an order".

A :class:`ToolIntent` is computed once per tool when the writer is built: the verb and noun
(from the tool name, falling back to the description), whether the tool only reads or changes
things, the parameter that takes a reference key, the ids the tool's descriptions mention (a
caller's real world), and the prefix for invented ids (``ORD-48211``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .grid import _KEY_PARAM, _schema

__all__ = ["ToolIntent", "intents_for", "make_id", "plural"]

# first word of a tool name -> (verb a user says, past participle, kind)
_VERBS = {
    "get": ("check", "checked", "read"), "lookup": ("check", "checked", "read"),
    "look": ("check", "checked", "read"), "fetch": ("check", "checked", "read"),
    "find": ("find", "found", "read"), "search": ("search for", "searched", "read"),
    "read": ("check", "checked", "read"), "check": ("check", "checked", "read"),
    "query": ("check", "checked", "read"), "view": ("check", "checked", "read"),
    "show": ("show me", "shown", "read"), "list": ("list", "listed", "read"),
    "track": ("track", "tracked", "read"), "retrieve": ("check", "checked", "read"),
    "describe": ("check", "checked", "read"), "verify": ("verify", "verified", "read"),
    "cancel": ("cancel", "cancelled", "destructive"), "refund": ("refund", "refunded", "destructive"),
    "delete": ("delete", "deleted", "destructive"), "remove": ("remove", "removed", "destructive"),
    "close": ("close", "closed", "destructive"), "transfer": ("transfer", "transferred", "destructive"),
    "pay": ("pay", "paid", "destructive"), "charge": ("charge", "charged", "destructive"),
    "update": ("update", "updated", "write"), "change": ("change", "changed", "write"),
    "edit": ("edit", "edited", "write"), "modify": ("change", "changed", "write"),
    "set": ("change", "changed", "write"), "create": ("create", "created", "write"),
    "add": ("add", "added", "write"), "make": ("make", "made", "write"),
    "open": ("open", "opened", "write"), "place": ("place", "placed", "write"),
    "submit": ("submit", "submitted", "write"), "send": ("send", "sent", "write"),
    "book": ("book", "booked", "write"), "reserve": ("reserve", "reserved", "write"),
    "schedule": ("schedule", "scheduled", "write"), "reset": ("reset", "reset", "write"),
    "approve": ("approve", "approved", "write"), "reject": ("reject", "rejected", "write"),
    "apply": ("apply", "applied", "write"), "escalate": ("escalate", "escalated", "write"),
    "reschedule": ("reschedule", "rescheduled", "write"), "return": ("return", "returned", "write"),
}
_ID_IN_TEXT = re.compile(r"\b[A-Z]{1,5}-?\d{3,}\b")
_STOP = {"by", "with", "for", "using", "from", "in", "on", "of", "to", "and", "the", "a", "an",
         "its", "their", "your", "given", "an"}


@dataclass(slots=True)
class ToolIntent:
    name: str
    verb: str                  # "check"
    past: str                  # "checked"
    noun: str                  # "order"
    kind: str                  # read / write / destructive
    key_param: str | None      # "order_id", or None when no parameter looks like a key
    key_kind: str | None       # "id" / "email" / None
    known_ids: list = field(default_factory=list)   # ids the descriptions mention
    prefix: str = "REF"        # invented ids: f"{prefix}-{n}"

    @property
    def article(self) -> str:
        if self.noun.endswith("s") and not self.noun.endswith("ss"):
            return "my"
        return "an" if self.noun[:1] in "aeiou" else "a"

    @property
    def plain(self) -> str:
        """The intent without an id: "check an order"."""
        return f"{self.verb} {self.article} {self.noun}"


def plural(noun: str) -> str:
    if noun.endswith("s") and not noun.endswith("ss"):
        return noun
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _words(name: str) -> list[str]:
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", name.lower()) if w]


def _from_description(desc: str):
    words = [w for w in re.split(r"[^A-Za-z']+", desc.lower()) if w]
    if not words or words[0] not in _VERBS:
        return None
    verb = _VERBS[words[0]]
    rest = words[2:] if words[0] == "look" and words[1:2] == ["up"] else words[1:]
    noun: list[str] = []
    for w in rest:
        if w in _STOP and noun:
            break
        if w not in _STOP:
            noun.append(w)
        if len(noun) == 2:
            break
    return (verb, " ".join(noun)) if noun else None


def _intent(tool) -> ToolIntent:
    schema = _schema(tool)
    name = str(schema.get("name") or "tool")
    desc = str(schema.get("description") or "")
    props = (schema.get("parameters") or {}).get("properties") or {}
    words = _words(name)
    verb = noun = None
    if words and words[0] in _VERBS:
        verb, noun = _VERBS[words[0]], " ".join(words[1:])
    elif words and words[-1] in _VERBS:
        verb, noun = _VERBS[words[-1]], " ".join(words[:-1])
    if (verb is None or not noun) and desc:
        got = _from_description(desc)
        if got:
            verb = verb or got[0]
            noun = noun or got[1]
    if verb is None:
        verb = ("handle", "handled", "write")
        noun = noun or " ".join(words) or "request"
    noun = noun or "request"
    key_param = next((p for p in props
                      if _KEY_PARAM.search(str(p)) or _KEY_PARAM.search(str(p).lower())), None)
    key_kind = None
    if key_param is not None:
        key_kind = "email" if "email" in key_param.lower() else "id"
    texts = [desc] + [str((spec or {}).get("description") or "") for spec in props.values()
                      if isinstance(spec, dict)]
    known = list(dict.fromkeys(m for t in texts for m in _ID_IN_TEXT.findall(t)))
    head = noun.split()[-1]
    prefix = re.sub(r"[^A-Z]", "", head.upper())[:3] or "REF"
    if known:
        m = re.match(r"([A-Z]+-?)", known[0])
        prefix = m.group(1).rstrip("-") if m else prefix
    return ToolIntent(name, verb[0], verb[1], noun, verb[2], key_param, key_kind, known, prefix)


def intents_for(tools) -> list[ToolIntent]:
    """One :class:`ToolIntent` per tool, in the order given."""
    return [_intent(t) for t in tools or ()]


_FIRST = ("maria", "james", "aisha", "chen", "lucas", "fatima", "noah", "olga", "ravi", "sofia",
          "tom", "yuki", "amir", "clara", "diego", "elena")
_LAST = ("lopez", "smith", "khan", "wang", "adeyemi", "rossi", "novak", "patel", "kim", "berg",
         "silva", "meyer", "okafor", "dubois", "tanaka", "moreau")


def make_id(intent: ToolIntent, rnd, invent: bool = False) -> str | None:
    """A reference id for one world: a known id from the descriptions, or an invented one.

    ``rnd`` is a bound ``random()`` of the situation's generator. ``invent=True`` forces a fresh
    id (used for worlds where the record must not exist). None when the tool takes no key.
    """
    if intent.key_kind is None:
        return None
    if intent.key_kind == "email":
        first = _FIRST[int(rnd() * len(_FIRST))]
        last = _LAST[int(rnd() * len(_LAST))]
        return f"{first}.{last}{1 + int(rnd() * 9999)}@example.com"
    if intent.known_ids and not invent:
        return intent.known_ids[int(rnd() * len(intent.known_ids))]
    while True:
        cand = f"{intent.prefix}-{1000 + int(rnd() * 99000)}"
        if cand not in intent.known_ids:
            return cand
