"""``cell_key`` (one sorted-keys encoder made once, string cells looked up by their items) names a
cell exactly as ``json.dumps(cell, sort_keys=True)`` did: the coverage report, the spill's fact
columns and the planner key cells by it."""
import json

import pytest

from whileai_ray.situations import grid
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


def test_the_looked_up_keys_stay_json_dumps_in_any_order_and_past_the_table_size(monkeypatch):
    monkeypatch.setattr(grid, "CELL_KEYS_KEPT", 8)
    cells = [{"tool": f"t{i % 11}", "stance": "ordinary", "rule": "r\u00e9"} for i in range(40)]
    cells += [dict(reversed(list(c.items()))) for c in cells]       # the same cells, keys in another order
    for _ in range(2):                                              # (the second pass: from the table)
        for c in cells:
            assert cell_key(c) == json.dumps(c, sort_keys=True)
    assert 0 < len(grid._CELL_KEYS) <= 8


def test_equal_but_differently_typed_values_keep_their_own_json():
    cells = [{"a": 1}, {"a": 1.0}, {"a": True}, {"a": "1"}]
    for _ in range(2):
        assert [cell_key(c) for c in cells] == ['{"a": 1}', '{"a": 1.0}', '{"a": true}', '{"a": "1"}']
