"""``whileai-ray bench``'s chaos line: a run under attack, and what it lost or wrote twice.

One run of an agent that kills its worker process on ~1% of prompts (poison units) is driven to
its budget through a gauntlet, then compared with the same run left alone:

* kills: the caller (a subprocess on the same Ray) is SIGKILLed at seeded-random moments and
  the run resumed from its checkpoint each time;
* corrupt sidecars: between kills the key index is garbled or deleted, the Parquet side cut
  short, a torn line appended;
* a second writer: while the caller runs, a second ``simulate()`` on the same checkpoint must
  be refused;
* poison units: lost as ``worker_crashed`` in both runs, never replayed into a stall.

Rows lost = rows of the undisturbed run missing from the attacked one; rows duplicated = keys
written twice in the checkpoint. The target is 0 and 0 (and every row equal to its twin).
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from ..agents.seeded import seeded_agent
from ..core.identity import row_key
from ..simulation import simulate
from ..store.run_files import parquet_folder_for
from ..testing.seeded_rows import TOOLS

QUIET = {"progress_every_rows": 10**6, "progress_every_s": 3600.0}


class PoisonAgent:
    """The seeded agent, a short sleep, and ``os._exit(1)`` on about one prompt in ``every``."""

    def __init__(self, every: int = 100, latency_s: float = 0.002):
        self.inner = seeded_agent(TOOLS)
        self.every, self.latency_s = every, latency_s
        self.__name__ = "seeded_agent"

    def __call__(self, message):
        if zlib.crc32(message.encode("utf-8", "replace")) % self.every == 0:
            os._exit(1)                      # a segfault or an OOM kill stands here
        time.sleep(self.latency_s)
        return self.inner(message)


def _run(checkpoint=None, rows=1000, seed=21):
    return simulate(PoisonAgent(), tools=TOOLS, simulator=False, budget=rows, seed=seed, concurrency=16,
                    checkpoint=checkpoint, advanced=QUIET)


def _body(path: Path) -> list:
    out: list[dict] = []
    if not path.exists():
        return out
    for line in path.read_bytes().splitlines()[1:]:
        try:
            out.append(json.loads(line))
        except ValueError:
            pass                                      # a torn or vandalised line
    return out


def _corrupt(ck: Path, which: int) -> str:
    """Damage one sidecar (or the tail) the way a crash or a careless hand would."""
    kind = ("garbled index", "deleted index", "cut Parquet", "torn line")[which % 4]
    keys = Path(str(ck) + ".keys")
    if kind == "garbled index" and keys.exists():
        data = bytearray(keys.read_bytes())
        for i in range(len(data) // 3, len(data), 97):
            data[i] = (data[i] + 7) % 256
        keys.write_bytes(bytes(data))
    elif kind == "deleted index" and keys.exists():
        keys.unlink()
    elif kind == "cut Parquet":
        for part in Path(parquet_folder_for(ck)).glob("*.parquet"):
            part.write_bytes(part.read_bytes()[:100])
    else:
        with open(ck, "ab") as fh:
            fh.write(b'{"prompt": "torn mid-wri')
    return kind


def _start_victim(ck: Path, rows: int, gcs: str) -> subprocess.Popen:
    env = dict(os.environ, RAY_ADDRESS=gcs, RAY_AUTH_MODE=os.environ.get("RAY_AUTH_MODE", "disabled"))
    # imported, not run as __main__: its PoisonAgent is then whileai_ray.bench.chaos.PoisonAgent, the
    # same agent as the resumes in this process (a resume is refused for another agent: run_identity)
    code = "import sys; from whileai_ray.bench.chaos import _victim_main; _victim_main(sys.argv[1:])"
    return subprocess.Popen([sys.executable, "-c", code, str(ck), str(rows)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def bench_chaos(rows: int = 1000, kills: int = 3, seed: int = 7) -> dict:
    """Run the gauntlet (see the module docstring); return the counts of the chaos line."""
    from ..runtime.cluster import ensure_ray, gcs_address   # lazy: ray, once the bench starts
    ensure_ray()
    gcs = gcs_address()
    rng = random.Random(seed)
    t0 = time.monotonic()
    reference = _run(rows=rows)
    want = {row_key(r): r for r in reference.rows()}
    kills_done, refused, ran = 0, 0, 0
    corrupt: list[str] = []               # the damage done at each pause, in order
    with tempfile.TemporaryDirectory(prefix="wai-chaos-") as folder:
        ck = Path(folder) / "chaos.jsonl"
        for k in range(kills):
            proc = _start_victim(ck, rows, gcs)
            target = len(_body(ck)) + rng.randint(rows // (3 * kills), rows // (2 * kills))
            deadline = time.monotonic() + 300
            while len(_body(ck)) < target and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if k == 0 and proc.poll() is None:       # a second writer while the first one runs
                try:
                    _run(checkpoint=str(ck), rows=rows)
                    ran += 1
                except RuntimeError:
                    refused += 1
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills_done += 1
            proc.wait()
            corrupt.append(_corrupt(ck, k))
            if k == kills - 1:                       # the last pause gets every remaining kind
                corrupt += [_corrupt(ck, j) for j in range(kills, 4)]
        final = _run(checkpoint=str(ck), rows=rows)
        body = _body(ck)
    keys = [row_key(r) for r in body]
    got = {row_key(r): r for r in final.rows()}

    def plain(row):
        return {k: v for k, v in row.items() if k != "lineage"}
    return {"rows": len(final.rows()), "reference_rows": len(want), "kills": kills_done,
            "corrupt": corrupt, "second_writer_refused": refused,
            "second_writer_ran": ran,
            "poison_lost": reference.search["rollouts"].get("lost_by", {}).get("worker_crashed", 0),
            "rows_lost": len(set(want) - set(got)), "rows_duplicated": len(keys) - len(set(keys)),
            "rows_differing": sum(1 for key in set(want) & set(got) if plain(want[key]) != plain(got[key])),
            "wall_s": time.monotonic() - t0}


def format_line(c: dict) -> str:
    return (f"chaos          {c['rows']} rows through {c['kills']} kills, {len(c['corrupt'])} corrupt sidecars "
            f"({', '.join(c['corrupt'])}), a second writer ({'refused' if c['second_writer_refused'] else 'NOT refused'}) "
            f"and {c['poison_lost']} poison units (lost as worker_crashed): rows lost {c['rows_lost']}, rows "
            f"duplicated {c['rows_duplicated']} (target 0 and 0), rows differing {c['rows_differing']}, "
            f"{c['wall_s']:.0f}s")


def _victim_main(argv) -> None:
    ck, rows = argv[0], int(argv[1])
    _run(checkpoint=ck, rows=rows)


if __name__ == "__main__" and sys.argv[1:2] == ["--victim"]:
    _victim_main(sys.argv[2:])
