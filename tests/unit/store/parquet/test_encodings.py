"""The Parquet files we write keep ``row_json`` plain: no dictionary page, no statistics (issue 32).

Each row's JSON text is unique to it: a dictionary for it is built and dropped row group after
row group, its statistics serve no reader, and a reader's size guard took it for a
dictionary-encoded column it had to check before decoding (``store/parquet/encodings.py``).
The other columns keep their dictionaries (a fact such as ``tier`` repeats), and the rows read
back as they were written, through the readers users' results go through.
"""
import pyarrow.parquet as pq

from whileai_ray.core.identity import key_string, row_key
from whileai_ray.score.row_facts import fact_spill_writer
from whileai_ray.store.parquet.arrow_rows import ArrowRows
from whileai_ray.store.parquet.encodings import writer_options
from whileai_ray.store.parquet.folder import ParquetSink, read_parquet
from whileai_ray.store.parquet.limits import _suspects
from whileai_ray.store.parquet.spill import spill_schema
from whileai_ray.testing.seeded_rows import played


def _chunks(path):
    """``{column path: (has a dictionary page, has statistics)}`` of every row group of ``path``."""
    meta = pq.ParquetFile(path).metadata
    out: dict = {}
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            out.setdefault(chunk.path_in_schema, set()).add((chunk.has_dictionary_page, chunk.is_stats_set))
    return out


def test_the_row_spool_writes_row_json_plain_and_reads_every_row_back(tmp_path):
    rows = played(n_situations=24, k=4)                       # 96 rows, row groups of 32
    writer = fact_spill_writer(str(tmp_path / "spill"))
    writer.group_rows = 32
    writer.append(rows)
    files = writer.close()
    chunks = _chunks(files[0])
    assert chunks["row_json"] == {(False, False)}
    assert chunks["tier"] == {(True, True)}                    # a fact that repeats keeps its dictionary
    pf = pq.ParquetFile(files[0])
    assert "row_json" not in _suspects(pf, 0, None, budget=1)  # the reader's guard has nothing to check
    back = list(ArrowRows(files))
    assert [r["prompt"] for r in back] == [r["prompt"] for r in rows]
    assert [key_string(row_key(r)) for r in back] == [key_string(row_key(r)) for r in rows]


def test_the_checkpoints_parquet_copy_writes_row_json_plain(tmp_path):
    rows = [r for r in played(n_situations=10, k=3) if key_string(row_key(r))]
    sink = ParquetSink(tmp_path / "run.parquet", row_group_size=8)
    sink.write(rows)
    sink.flush()
    for part in sink.parts():
        chunks = _chunks(part)
        assert chunks["row_json"] == {(False, False)}
        assert chunks["tier"] == {(True, True)}
    path = sink.close(compact=True)                            # the compacted file, the same way
    assert _chunks(path)["row_json"] == {(False, False)}
    assert [r["prompt"] for r in read_parquet(path)] == [r["prompt"] for r in rows]


def test_writer_options_name_every_leaf_but_row_json():
    schema = spill_schema()
    assert writer_options(schema) == {"use_dictionary": [], "write_statistics": []}
    from whileai_ray.score.row_facts import facts_schema
    opts = writer_options(spill_schema(facts_schema()))
    assert "row_json" not in opts["use_dictionary"] and "tier" in opts["use_dictionary"]
    assert "step_tools.list.element" in opts["use_dictionary"]        # a list column's leaf, as Parquet names it
    assert opts["use_dictionary"] == opts["write_statistics"]
