"""How many units a call to a rollout lane carries (``driver/chunk_sizing.py``): a lane's slots
until a chunk comes back fast, then up to twice them, four times them when its units play in
under ``QUICK_UNIT_S`` (never past ``chunk_size``), and the slots again once a chunk comes back slow."""
from whileai_ray.runtime.driver.chunk_sizing import (CHUNK_SLOTS, FAST_S, QUICK_SLOTS, QUICK_UNIT_S, SLOW_S,
                                                     ChunkSizing, unit_seconds)
from whileai_ray.runtime.messages import RolloutResult


def test_chunks_start_at_a_lanes_slots_and_grow_once_one_comes_back_fast():
    sizing = ChunkSizing(chunk_size=32, slots=16)
    assert sizing.units == 16
    assert sizing.came_back(FAST_S / 2) and sizing.units == 16 * CHUNK_SLOTS
    assert not sizing.came_back(FAST_S / 4) and sizing.units == 32


def test_a_chunk_back_slow_brings_them_back_to_the_slots_and_one_in_between_changes_nothing():
    sizing = ChunkSizing(chunk_size=32, slots=16)
    sizing.came_back(0.01)
    assert not sizing.came_back((FAST_S + SLOW_S) / 2) and sizing.units == 32
    assert sizing.came_back(SLOW_S * 2) and sizing.units == 16
    assert not sizing.came_back((FAST_S + SLOW_S) / 2) and sizing.units == 16


def test_chunk_size_caps_both_sizes():
    assert ChunkSizing(chunk_size=32, slots=500).units == 32
    grown = ChunkSizing(chunk_size=32, slots=500)
    assert not grown.came_back(0.01) and grown.units == 32
    small = ChunkSizing(chunk_size=4, slots=16)
    assert small.units == 4 and not small.came_back(0.01) and small.units == 4
    one = ChunkSizing(chunk_size=32, slots=1)
    assert one.units == 1 and one.came_back(0.01) and one.units == 2


def test_a_quick_agents_chunks_grow_to_four_times_the_slots_and_a_slower_one_takes_them_back():
    sizing = ChunkSizing(chunk_size=64, slots=16)
    assert sizing.units == 16
    assert sizing.came_back(FAST_S / 2, QUICK_UNIT_S / 10) and sizing.units == 16 * QUICK_SLOTS == 64
    assert not sizing.came_back(FAST_S / 2, QUICK_UNIT_S / 2) and sizing.units == 64
    assert sizing.came_back(FAST_S / 2, QUICK_UNIT_S * 2) and sizing.units == 32      # a 10 ms agent: twice
    assert sizing.came_back(FAST_S / 2, 0.0001) and sizing.units == 64
    assert sizing.came_back(FAST_S / 2, None) and sizing.units == 32                 # not known: not quick
    sizing.came_back(FAST_S / 2, 0.0001)
    assert not sizing.came_back((FAST_S + SLOW_S) / 2, 0.0001) and sizing.units == 64   # in between: as it was
    assert sizing.came_back(SLOW_S * 2, 0.0001) and sizing.units == 16                 # back slow: the slots


def test_a_50ms_agent_never_reaches_the_quick_size_and_chunk_size_caps_it():
    sizing = ChunkSizing(chunk_size=64, slots=16)
    sizing.came_back(0.1, 0.05)
    assert sizing.units == 32
    capped = ChunkSizing(chunk_size=40, slots=16)
    capped.came_back(0.01, 0.0001)
    assert capped.units == 40
    assert ChunkSizing(chunk_size=64, slots=500).quick == 64


def test_unit_seconds_is_the_median_play_time_of_the_units_played():
    played = [RolloutResult(unit=None, row={}, seconds=s) for s in (0.3, 0.0001, 0.0002, 0.0003)]
    skipped = [RolloutResult.not_started(None) for _ in range(5)]
    assert unit_seconds(played + skipped) == 0.0002           # the skipped (0 s) do not count
    assert unit_seconds([r.wire() for r in played + skipped]) == 0.0002    # the wire tuples alike
    assert unit_seconds(skipped) is None and unit_seconds([]) is None
