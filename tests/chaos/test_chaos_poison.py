"""Issue 11 item 8: poison rollouts end as lost rows with their cause, and the run goes on.

The agent calls ``os._exit(1)`` on ~10% of prompts (a segfault or an OOM kill in native code
stands for it), returns a circular dict on ~5% and a 5,000-deep one on ~5%. The run runs in a
subprocess (on the module's Ray) so that a run that never ends fails the test instead of
hanging it. It must finish 60 rows' budget with at least 40 rows in under 60 s, and say in
``search`` and ``warnings`` how many rollouts were lost and why."""
import json
import os
import subprocess
import sys

POISON_RUN = r"""
import json, os, sys, time, zlib
import whileai_ray as wai
TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object",
    "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
base = wai.seeded_agent(TOOLS)

def poison_agent(message):
    h = zlib.crc32(message.encode()) % 20
    if h in (0, 1):
        os._exit(1)                                   # the whole rollout actor dies
    if h == 2:
        loop = {"status": "ok"}
        loop["self"] = loop
        return {"steps": [{"tool": "lookup_order", "arguments": {"order_id": "1"}, "result": loop}],
                "final_text": "circular"}
    if h == 3:
        deep = cur = {}
        for _ in range(5000):
            cur["x"] = {}
            cur = cur["x"]
        return {"steps": [{"tool": "lookup_order", "arguments": {"order_id": "1"}, "result": deep}],
                "final_text": "deep"}
    return base(message)

t0 = time.monotonic()
data = wai.simulate(poison_agent, tools=TOOLS, simulator=False, budget=60, seed=3,
                    advanced={"progress_every_rows": 10**6, "progress_every_s": 3600.0})
elapsed = time.monotonic() - t0
print("RESULT " + json.dumps({"rows": len(data.rows()), "elapsed": elapsed,
                               "lost_by": data.search["rollouts"].get("lost_by", {}),
                               "report_lost_by": data.report()["rollouts_lost_by"],
                               "warnings": data.warnings, "poison": data.search.get("poison"),
                               "stopped_because": data.stopped_because}))
"""


def test_poison_rollouts_are_found_settled_as_lost_and_the_run_finishes(ray_local, tmp_path):
    script = tmp_path / "poison.py"
    script.write_text(POISON_RUN)
    env = dict(os.environ, RAY_ADDRESS=ray_local.get_runtime_context().gcs_address,
               WHILEAI_RAY_NODE_IP="127.0.0.2", RAY_AUTH_MODE="disabled")
    try:
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=150)
    except subprocess.TimeoutExpired:
        raise AssertionError("the run with poison rollouts did not finish in 150 s") from None
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, (out.stdout + out.stderr)[-3000:]
    got = json.loads(line[len("RESULT "):])
    print("poison run:", {k: got[k] for k in ("rows", "elapsed", "lost_by", "poison")})
    assert got["rows"] >= 40, got
    assert got["elapsed"] < 60, got
    assert got["lost_by"].get("worker_crashed", 0) >= 1, got
    assert got["lost_by"].get("unserializable_result", 0) >= 1, got
    assert got["report_lost_by"]["worker_crashed"] == got["lost_by"]["worker_crashed"]
    said = [w for w in got["warnings"] if "never became rows" in w]
    assert said and "worker crashed" in said[0] and "unserializable result" in said[0], got["warnings"]
