"""What a reader outside whileai_ray sees in a run's Parquet folder: exactly the rows that landed,
each once, whenever the writer is killed (DuckDB, polars, pyarrow read every Parquet file there;
only our own reader drops a key seen twice)."""
import json
import os
import subprocess
import sys
import textwrap

import duckdb
import polars as pl
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from whileai_ray.store.parquet.folder import ParquetSink, read_parquet
from whileai_ray.store.schema import key_string, row_key


def _keys(n):
    from tests.unit.store.parquet.test_parquet import make_row
    return sorted(key_string(row_key(make_row(i))) for i in range(n))


def _outside(folder) -> dict:
    """The row keys each outside reader sees in ``folder`` (sorted)."""
    glob = os.path.join(str(folder), "*.parquet")
    return {
        "pq.read_table": sorted(pq.read_table(str(folder)).column("row_key").to_pylist()),
        "pyarrow.dataset": sorted(ds.dataset(str(folder)).to_table(columns=["row_key"]).column(0).to_pylist()),
        "duckdb": sorted(k for (k,) in duckdb.sql(f"select row_key from read_parquet('{glob}')").fetchall()),
        "polars": sorted(pl.read_parquet(str(folder)).get_column("row_key").to_list()),
    }


# In one subprocess: for kill_at = 1, 2, ... a forked child builds folder k<kill_at> (rows 0..59);
# a second forked child reopens it (mode "a"), writes rows 60..99 as four parts, then compacts,
# SIGKILLed just before its ``kill_at``-th change of the filesystem (rename, exchange, unlink, rmdir).
# It stops after the first child that compacts (or, given a 4th argument such as "1,2,4", tries
# those steps only). Forked from a process that imported everything once (and never wrote Parquet
# itself, so no Arrow thread exists when it forks), each try costs a fork, not a Python start-up.
# Prints one JSON line: [[kill_at, "compacted" or the child's exit status (-9: killed)], ...].
_COMPACT_EACH_STEP = textwrap.dedent("""
    import json, os, signal, sys, traceback
    sys.path.insert(0, sys.argv[3])
    from test_parquet import make_row
    from whileai_ray.store.parquet.folder import ParquetSink
    try:
        from whileai_ray.store.parquet import swap as parquet_swap
    except ImportError:
        parquet_swap = None
    base, fallback = sys.argv[1], sys.argv[2] == "1"

    def in_child(work):
        pid = os.fork()
        if pid == 0:
            try:
                work()
                code = 0
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)

    def build(folder):
        with ParquetSink(folder, row_group_size=10) as sink:          # rows.parquet: rows 0..59
            sink.write([make_row(i) for i in range(60)])

    def compact(folder, kill_at):
        if fallback and parquet_swap is not None:
            parquet_swap._renameat2 = None    # as on a filesystem that refuses RENAME_EXCHANGE
        sink = ParquetSink(folder, row_group_size=10, mode="a")
        sink.write([make_row(i) for i in range(60, 100)])
        sink.flush()
        seen = [0]

        def hook(event, args):
            if event in ("os.rename", "os.remove", "os.rmdir", "whileai_ray.exchange"):
                seen[0] += 1
                if seen[0] == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)

        sys.addaudithook(hook)
        sink.close(compact=True)

    steps = [int(x) for x in sys.argv[4].split(",")] if len(sys.argv) > 4 else range(1, 40)
    outcomes = []
    for kill_at in steps:
        folder = os.path.join(base, f"k{kill_at}", "run.parquet")
        built = in_child(lambda: build(folder))
        if built != 0:
            outcomes.append([kill_at, f"building the folder failed ({built})"])
            break
        code = in_child(lambda: compact(folder, kill_at))
        outcomes.append([kill_at, "compacted" if code == 0 else code])
        if code != -9 and len(sys.argv) <= 4:
            break
    print(json.dumps(outcomes))
""")


@pytest.mark.parametrize("fallback", [False, True], ids=["exchange", "no-exchange"])
def test_a_compaction_killed_at_any_step_leaves_exactly_the_landed_rows_for_outside_readers(tmp_path, fallback):
    want = _keys(100)
    here = os.path.dirname(os.path.abspath(__file__))
    script = tmp_path / "compact.py"
    script.write_text(_COMPACT_EACH_STEP)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([p for p in sys.path if p])}
    proc = subprocess.run([sys.executable, str(script), str(tmp_path), "1" if fallback else "0", here],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr[-2000:]
    finished = False
    for kill_at, outcome in json.loads(proc.stdout.strip().splitlines()[-1]):
        folder = tmp_path / f"k{kill_at}" / "run.parquet"
        finished = outcome == "compacted"
        assert finished or outcome == -9, (kill_at, outcome, proc.stderr[-2000:])
        if folder.exists() or not fallback:   # without the exchange the folder is absent between two renames
            seen = _outside(folder)
            assert all(keys == want for keys in seen.values()), (kill_at, {k: len(v) for k, v in seen.items()})
        # the next open puts things right; the folder compacts to the rows, each once
        ParquetSink(folder, row_group_size=10, mode="a").close()
        assert sorted(key_string(row_key(r)) for r in read_parquet(folder)) == want
        assert all(keys == want for keys in _outside(folder).values())
        assert os.listdir(folder) == ["rows.parquet"] and os.listdir(folder.parent) == ["run.parquet"]
        if finished:
            break
    assert finished and kill_at > 3            # killed at several steps before one ran through


_PART = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, sys.argv[2])
    from test_parquet import make_row
    from whileai_ray.store.parquet.folder import ParquetSink
    sink = ParquetSink(sys.argv[1], row_group_size=10, mode="a")
    sys.addaudithook(lambda event, args: event == "os.rename" and os.kill(os.getpid(), signal.SIGKILL))
    sink.write([make_row(i) for i in range(10, 20)])      # killed as its part is renamed into place
""")


def test_a_part_cut_short_is_never_in_the_folder(tmp_path):
    """A part is built beside the folder and renamed in: a writer killed while writing one leaves
    nothing in the folder that polars (which refuses a folder holding a file of another extension)
    or pyarrow would read."""
    from tests.unit.store.parquet.test_parquet import make_row
    folder = tmp_path / "run.parquet"
    ParquetSink(folder, row_group_size=10).write([make_row(i) for i in range(10)])    # part-00000
    script = tmp_path / "part.py"
    script.write_text(_PART)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([p for p in sys.path if p])}
    proc = subprocess.run([sys.executable, str(script), str(folder), os.path.dirname(os.path.abspath(__file__))],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert os.listdir(folder) == ["part-00000.parquet"]
    assert all(keys == _keys(10) for keys in _outside(folder).values())
    ParquetSink(folder, row_group_size=10, mode="a").close()            # the next open clears the rest
    assert os.listdir(folder) == ["rows.parquet"] and sorted(os.listdir(tmp_path)) == ["part.py", "run.parquet"]
    assert all(keys == _keys(10) for keys in _outside(folder).values())


def test_the_work_folder_beside_a_checkpoints_parquet_is_one_of_its_files(tmp_path):
    """``.ck.parquet.work/`` is where the checkpoint's Parquet files are built: writing a result
    there, or a link planted there, is refused like the Parquet folder itself."""
    from whileai_ray.store.run_files import check_output, refuse_planted_links, refuse_run_file
    ck = tmp_path / "ck.jsonl"
    from whileai_ray.store.checkpoint.fingerprint import fingerprint
    from whileai_ray.store.checkpoint.jsonl import JsonlCheckpoint
    from whileai_ray.store.checkpoint.sink import CheckpointSink
    from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS
    from tests.unit.store.parquet.test_parquet import make_row
    sink = CheckpointSink(JsonlCheckpoint(ck, fingerprint(TOOLS, SYSTEM, "seeded_agent")))
    sink.append([make_row(1)])
    sink.close()
    work = tmp_path / ".ck.parquet.work"
    with pytest.raises(ValueError, match="save"):
        refuse_run_file(work / "out.jsonl", "save(path=...)")
    with pytest.raises(ValueError, match="output="):
        check_output(str(work / "out.jsonl"), str(ck))
    os.symlink(tmp_path / "victim", work)
    with pytest.raises(ValueError, match="symbolic link"):
        refuse_planted_links(str(ck))
