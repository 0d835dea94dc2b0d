"""A chunk on its way from the Driver's loop (``Flight``), and the watchdog's look at the late ones.

A unit whose chunk has been in flight past the agent deadline plus a grace (``STUCK_GRACE_S``)
is on a hung lane or a node that died without Ray noticing yet. It stays in flight (re-issuing a
unit that may still land would break exactly-once); the loop's report names it.

No Ray here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from .lending import OWN

__all__ = ["Flight", "stuck_units", "watch_stuck", "STUCK_GRACE_S"]

STUCK_GRACE_S = 30.0


@dataclass
class Flight:
    """One chunk on its way: which pool and lane, its items ``(round, index, unit or result)``."""
    kind: str              # "roll", "alone" (a suspect tried by itself) or "judge"
    lane: int
    items: list
    sent_at: float
    owner: int = OWN       # a lent chunk: the starting lane whose slots it plays in (driver/lending.py)


def stuck_units(flights: Iterable[Flight], now: float, limit: float) -> Iterator[tuple[str, float]]:
    """``(unit key, seconds in flight)`` of every rollout unit out longer than ``limit``."""
    for flight in flights:
        if flight.kind == "judge" or now - flight.sent_at <= limit:
            continue
        for _r, _i, unit in flight.items:
            yield "|".join(map(str, unit.key)), now - flight.sent_at


def watch_stuck(flights: Iterable[Flight], now: float, timeout: float | None, stuck: dict,
                log: Callable[[str], None]) -> None:
    """The watchdog's look: every unit in flight past the agent's ``timeout`` (300 s when none) plus
    ``STUCK_GRACE_S`` goes into ``stuck`` (unit key -> seconds), said once in the ``log``."""
    limit = (timeout or 300.0) + STUCK_GRACE_S
    for key, age in stuck_units(flights, now, limit):
        if key not in stuck:
            log(f"whileai_ray watchdog: unit {key} in flight for {age:.0f}s (deadline {limit:.0f}s)")
        stuck[key] = round(age, 1)
