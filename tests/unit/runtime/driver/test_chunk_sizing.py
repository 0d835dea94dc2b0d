"""How many units a call to a rollout lane carries (``driver/chunk_sizing.py``): a lane's slots
until a chunk comes back fast, then up to twice them (never past ``chunk_size``), and the slots
again once a chunk comes back slow."""
from whileai_ray.runtime.driver.chunk_sizing import CHUNK_SLOTS, FAST_S, SLOW_S, ChunkSizing


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
