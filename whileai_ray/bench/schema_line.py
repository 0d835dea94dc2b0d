"""Bench line ``schema``: the seeded agent on real tool schemas, and the template writer's cost.

Users bring tool sets like the public agent benchmarks' (nested objects, arrays of objects,
enums, integer bounds, formats): the repository's corpus ``tests/data/tools_*.json`` (three
domains, 33 tools). Per domain, one ``simulate()`` of the seeded agent in ``rl`` mode; the line
prints the share of success-situation calls that validate against their tool's schema
(target >= 99%), the invalid calls the world refused, and rows/s. A second figure is the
template writer's ``write()`` on the one-tool demo (best of three rounds), which drawing
arguments from the schema must not slow by more than 10%.

The corpus ships with the repository's tests, not the wheel: without it the line says so.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

__all__ = ["bench_schema", "format_line", "CORPUS_DIR"]

CORPUS_DIR = Path(__file__).resolve().parents[2] / "tests" / "data"
DOMAINS = ("retail", "airline", "support")


def _valid_share(data, tools) -> tuple[float, int, int]:
    from ..world.validation import argument_errors, validator_for
    validators = {t["function"]["name"]: validator_for(t["function"]["parameters"]) for t in tools}
    calls = valid = refused = 0
    for row in data.trajectories:
        aimed = (row.get("scenario_dimensions") or {}).get("tool_condition") == "invalid_arguments"
        for s in row.get("steps") or ():
            if not isinstance(s, dict) or "tool" not in s:
                continue
            refused += (s.get("result") or {}).get("status") == "invalid_arguments"
            if not aimed:
                calls += 1
                valid += not argument_errors(validators.get(s["tool"]), s.get("arguments"))
    return (valid / calls if calls else float("nan")), calls, refused


def _template_write_us(rounds: int = 3) -> float:
    from ..situations.grid import build_axes, pairwise_cells
    from ..situations.template_writer import TemplateWriter
    from ..testing.seeded_rows import TOOLS
    cells = pairwise_cells(build_axes(TOOLS))
    best = float("inf")
    for _ in range(rounds):
        writer = TemplateWriter(TOOLS, "", seed=3)
        t0 = time.perf_counter()
        for i in range(50):
            for cell in cells:
                writer.write(cell, i)
        best = min(best, time.perf_counter() - t0)
    return best / (50 * len(cells)) * 1e6


def bench_schema(rows: int = 300, corpus: Path | None = None) -> dict:
    """Per domain: rows, valid share of success calls, refused invalid calls, rows/s; and the
    template writer's microseconds per write() on the one-tool demo."""
    from ..agents.seeded import seeded_agent
    from ..simulation import simulate
    corpus = Path(corpus) if corpus is not None else CORPUS_DIR
    domains: dict[str, dict] = {}
    out: dict[str, object] = {"domains": domains, "template_write_us": _template_write_us()}
    for name in DOMAINS:
        path = corpus / f"tools_{name}.json"
        if not path.is_file():
            out["missing"] = str(path)
            continue
        tools = json.loads(path.read_text())
        t0 = time.monotonic()
        data = simulate(seeded_agent(tools, seed=0), tools=tools, simulator=False, mode="rl", repeats=2,
                        budget=rows, seed=11, advanced={"progress_every_s": 3600.0, "progress_every_rows": 10**6})
        wall = time.monotonic() - t0
        share, calls, refused = _valid_share(data, tools)
        domains[name] = {"tools": len(tools), "rows": len(data), "rows_s": len(data) / wall,
                         "valid_share": share, "success_calls": calls, "refused": refused}
    return out


def format_line(r: dict) -> str:
    parts = [f"{n} {d['tools']} tools {d['rows']} rows: valid {d['valid_share']:.1%} of {d['success_calls']} "
             f"success calls, {d['refused']} refused, {d['rows_s']:.0f} rows/s" for n, d in r["domains"].items()]
    worst = min((d["valid_share"] for d in r["domains"].values()), default=float("nan"))
    verdict = "ok" if worst >= 0.99 else "BELOW TARGET"
    head = "schema         " + ("; ".join(parts) if parts else f"corpus not found ({r.get('missing')})")
    return (f"{head} (target valid >= 99%: {verdict}); template write() on the one-tool demo "
            f"{r['template_write_us']:.1f} us")
