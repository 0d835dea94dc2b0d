"""The caller warms its report's first fact table while a run plays (``score/row_facts.py``:
``warm_facts_table``): in a fresh process (pandas and pyarrow not loaded yet), the thread loads
what a report's first Arrow table needs, once."""
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys, time
    from whileai_ray.score.row_facts import WARM_THREAD, warm_facts_table
    assert "pandas" not in sys.modules and "pyarrow" not in sys.modules, "already loaded: nothing to show"
    t0 = time.monotonic()
    thread = warm_facts_table()
    started_s = time.monotonic() - t0
    assert thread is warm_facts_table() and thread.name == WARM_THREAD and thread.daemon   # once per process
    thread.join(120)
    assert not thread.is_alive()
    assert "pyarrow" in sys.modules and "pandas" in sys.modules
    from whileai_ray.score.row_facts import facts_table
    t1 = time.monotonic()
    table = facts_table([])
    print("OK", started_s, time.monotonic() - t1, table.num_rows)
""")


def test_the_thread_loads_what_the_first_report_needs_once_per_process():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    ok, started_s, table_s, rows = out.stdout.split()[-4:]
    assert ok == "OK" and rows == "0"
