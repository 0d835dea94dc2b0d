"""``cell_key`` (one sorted-keys encoder made once) names a cell exactly as ``json.dumps(cell,
sort_keys=True)`` did: the coverage report, the spill's fact columns and the planner key cells by it."""
import json

import pytest

from whileai_ray.situations.grid import cell_key

CELLS = [
    {"tool": "lookup_order", "rule": "unspecified", "stance": "ordinary", "world_state": "entity exists",
     "tool_condition": "success", "history": "fresh"},
    {"z": 1, "a": [1, 2.5, None], "m": {"y": True, "b": "ünïcödé 漢字 🚀"}},
    {"lone": "\ud800", "nan": float("nan"), "inf": float("-inf")},
    {}, None, [3, 1], "text", 7,
]


@pytest.mark.parametrize("cell", CELLS)
def test_cell_key_is_json_dumps_with_sorted_keys(cell):
    assert cell_key(cell) == json.dumps(cell, sort_keys=True)


def test_a_cell_of_no_json_type_is_refused_as_before():
    with pytest.raises(TypeError):
        json.dumps({"s": {1}}, sort_keys=True)
    with pytest.raises(TypeError):
        cell_key({"s": {1}})
