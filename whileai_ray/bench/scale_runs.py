"""``whileai-ray bench --scale --runs``: whole runs of 10,000 / 100,000 / 1,000,000 rows.

Each size is one ``simulate()`` of the no-delay seeded agent with a checkpoint, in a fresh
process (so peaks do not mix) on a fresh local Ray of its own (never a cluster someone else
left running), then a resume of that checkpoint in another fresh process. Per size:

* wall time of the whole call, start-up included, and the steady rate (rows landed between
  10% and 90% of the run over the time it took);
* the rate over the first 10% of rows against the last 10% (target: last >= 85% of first);
* peak resident memory of the caller (its own ``VmHWM``: ``ru_maxrss`` would carry the peak of
  the process that spawned it across the exec) and of the Driver actor (its process's
  ``VmHWM``, sampled every 0.25 s: the Driver is the process titled ``ray::Driver`` among
  this process's descendants); target <= 1 GB each;
* the resume: Ray is started first, then ``simulate()`` with a larger budget on the same
  checkpoint; seconds from the call to the first new row landed (target <= 5 s), how long
  the planner snapshot took to restore, and how long the call took after its last new row
  landed (the resumed rows read back into the result).

The figures go to stdout as bench lines and, with ``json_path``, to a JSON file (a long run in
the background can be read back when it ends).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

__all__ = ["run_scale_runs", "SIZES"]

SIZES = (10_000, 100_000, 1_000_000)
_SAMPLE_S = 0.25


def _descendants(root: int) -> list[int]:
    """Pids whose parent chain reaches ``root`` (Linux /proc)."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as fh:
                    parents[int(name)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out = []
    for pid in parents:
        p, seen = pid, 0
        while p in parents and p != root and seen < 64:
            p, seen = parents[p], seen + 1
        if p == root and pid != root:
            out.append(pid)
    return out


def _peak_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class DriverWatch:
    """The peak RSS of this process's Driver actor(s), sampled in a thread."""

    def __init__(self, say=None):
        self.say = say                      # say(driver_peak_mb) every 30 s, or None
        self.peaks: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = os.getpid()
        said = time.monotonic()
        while not self._stop.is_set():
            if self.say is not None and time.monotonic() - said >= 30:    # a long run says how far it got
                said = time.monotonic()
                self.say(self.peak_mb)
            for pid in _descendants(me):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as fh:
                        title = fh.read(200)
                except OSError:
                    continue
                if b"Driver" in title or b"DriverRun" in title:
                    peak = _peak_mb(pid)
                    if peak is not None:
                        self.peaks[pid] = max(peak, self.peaks.get(pid, 0.0))
            self._stop.wait(_SAMPLE_S)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    @property
    def peak_mb(self) -> float:
        return max(self.peaks.values(), default=0.0)


def _at(samples: list, rows: float) -> float | None:
    """Seconds at which ``rows`` rows had landed (linear between progress samples)."""
    prev_t, prev_n = 0.0, 0
    for t, n in samples:
        if n >= rows:
            if n == prev_n:
                return t
            return prev_t + (t - prev_t) * (rows - prev_n) / (n - prev_n)
        prev_t, prev_n = t, n
    return None


def _rates(samples: list, n: int, first_row_s: float, last_row_s: float | None = None) -> dict:
    """Rates from progress samples; the last row's time is the Driver's own when known (a progress
    sample arrives only once the Driver's loop answers a poll, which the end of a run delays by
    seconds: read from the samples, the last 10% of a million rows took 15 s longer than it did)."""
    t10, t90 = _at(samples, 0.1 * n), _at(samples, 0.9 * n)
    t100 = last_row_s if last_row_s is not None else _at(samples, n)
    out: dict[str, float | None] = {"first10_rate": None, "last10_rate": None, "steady_rate": None}
    if t10 and t10 > first_row_s:
        out["first10_rate"] = 0.1 * n / (t10 - first_row_s)
    if t90 is not None and t100 is not None and t100 > t90:
        out["last10_rate"] = 0.1 * n / (t100 - t90)
    if t10 is not None and t90 is not None and t90 > t10:
        out["steady_rate"] = 0.8 * n / (t90 - t10)
    return out


def _child(mode: str, n: int, ck: str, out_path: str, extra: int) -> None:
    """One run (``mode="run"``) or one resume (``"resume"``) in this fresh process."""
    import whileai_ray as wai
    from whileai_ray.runtime.cluster import ensure_ray
    from whileai_ray.testing.seeded_rows import TOOLS
    ensure_ray(address="local")                 # a Ray of our own, never one left running
    samples: list = []
    t0 = time.monotonic()

    def seen(snap):
        samples.append((time.monotonic() - t0, snap.get("landed") or 0))

    budget = n if mode == "run" else n + extra

    def say(driver_mb):
        landed = samples[-1][1] if samples else 0
        print(f"[scale_runs] {time.monotonic() - t0:.0f}s: {landed:,} rows landed; caller peak "
              f"{_peak_mb(os.getpid()):.0f} MB, Driver peak {driver_mb:.0f} MB",
              file=sys.stderr, flush=True)

    with DriverWatch(say) as watch:
        t0 = time.monotonic()
        data = wai.simulate(wai.seeded_agent(TOOLS), tools=TOOLS, simulator=False, seed=0, budget=budget,
                            checkpoint=ck, on_progress=seen,
                            # a shared machine can starve a process for seconds: the orphan check waits longer
                            advanced={"progress_every_s": _SAMPLE_S, "progress_every_rows": 10**6,
                                      "caller_timeout_s": 120.0})
        wall = time.monotonic() - t0
        time.sleep(2 * _SAMPLE_S)
    timings = data.search.get("timings", {})
    first_row_s = timings.get("first_row_s") or 0.0
    last_row_s = timings.get("last_row_s")
    snaps = data.search.get("plan_snapshots", {})
    res = {"mode": mode, "rows": len(data), "wall_s": wall, "first_row_s": first_row_s,
           "driver_start_s": timings.get("driver_start_s"), "samples": len(samples),
           "caller_peak_mb": _peak_mb(os.getpid()),
           "driver_peak_mb": watch.peak_mb, "arrow_backed": type(data.trajectories).__name__ == "ArrowRows",
           "resumed": data.search.get("rollouts", {}).get("resumed", 0), "restore_s": snaps.get("restore_s"),
           "snapshot_bytes": snaps.get("bytes"), "snapshot_round": snaps.get("resumed_from_round"),
           "snapshot_pause_ms": snaps.get("longest_pause_ms"), "snapshot_pause_cpu_ms": snaps.get("longest_pause_cpu_ms"),
           "snapshots_written": snaps.get("written"), "checkpoint_bytes": os.path.getsize(ck),
           **_rates(samples, n if mode == "run" else extra, first_row_s, last_row_s)}
    last = last_row_s if last_row_s is not None else _at(samples, n if mode == "run" else extra)
    res["finish_s"] = None if last is None else wall - last     # from the last row landed to the call's return
    with open(out_path, "w") as fh:
        json.dump(res, fh)


def _spawn(mode: str, n: int, ck: str, out_path: str, extra: int, timeout: float | None) -> dict:
    cmd = [sys.executable, "-m", "whileai_ray.bench.scale_runs", "--child", mode, str(n), ck, out_path, str(extra)]
    with open(out_path + ".log", "w") as log:        # progress lines and any error, kept beside the figures
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
    with open(out_path) as fh:
        return json.load(fh)


def _fmt(v, spec=",.0f") -> str:
    return "n/a" if v is None else format(v, spec)


def run_scale_runs(sizes=SIZES[:2], folder: str | None = None, out=print, json_path: str | None = None,
                   timeout: float | None = None) -> list[dict]:
    import tempfile
    folder = folder or tempfile.mkdtemp(prefix="wai-bench-runs-")
    results = []
    for n in sizes:
        ck = os.path.join(folder, f"run-{n}.jsonl")
        run = _spawn("run", n, ck, os.path.join(folder, f"run-{n}.json"), 0, timeout)
        extra = max(1000, n // 100)
        again = _spawn("resume", n, ck, os.path.join(folder, f"resume-{n}.json"), extra, timeout)
        results.append({"rows": n, "run": run, "resume": again})
        first, last = run["first10_rate"], run["last10_rate"]
        held = (f"{100 * last / first:.0f}%" if first and last else "n/a")
        out(f"scale run {n:>9,}  wall {run['wall_s']:.1f}s ({n / run['wall_s']:,.0f} rows/s start-up included), "
            f"steady {_fmt(run['steady_rate'])} rows/s; first 10% {_fmt(first)} rows/s, last 10% {_fmt(last)} "
            f"rows/s (last/first {held}, target >= 85%); peak RSS caller {run['caller_peak_mb']:.0f} MB, Driver "
            f"{run['driver_peak_mb']:.0f} MB (target <= 1024 each); Arrow-backed result: {run['arrow_backed']}; "
            f"checkpoint {run['checkpoint_bytes'] / 1024**2:,.0f} MB, snapshot {_fmt(run['snapshot_bytes'] and run['snapshot_bytes'] / 1024**2, ',.1f')} MB "
            f"({_fmt(run['snapshot_bytes'] and 100 * run['snapshot_bytes'] / run['checkpoint_bytes'], '.1f')}% of it, target <= 5%), "
            f"{_fmt(run.get('snapshots_written'))} snapshots, longest loop pause {_fmt(run.get('snapshot_pause_ms'), '.1f')} ms "
            f"wall / {_fmt(run.get('snapshot_pause_cpu_ms'), '.1f')} ms CPU (target <= 50 ms)")
        out(f"scale resume {n:>9,}  +{extra:,} rows on the {n:,}-row checkpoint, Ray already up: first new row "
            f"{again['first_row_s']:.2f}s after the call (target <= 5s; Driver up at {_fmt(again['driver_start_s'], '.2f')}s, "
            f"planner snapshot restored in {_fmt(again['restore_s'], '.2f')}s from round {again['snapshot_round']}); "
            f"{again['resumed']:,} rows resumed, wall {again['wall_s']:.1f}s of which {_fmt(again.get('finish_s'), '.1f')}s "
            f"after the last new row (the result: resumed rows read back and written to its files); peak RSS caller "
            f"{again['caller_peak_mb']:.0f} MB, Driver {again['driver_peak_mb']:.0f} MB")
        if json_path:
            with open(json_path, "w") as fh:
                json.dump(results, fh, indent=1)
    return results


def _main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        mode, n, ck, out_path, extra = argv[1:6]
        _child(mode, int(n), ck, out_path, int(extra))
        return 0
    sizes = tuple(int(x) for x in argv[0].split(",")) if argv else SIZES[:2]
    run_scale_runs(sizes, json_path=argv[1] if len(argv) > 1 else None)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
