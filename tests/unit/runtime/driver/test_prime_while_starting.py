"""The start of a run: rounds decided while the rollout actors start (``driver/run.py``).

A pool kept from the last run renews itself while the run opens; its answers take a few turns
of the event loop to settle. Deciding a round each turn meanwhile held the first chunk back
behind several rounds (every lane idle): a kept pool is awaited first, so only the first round
is decided before the loop sends it. A pool that starts cold is not waited for: rounds are
decided while its actors start."""
from __future__ import annotations

import asyncio

from whileai_ray.runtime.driver.run import KEPT_WAIT_S, prime_while_starting


class Deciding:
    """What ``prime_while_starting`` needs of the loop: ``prime()`` decides one round."""

    def __init__(self, rounds: int = 100):
        self.rounds, self.decided = rounds, 0

    def prime(self) -> bool:
        self.decided += 1
        return self.decided < self.rounds        # more to decide before the lanes are full


async def _start_after(turns: int) -> None:
    """A pool's start() that answers after ``turns`` turns of the event loop (renewals settling)."""
    for _ in range(turns):
        await asyncio.sleep(0)


async def _run(kept: bool, turns: int, rounds: int = 100) -> Deciding:
    loop = Deciding(rounds)
    starting = asyncio.ensure_future(_start_after(turns))
    await prime_while_starting(loop, starting, kept=kept)
    assert starting.done()
    return loop


def test_a_kept_pool_is_awaited_and_only_the_first_round_is_decided_before_it_sends():
    loop = asyncio.run(_run(kept=True, turns=6))
    assert loop.decided == 1


def test_a_cold_pool_is_not_waited_for_rounds_are_decided_while_it_starts():
    loop = asyncio.run(_run(kept=False, turns=6))
    assert loop.decided >= 5                     # a round each turn until the pool answered


def test_a_kept_pool_slower_than_the_wait_gets_rounds_decided_meanwhile():
    async def slow() -> Deciding:
        loop = Deciding()
        starting = asyncio.ensure_future(asyncio.sleep(KEPT_WAIT_S * 3))
        await prime_while_starting(loop, starting, kept=True)
        return loop
    loop = asyncio.run(slow())
    assert loop.decided > 1                      # the wait is bounded: the run decides while it waits on


def test_priming_stops_once_the_lanes_are_full_and_then_waits_for_the_pool():
    loop = asyncio.run(_run(kept=False, turns=50, rounds=3))
    assert loop.decided == 3                     # prime() said nothing more to decide now
