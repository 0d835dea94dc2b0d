"""The ``whileai-ray`` command.

    whileai-ray demo [--budget N]   an offline simulation (no key; local Ray started for you)
    whileai-ray bench [--quick]     the speed figures (see whileai_ray/bench.py)

Exit codes: 0 success, 2 bad arguments, 1 the run failed.
"""
from __future__ import annotations

import argparse
import sys


def _demo(args) -> int:
    import whileai_ray as wai
    tools = [{"type": "function", "function": {
        "name": "lookup_order",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                       "required": ["order_id"]}}}]
    agent = wai.seeded_agent(tools)
    data = wai.simulate(agent, tools=tools, simulator=False, seed=args.seed, budget=args.budget,
                        output=args.output)
    data.grade(lambda row: 0.0 if row.get("seeded") else 1.0)
    rep = data.report()
    print(f"{len(data.rows())} rows, stopped_because={data.stopped_because}, "
          f"{rep['unique_prompts']} distinct prompts, {rep['unique_cells']} grid cells, "
          f"pairwise coverage {rep['pairwise']['fraction']:.0%}, "
          f"fault share {rep['delivered']['fault_share']:.0%}, {data.rows_per_second:.0f} rows/s")
    print(data.pass_at)
    first = data.rows()[0]
    print("first row:", first["prompt"][:160])
    print("  tool calls:", [(s.get("tool"), s.get("result", {}).get("status")) for s in first["steps"]])
    print("  reply:", first["final_text"][:160])
    if args.output:
        print("rows written to", args.output)
    return 0


def _bench(args) -> int:
    from .bench import run_bench
    return run_bench(quick=args.quick)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="whileai-ray", description="Simulate, grade and measure "
                                     "tool-using LLM agents at scale, on Ray.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="run an offline simulation with the seeded demo agent (no key needed)")
    p.add_argument("--budget", type=int, default=200, help="rows to produce (default 200)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", default=None, help="write the rows here (JSONL + meta sidecar)")
    p.set_defaults(func=_demo)
    b = sub.add_parser("bench", help="measure throughput and memory (see whileai_ray/bench.py)")
    b.add_argument("--quick", action="store_true", help="smaller runs, for a smoke check")
    b.set_defaults(func=_bench)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, RuntimeError) as exc:
        print(f"whileai-ray {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
