"""A lane's text of its row (``spill_text.edge_text``) is ``dump_row`` of the row the Driver
receives, and ``with_landed`` adds the Driver's ``_landed_s`` exactly as ``dump_row`` writes a key
added last; a row holding a value of no JSON type (its ``str()`` may differ in another process)
gets no text, so the Driver encodes it as before."""
import datetime as dt
import math
import pickle

import numpy as np
import pytest

from whileai_ray.store.parquet.spill import EncodedRow as SpillEncodedRow, dump_row as spill_dump_row
from whileai_ray.store.parquet.spill_text import EncodedRow, dump_row, edge_text, encoded_row, with_landed


class Label(str):
    pass


def plain_rows() -> list[dict]:
    return [
        {"prompt": "naïve — 漢字 🚀 \u2028 \"q\" \\ b", "steps": [], "final_text": "x", "_ordinal": 3},
        {"prompt": "lone \ud800 and \udfff", "steps": [{"result": {"k\udc00": "\ud83d\ude80"}}], "_node": "n"},
        {"reward": float("nan"), "big": float("inf"), "low": -float("inf"), "r": np.float64(0.75)},
        {"deep": [[[{"a": [None, True, False, 1, -2, 3.5e-300, 1e300]}]]], "t": (1, 2), "none": None},
        {1: "int key", 2.5: "float key", True: "bool key", None: "null key", "privileged": {"x": {"y": 1}}},
        {"sub": Label("a str subclass"), "ok": True, "_seconds": 0.0123},
        {},
    ]


def test_edge_text_of_plain_rows_is_dump_row_of_the_row_that_crosses():
    for row in plain_rows():
        text = edge_text(row)
        assert text == dump_row(row) == dump_row(pickle.loads(pickle.dumps(row)))


def test_rows_holding_values_of_no_json_type_get_no_text():
    odd = [{"n": np.int64(3)}, {"a": np.array([1.5])}, {"at": dt.datetime(2024, 1, 2)}, {"s": {"a", "b"}},
           {"o": object()}, {"b": b"bytes"}, {(1, 2): "tuple key"}]
    for row in odd:
        assert edge_text(row) is None
    circular: dict = {}
    circular["me"] = circular
    assert edge_text(circular) is None
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert edge_text({"deep": deep}) is None


@pytest.mark.parametrize("landed", [0.0, 1.5, 12.3456, 0.0001, 1e-05, 123456.7891, 3.0, round(1 / 3, 4)])
def test_with_landed_is_dump_row_of_the_stamped_row(landed):
    for row in plain_rows():
        text = edge_text(row)
        assert text is not None
        stamped = {**row, "_landed_s": landed}
        assert with_landed(text, landed) == dump_row(stamped)
        out = encoded_row(stamped, text)
        assert type(out) is EncodedRow and out == stamped and out.json == dump_row(stamped)
    assert math.isfinite(landed)


@pytest.mark.parametrize("landed", [7, float("inf"), float("nan"), -0.0, 1e22, True])
def test_an_odd_stamp_is_written_as_dump_row_writes_it(landed):
    row = plain_rows()[0]
    assert with_landed(edge_text(row), landed) == dump_row({**row, "_landed_s": landed})


def test_the_spill_module_keeps_its_names():
    assert SpillEncodedRow is EncodedRow and spill_dump_row is dump_row
