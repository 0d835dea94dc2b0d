"""``whileai-ray bench`` line for ``async def`` agents: one rollout actor's loop holding 1,000 in flight.

The agent awaits 1 s (a stand-in for a model call over an async client), then answers like the
seeded agent (one tool call through the run's world). At concurrency 1,000 the ideal is 1,000
rows/s. Before async agents ran on the actor's loop, each rollout took a thread and a fresh
``asyncio.run``: 193 rows/s (19% of the ideal).

Two figures, as the issue asks:

* ``steady``: rows after the first ``concurrency`` landed, over the time from that landing to the
  last one. Once the pipe is full every further row needs a slot to be refilled, so this is the
  refill rate the engine sustains (rows landing in waves of 1,000 a second would read 100%).
  The plain first-to-last rate used by the other lines reads well above 100% here, because the
  first 1,000 rows land within a few milliseconds of each other;
* ``wall``: rows over the whole ``simulate()`` call, Driver and actor start-up included.

``reproducible=False``: in reproducible mode the units in flight are capped at ``lag x
round_size`` (512 by default) so that the plan does not depend on concurrency; holding 1,000 in
flight there needs ``advanced={"lag": 32}`` (a line below reports that too).
"""
from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from ..testing.seeded_rows import TOOLS

if TYPE_CHECKING:
    from ..agents.seeded import SeededAgent

_AGENT: dict[str, SeededAgent] = {}        # the seeded agent, built once per process


async def one_second_agent(message):
    """Await 1 s, then answer as the seeded agent does (its tool call goes to the run's world)."""
    await asyncio.sleep(1.0)
    inner = _AGENT.get("seeded")
    if inner is None:
        from ..agents.seeded import seeded_agent
        inner = _AGENT["seeded"] = seeded_agent(TOOLS)
    return inner(message)


def refill_rate(seconds: list, concurrency: int) -> float:
    """Rows per second after the first ``concurrency`` rows landed (see the module docstring)."""
    ts = sorted(seconds)
    if len(ts) <= concurrency or ts[-1] <= ts[concurrency - 1]:
        return float("nan")
    return (len(ts) - concurrency) / (ts[-1] - ts[concurrency - 1])


def bench_async(rows: int = 4000, concurrency: int = 1000, reproducible: bool = False, lag: int | None = None) -> dict:
    from ..simulation import simulate
    advanced = {"progress_every_s": 3600.0, "progress_every_rows": 10**6}
    if lag:
        advanced["lag"] = lag
    t0 = time.monotonic()
    data = simulate(one_second_agent, tools=TOOLS, simulator=False, budget=rows, concurrency=concurrency,
                    seed=0, reproducible=reproducible, advanced=advanced)
    wall = time.monotonic() - t0
    ideal = concurrency / 1.0
    steady = refill_rate(data.row_seconds, concurrency)
    return {"rows": len(data), "steady_rows_s": steady, "wall_rows_s": len(data) / wall, "ideal": ideal,
            "ratio": steady / ideal, "wall_ratio": len(data) / wall / ideal, "wall_s": wall,
            "actors": data.report()["placement"]["rollout_actors"], "pool": data.report()["placement"]["pool"],
            "stopped": data.stopped_because}


def format_async_line(r: dict, label: str = "async agent") -> str:
    where = "in the caller's pool" if r.get("pool") == "caller" else f"on {r['actors']} actor(s)"
    return (f"{label:<14} 1s await C=1000 {r['rows']} rows {where}: steady "
            f"{r['steady_rows_s']:.0f} rows/s ({r['ratio']:.0%}, target >= 90%), wall {r['wall_rows_s']:.0f} "
            f"rows/s in {r['wall_s']:.1f}s ({r['wall_ratio']:.0%}, target >= 60%), ideal {r['ideal']:.0f} rows/s, "
            f"stopped {r['stopped']}")
