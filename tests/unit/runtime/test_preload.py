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



APPLY = """
import sys
import whileai_ray.runtime.serialization_warm
before = set(sys.modules)
from ray.util import serialization_addons


class Registry:
    '''Takes what Ray's serializer set-up registers (a serialization context's registrations),
    so that ``apply`` runs its own code, imports included, without a Ray to connect to.'''
    def __getattr__(self, name):
        return lambda *args, **kwargs: None


serialization_addons.apply(Registry())
print("NEW", ",".join(sorted(m for m in set(sys.modules) - before if m != "ray.util.serialization_addons")))
"""


def test_rays_serializer_set_up_imports_nothing_the_warm_module_left_out():
    """What ``serialization_addons.apply`` imports when a worker's context is made (inside the
    functions it calls, too: pydantic's field type, starlette's State, Arrow's JSON reader) is
    imported already by ``serialization_warm``: a Ray that moves them shows here, not as a slower
    first row."""
    out = subprocess.run([sys.executable, "-c", APPLY], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines()[-1] == "NEW "
