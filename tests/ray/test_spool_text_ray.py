"""A run whose rollout actors send each row's spool text (``RolloutResult.text``, issue 32) spills
what the Driver's own encoding would: each spilled ``row_json`` is ``dump_row`` of the row it
decodes to, the fact columns are those of the decoded rows, the result's rows are those rows,
and most rows took their lane's text (the Driver encoded none of them). Its budget is past the
spool's list, so its rows cross slim: the Driver holds each one's stub and text, never its dict,
and the fact columns are the lanes' (``pools/slim_results.py``)."""
import json
import threading

import pyarrow as pa

import whileai_ray as wai
from whileai_ray import simulation
from whileai_ray.result.row_store import is_arrow
from whileai_ray.score.row_facts import FACT_NAMES, facts_table
from whileai_ray.store.parquet.spill import dump_row

KNOBS = {"ray": {"rollout_actors": 2}, "spill_rows": 40, "progress_every_s": 3600.0, "progress_every_rows": 10**6}
BUDGET = 300


def test_a_spilled_run_writes_the_drivers_encoding_from_lane_texts(ray_local, tools):
    kept, done = [], {}
    real = simulation._run_once

    def spy(*args, **kwargs):
        result, rows, facts = real(*args, **kwargs)
        kept.append((result, rows))
        return result, rows, facts

    def go():
        done["data"] = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=BUDGET, seed=5,
                                    fault_rate=0.3, advanced=KNOBS)

    simulation._run_once = spy
    try:
        worker = threading.Thread(target=go, daemon=True)
        worker.start()
        worker.join(240)
    finally:
        simulation._run_once = real
    assert not worker.is_alive(), "the run did not end in 240 s"
    data = done["data"]
    (result, rows), = kept
    assert data.search["rollouts"]["landed"] == BUDGET and is_arrow(rows) and len(rows) == BUDGET
    assert any(r.get("faults") for r in data.trajectories)
    assert result.spool_edge_rows >= 0.9 * BUDGET          # the lanes' texts, not the Driver's encoding
    assert result.spool_slim_rows == result.spool_edge_rows    # and the rows crossed slim (pools/slim_results.py)
    texts = [t for batch in rows.json_batches() for t in batch]
    decoded = [json.loads(t) for t in texts]
    assert texts == [dump_row(r) for r in decoded]         # byte for byte what the Driver writes of the row
    assert all("_landed_s" in r and "_node" in r and "_ordinal" in r for r in decoded)
    assert rows.read_columns(FACT_NAMES).equals(facts_table(decoded))
    assert [dump_row(r) for r in data.trajectories] == texts
    assert data.to_arrow().num_rows == BUDGET and isinstance(data.to_arrow(), pa.Table)
    assert len(data.rows()) == BUDGET
