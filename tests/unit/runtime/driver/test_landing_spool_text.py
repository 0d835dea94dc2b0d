"""The Driver's spool writes each played row's ``row_json`` from the text its lane made
(``RolloutResult.text``, ``store/parquet/spill_text.py``) with the Driver's ``_landed_s`` spliced
in, instead of encoding the row again (issue 32). The spill files must be the very tables the
Driver's own encoding makes (every column, the schema and its metadata), on rows as odd as agents
make them: unicode, lone surrogates, NaN, numpy values, nested tool results, None values, a
privileged block, a row that already has ``_landed_s``, graded rows (a verdict changes the row on
the Driver) and lineage-stamped runs (both encoded on the Driver, as before); and a spool that
never spills hands back plain dicts, equal to the old ones."""
import copy
import itertools
import pickle

import pyarrow as pa
import pyarrow.parquet as pq

from whileai_ray.runtime.driver.landing import Landing
from whileai_ray.runtime.messages import RolloutResult
from whileai_ray.score.row_facts import fact_spill_writer
from whileai_ray.store.parquet.spill import dump_row
from whileai_ray.store.parquet.spill_text import edge_text
from whileai_ray.store.row_spool import RowSpool, SpilledRows
from whileai_ray.testing.seeded_rows import played

from planned_units import planned_units
from tests.unit.store.checkpoint.test_edge_lines import VERDICT, odd_rows

GRADED = {2, 9, 17}
BATCH = 5


def rows_to_land() -> list[dict]:
    """Odd rows and real seeded-agent rows, each with the lane's stamps; one keeps a ``_landed_s``."""
    odd = odd_rows()
    for i, row in enumerate(odd):
        if i != 10:
            del row["_landed_s"]             # (the Driver adds it; row 10 has one already)
    seeded = played(n_situations=4, k=3, grader=None)
    for row in seeded:
        row.update(_node="n2", _seconds=0.25, maybe=None)
    rows = odd + seeded
    for i, row in enumerate(rows):
        row["_ordinal"] = i
    return rows


def land(folder, rows, edge: bool, threshold: int = 3, lineage=None):
    """Land ``rows`` through a Landing whose spool spills past ``threshold`` rows, in batches, rows
    released a little behind their landing (as rounds are observed). ``edge``: each result
    carries the text its lane made (``edge_text``) across a pickle, as Ray hands it over."""
    unit = planned_units(1)[0]
    ticks = itertools.count(1)
    spool = RowSpool(threshold, fact_spill_writer, parent=str(folder))
    landing = Landing(judge_name="truthful", scoring_run_id="s1", label_source="judge", t0=0.0,
                      clock=lambda: next(ticks) * 0.123456789, spool=spool, lineage=lineage)
    for start in range(0, len(rows), BATCH):
        for i in range(start, min(start + BATCH, len(rows))):
            row = copy.deepcopy(rows[i])
            res = RolloutResult(unit=unit, row=row, text=edge_text(row) if edge else None)
            res = pickle.loads(pickle.dumps(res))
            landing.played(res.with_verdict(dict(VERDICT)) if i in GRADED else res)
        landing.flush()
        landing.release(start - 3)
    return spool.finish(), landing.edge_texts


def spill_table(out: SpilledRows) -> pa.Table:
    tables = [pq.read_table(f) for f in out.files]
    assert len({t.schema.metadata[b"whileai_ray.spill_version"] for t in tables}) == 1
    return pa.concat_tables(tables)


def expected_edge(rows, lineage=None) -> int:
    return 0 if lineage else sum(edge_text(r) is not None and i not in GRADED and "_landed_s" not in r
                                 for i, r in enumerate(rows))


def test_spilled_tables_from_lane_texts_equal_the_drivers_own_encoding(tmp_path):
    rows = rows_to_land()
    for lineage in (None, {"eval_run": 1, "replayed": True}):
        new, n_edge = land(tmp_path, rows, edge=True, lineage=lineage)
        old, n_old = land(tmp_path, rows, edge=False, lineage=lineage)
        assert isinstance(new, SpilledRows) and new.count == old.count == len(rows)
        a, b = spill_table(new), spill_table(old)
        assert a.schema.equals(b.schema, check_metadata=True) and a.equals(b)
        assert n_old == 0 and n_edge == expected_edge(rows, lineage)
        if lineage is None:
            assert 0 < n_edge < len(rows) - len(GRADED)      # numpy values, a _landed_s already: encoded here
        texts = a.column("row_json").to_pylist()
        assert [t.count('"_landed_s":') for t in texts] == [1] * len(rows)


def test_a_spool_that_never_spills_hands_back_the_same_plain_rows(tmp_path):
    rows = rows_to_land()
    new, n_edge = land(tmp_path, rows, edge=True, threshold=10_000)
    old, _ = land(tmp_path, rows, edge=False, threshold=10_000)
    assert isinstance(new, list) and n_edge == expected_edge(rows)
    assert all(type(r) is dict for r in new) and [dump_row(r) for r in new] == [dump_row(r) for r in old]


def test_rows_released_while_few_are_plain_dicts(tmp_path):
    rows = rows_to_land()[:8]
    unit = planned_units(1)[0]
    spool = RowSpool(100, fact_spill_writer)
    landing = Landing(t0=0.0, clock=lambda: 1.0, spool=spool)
    for row in rows:
        row = copy.deepcopy(row)
        landing.played(RolloutResult(unit=unit, row=row, text=edge_text(row)))
    landing.flush()
    landing.release(10**9)
    assert landing.edge_texts > 0
    assert all(type(r) is dict for r in spool.released(0)) and len(spool.released(0)) == len(rows)
