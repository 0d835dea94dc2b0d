"""The dataset store under concurrency and odd names (issue 28, item 13): four real processes
pushing 25 versions each into one store lose no index entry and never crash on a shared
temporary file; names with a trailing newline, the store's own file names and another
dataset's holdout are refused before anything is written. No Ray: push() is plain file work."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from whileai_ray.export.push import list_datasets, push

PUSHER = textwrap.dedent("""
    import sys
    from whileai_ray.export.push import push
    store, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rows = [{"prompt": f"q{i}", "steps": [], "final_text": f"a{i}", "scenario_id": f"s{i}"} for i in range(3)]
    for i in range(n):
        name = "shared" if i % 2 == 0 else f"own-{who}"
        entry = push(rows, {"mode": "explore"}, name, store=store, gate=False)
        print(entry["datasetId"], flush=True)
""")


def _rows(n=4):
    return [{"prompt": f"q{i}", "steps": [], "final_text": f"a{i}", "scenario_id": f"s{i}", "reward": i % 2}
            for i in range(n)]


def test_four_processes_pushing_25_versions_each_lose_no_index_entry(tmp_path):
    store = tmp_path / "store"
    procs = [subprocess.Popen([sys.executable, "-c", PUSHER, str(store), str(w), "25"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for w in range(4)]
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=240)
            outs.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for rc, out, err in outs:
        assert rc == 0, err[-2000:]                      # no pusher crashed (index.json.tmp, say)
    ids = [line for _, out, _ in outs for line in out.split()]
    assert len(ids) == 100 and len(set(ids)) == 100      # every push got a version of its own
    index = json.loads((store / "index.json").read_text())["datasets"]
    listed = {e["datasetId"] for entries in index.values() for e in entries}
    assert listed == set(ids)                            # all 100 entries in the index, none lost
    assert sorted(e["version"] for e in index["shared"]) == list(range(1, 53))   # 13 a process
    assert list_datasets(store=str(store))["datasets"] == index
    assert not [p for p in os.listdir(store) if p.endswith(".tmp")]


@pytest.mark.parametrize("name", ["orders\n", "index.json", "index.json.lock"])
def test_a_name_with_a_trailing_newline_or_of_the_store_s_own_files_is_refused(tmp_path, name):
    store = tmp_path / "store"
    with pytest.raises(ValueError, match=r"push\(name="):
        push(_rows(), {"mode": "explore"}, name, store=str(store), gate=False)
    assert not store.exists() or sorted(os.listdir(store)) in ([], ["index.json"])
    assert not (store / "orders").exists() and not (store / "orders\n").exists()


def test_a_name_that_is_another_dataset_s_holdout_is_refused_before_anything_is_written(tmp_path):
    store = str(tmp_path / "store")
    first = push(_rows(), {"mode": "explore"}, "orders", store=store, gate=False, holdout=0.5)
    assert first["holdout"]["name"] == "orders-holdout"
    before = json.loads((tmp_path / "store" / "index.json").read_text())
    with pytest.raises(ValueError, match="holdout of dataset 'orders'"):
        push(_rows(), {"mode": "explore"}, "orders-holdout", store=store, gate=False)
    # a dataset called like the holdout a later push would make is not overwritten by it either
    push(_rows(), {"mode": "explore"}, "refunds-holdout", store=store, gate=False)
    with pytest.raises(ValueError, match="not 'refunds'.s holdout"):
        push(_rows(), {"mode": "explore"}, "refunds", store=store, gate=False, holdout=0.5)
    after = json.loads((tmp_path / "store" / "index.json").read_text())
    assert after["datasets"]["orders-holdout"] == before["datasets"]["orders-holdout"]
    assert "refunds" not in after["datasets"] and not (tmp_path / "store" / "refunds").exists()
