"""The modules a local Ray's workers preload (``cluster.PRELOAD``) import in a fresh interpreter.

Ray imports them in every worker process it starts (``preload_python_modules``) before the
worker takes any work: one that fails to import fails every worker, so no actor of a local Ray
would start. ``serialization_warm`` does Ray's serializer imports there, so the first call a
worker serves does not."""
import subprocess
import sys

from whileai_ray.runtime.cluster import PRELOAD
from whileai_ray.runtime.serialization_warm import SERIALIZER_MODULES

CHECK = """
import importlib, sys
for name in sys.argv[1].split(","):
    importlib.import_module(name)
print("LOADED", ",".join(m for m in sys.argv[2].split(",") if m in sys.modules))
"""


def test_every_preloaded_module_imports_and_brings_rays_serializers():
    assert "whileai_ray.runtime.serialization_warm" in PRELOAD
    out = subprocess.run([sys.executable, "-c", CHECK, ",".join(PRELOAD), ",".join(SERIALIZER_MODULES)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = out.stdout.strip().split(" ", 1)[1].split(",")
    assert loaded == list(SERIALIZER_MODULES)

