"""push(): versioned datasets in a store, the publish gate, holdout splits, and loading them back."""
import json

import pytest

from whileai_ray.agents.seeded import seeded_agent
from whileai_ray.core.rows import conversation
from whileai_ray.export import PublishGateError, list_datasets, load_pushed, push
from whileai_ray.result.loading import load
from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS, played

RL_META = {"mode": "rl", "system_prompt": SYSTEM, "tools": TOOLS, "seed": 0}

ROWS = played(10)


def test_pushing_twice_makes_two_versions_and_the_index_lists_both(tmp_path):
    first = push(ROWS, RL_META, "orders", store=tmp_path)
    second = push(ROWS, RL_META, "orders", store=tmp_path, parent=first["datasetId"])
    assert (first["datasetId"], second["datasetId"]) == ("ds_orders_v1", "ds_orders_v2")
    assert (first["version"], second["version"]) == (1, 2) and second["parent"] == "ds_orders_v1"
    assert (tmp_path / "orders" / "v1" / "rows.parquet").is_file()
    assert (tmp_path / "orders" / "v2" / "rows.parquet").is_file()
    assert first["gate"]["passed"] and first["gate"]["mixed_groups"] > 0 and first["purpose"] == "train"
    index = json.loads((tmp_path / "index.json").read_text())
    assert [e["datasetId"] for e in index["datasets"]["orders"]] == ["ds_orders_v1", "ds_orders_v2"]
    assert list_datasets(tmp_path) == index
    rows, meta = load_pushed("orders", store=tmp_path)           # latest
    assert meta["dataset"]["datasetId"] == "ds_orders_v2" and meta["tools"] == TOOLS
    rows1, _ = load_pushed("ds_orders_v1", store=tmp_path)
    assert len(rows) == len(rows1) == len(ROWS)
    assert [conversation(r) for r in rows] == [conversation(r) for r in ROWS]
    assert all("privileged" not in r for r in rows)
    graded = rows[0]["calibration"]
    assert graded["n"] == 4 and 0.0 <= graded["pass_rate"] <= 1.0 and len(graded["pass_rate_ci95"]) == 2
    assert graded["student"] == "seeded_agent@" + rows[0]["policy_version"].split("@")[1]


def test_a_pushed_version_folder_loads_with_wai_load(tmp_path):
    entry = push(ROWS, RL_META, "orders", store=tmp_path)
    data = load(entry["path"])
    assert len(data) == len(ROWS) and data.system_prompt == SYSTEM and data.tools == TOOLS
    assert data.mode == "rl"


def test_holdout_is_split_by_scenario_id_into_a_linked_dataset(tmp_path):
    entry = push(ROWS, RL_META, "orders", store=tmp_path, holdout=0.3)
    hold = entry["holdout"]
    assert hold["datasetId"] == "ds_orders-holdout_v1" and hold["purpose"] == "holdout"
    assert hold["parent"] == entry["datasetId"]
    train_rows, meta = load_pushed(entry["datasetId"], store=tmp_path)
    hold_rows, _ = load_pushed(hold["datasetId"], store=tmp_path)
    train_ids = {r["scenario_id"] for r in train_rows}
    hold_ids = {r["scenario_id"] for r in hold_rows}
    assert not train_ids & hold_ids and len(hold_ids) == 3
    assert len(train_rows) + len(hold_rows) == len(ROWS)
    assert meta["dataset"]["holdout"]["datasetId"] == hold["datasetId"]


def test_the_publish_gate_refuses_an_ungraded_rl_run_unless_gate_is_false(tmp_path):
    ungraded = played(3, 2, grader=None)
    with pytest.raises(PublishGateError, match="ungraded_rl_rows") as info:
        push(ungraded, RL_META, "raw", store=tmp_path)
    assert isinstance(info.value, ValueError) and "gate=False" in str(info.value)
    assert not (tmp_path / "raw").exists()
    entry = push(ungraded, RL_META, "raw", store=tmp_path, gate=False)
    assert entry["gate"] is None and entry["datasetId"] == "ds_raw_v1"
    unanimous = [dict(r, reward=1.0) for r in ROWS]
    with pytest.raises(PublishGateError, match="no_mixed_group"):
        push(unanimous, RL_META, "flat", store=tmp_path)
    explore = [r for r in ungraded if r["rollout_index"] == 0]
    assert push(explore, {"mode": "explore"}, "explore", store=tmp_path)["gate"]["graded"] == 0


def test_strict_hacks_refuses_a_reward_explained_by_an_unendorsed_feature(tmp_path):
    wordy = [dict(r, reward=1.0 if len(r["final_text"].split()) > 10 else 0.0) for r in ROWS]
    with pytest.raises(PublishGateError, match="reward_hack"):
        push(wordy, RL_META, "wordy", store=tmp_path, endorsed=("tool:lookup_order",), strict_hacks=True)
    entry = push(wordy, RL_META, "wordy", store=tmp_path, endorsed=("tool:lookup_order",))
    assert entry["gate"]["hack_scan"]["verdict"] == "suspect"


def test_uri_stores_and_the_environment_default(tmp_path, monkeypatch):
    entry = push(ROWS, RL_META, "orders", store=f"file://{tmp_path}/remote")
    assert entry["path"] == f"{tmp_path}/remote/orders/v1"          # file:// is a local disk: a plain path
    rows, _ = load_pushed("ds_orders_v1", store=f"file://{tmp_path}/remote")
    assert len(rows) == len(ROWS)
    monkeypatch.setenv("WHILEAI_RAY_DATASETS", str(tmp_path / "env_store"))
    assert push(ROWS, RL_META, "orders")["path"] == str(tmp_path / "env_store" / "orders" / "v1")
    assert load_pushed("orders")[1]["dataset"]["version"] == 1


def test_bad_push_arguments_and_missing_datasets_say_what_to_pass(tmp_path):
    for kwargs, word in [({"name": "bad name!"}, "name"), ({"purpose": "fun"}, "purpose"),
                         ({"holdout": 1.5}, "holdout"), ({"parent": "orders"}, "parent")]:
        args = {"name": "orders", **kwargs}
        with pytest.raises(ValueError, match=word):
            push(ROWS, RL_META, store=tmp_path, **args)
    with pytest.raises(ValueError, match="holdout"):
        push(ROWS[:4], RL_META, "one-task", store=tmp_path, holdout=0.5)
    with pytest.raises(FileNotFoundError, match="no dataset"):
        load_pushed("nothing", store=tmp_path)
    push(ROWS, RL_META, "orders", store=tmp_path)
    with pytest.raises(FileNotFoundError, match="v7"):
        load_pushed("ds_orders_v7", store=tmp_path)


def test_a_non_local_pyarrow_filesystem_gets_versions_and_an_index_too(tmp_path):
    import pyarrow.fs as pafs
    (tmp_path / "bucket").mkdir()
    fs = pafs.SubTreeFileSystem(str(tmp_path / "bucket"), pafs.LocalFileSystem())   # not a LocalFileSystem
    a = push(ROWS, RL_META, "orders", store="datasets", filesystem=fs)
    b = push(ROWS, RL_META, "orders", store="datasets", filesystem=fs)
    assert (a["path"], b["path"]) == ("datasets/orders/v1", "datasets/orders/v2")
    assert (tmp_path / "bucket" / "datasets" / "orders" / "v2" / "rows.parquet").is_file()
    assert [e["version"] for e in list_datasets("datasets", filesystem=fs)["datasets"]["orders"]] == [1, 2]
    (tmp_path / "bucket" / "datasets" / "index.json").write_text("{torn")      # the index is rebuilt
    assert [e["version"] for e in list_datasets("datasets", filesystem=fs)["datasets"]["orders"]] == [1, 2]
    rows, meta = load_pushed("orders", store="datasets", filesystem=fs)
    assert len(rows) == len(ROWS) and meta["dataset"]["version"] == 2
