"""The simulated person who answers a model-backed agent's questions, and walks away.

Patience decides, per question the agent asks, whether the person leaves instead of answering:
the first question is always answered; the second is walked away from with probability
``second``, every later one with ``later``. Levels (the docs' defaults, not a measurement):

    normal  (0.35, 0.60)    short  (0.60, 0.90)    endless  (0, 0)

or a custom ``{"second": p, "later": q}``. The draw is ``rng.draw(seed, unit_key, "patience",
question_index)``, so a seeded run leaves at the same questions on any actor and in any order.
Callers pass ``unit.draw_key()`` as the unit key (run_id left out, like every unit draw).

Answers come from the user model when there is one (an OpenAI-compatible backend, prompted
with :data:`USER_MARKER` so a scripted server knows to play the person), otherwise from a
deterministic template that repeats the id the person gave in the opening ask, if any.
"""
from __future__ import annotations

import re

from ..core.rng import draw, unit_rng

__all__ = ["USER_MARKER", "PATIENCE", "resolve_patience", "SimulatedUser"]

USER_MARKER = "You are the user"
PATIENCE = {"normal": (0.35, 0.60), "short": (0.60, 0.90), "endless": (0.0, 0.0)}
_ID = re.compile(r"\b[A-Za-z]+[-_]?\d+\b")
_THINK = re.compile(r"<think>.*?</think>", re.S)
USER_TEMPERATURE = 0.7      # the simulated person's sampling temperature unless advanced["user_temperature"]
_WITH_ID = ("It's {id}.", "The one I mentioned: {id}.", "{id}, as I said. Please go ahead.",
            "I mean {id}.")
_WITHOUT_ID = ("I don't have a number for it, sorry. Whatever you can find is fine.",
               "I'm not sure. It was the most recent one.",
               "I already told you everything I know.")
_PERSONA = (USER_MARKER + " in a conversation with an assistant. You opened it with this message:\n"
            "{opening}\n\nAnswer the assistant's question briefly, in character, in one or two "
            "sentences. Only state facts from your opening message; if you do not know, say so. "
            "Never ask the assistant to do anything new.")


def resolve_patience(patience) -> dict:
    """``{"level", "second", "later"}`` from a level name or a ``{"second","later"}`` dict."""
    if patience is None:
        patience = "normal"
    if isinstance(patience, str):
        if patience not in PATIENCE:
            raise ValueError(f"patience must be one of {sorted(PATIENCE)} or a dict "
                             f"{{'second': p, 'later': q}}; got {patience!r}")
        second, later = PATIENCE[patience]
        return {"level": patience, "second": second, "later": later}
    if isinstance(patience, dict):
        unknown = set(patience) - {"level", "second", "later"}
        if unknown:
            raise ValueError(f"patience dict takes 'second' and 'later'; unknown keys {sorted(unknown)}")
        base = PATIENCE.get(patience.get("level", "normal"), PATIENCE["normal"])
        out = {"level": patience.get("level", "custom"),
               "second": patience.get("second", base[0]), "later": patience.get("later", base[1])}
        for name in ("second", "later"):
            value = out[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ValueError(f"patience[{name!r}] must be a probability in [0, 1]; got {value!r}")
        return out
    raise TypeError(f"patience must be 'normal', 'short', 'endless' or a dict; got {type(patience).__name__}")


class SimulatedUser:
    """One person, for one unit: ``await user.reply(question)`` -> answer text, or None (left).

    ``backend``: an ``agents.backends.OpenAI`` playing the person, or None for template
    answers. ``client``: the ``openai.AsyncOpenAI`` to reach it (the caller owns it; one per
    actor). ``opening``: the person's opening message (what they know).
    """

    def __init__(self, backend=None, patience="normal", seed: int = 0, unit_key=(), *,
                 opening: str = "", client=None, temperature: float = USER_TEMPERATURE, max_tokens: int = 128,
                 timeout: float = 60.0):
        if backend is not None and client is None:
            raise ValueError("SimulatedUser(backend=...) needs client= (an openai.AsyncOpenAI for that backend)")
        self.backend = backend
        self.patience = resolve_patience(patience)
        self.seed = seed
        self.unit_key = list(unit_key)
        self.opening = opening
        self.client = client
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.questions = 0          # questions seen so far (answered or not)
        self.left = False
        self.think = {"stripped": 0, "unclosed": 0}   # <think> reasoning removed from the person's replies
        self.usage = {"input_tokens": 0, "output_tokens": 0}

    @property
    def model(self) -> str | None:
        """The user model's tag for rows (``user_model``); None for template answers."""
        return self.backend.name if self.backend is not None else None

    def walks_away(self, question_index: int) -> bool:
        """Whether the person leaves at the ``question_index``-th question (0-based)."""
        if question_index <= 0:
            return False
        p = self.patience["second"] if question_index == 1 else self.patience["later"]
        return p > 0 and draw(self.seed, self.unit_key, "patience", question_index) < p

    async def reply(self, question: str, messages: list | None = None) -> str | None:
        """The person's answer to the agent's ``question``, or None when they walk away."""
        index = self.questions
        self.questions += 1
        if self.left or self.walks_away(index):
            self.left = True
            return None
        if self.backend is None:
            return self.template_answer(index)
        return await self._model_answer(question)

    def template_answer(self, question_index: int) -> str:
        ids = _ID.findall(self.opening)
        rng = unit_rng(self.seed, self.unit_key, "user-answer", question_index)
        if ids:
            return rng.choice(_WITH_ID).format(id=ids[0])
        return rng.choice(_WITHOUT_ID)

    async def _model_answer(self, question: str) -> str:
        from .chat_call import chat_completion   # lazy: httpx; the same raw call as the agent's (dict reply)
        request = {"model": self.backend.model,
                   "messages": [{"role": "system", "content": _PERSONA.format(opening=self.opening)},
                                {"role": "user", "content": question}],
                   "temperature": self.temperature, "max_tokens": self.max_tokens}
        from .response_cache import cache_role
        with cache_role("user"):            # the response cache counts (and caches) it as the user's
            response = await chat_completion(self.client, request, self.timeout, need_message=False)
        usage = response.get("usage") or {}
        self.usage["input_tokens"] += usage.get("prompt_tokens") or 0
        self.usage["output_tokens"] += usage.get("completion_tokens") or 0
        choices = response.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        text = (message.get("content") or "").strip() if isinstance(message, dict) else ""
        text = self._strip_think(text)
        return text or self.template_answer(self.questions - 1)   # no reply text: the template

    def _strip_think(self, text: str) -> str:
        """A reasoning model's ``<think>...</think>`` is not what the person says: it is removed
        (counted in ``think["stripped"]``); a reply cut inside an unclosed ``<think>`` keeps only
        what came before it (``think["unclosed"]``). ``search["user_think"]`` sums them."""
        if "<think>" not in text and "</think>" not in text:
            return text
        closed = _THINK.subn("", text)
        text, n = closed[0], closed[1]
        self.think["stripped"] += n
        if "<think>" in text:
            text = text.split("<think>", 1)[0]
            self.think["unclosed"] += 1
        elif "</think>" in text:                 # the opening tag was in the prompt template
            text = text.rsplit("</think>", 1)[1]
            self.think["stripped"] += 1
        return text.strip()
