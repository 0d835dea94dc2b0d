"""The README's first command, ``whileai-ray demo``, as a newcomer's fresh process runs it: it starts
its own local Ray, plays an offline simulation with no key, prints its summary and ends with exit
status 0, and nothing else. Before, its end printed Ray's "*** SIGTERM received ***" stacks: the
kept actors were stopped one by one at exit, the local Ray started idle workers in their place,
and its shutdown killed those while they imported (``runtime/caller/warm_pools.py``, ``_at_exit``)."""
import os
import subprocess
import sys


def test_the_demo_ends_with_its_summary_and_no_stack_from_ray(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}        # its own Ray, as a newcomer's
    env.update(RAY_AUTH_MODE="disabled", WHILEAI_RAY_NODE_IP="127.0.0.2",
               WHILEAI_RAY_OBJECT_STORE=str(128 * 1024**2))
    for _ in range(2):                   # (the workers Ray started in their place did not always get that far)
        done = subprocess.run([sys.executable, "-m", "whileai_ray.cli", "demo", "--budget", "60"], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=240)
        out = done.stdout + done.stderr
        assert done.returncode == 0, out[-2000:]
        assert "60 rows, stopped_because=budget" in out and "pass@1" in out, out[-2000:]
        assert "SIGTERM" not in out and "Traceback" not in out, out[-2000:]
