"""Crafted store files, read without decoding what they claim (issue 28, items 11 and 13):
Parquet footers checked against the file's size, shard pointers checked before a file is
opened, dataset names matched whole. Small real files on disk; nothing large is built."""
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from whileai_ray.export import dataset_store
from whileai_ray.store.shards import storage as shards
from whileai_ray.store.parquet.folder import read_parquet, write_parquet

ROWS = [{"prompt": f"q{i}", "steps": [], "final_text": "a", "scenario_id": f"s{i}"} for i in range(50)]


def _dictionary_file(path, rows: int, value: str) -> None:
    table = pa.table({"row_json": pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)),
                                                                   pa.array([value]))})
    pq.write_table(table, path, row_group_size=rows)


def test_a_footer_claiming_more_rows_than_its_bytes_hold_is_refused(tmp_path):
    path = tmp_path / "claims.parquet"
    _dictionary_file(path, 300_000, json.dumps(ROWS[0]))
    assert path.stat().st_size < 10_000
    with pytest.raises(ValueError, match=r"claims 300,000 rows in [0-9,]+ bytes"):
        read_parquet(path)
    own = write_parquet(ROWS * 40, tmp_path / "own.parquet", row_group_size=500)    # what a run writes passes
    assert len(read_parquet(own)) == 2000


def test_a_dictionary_that_decodes_past_the_file_s_budget_is_refused_unread(tmp_path):
    path = tmp_path / "bomb.parquet"
    _dictionary_file(path, 3_000, json.dumps({**ROWS[0], "prompt": "a" * 100_000}))   # 300 MB decoded
    with pytest.raises(ValueError, match="decodes to 300,"):
        read_parquet(path)


def _stub(name, start=0, end=4, crc=1):
    return {"prompt": "p", "_shard": [name, start, end, crc]}


@pytest.mark.parametrize("pointer", ["../x/aaaaaaaaaaaa-000001.jsonl", "/etc/hostname", "aaaaaaaaaaaa-000001.jsonl\n",
                                     ["aaaaaaaaaaaa-000001.jsonl", 5, 1, 0], ["aaaaaaaaaaaa-000001.jsonl", "0", 1, 0]])
def test_a_stub_that_points_at_no_shard_file_is_refused_before_any_open(tmp_path, pointer):
    (tmp_path / "rows").mkdir()
    stub = {"prompt": "p", "_shard": pointer if isinstance(pointer, list) else [pointer, 0, 4, 1]}
    with pytest.raises(ValueError, match="not a shard file"):
        shards.read_landed(str(tmp_path), [stub])


def test_a_link_out_of_the_shards_folder_is_refused(tmp_path):
    (tmp_path / "rows").mkdir()
    outside = tmp_path.parent / f"{tmp_path.name}-secret.txt"
    outside.write_text("secret")
    os.symlink(outside, tmp_path / "rows" / "aaaaaaaaaaaa-000001.jsonl")
    with pytest.raises(ValueError, match="outside the run's shards folder"):
        shards.read_landed(str(tmp_path), [_stub("aaaaaaaaaaaa-000001.jsonl")])


@pytest.mark.parametrize("name", ["orders\n", "index.json", "index.json.lock", "", "../orders", ".hidden"])
def test_dataset_names_are_matched_whole_and_never_the_store_s_files(tmp_path, name):
    store = dataset_store.DatasetStore(str(tmp_path))
    with pytest.raises(ValueError, match="name"):
        store.claim_version(name)
    assert not any(p.name.startswith(("orders", "index")) for p in tmp_path.iterdir())


def test_two_writers_of_one_file_never_share_a_temporary_name(tmp_path):
    store = dataset_store.DatasetStore(str(tmp_path))
    (tmp_path / "index.json.tmp").mkdir()                # what a crashed writer's temp name could be
    store.write_json(store.path("index.json"), {"datasets": {}})
    assert json.loads((tmp_path / "index.json").read_text()) == {"datasets": {}}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.json", "index.json.tmp"]
