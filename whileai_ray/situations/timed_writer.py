"""TimedWriter: a situation writer that keeps count of the seconds spent writing.

The planner wraps whatever writer it is given (the template writer, the LLM writer) in one of
these, so ``SimulationData.scenario_generation_seconds`` is the time spent inside the writer's
calls (``write``, ``prefetch``, ``seed_situation``, ``probe``, ``mutate``, ...), exclusive of
selection: ``embedding_selection_seconds`` is the planner's deciding time minus this. Every
attribute the wrapped writer has reads through (a method the writer lacks stays absent, so
``getattr(writer, "prefetch", None)`` still says whether it batches); ``stats()`` adds
``seconds`` to the wrapped writer's own stats.
"""
from __future__ import annotations

import time

__all__ = ["TimedWriter"]


class TimedWriter:
    def __init__(self, inner):
        self.__dict__["inner"] = inner.inner if isinstance(inner, TimedWriter) else inner
        self.__dict__["seconds"] = 0.0
        self.__dict__["calls"] = 0

    def __getattr__(self, name):
        value = getattr(self.__dict__["inner"], name)
        if not callable(value) or name.startswith("__"):
            return value

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return value(*args, **kwargs)
            finally:
                self.__dict__["seconds"] += time.perf_counter() - t0
                self.__dict__["calls"] += 1
        return timed

    def __setattr__(self, name, value):
        setattr(self.__dict__["inner"], name, value)

    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        self.__dict__.update(state)

    def stats(self) -> dict:
        own = getattr(self.__dict__["inner"], "stats", None)
        return {**(own() if callable(own) else {}), "seconds": round(self.__dict__["seconds"], 6)}
