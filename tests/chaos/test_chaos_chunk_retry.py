"""The poison-rollout policy alone (runtime/driver/chunk_retry.py, no Ray): issue 11 item 8."""
import pytest

from whileai_ray.runtime.driver.chunk_retry import (MAX_TRIES, NODE_LOST, UNSERIALIZABLE, WORKER_CRASHED,
                                             ChunkRetry)


def drain(retry, poison: set, cause=WORKER_CRASHED):
    """Play every suspect alone the way the Driver does; return (landed, lost)."""
    landed, lost, tries = [], [], {}
    while (item := retry.next_suspect()) is not None:
        tries[item] = tries.get(item, 0) + 1
        if item in poison:
            settled = retry.solo_failed(item, cause)
            if settled:
                lost.append((item, settled))
        else:
            retry.solo_ok(item)
            landed.append(item)
    return landed, lost, tries


def test_a_crashed_chunk_finds_its_poison_unit_in_at_most_two_tries_and_lands_the_rest():
    retry = ChunkRetry()
    assert retry.chunk_failed(list(range(16)), WORKER_CRASHED) == []
    assert retry.pending() == 16
    landed, lost, tries = drain(retry, poison={5})
    assert sorted(landed) == [i for i in range(16) if i != 5]
    assert lost == [(5, WORKER_CRASHED)] and 1 + tries[5] == MAX_TRIES     # its chunk, then once alone
    assert all(tries[i] == 1 for i in landed)
    assert retry.stats()["lost_by"] == {WORKER_CRASHED: 1} and retry.pending() == 0


def test_every_chunk_in_flight_on_a_dead_actor_is_suspected_but_only_the_culprit_is_lost():
    retry = ChunkRetry()
    for chunk in ([1, 2, 3], [4, 5, 6], [7, 8]):        # three chunks on one actor: all fail at once
        retry.chunk_failed(chunk, WORKER_CRASHED)
    landed, lost, _ = drain(retry, poison={7})
    assert sorted(landed) == [1, 2, 3, 4, 5, 6, 8] and [i for i, _ in lost] == [7]


def test_node_loss_resends_units_as_they_are_and_never_counts_a_try():
    retry = ChunkRetry()
    assert retry.chunk_failed(["a", "b"], NODE_LOST) == ["a", "b"]
    assert retry.pending() == 0
    retry.chunk_failed(["c"], WORKER_CRASHED)
    item = retry.next_suspect()
    for _ in range(5):                                   # the quarantine's node keeps dying
        assert retry.solo_failed(item, NODE_LOST) is None
        item = retry.next_suspect()
    assert retry.solo_failed(item, UNSERIALIZABLE) == UNSERIALIZABLE       # its chunk + one solo try


def test_a_unit_that_recovers_alone_starts_its_count_again():
    retry = ChunkRetry(key=lambda item: item["k"], max_tries=3)
    unit = {"k": ("s", 0)}
    retry.chunk_failed([unit], WORKER_CRASHED)
    assert retry.solo_failed(retry.next_suspect(), WORKER_CRASHED) is None
    retry.solo_ok(retry.next_suspect())
    retry.chunk_failed([unit], WORKER_CRASHED)
    assert retry.solo_failed(retry.next_suspect(), WORKER_CRASHED) is None   # a fresh count: 2 of 3


def test_max_tries_is_checked():
    with pytest.raises(ValueError, match="max_tries"):
        ChunkRetry(max_tries=0)
