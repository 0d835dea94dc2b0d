"""A run's own files, without Ray (issue 28 items 5, 6 and 14): two names of one checkpoint share
one lock and one set of sidecars, a symlink planted at a sidecar or at a temporary name is never
written through, the exports refuse a run's own files, and a busy checkpoint held by this very
process says so."""
import os

import pytest

from tests.unit.store.checkpoint.test_jsonl import FP, make_row
from whileai_ray.store.checkpoint.lock import CheckpointBusy, CheckpointLock, lock_path
from whileai_ray.store.checkpoint.jsonl import JsonlCheckpoint

ROWS = [make_row(i) for i in range(6)]


def _checkpoint(path, rows=ROWS):
    with JsonlCheckpoint(path, FP) as ck:
        ck.append(rows)
    return path


def _victim(tmp_path, name="victim.txt"):
    victim = tmp_path / name
    victim.write_text("precious data\n")
    return victim


def test_two_names_of_one_checkpoint_share_its_lock_and_sidecars(tmp_path):
    from whileai_ray.store.checkpoint.meta import sidecar_path
    from whileai_ray.store.checkpoint.key_index import index_path
    from whileai_ray.store.snapshots.file import snapshot_path
    from whileai_ray.store.run_files import parquet_folder_for

    real = _checkpoint(tmp_path / "real.jsonl")
    link = tmp_path / "link.jsonl"
    os.symlink(real, link)
    (tmp_path / "sub").mkdir()
    other_spelling = tmp_path / "sub" / ".." / "real.jsonl"
    for derive in (lock_path, index_path, sidecar_path, snapshot_path, parquet_folder_for):
        assert str(derive(link)) == str(derive(real)) == str(derive(other_spelling))
    first = JsonlCheckpoint(real, FP, run_id="first")
    assert first.open() == ROWS
    try:
        with pytest.raises(CheckpointBusy, match="held by a run in this process"):
            JsonlCheckpoint(link, FP, run_id="second").open()
        assert not (tmp_path / "link.jsonl.lock").exists() and not (tmp_path / "link.jsonl.keys").exists()
    finally:
        first.close()
    again = JsonlCheckpoint(link, FP)
    assert again.open() == ROWS                      # resumed by the other name: the same rows, once
    assert again.append(ROWS) == 0
    again.close()


def test_a_busy_checkpoint_held_by_this_process_says_so(tmp_path):
    ck = tmp_path / "ck.jsonl"
    holder = CheckpointLock(ck, run_id="mine")
    holder.acquire()
    try:
        with pytest.raises(CheckpointBusy) as info:
            CheckpointLock(ck, run_id="second").acquire(retry_s=0.1)
        text = str(info.value)
        assert "held by a run in this process" in text and "'mine'" in text
        assert f"caller pid {os.getpid()}" not in text        # not our own pid, as if another process
    finally:
        holder.release()


def test_a_symlink_planted_at_the_lock_is_refused_and_its_target_untouched(tmp_path):
    victim = _victim(tmp_path)
    ck = tmp_path / "ck.jsonl"
    os.symlink(victim, tmp_path / "ck.jsonl.lock")
    with pytest.raises(ValueError, match="symbolic link"):
        JsonlCheckpoint(ck, FP).open()
    with pytest.raises(ValueError, match="symbolic link"):
        CheckpointLock(ck, run_id="x").acquire(retry_s=0)
    assert victim.read_text() == "precious data\n"
    assert not ck.exists()


def test_symlinks_planted_at_temporary_names_are_never_written_through(tmp_path):
    victims = {name: _victim(tmp_path, f"victim-{i}.txt")
               for i, name in enumerate(("ck.jsonl.meta.json.tmp", "ck.jsonl.keys.tmp", "ck.jsonl.keys.seal.tmp"))}
    for name, victim in victims.items():
        os.symlink(victim, tmp_path / name)
    ck = _checkpoint(tmp_path / "ck.jsonl")
    (tmp_path / "ck.jsonl.keys").unlink()            # the index is rewritten on the next open
    again = JsonlCheckpoint(ck, FP)
    assert again.open() == ROWS
    again.close()
    for name, victim in victims.items():
        assert victim.read_text() == "precious data\n", name
        assert (tmp_path / name).is_symlink()        # left as it was: not ours to remove


def test_run_file_owner_knows_a_checkpoint_its_sidecars_and_its_parquet_copy(tmp_path):
    from whileai_ray.store.run_files import refuse_run_file, run_file_owner

    ck = _checkpoint(tmp_path / "ck.jsonl")
    (tmp_path / "ck.parquet").mkdir()
    (tmp_path / "ck.parquet" / "rows.parquet").write_bytes(b"PAR1")
    link = tmp_path / "link.jsonl"
    os.symlink(ck, link)
    for path in (ck, link, tmp_path / "ck.jsonl.keys", tmp_path / "ck.jsonl.meta.json",
                 tmp_path / "ck.jsonl.lock", tmp_path / "ck.jsonl.keys.seal", tmp_path / "ck.jsonl.plan",
                 tmp_path / "ck.parquet", tmp_path / "ck.parquet" / "rows.parquet",
                 tmp_path / "ck.parquet" / "new" / "x.jsonl"):
        assert run_file_owner(path) == str(ck.resolve()), path
        with pytest.raises(ValueError, match=r"to_html\(path=\.\.\.\).*pass a path outside"):
            refuse_run_file(path, "to_html(path=...)")
    for path in (tmp_path / "other.jsonl", tmp_path / "ck.html", tmp_path / "ck.meta.json", tmp_path / "out.parquet"):
        assert run_file_owner(path) is None, path


def test_save_and_training_files_refuse_a_runs_own_files_and_write_nothing(tmp_path):
    from whileai_ray.export.training_files import write_records
    from whileai_ray.store.run_files import write_rows

    ck = _checkpoint(tmp_path / "ck.jsonl")
    folder = tmp_path / "ck.parquet"
    folder.mkdir()
    side = folder / "rows.parquet"
    write_rows(ROWS, tmp_path / "plain.parquet")
    side.write_bytes((tmp_path / "plain.parquet").read_bytes())
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()}
    records = [{"messages": [{"role": "user", "content": "hi"}], "tools": [], "loss_mask": [0]}]
    for target in (ck, tmp_path / "ck.jsonl.keys", tmp_path / "ck.jsonl.meta.json", side):
        with pytest.raises(ValueError, match=r"training_set\(output=\.\.\.\)"):
            write_records(records, target)
    for target in (tmp_path / "ck.jsonl.keys", tmp_path / "ck.jsonl.meta.json", side):
        with pytest.raises(ValueError, match=r"save\(path=\.\.\.\)"):
            write_rows(ROWS[:2], target)
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()}
    assert after == before
    write_rows(ROWS[:2], side, source=side)          # the Parquet side, graded in place: still allowed
    reopened = JsonlCheckpoint(ck, FP)
    assert reopened.open() == ROWS
    reopened.close()


def test_to_html_never_writes_through_a_link_planted_at_its_old_temporary_name(tmp_path):
    """The report was written to ``<path>.tmp`` then renamed: a link planted there truncated its target."""
    import os
    from whileai_ray.result.data import SimulationData
    from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS, played
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    os.symlink(victim, tmp_path / "r.html.tmp")
    SimulationData(trajectories=played(2, k=1), system_prompt=SYSTEM, tools=TOOLS).to_html(str(tmp_path / "r.html"))
    assert victim.read_text() == "keep me" and "<html" in (tmp_path / "r.html").read_text().lower()
