"""export_dataset (the docs' name beside grade(judge=)) and push()'s hosted arguments (issue 30 item 7)."""
import json

import pytest

import whileai_ray as wai
from whileai_ray.result.data import SimulationData
from whileai_ray.store.reader import save_jsonl_atomic
from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS, played

ROWS = played(6, k=2)


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_export_dataset_and_export_training_are_one_function():
    assert wai.export_dataset is wai.export_training


def test_rows_in_memory_export_every_row_that_passes_the_gate(tmp_path):
    report = wai.export_dataset(ROWS, tmp_path / "train.jsonl", system_prompt=SYSTEM, tools=TOOLS)
    records = _lines(tmp_path / "train.jsonl")
    assert report["n"] == len(records) == len(ROWS) and report["with_tools"] and report["system_prompt"]
    assert records[0]["messages"][0] == {"role": "system", "content": SYSTEM}
    assert wai.export_dataset(ROWS, system_prompt=SYSTEM)["path"] is None        # no output: nothing written


def test_a_simulation_data_gives_its_own_system_prompt_and_tools(tmp_path):
    data = SimulationData(trajectories=[dict(r) for r in ROWS], system_prompt=SYSTEM, tools=TOOLS)
    report = wai.export_dataset(data, tmp_path / "t.jsonl")
    assert report["with_tools"] and report["system_prompt"] and report["n"] == len(ROWS)


def test_a_path_source_writes_beside_it_and_never_onto_itself(tmp_path):
    src = tmp_path / "graded.jsonl"
    save_jsonl_atomic(ROWS, src)
    before = src.read_bytes()
    report = wai.export_dataset(src, system_prompt=SYSTEM, tools=TOOLS)
    assert report["path"] == str(tmp_path / "graded.train.jsonl") and len(_lines(tmp_path / "graded.train.jsonl"))
    with pytest.raises(ValueError, match="source itself"):
        wai.export_dataset(src, src)
    assert src.read_bytes() == before


def test_push_refuses_the_hosted_arguments_before_writing_and_records_the_agent(tmp_path):
    data = SimulationData(trajectories=[dict(r) for r in ROWS], system_prompt=SYSTEM, tools=TOOLS)
    with pytest.raises(ValueError, match=r"push\(api_key=\.\.\.\).*store="):
        data.push("orders", api_key="sk-x", store=str(tmp_path))
    with pytest.raises(ValueError, match=r"push\(publish=True\)"):
        data.push("orders", publish=True, agent="support-bot", store=str(tmp_path))
    assert not any(tmp_path.iterdir())                       # nothing written by a refused push
    entry = data.push("orders", agent="support-bot", store=str(tmp_path), gate=False)
    assert entry["agent"] == "support-bot" and entry["datasetId"] == "ds_orders_v1"
