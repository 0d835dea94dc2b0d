"""ResumeIndex on digests: which planned rows are on disk, settled once each, claimed at once."""
import numpy as np

from whileai_ray.store.checkpoint.disk_rows import DiskRows
from whileai_ray.store.checkpoint.resume import ResumeIndex
from whileai_ray.store.schema import row_key

from tests.unit.store.checkpoint.test_jsonl import make_row


def _index(n=10, header=None, fp=None):
    rows = [make_row(i) for i in range(n)]
    return rows, ResumeIndex(rows, header, fp)


def test_a_key_is_settled_once_and_the_rest_are_left_over():
    rows, ix = _index()
    assert ix.mode == "precount"                    # no plan fingerprint to match: counted up front
    assert ix.take_key(row_key(rows[3])) == rows[3]
    assert ix.take_key(row_key(rows[3])) is None                 # once
    assert ix.take_key(("sc-nope", "x", 0, 0)) is None
    assert ix.summary()["matched"] == 1 and ix.summary()["unmatched"] == 9
    assert ix.leftover() == rows[:3] + rows[4:]


def test_claim_settles_all_or_nothing_and_on_disk_counts_the_usable_prefix():
    rows, ix = _index()
    keys = [row_key(r) for r in rows]
    assert ix.on_disk(keys[:4] + [keys[2]] + keys[5:]) == 4        # a repeat ends the prefix
    assert ix.on_disk(keys[:3] + [("sc-nope", "x", 0, 0)]) == 3    # so does a key not on disk
    assert not ix.claim(keys[:3] + [("sc-nope", "x", 0, 0)])
    assert not ix.claim([keys[1], keys[1]])
    assert ix.summary()["matched"] == 0                             # nothing claimed by a refusal
    assert ix.claim([keys[5], keys[0], keys[7]])
    assert list(ix.claimed_rows()) == [rows[5], rows[0], rows[7]] and ix.claimed_row(keys[7]) == rows[7]
    assert ix.on_disk([keys[1], keys[0]]) == 1                      # claimed ones are no longer free
    assert ix.take_key(keys[0]) is None and ix.summary()["matched"] == 3


def test_rows_sharing_the_first_64_bits_of_their_digest_are_found_by_all_128():
    """The 64-bit collision branch, forced: row 4 is given row 1's first half."""
    rows = [make_row(i) for i in range(6)]
    disk = DiskRows.of(rows)
    a, b = disk.digests
    a[4] = a[1]
    ix = ResumeIndex(disk, None, None)
    assert ix.on_disk_digests(a, b) == 6
    assert ix.take_key(row_key(rows[1])) == rows[1]            # its real digest: found by all 128 bits
    assert ix.on_disk_digests(a[[4, 1]], b[[4, 1]]) == 1       # row 4 still free, row 1 settled
    assert ix.claim_digests(a[[4, 0]], b[[4, 0]]) and list(ix.claimed_rows()) == [rows[4], rows[0]]
    assert not ix.claim_digests(a[[2, 4]], b[[2, 4]])          # row 4 is claimed already


def test_a_changed_plan_counts_the_rows_on_disk_and_avoids_their_prompts():
    rows = [make_row(i) for i in range(5)]
    ix = ResumeIndex(rows, {"fingerprint": {"plan": "old"}}, "new")
    assert ix.mode == "precount" and ix.leftover_count() == 5
    over = ix.planner_overrides()
    assert over["precounted"] == 5 and over["avoid_prompt_shas"] == frozenset(row_key(r)[1] for r in rows)
    same = ResumeIndex(rows, {"fingerprint": {"plan": "p"}}, "p")
    assert same.mode == "exact" and same.planner_overrides() == {} and same.leftover_count() == 0
    # a plan that is not a function of the seed (reproducible=False, a clock) is never replayed
    drawn = ResumeIndex(rows, {"fingerprint": {"plan": "p"}}, "p", replays=False)
    assert drawn.mode == "precount" and drawn.planner_overrides()["precounted"] == 5 and drawn.leftover_count() == 5
    assert np.array_equal(DiskRows.of(rows).digests[0], ResumeIndex(rows, None, None)._rows.digests[0])


def test_a_resumed_rows_json_is_made_from_its_line_and_equals_encoding_it(tmp_path):
    """The end of a resume writes each settled row's row_json from its checkpoint line (its
    lineage replaced, the bookkeeping appended): byte for byte what encoding the row gives."""
    from whileai_ray.store.checkpoint.jsonl import JsonlCheckpoint
    from whileai_ray.store.snapshots.keeper import _encoded
    from whileai_ray.store.parquet.spill import EncodedRow, dump_row, table_of, spill_schema

    from tests.unit.store.checkpoint.test_jsonl import FP
    rows = [make_row(i) for i in range(5)]
    rows[2]["final_text"] = 'quote " back\\slash \u2028 \U0001F680 lineage":{'
    rows[3]["extra"] = {"lineage": rows[3]["lineage"]}            # the lineage text twice: encoded whole
    with JsonlCheckpoint(tmp_path / "ck.jsonl", FP) as ck:
        ck.append(rows)
    ck = JsonlCheckpoint(tmp_path / "ck.jsonl", FP)
    disk = ck.open()
    whole = []

    def counting(obj):
        if isinstance(obj, dict) and "prompt" in obj:
            whole.append(obj["scenario_id"])
        return dump_row(obj)

    for i in range(5):
        row = disk[i]
        out = EncodedRow(row)
        out["lineage"] = {**row["lineage"], "resumed": True, "eval_run": 2}
        out["_key"], out["_ordinal"], out["_landed_s"] = ["r", row["scenario_id"], 0, 0, 2], 7 + i, 0.0
        out.json = _encoded(out, disk.line(i), row["lineage"], counting)
        assert out.json == dump_row(out)
    assert whole == [rows[3]["scenario_id"]]                      # only the ambiguous one encoded whole
    ck.close()
    table = table_of([out], None, spill_schema())
    assert table.column("row_json").to_pylist() == [dump_row(out)]
