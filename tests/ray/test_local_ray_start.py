"""A local Ray that ``ensure_ray()`` starts answers a call in its reply up to ``INLINE_REPLY_BYTES``.

A rollout actor answers a chunk of 64 quick rows with ~350 KB (each row's checkpoint line and
spool text). Past Ray's default of 100 KB an answer goes through the object store (a plasma
buffer made, sealed, mapped by the Driver, released): measured at ~6 us a row of the Driver's
CPU and ~10 of the lanes' in a 30,000-row run. A Ray we start takes answers up to 4 MiB inline
(in the gRPC reply, into the caller's own memory store). A Ray the user started keeps its own
setting (``cluster/README.md`` says how to raise it there)."""
import os
import subprocess
import sys

from whileai_ray.runtime.cluster import INLINE_REPLY_BYTES

SCRIPT = """
import ray
from whileai_ray.runtime.cluster import ensure_ray
ensure_ray(log_to_driver=False)

@ray.remote
class Lane:
    def answer(self, n):
        return b"x" * n

lane = Lane.remote()
store = ray._private.worker.global_worker.core_worker
held = []                                   # (each answer held: none is freed between the two readings)
for n in (600_000, 3_000_000):
    before = store.get_local_memory_store_bytes_used()
    held.append(lane.answer.remote(n))
    assert len(ray.get(held[-1])) == n
    print("IN_MEMORY", n, store.get_local_memory_store_bytes_used() - before >= n, flush=True)
"""


def test_a_ray_we_start_answers_large_calls_in_the_reply():
    assert INLINE_REPLY_BYTES >= 3_000_000 + 1024
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}      # its own Ray, as a script's
    env.update(RAY_AUTH_MODE="disabled", WHILEAI_RAY_NODE_IP="127.0.0.2")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("IN_MEMORY")]
    assert lines == ["IN_MEMORY 600000 True", "IN_MEMORY 3000000 True"], proc.stdout[-2000:]
