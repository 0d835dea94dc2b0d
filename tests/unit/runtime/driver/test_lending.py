"""Lending (``driver/lending.py``): while a lane starts, its slots play on the lanes that are up,
and at no instant do more units play than the run's concurrency (each lane's slots, all together)."""
import numpy as np

from whileai_ray.core.rng import unit_rng
from whileai_ray.runtime.driver import rules
from whileai_ray.runtime.driver.lending import OWN, Lending


def test_with_every_lane_up_dispatch_is_the_least_loaded_lane_as_before():
    lending = Lending(lanes=3, slots=8, chunk=4)
    for load in ([0, 0, 0], [4, 1, 1], [12, 12, 11], [12, 12, 12]):
        lane = rules.pick_lane(load, rules.chunk_limit(8, 4))
        step = lending.next_chunk(load, [True] * 3, queued=10)
        assert step == (None if lane is None else (lane, 4, OWN))
    assert not lending.active and lending.next_chunk([0, 0, 0], [True] * 3, queued=3) == (0, 3, OWN)


def test_a_pool_whose_slots_the_run_set_never_lends():
    lending = Lending(lanes=2, slots=4, chunk=2, on=False)
    assert lending.next_chunk([6, 0], [True, False], queued=10) == (1, 2, OWN)    # to the lane starting, as before
    assert lending.next_chunk([6, 6], [True, False], queued=10) is None and lending.units_lent == 0


def test_a_starting_lanes_slots_go_to_the_lane_up_and_come_back_once_it_is_up():
    lending, load, up = Lending(lanes=2, slots=4, chunk=2), [0, 0], [True, False]
    sent = []
    while (step := lending.next_chunk(load, up, queued=100)) is not None:
        lane, n, owner = step
        if owner == OWN:
            load[lane] += n
        lending.sent(lane, n, owner)
        sent.append(step)
    # lane 0: its slots and a chunk of prefetch; then lane 1's four slots, lent to lane 0; no more
    assert sent == [(0, 2, OWN), (0, 2, OWN), (0, 2, OWN), (0, 2, 1), (0, 2, 1)]
    assert lending.lent == [0, 4] and lending.hosted == [4, 0]
    up[1] = True                                  # lane 1 is up, its slots all still lent: nothing yet
    assert lending.next_chunk(load, up, queued=100) is None
    lending.back(0, 2, 1)                         # one lent chunk came back: two of its slots are its own
    assert lending.next_chunk(load, up, queued=100) == (1, 2, OWN)
    load[1] += 2
    assert lending.next_chunk(load, up, queued=100) is None     # (no prefetch while a slot is lent)
    lending.back(0, 2, 1)
    assert lending.next_chunk(load, up, queued=100) == (1, 2, OWN)     # then as ever: slots plus prefetch
    assert not lending.active and lending.units_lent == 4


def test_no_more_units_play_at_once_than_the_lanes_slots_whatever_the_order_of_events():
    """Random starts, sends and returns (a seeded generator): after every event, each lane's own
    units that can be playing (at most its slots) plus its units lent out stay within its slots."""
    lent_in_all = 0
    for case in range(40):
        rng = unit_rng(7, "lending", case)
        lanes, slots, chunk = rng.randint(2, 4), rng.randint(1, 8), rng.randint(1, 4)
        lending = Lending(lanes, slots, chunk)
        up = [bool(i == 0 or rng.random() < 0.3) for i in range(lanes)]
        load, out = [0] * lanes, []
        for _ in range(300):
            event = rng.random()
            if event < 0.5:
                step = lending.next_chunk(load, up, queued=rng.randint(1, 19))
                if step is not None:
                    lane, n, owner = step
                    assert up[lane] and n >= 1
                    assert owner == OWN or not up[owner]
                    load[lane] += n if owner == OWN else 0
                    lending.sent(lane, n, owner)
                    out.append(step)
            elif event < 0.85 and out:
                lane, n, owner = out.pop(rng.randrange(len(out)))
                load[lane] -= n if owner == OWN else 0
                lending.back(lane, n, owner)
            else:
                up[rng.randrange(lanes)] = True
            playing = np.minimum(load, slots) + np.asarray(lending.lent)
            assert (playing <= slots).all(), (case, load, lending.lent, up)
            assert all(not up[j] or lending.lent[j] == 0 or load[j] + lending.lent[j] <= slots for j in range(lanes))
        lent_in_all += lending.units_lent
    assert lent_in_all > 0
