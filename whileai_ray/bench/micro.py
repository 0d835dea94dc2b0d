"""Per-call speed lines of ``whileai-ray bench``: the costs that used to be timing asserts in
unit tests, measured here instead (a unit test on a shared 2-core machine cannot tell a slow
function from a busy neighbour; a bench line prints the figure beside its target).

Each function returns ``(label, value, target, unit)``; the figure is the best of a few
rounds (a busy machine only ever makes a round slower). ``micro_lines()`` formats them all.
"""
from __future__ import annotations

import asyncio
import json
import random
import tempfile
import time
from pathlib import Path

from ..agents.seeded import seeded_agent
from ..core.rows import export_row
from ..score.conduct import conduct_check
from ..score.pass_at.estimate import pass_at
from ..search.novelty import NoveltyIndex
from ..situations.grid import build_axes, pairwise_cells
from ..situations.template_writer import TemplateWriter
from ..store.checkpoint.fingerprint import fingerprint
from ..store.checkpoint.jsonl import JsonlCheckpoint
from ..testing.seeded_rows import TOOLS, played
from ..testing.server import start_server

__all__ = ["micro_lines"]


def _best(fn, rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def seeded_agent_call():
    agent = seeded_agent(TOOLS, seed=5)
    prompts = [f"cancel order ORD-{i}" for i in range(100)]
    s = _best(lambda: [agent(prompts[i % 100]) for i in range(3000)]) / 3000
    return "seeded agent call", s * 1e6, 50, "us"


def template_write():
    writer = TemplateWriter(TOOLS, "", seed=3)
    cells = pairwise_cells(build_axes(TOOLS))
    n = 20 * len(cells)
    s = _best(lambda: [writer.write(cell, i) for i in range(20) for cell in cells]) / n
    return "template write()", s * 1e6, 60, "us"


def pairwise_grid():
    axes = build_axes(TOOLS)
    return "pairwise grid", _best(lambda: pairwise_cells(axes)) * 1e3, 50, "ms"


def novelty_call():
    writer = TemplateWriter(TOOLS, "", seed=0)
    cells = pairwise_cells(build_axes(TOOLS))
    base = ("Looking to check my order ORD-41087 today. The amount was $4423, paid on March 6. I can see it "
            "in my account but the status page will not load. Please tell me where it is now. Thanks in advance.")
    idx = NoveltyIndex()
    for _ in range(3000):
        idx.add(base)
    for i in range(3000):
        idx.add(writer.write(cells[i % len(cells)], i // len(cells), 0).prompt)
    probes = [writer.write(cells[i % len(cells)], 50_000 + i, 1).prompt for i in range(300)]
    probes += [base.replace("today", "now")] * 100
    s = _best(lambda: [idx.novelty(p) for p in probes]) / len(probes)
    return "novelty() on a 6,000-prompt archive", s * 1e3, 1.0, "ms"


def conduct_row():
    rows = played(25, 4, grader=None)
    s = _best(lambda: [conduct_check(r) for r in rows]) / len(rows)
    return "conduct check per row", s * 1e6, 300, "us"


def export_rows():
    rows = played(50, 4, grader=None) * 100
    return "export_row x 20,000 rows", _best(lambda: [export_row(r) for r in rows]), 0.5, "s"


def pass_at_rows():
    rng = random.Random(3)
    rows = [{"prompt": f"t{i}", "reward": int(rng.random() < 0.6)} for i in range(5000) for _ in range(4)]
    return "pass_at over 20,000 rows", _best(lambda: pass_at(rows), rounds=1), 2.0, "s"


def checkpoint_open():
    rows = [dict(r, scenario_id=f"sc-{i}", final_text="x" * 1500)
            for i, r in enumerate(export_row(r) for r in played(50, 4, grader=None) * 100)]
    fp = fingerprint(TOOLS, "You are a support agent.", "seeded_agent")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.jsonl"
        with JsonlCheckpoint(path, fp) as ck:
            for start in range(0, len(rows), 500):
                ck.append(rows[start:start + 500])

        def reopen():
            ck = JsonlCheckpoint(path, fp)
            ck.open()
            ck.close()
        return "checkpoint open() of 20,000 rows", _best(reopen, rounds=2), 1.0, "s"


async def _post(host, port, body: bytes):
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    payload = await reader.readexactly(length)
    writer.close()
    return json.loads(payload)


def server_overlap():
    host, port, stop = start_server(port=0, latency_ms=200)
    bodies = [json.dumps({"model": "m", "tools": TOOLS, "messages": [
        {"role": "user", "content": f"order ORD-{i}"}]}).encode() for i in range(256)]
    try:
        asyncio.run(_gather(host, port, bodies[:32]))     # warm both ends

        def round_():
            asyncio.run(_gather(host, port, bodies))
        s = _best(round_)
    finally:
        stop()
    return "scripted server: 256 concurrent 200 ms requests", s, 0.32, "s"


async def _gather(host, port, bodies):
    return await asyncio.gather(*[_post(host, port, b) for b in bodies])


LINES = (seeded_agent_call, template_write, pairwise_grid, novelty_call, conduct_row, export_rows,
         pass_at_rows, checkpoint_open, server_overlap)


def micro_lines() -> list[str]:
    """One printed line per measurement: figure, target, and whether it is met."""
    out = []
    for fn in LINES:
        label, value, target, unit = fn()
        verdict = "ok" if value < target else "OVER"
        out.append(f"micro          {label}: {value:.3g} {unit} (target < {target:g} {unit}) {verdict}")
    return out
