"""Behaviour-targeted asks (arm ``behavior_targeted``): aim at tool-call shapes not seen yet.

A row's *action shape* is the sequence of tools it called, ``"lookup_order|cancel_order"``,
or ``"no_tool"`` (the same key ``search["shape_counts"]`` uses). From the declared tools the
search plans the shapes worth seeing: every single tool, every ordered pair of tools (the
same tool twice included, on two different records) and ``no_tool``. :class:`ShapeTargets`
counts the shapes rows actually showed, names the planned ones still uncovered, picks the
next one to aim at (least aimed first, seeded tie-break), and words an ask that should make
an agent produce it, from the writer's tool intents: ``"Can you check the order ORD-41087
for me?"``, ``"First check the order ORD-1200, then cancel the order ORD-5531."``.
"""
from __future__ import annotations

import hashlib

from ..core.rng import draw, unit_rng
from ..core.columns import State
from ..situations.situation import Situation
from ..situations.tool_intent import ToolIntent, intents_for, make_id

__all__ = ["NO_TOOL", "action_shape", "planned_shapes", "ShapeTargets"]

NO_TOOL = "no_tool"
PAIR_TOOLS = 6          # ordered pairs are planned over the first 6 tools (36 pairs at most)

_SINGLE = ("Can you {act} for me?", "Please {act}.", "I need you to {act}.", "Could you {act}? Thanks.",
           "Hi, {act}, please.", "Quick one: {act}.")
_PAIR = ("First {act}, then {act2}.", "Can you {act} and then {act2}?",
         "I need to {act}, and after that {act2}.", "Please {act}. Once that's done, {act2}.",
         "Two things, in order: {act}, then {act2}.")
_NONE = ("What kinds of things can you help me with?", "Thanks for the help last time, that's all.",
         "Hi! Before anything else, how does this chat work?", "Can you tell me what you are able to do?",
         "No request today, just checking this works.")


def action_shape(tools_used) -> str:
    """The shape key of one row: its called tools joined by ``|``, or ``no_tool``."""
    return "|".join(str(t) for t in tools_used or ()) or NO_TOOL


def planned_shapes(tool_names: list[str]) -> list[str]:
    """Singles, ordered pairs over the first :data:`PAIR_TOOLS` tools, then ``no_tool``."""
    names = list(dict.fromkeys(tool_names))
    pairs = [f"{a}|{b}" for a in names[:PAIR_TOOLS] for b in names[:PAIR_TOOLS]]
    return names + pairs + [NO_TOOL]


def _target(intent: ToolIntent, rnd, taken: list) -> tuple[str, str | None]:
    rid = make_id(intent, rnd, invent=False)
    while rid is not None and rid in taken:
        rid = make_id(intent, rnd, invent=True)
    if rid is None:
        return f"{intent.verb} {'another' if taken else intent.article} {intent.noun}", None
    return f"{intent.verb} the {intent.noun} {rid}", rid


class ShapeTargets:
    """Shape counts for the run and the asks that aim at the uncovered ones."""

    def __init__(self, tools, seed: int = 0):
        self.seed = int(seed)
        self.intents = intents_for(tools)
        self._by_name = {i.name: i for i in self.intents}
        self.planned = planned_shapes([i.name for i in self.intents])
        self.counts: dict[str, int] = {}
        self.aimed: dict[str, int] = {s: 0 for s in self.planned}
        self._uncovered = set(self.planned)

    def observe(self, tools_used, shape: str | None = None) -> bool:
        """Count one landed row's shape; True when the shape is new to the run. ``shape``:
        ``action_shape(tools_used)``, when it is known already (``coverage.row_marks``)."""
        if shape is None:
            shape = action_shape(tools_used)
        n = self.counts.get(shape, 0)
        self.counts[shape] = n + 1
        self._uncovered.discard(shape)
        return n == 0

    def uncovered(self) -> list[str]:
        """Planned shapes no row has shown yet, in planned order."""
        return [s for s in self.planned if s in self._uncovered]

    def next_target(self) -> str | None:
        """The uncovered shape to aim at next (least aimed so far, seeded tie-break), or None."""
        if not self._uncovered:
            return None
        shape = min(self._uncovered, key=lambda s: (self.aimed[s], draw(self.seed, "shape-aim", s, self.aimed[s])))
        self.aimed[shape] += 1
        return shape

    def ask(self, shape: str, index: int) -> tuple[str, list, str]:
        """``(prompt, ref_ids, reference)`` for an ask aimed at ``shape``; ``index`` varies the words."""
        rnd = unit_rng(self.seed, "targeted", shape, int(index)).random
        if shape == NO_TOOL or not self.intents:
            return (_NONE[int(rnd() * len(_NONE))], [],
                    "The ask needs no tool; the agent should answer directly without calling one.")
        names = shape.split("|")
        found = [self._by_name.get(n) for n in names]
        intents = [i for i in found if i is not None]
        if len(intents) < len(found) or len(intents) > 2:
            raise ValueError(f"shape {shape!r} is not a planned shape; use one from ShapeTargets.planned")
        ids: list = []
        acts = []
        for intent in intents:
            act, rid = _target(intent, rnd, ids)
            acts.append(act)
            if rid:
                ids.append(rid)
        if len(acts) == 1:
            prompt = _SINGLE[int(rnd() * len(_SINGLE))].format(act=acts[0])
            ref = f"The agent should {acts[0]} with {names[0]} and report only what the tool returns."
        else:
            prompt = _PAIR[int(rnd() * len(_PAIR))].format(act=acts[0], act2=acts[1])
            ref = (f"The agent should {acts[0]} with {names[0]}, then {acts[1]} with {names[1]}, in that "
                   f"order, reporting each result.")
        return prompt[:1].upper() + prompt[1:], ids, ref

    def situation(self, shape: str, index: int) -> Situation:
        """A ready :class:`Situation` (arm ``behavior_targeted``) aimed at ``shape``."""
        prompt, ids, ref = self.ask(shape, index)
        sid = "probe_" + hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:6]
        family = "general" if shape == NO_TOOL else "tool"
        return Situation(sid, prompt, 0, {}, "ordinary", {}, family, None, ref, ids, "behavior_targeted",
                         "template", "behavior_targeted", None, {"target_shape": shape, "target_index": int(index)})

    def stats(self) -> dict:
        """``{"shape_counts", "uncovered_shapes", "aimed"}`` for ``search``."""
        return {"shape_counts": dict(self.counts), "uncovered_shapes": self.uncovered(),
                "aimed": {s: n for s, n in self.aimed.items() if n}}

    # ------------------------------------------------------------------ snapshot
    def state(self) -> State:
        return State(meta={"counts": list(self.counts.items()), "aimed": [self.aimed[s] for s in self.planned]})

    def load_state(self, state: State) -> None:
        m = state.meta
        if len(m["aimed"]) != len(self.planned):
            raise ValueError("snapshot shape targets plan other shapes than this run")
        self.counts = {str(s): int(n) for s, n in m["counts"]}
        self.aimed = {s: int(n) for s, n in zip(self.planned, m["aimed"])}
        self._uncovered = set(self.planned) - set(self.counts)
