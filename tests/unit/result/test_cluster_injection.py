"""A result is handed the cluster by whoever makes it (issue 31 item 4): no import-time hooks.

``result/`` may not import the runtime, so grading at scale and ``to_ray_dataset()`` go through
the ``Cluster`` a result holds (``result/cluster.py``): ``simulate()`` and ``wai.load`` give it
the runtime's ``RayCluster``; a result made from another keeps it; one built by hand has none.
These checks start no Ray (the Ray side is in tests/ray/test_scale.py and test_interop_ray.py).
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from whileai_ray.result.data import SimulationData
from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS, played

REPO = Path(__file__).resolve().parents[3]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env=_env(),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip()


def test_a_hand_built_result_says_how_to_get_a_ray_dataset():
    data = SimulationData(trajectories=played(2, 2), system_prompt=SYSTEM, tools=TOOLS)
    with pytest.raises(RuntimeError, match=r"wai\.load\(path\)") as err:
        data.to_ray_dataset()
    assert "built by hand" in str(err.value) and "to_arrow()" in str(err.value)


def test_importing_the_package_and_simulate_installs_nothing_in_the_result_layer():
    """No module of ``result/`` holds a function of the runtime or of the entry points above it."""
    out = _run("""
        import sys, whileai_ray, whileai_ray.simulation
        bad = []
        for name, mod in list(sys.modules.items()):
            if not name.startswith("whileai_ray.result"):
                continue
            for attr, value in vars(mod).items():
                owner = getattr(value, "__module__", None) or ""
                if callable(value) and (owner in ("whileai_ray", "whileai_ray.simulation")
                                        or owner.startswith("whileai_ray.runtime")):
                    bad.append(f"{name}.{attr} -> {owner}")
        print(bad)
    """)
    assert out == "[]"


def test_wai_load_hands_the_result_the_runtime_cluster_and_copies_keep_it(tmp_path):
    path = SimulationData(trajectories=played(2, 2), system_prompt=SYSTEM, tools=TOOLS).save(tmp_path / "r.jsonl")
    out = _run(f"""
        import dataclasses, sys
        import whileai_ray as wai
        data = wai.load({str(path)!r})             # a fresh process: nothing imported simulate() first
        scored = data.grade(judge=lambda row: 1)
        twin = dataclasses.replace(data, trajectories=list(data.trajectories))
        ev = wai.evaluate({str(path)!r}, judge=lambda row: 1)
        print([type(x._cluster).__name__ for x in (data, scored, twin, ev)], "ray" in sys.modules)
    """)
    assert out == "['RayCluster', 'RayCluster', 'RayCluster', 'RayCluster'] False"

