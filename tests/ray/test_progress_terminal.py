"""A run started from a terminal shows a tqdm bar (a real pseudo-terminal; the child joins this
module's Ray through RAY_ADDRESS), and the same run started with its output in a pipe prints
the plain progress lines a log or a Ray Job keeps."""
import os
import subprocess
import sys

from whileai_ray.testing.terminal import run_in_terminal

RUN = """
import whileai_ray as wai
TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object",
          "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
data = wai.simulate(wai.seeded_agent(TOOLS), tools=TOOLS, simulator=False, budget=400, seed=0,
                    advanced={"progress_every_rows": 100})
print("ROWS", len(data.rows()))
"""


def _join_env(ray_local):
    return {"RAY_ADDRESS": ray_local.get_runtime_context().gcs_address, "WHILEAI_RAY_NODE_IP": "127.0.0.2",
            "RAY_AUTH_MODE": "disabled"}


def test_simulate_in_a_terminal_draws_a_bar(ray_local):
    out = run_in_terminal(RUN, env=_join_env(ray_local))
    assert "ROWS 400" in out
    frames = [f for f in out.split("\r") if f.startswith("whileai_ray:")]
    assert frames and "400/400" in frames[-1] and "rows/s" in frames[-1] and "100%" in frames[-1]
    assert "400/400 rollouts" not in out


def test_simulate_with_output_in_a_pipe_prints_lines(ray_local):
    proc = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **_join_env(ray_local), "PYTHONPATH": os.pathsep.join(sys.path)})
    assert "ROWS 400" in proc.stdout, proc.stderr[-2000:]
    assert "400/400 rollouts" in proc.stderr and "%|" not in proc.stderr
