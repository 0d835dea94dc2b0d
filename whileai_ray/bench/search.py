"""Selection cost per row at a small and a large archive (a ``whileai-ray bench`` line).

The reference scans every prompt already run to score one candidate's novelty, so its
selection costs ~32 ms a row at 1,000 rows and grows with the archive. Here an archive
(:class:`~whileai_ray.search.novelty.NoveltyIndex`) is filled with real offline-writer
prompts, and for ``probes`` fresh candidates we time what selection pays per row: score the
candidate's sketch and novelty, check the family cap, archive it. Target: under 1 ms a row, and the
figure at 100,000 rows within 2x of the one at 1,000.

No Ray, no agent: this measures the selection path alone.
"""
from __future__ import annotations

import time

from ..search.family_cap import FamilyCap
from ..search.novelty import NoveltyIndex, sketch
from ..situations.grid import build_axes, pairwise_cells
from ..situations.template_writer import TemplateWriter

__all__ = ["bench_selection"]

TOOLS = [{"type": "function", "function": {
    "name": "lookup_order",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                   "required": ["order_id"]}}}]


def _prompts(writer: TemplateWriter, cells: list, start: int, count: int) -> list[str]:
    """``count`` writer prompts, situation ``start`` onward (cell i % cells, instance i // cells)."""
    n = len(cells)
    return [writer.write(cells[i % n], i // n, 0).prompt for i in range(start, start + count)]


def _time_rows(index: NoveltyIndex, cap: FamilyCap, prompts: list[str], chunks: int = 10) -> float:
    """Milliseconds per row of sketch() + novelty() + admit() + add() over ``prompts``.

    Timed in ``chunks`` slices; the fastest slice is reported, so a noisy neighbour on a
    shared machine does not pass for a cost that grows with the archive.
    """
    size = max(1, len(prompts) // chunks)
    best = float("inf")
    for start in range(0, len(prompts), size):
        part = prompts[start:start + size]
        t0 = time.perf_counter()
        for p in part:
            sk = sketch(p)
            index.novelty(p, sk)
            cap.admit(p)
            index.add(p, sk)
        best = min(best, (time.perf_counter() - t0) * 1000.0 / len(part))
    return best


def bench_selection(sizes=(1_000, 100_000), probes: int = 2_000, seed: int = 0) -> dict:
    """Fill one archive up to each size in turn and time ``probes`` rows at each.

    Returns ``{"ms_per_row": {size: ms}, "ratio": ms[largest] / ms[smallest], "probes",
    "target_ms": 1.0, "ok": bool}``; the probe rows of one size join the archive for the next.
    """
    sizes = sorted(int(s) for s in sizes)
    writer = TemplateWriter(TOOLS, "", seed)
    cells = pairwise_cells(build_axes(TOOLS))
    index = NoveltyIndex()
    cap = FamilyCap(3)
    made = 0
    out: dict[int, float] = {}
    for size in sizes:
        fill = max(0, size - len(index))
        for p in _prompts(writer, cells, made, fill):
            index.add(p)
        made += fill
        probe_prompts = _prompts(writer, cells, 10_000_000 + made, probes)
        out[size] = round(_time_rows(index, cap, probe_prompts), 4)
    lo, hi = out[sizes[0]], out[sizes[-1]]
    ratio = round(hi / lo, 3) if lo > 0 else float("nan")
    return {"ms_per_row": out, "ratio": ratio, "probes": probes, "target_ms": 1.0,
            "ok": hi < 1.0 and ratio <= 2.0}


def format_line(result: dict) -> str:
    """One line for ``whileai-ray bench``."""
    parts = ", ".join(f"{size:,} rows {ms:.3f} ms/row" for size, ms in result["ms_per_row"].items())
    return (f"selection cost per row: {parts} (ratio {result['ratio']}, target < 1 ms and <= 2x) "
            f"{'OK' if result['ok'] else 'MISS'}")


if __name__ == "__main__":     # python -m whileai_ray.bench.search
    print(format_line(bench_selection()))
