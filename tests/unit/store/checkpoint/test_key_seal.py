"""The seal of a cleanly closed checkpoint: reopened without reading its rows, and never trusted
once anything touched the file or its index since (even at once, in the same clock tick)."""
import json
import os

from tests.unit.store.checkpoint.test_jsonl import FP, make_row
from whileai_ray.store.checkpoint.meta import read_sidecar
from whileai_ray.store.checkpoint.jsonl import JsonlCheckpoint
from whileai_ray.store.checkpoint.lines import HEADER_KEY, scan_file
from whileai_ray.store.checkpoint.key_index import index_path
from whileai_ray.store.checkpoint.key_seal import seal_path

ROWS = [make_row(i, r) for i in range(40) for r in range(2)]


def _closed(path, batches=(ROWS[:30], ROWS[30:])):
    with JsonlCheckpoint(path, FP) as ck:
        for batch in batches:
            ck.append(batch)
    return path


def _scan(path):
    return scan_file(path, header=read_sidecar(path, HEADER_KEY))


def _reopened(path):
    ck = JsonlCheckpoint(path, FP)
    rows = list(ck.open())
    return ck, rows


def test_a_clean_close_seals_and_the_next_open_takes_the_index_as_is(tmp_path):
    path = _closed(tmp_path / "ck.jsonl")
    assert seal_path(path).exists()
    sealed = _scan(path)
    assert sealed.sealed and sealed.n == len(ROWS) and not sealed.index_stale and not sealed.decoded
    os.unlink(seal_path(path))
    verified = _scan(path)                                  # the same records, every byte checked
    assert not verified.sealed and (verified.records == sealed.records).all()
    _closed(path, ())                                       # opened and closed: sealed again
    ck, rows = _reopened(path)
    assert rows == ROWS and not seal_path(path).exists()   # open to append: the seal is gone
    assert ck.append([make_row(99)]) == 1
    ck.close()
    assert _scan(path).sealed and _reopened(path)[1] == ROWS + [make_row(99)]


def test_a_line_edited_right_after_the_close_is_seen(tmp_path):
    path = _closed(tmp_path / "ck.jsonl")
    data = path.read_bytes()
    at = data.index(b"sc-0000000007")
    with open(path, "r+b") as fh:                           # same size, same tick as the close
        fh.seek(at)
        fh.write(b"sc-0000000008")
    scan = _scan(path)
    assert not scan.sealed and scan.decoded                 # the edited group decoded line by line
    ck, rows = _reopened(path)
    ck.close()
    assert [r["scenario_id"] for r in rows].count("sc-0000000008") == 2       # the edit is not trusted ...
    assert [r["scenario_id"] for r in rows].count("sc-0000000007") == 1       # ... and row 7's first is left out


def test_rows_appended_after_the_seal_or_an_index_rewritten_are_verified(tmp_path):
    path = _closed(tmp_path / "ck.jsonl")
    extra = make_row(500)
    with open(path, "ab") as fh:                            # a run that crashed before its close
        fh.write((json.dumps(extra) + "\n").encode())
    scan = _scan(path)
    assert not scan.sealed and scan.n == len(ROWS) + 1
    ck, rows = _reopened(path)
    ck.close()
    assert rows == ROWS + [extra]
    index_path(path).write_bytes(index_path(path).read_bytes())     # the same bytes, written again
    assert not _scan(path).sealed
    seal_path(path).write_text("{not json")
    assert not _scan(path).sealed and _reopened(path)[1] == ROWS + [extra]
