"""The ``whileai-ray`` command.

    whileai-ray run SPEC [--dry-run]        run a TOML run spec here (local Ray, or RAY_ADDRESS)
    whileai-ray report PATH [--json]        rows, stop reason, pass@1 and coverage of a saved run
    whileai-ray report A [B] --html OUT     one self-contained HTML report (B: side by side, paired delta)
    whileai-ray submit SPEC --address URL   run a spec as a Ray Job (same spec = same job id;
                                            resubmitting resumes from its checkpoint)
    whileai-ray status RUN [--address URL]  the Ray Job's state (RUN: a run id or a spec path)
    whileai-ray demo [--budget N]           an offline simulation (no key; local Ray started for you)
    whileai-ray view DIR [--port N]         a local web viewer over a folder of runs (127.0.0.1;
                                            another --host needs --token)
    whileai-ray bench [--quick] [--only L]  the speed figures (see whileai_ray/bench/lines.py)
    whileai-ray bench --scale [--rows N] [--runs 10000,100000,1000000]
                                            a result too large to hold; whole runs of those sizes
    whileai-ray --version                   the installed version (python -m whileai_ray works too)

Exit codes scripts can trust: 0 success; 1 the run failed (an error while running, or it
stopped because the agent or the writer failed, or landed no rows); 2 bad arguments, a bad
spec or an unreadable result file (the message names the field); 3 the Ray Job failed or was
stopped, no job has that id, or the cluster cannot be reached.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from . import __version__
from .agents.seeded import seeded_agent
from .bench.lines import LINES, check_only, run_bench
from .config.run_spec import SpecError, load_spec
from .result.html.report import check_html_path, write_report
from .result.loading import load
from .runtime.jobs.plan import resolve_address
from .score.compare import delta_report
from .simulation import simulate
from .testing.seeded_rows import TOOLS

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_JOB = 0, 1, 2, 3
FAILED_STOPS = ("agent_failed", "empty_replies", "writer_failed")


def _demo(args) -> int:
    agent = seeded_agent(TOOLS)
    data = simulate(agent, tools=TOOLS, simulator=False, seed=args.seed, budget=args.budget,
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
    if args.scale:
        from .bench.scale import run_scale_bench
        code = run_scale_bench(rows=args.rows, ray=args.with_run)
        if args.runs:
            from .bench.scale_runs import run_scale_runs
            run_scale_runs(tuple(int(n) for n in args.runs.split(",")), json_path=args.json)
        return code
    only = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else None
    try:
        check_only(only)                       # a bad --only is a bad argument (2), said before Ray starts
    except ValueError as exc:
        _err("bench", exc)
        return 2
    return run_bench(quick=args.quick, only=only)


def _view(args) -> int:
    from .viewer.server import serve     # lazy: the viewer's modules, only for this command
    try:
        serve(args.dir, host=args.host, port=args.port, token=args.token, verbose=args.verbose)
    except ValueError as exc:
        _err("view", exc)
        return EXIT_USAGE
    except OSError as exc:               # the port is taken, the address is not this machine's
        _err("view", f"could not listen on {args.host}:{args.port}: {exc}; pick another --port (0: any free one)")
        return EXIT_USAGE
    return EXIT_OK


def _err(command: str, message) -> None:
    print(f"whileai-ray {command}: {message}", file=sys.stderr)


def _run(args) -> int:
    try:
        spec = load_spec(args.spec)
        if args.output_dir:
            spec.output_dir = args.output_dir
        if args.checkpoint:
            spec.checkpoint = args.checkpoint
        run_id = args.run_id or spec.resolved_run_id()
        agent, kwargs = spec.build(run_id, make_dirs=not args.dry_run)
        spec.check(agent, kwargs)
    except SpecError as exc:
        _err("run", exc)
        return EXIT_USAGE
    if args.dry_run:
        shown = {k: (v if isinstance(v, (str, int, float, bool, list, dict, type(None)))
                     else repr(v)) for k, v in kwargs.items()}
        print(json.dumps({"run_id": run_id, "agent": repr(agent), "simulate": shown},
                         indent=2, default=repr))
        return EXIT_OK
    print(f"run {run_id}: checkpoint {kwargs.get('checkpoint')}, output {kwargs.get('output')}",
          flush=True)
    try:
        data = simulate(agent, **kwargs)
    except Exception as exc:  # the run itself failed: report it, exit 1
        _err("run", f"run {run_id} failed: {type(exc).__name__}: {exc}")
        return EXIT_RUN_FAILED
    rows = len(data.rows())
    print(f"run {run_id}: {rows} rows, stopped_because={data.stopped_because}, "
          f"{data.rows_per_second:.0f} rows/s")
    print(data.pass_at)
    if rows == 0 or data.stopped_because in FAILED_STOPS:
        _err("run", f"run {run_id} failed: stopped_because={data.stopped_because}, {rows} rows")
        return EXIT_RUN_FAILED
    return EXIT_OK


def report_summary(data) -> dict:
    """What ``report`` prints: rows, stop reason, pass@1 and a coverage summary."""
    n = len(data.trajectories)
    prompts, scenarios, faulted, graded = set(), set(), 0, 0
    for r in data.trajectories:          # one pass: a large result's rows are read a row group at a time
        prompts.add(r.get("prompt"))
        scenarios.add(r.get("scenario_id"))
        faulted += bool(r.get("faults"))
        graded += isinstance(r.get("reward"), (int, float)) and not isinstance(r.get("reward"), bool)
    cov = data.coverage or {}
    summary = {
        "rows": n,
        "stopped_because": data.stopped_because if cov else None,
        "unique_prompts": cov.get("unique_prompts", len(prompts)),
        "unique_scenarios": cov.get("unique_scenario_ids", len(scenarios)),
        "unique_cells": cov.get("unique_cells"),
        "pairwise": (cov.get("pairwise") or {}).get("fraction"),
        "fault_share": (cov.get("delivered") or {}).get("fault_share", round(faulted / n, 4) if n else 0.0),
        "graded": graded,
    }
    pa = data.pass_at
    summary["pass_at_1"] = pa.pass_at_1
    summary["pass_at_line"] = str(pa)
    return summary


def _report(args) -> int:
    if len(args.paths) > 2:
        _err("report", f"give one run, or two to compare (A B); got {len(args.paths)} paths")
        return EXIT_USAGE
    if args.html:
        try:
            check_html_path(args.html, "--html")     # before any file is read
        except ValueError as exc:
            _err("report", exc)
            return EXIT_USAGE
        if args.max_rows < 1:
            _err("report", f"--max-rows is how many rows the browser shows per run, 1 or more; got {args.max_rows}")
            return EXIT_USAGE
    datas = []
    for path in args.paths:
        try:
            datas.append(load(path))
        except (OSError, ValueError) as exc:
            _err("report", exc)
            return EXIT_USAGE
    if args.html:
        labels = _labels(args.paths)
        written = write_report(args.html, datas, labels, max_rows=args.max_rows, argument="--html")
        print(f"wrote {written} ({' vs '.join(labels)}, {sum(len(d) for d in datas)} rows); open it in a browser")
        return EXIT_OK
    summaries = [report_summary(d) for d in datas]
    if args.json:
        out = summaries[0] if len(datas) == 1 else {"runs": dict(zip(args.paths, summaries)),
                                                    "delta": delta_report(datas[0], datas[1]).to_dict()}
        print(json.dumps(out, indent=2, default=str))
        return EXIT_OK
    for path, s in zip(args.paths, summaries):
        _print_summary(path, s)
    if len(datas) == 2:
        print(f"paired delta ({args.paths[1]} minus {args.paths[0]}):")
        print(delta_report(datas[0], datas[1]))
    return EXIT_OK


def _labels(paths) -> list:
    """Short names for the runs of a report: file names, or whole paths when the names clash."""
    names = [os.path.basename(os.path.normpath(p)) or p for p in paths]
    return names if len(set(names)) == len(names) else list(paths)


def _print_summary(path, s) -> None:
    stop = s["stopped_because"] or "unknown (no .meta.json sidecar)"
    print(f"{path}: {s['rows']} rows, stopped_because={stop}")
    print(s["pass_at_line"])
    cells = "" if s["unique_cells"] is None else f", {s['unique_cells']} grid cells"
    pairs = "" if s["pairwise"] is None else f", pairwise coverage {s['pairwise']:.0%}"
    print(f"coverage: {s['unique_prompts']} distinct prompts, {s['unique_scenarios']} scenarios"
          f"{cells}{pairs}, fault share {s['fault_share']:.0%}, {s['graded']} graded rows")


def _submit(args) -> int:
    from .runtime.jobs.client import submit   # lazy: ray's job client, only for this command
    try:
        out = submit(args.spec, args.address, run_id=args.run_id, working_dir=args.working_dir,
                     output_dir=args.output_dir)
    except SpecError as exc:
        _err("submit", exc)
        return EXIT_USAGE
    except (ConnectionError, RuntimeError) as exc:
        _err("submit", f"{type(exc).__name__}: {exc}")
        return EXIT_JOB
    print(f"{out['action']}: run {out['run_id']} ({out['status']}) at {out['address']}; "
          f"checkpoint {out['checkpoint']}")
    if not args.wait:
        return EXIT_OK
    from .runtime.jobs.client import JobNotFound, job_logs, wait_for   # lazy: ray
    try:
        state = wait_for(out["run_id"], out["address"], timeout_s=args.timeout)
    except (JobNotFound, ConnectionError, RuntimeError) as exc:
        _err("submit", f"{type(exc).__name__}: {exc}")
        return EXIT_JOB
    print(job_logs(out["run_id"], out["address"])[-4000:])
    print(f"run {out['run_id']}: {state['status']} {state['message']}")
    return EXIT_OK if state["status"] == "SUCCEEDED" else EXIT_JOB


def _status(args) -> int:
    from .runtime.jobs.client import status   # lazy: ray's job client, only for this command
    run_id = args.run
    try:
        if run_id.endswith(".toml"):
            run_id = load_spec(run_id).resolved_run_id()
        state = status(run_id, args.address)
    except SpecError as exc:
        _err("status", exc)
        return EXIT_USAGE
    except (ConnectionError, RuntimeError) as exc:
        _err("status", f"{type(exc).__name__}: {exc}")
        return EXIT_JOB
    if state is None:
        _err("status", f"no Ray job with id {run_id!r}")
        return EXIT_JOB
    print(json.dumps(state, default=str) if args.json else
          f"run {run_id}: {state['status']} {state['message']}".rstrip())
    if args.logs:
        from .runtime.jobs.client import job_logs   # lazy: ray
        print(job_logs(run_id, resolve_address(args.address)))
    return EXIT_JOB if state["status"] in ("FAILED", "STOPPED") else EXIT_OK


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="whileai-ray", description="Simulate, grade and measure "
                                     "tool-using LLM agents at scale, on Ray.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="run an offline simulation with the seeded demo agent (no key needed)")
    p.add_argument("--budget", type=int, default=200, help="rows to produce (default 200)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", default=None, help="write the rows here (JSONL + meta sidecar)")
    p.set_defaults(func=_demo)
    b = sub.add_parser("bench", help="measure throughput and memory (see whileai_ray/bench/lines.py)")
    b.add_argument("--quick", action="store_true", help="smaller runs, for a smoke check")
    b.add_argument("--only", default=None, help="comma-separated lines to run: " + ", ".join(LINES)
                   + " (default: all)")
    b.add_argument("--scale", action="store_true", help="the large-result lines: a million rows on disk")
    b.add_argument("--rows", type=int, default=1_000_000, help="rows of the --scale result (default 1,000,000)")
    b.add_argument("--with-run", action="store_true", help="--scale: also a spilled simulate() run (starts Ray)")
    b.add_argument("--runs", default=None, metavar="N,N,...",
                   help="--scale: whole checkpointed runs of these sizes and their resumes, e.g. 10000,100000,1000000 "
                        "(see whileai_ray/bench/scale_runs.py)")
    b.add_argument("--json", default=None, help="--runs: also write the figures to this JSON file")
    b.set_defaults(func=_bench)
    _add_spec_commands(sub)
    v = sub.add_parser("view", help="a local web viewer over a folder of runs (list, rows, one row, comparison)",
                       description="Serve the runs in DIR (checkpoints, output= and save() files, Parquet "
                       "copies) as web pages: the list with pass@1, one run's rows with filters, a row's "
                       "conversation, a pass@k / pass^k leaderboard, live while a checkpoint grows.")
    v.add_argument("dir", metavar="DIR", help="the folder that holds the runs (searched a few levels down)")
    v.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; any other "
                   "address needs --token)")
    v.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any free port)")
    v.add_argument("--token", default=None, help="a secret every request must carry (?token= once, or "
                   "Authorization: Bearer); required with a --host that is not loopback")
    v.add_argument("--verbose", action="store_true", help="log each request to stderr")
    v.set_defaults(func=_view)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, RuntimeError) as exc:
        print(f"whileai-ray {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def _add_spec_commands(sub) -> None:
    r = sub.add_parser("run", help="run a TOML run spec (agent, tools, simulate() arguments)",
                       description="Run the simulation a TOML spec describes, on the local Ray "
                       "or the cluster at RAY_ADDRESS. Exit 0 ok, 1 run failed, 2 bad spec.")
    r.add_argument("spec", help="path of the TOML run spec")
    r.add_argument("--run-id", default=None, help="override the spec's run id")
    r.add_argument("--output-dir", default=None,
                   help="root of the run's files (default: spec output_dir, $WHILEAI_OUTPUT_DIR, "
                   "else ./outputs)")
    r.add_argument("--checkpoint", default=None, metavar="PATH",
                   help="the checkpoint (default: the spec's, else <output-dir>/<run-id>/checkpoint.jsonl); "
                   "a fixed path on shared storage makes a retried job resume where the last attempt stopped")
    r.add_argument("--dry-run", action="store_true",
                   help="validate and print the resolved arguments; start nothing")
    r.set_defaults(func=_run)
    rp = sub.add_parser("report", help="summarize a saved run, or compare two (JSONL or Parquet, file or folder)",
                        description="Print rows, stop reason, pass@1 and coverage of a saved run; with two "
                        "runs (A B), both and the paired delta of B against A. --html writes one "
                        "self-contained HTML report instead (open it in any browser; nothing is fetched).")
    rp.add_argument("paths", nargs="+", metavar="PATH",
                    help="a checkpoint=, output= or data.save() path; a second PATH compares it with the first")
    rp.add_argument("--json", action="store_true", help="print one JSON object instead")
    rp.add_argument("--html", default=None, metavar="OUT.html",
                    help="write the HTML report here (summary, pass rates, coverage, failures, row browser)")
    rp.add_argument("--max-rows", type=int, default=1000,
                    help="rows the HTML row browser shows per run (failed rows first; default 1000)")
    rp.set_defaults(func=_report)
    sb = sub.add_parser("submit", help="run a spec as a Ray Job (one job per attempt of the run)",
                        description="Submit a spec to a Ray cluster's job server. Resubmitting "
                        "the same spec resumes from its checkpoint; a job still running is "
                        "left alone. Exit 0 submitted, 2 bad spec, 3 cluster/job error.")
    sb.add_argument("spec", help="path of the TOML run spec (inside --working-dir)")
    sb.add_argument("--address", default=None,
                    help="Ray dashboard address, e.g. http://head:8265 (default $RAY_ADDRESS)")
    sb.add_argument("--run-id", default=None, help="override the spec's run id")
    sb.add_argument("--working-dir", default=None, help="folder uploaded with the job (default .)")
    sb.add_argument("--output-dir", default=None, help="where the job writes on the head node "
                    "(default: spec output_dir, else /tmp/whileai_ray/outputs)")
    sb.add_argument("--wait", action="store_true", help="wait for the job; exit 3 unless it succeeds")
    sb.add_argument("--timeout", type=float, default=None, help="seconds to --wait at most")
    sb.set_defaults(func=_submit)
    st = sub.add_parser("status", help="the state of a submitted run",
                        description="Print a Ray Job's state. Exit 0 pending/running/succeeded, "
                        "3 failed, stopped or not found.")
    st.add_argument("run", help="the run id, or the spec path it was submitted from")
    st.add_argument("--address", default=None, help="Ray dashboard address (default $RAY_ADDRESS)")
    st.add_argument("--json", action="store_true", help="print one JSON object")
    st.add_argument("--logs", action="store_true", help="also print the job's logs")
    st.set_defaults(func=_status)


if __name__ == "__main__":
    sys.exit(main())
