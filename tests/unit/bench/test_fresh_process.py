"""A bench figure read from a fresh process (``bench/fresh_process.py``): its marked JSON line, or
an error that says what became of the process (real subprocesses, a module of this test's own)."""
import os
import sys

from whileai_ray.bench.fresh_process import figures_of

CHILD = '''
import json, sys, time
what = sys.argv[1]
print("progress: 10 rows")
if what == "ok":
    print("FIG " + json.dumps({"share": 0.5}))
    print("FIG " + json.dumps({"share": 0.7, "rows": 1000}))
elif what == "fails":
    print("Traceback: boom", file=sys.stderr)
    sys.exit(3)
else:
    time.sleep(30)
'''


def _env(tmp_path):
    (tmp_path / "fresh_child.py").write_text(CHILD)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}


def test_the_last_marked_line_is_the_figures(tmp_path):
    assert figures_of("fresh_child", ["ok"], "FIG ", 60, env=_env(tmp_path)) == {"share": 0.7, "rows": 1000}


def test_a_process_that_fails_or_hangs_comes_back_as_an_error_saying_so(tmp_path):
    failed = figures_of("fresh_child", ["fails"], "FIG ", 60, env=_env(tmp_path))
    assert failed["error"].startswith("exit status 3: ") and "Traceback: boom" in failed["error"]
    assert figures_of("fresh_child", ["hangs"], "FIG ", 1, env=_env(tmp_path)) == {"error": "no answer in 1 s"}
