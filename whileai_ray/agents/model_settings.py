"""ModelSettings: how a run plays a model-backed agent (backend, user model, turns, sampling).

Built by ``simulate()`` before the run and shipped to every rollout actor. A module of its own
so that building one loads nothing of the model path (httpx, openai): ``import whileai_ray``
stays light, and only an actor that plays a model pays for it.
"""
from __future__ import annotations

from .user_sim import USER_TEMPERATURE

__all__ = ["ModelSettings"]


class ModelSettings:
    """What the rollout actor needs to play model-backed units (picklable, no key inside
    beyond the backend object, whose repr never shows it)."""

    def __init__(self, backend, user_backend=None, max_turns=None, avg_turns=None, temperature=None,
                 max_tokens=None, timeout=None, logprobs=False, patience=None, endpoint_concurrency=64,
                 tool_choice=None, min_user_turns=None, user_temperature=None, cache=None):
        self.backend = backend
        self.user_backend = user_backend
        self.max_turns = max_turns
        self.avg_turns = avg_turns
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.logprobs = logprobs
        self.patience = patience or {"level": "normal", "second": 0.35, "later": 0.60}
        self.endpoint_concurrency = endpoint_concurrency
        self.tool_choice = tool_choice
        self.min_user_turns = min_user_turns
        self.user_temperature = USER_TEMPERATURE if user_temperature is None else float(user_temperature)
        self.cache = cache             # response_cache.CacheSpec (advanced["cache"]) or None
