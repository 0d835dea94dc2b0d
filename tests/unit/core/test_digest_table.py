"""DigestTable (64-bit digests in flat arrays) and RowKeySet (row keys as 128-bit digests) behave
as the Python set and dict they replace, one by one and built at once."""
import numpy as np

from whileai_ray.core.digest_table import DigestTable
from whileai_ray.core.identity import key_string
from whileai_ray.store.row_key_set import RowKeySet


def _digests(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2**64 - 1, n, dtype=np.uint64).tolist() + [0, 7, 7, 2**64 - 1]


def test_a_set_adds_and_answers_like_a_python_set_through_many_growths():
    keys = _digests(50_000)
    table, ref = DigestTable(), set()
    for k in keys:
        assert table.add(k) == (k not in ref)
        ref.add(k)
    assert len(table) == len(ref)
    assert all(k in table for k in ref)
    assert not any(k in table for k in _digests(2_000, seed=1)[:2_000] if k not in ref)
    members, values = table.members()
    assert sorted(members.tolist()) == sorted(ref) and values is None


def test_a_map_keeps_the_first_value_and_setitem_overwrites():
    keys = _digests(20_000)
    table, ref = DigestTable(values=True), {}
    for i, k in enumerate(keys):
        assert table.setdefault(k, i) == ref.setdefault(k, i)
    assert all(table.get(k) == v for k, v in ref.items()) and table.get(12345) is None
    table[7] = -5
    table[0] = 99
    assert table[7] == -5 and table[0] == 99 and len(table) == len(ref)


def test_built_at_once_equals_built_one_by_one():
    keys = _digests(30_000)
    at_once = DigestTable.of(keys, np.arange(len(keys)))
    ref = {}
    for i, k in enumerate(keys):
        ref.setdefault(k, i)                 # the first occurrence's value wins
    assert len(at_once) == len(ref)
    assert all(at_once.get(k) == v for k, v in ref.items())
    at_once.add(424242, 1)                   # and it grows on like any other
    assert 424242 in at_once and len(at_once) == len(ref) + 1
    assert len(DigestTable.of([])) == 0


def test_built_at_once_with_many_repeats_and_the_digest_zero_keeps_each_first_value():
    rng = np.random.default_rng(7)
    pool = np.append(rng.integers(1, 2**63, size=500, dtype=np.int64).astype(np.uint64), np.uint64(0))
    keys = pool[rng.integers(0, len(pool), size=20_000)]
    values = rng.integers(-10**9, 10**9, size=len(keys))
    at_once = DigestTable.of(keys, values)
    ref = {}
    for k, v in zip(keys.tolist(), values.tolist()):
        ref.setdefault(k, v)
    assert len(at_once) == len(ref)
    assert all(at_once.get(k) == v for k, v in ref.items())
    found, got = at_once.find(np.array(list(ref), dtype=np.uint64))
    assert found.all() and got.tolist() == list(ref.values())
    as_set = DigestTable.of(keys)
    assert len(as_set) == len(ref) and all(k in as_set for k in ref)


def test_row_keys_as_tuples_or_strings_are_one_member():
    s = RowKeySet()
    key = ("sc-01", "ab12", 3, 0)
    assert s.add(key) and not s.add(key_string(key)) and key in s and key_string(key) in s
    assert ("sc-01", "ab12", 4, 0) not in s and len(s) == 1


def test_first_of_gives_each_keys_first_position_and_a_set_that_holds_them():
    keys = [("sc-%d" % (i % 700), "p", i % 3, 0) for i in range(3000)]
    built, first = RowKeySet.first_of(keys)
    ref, want = set(), []
    for i, k in enumerate(keys):
        if k not in ref:
            ref.add(k)
            want.append(i)
    assert first == want and len(built) == len(ref)
    assert all(k in built for k in ref) and ("sc-9999", "p", 0, 0) not in built
    assert not built.add(keys[5]) and built.add(("new", "p", 0, 0))


def test_the_digest_zero_counts_once_through_growths():
    table = DigestTable(values=True)
    assert table.add(0, 5) and not table.add(0, 6)
    for k in range(1, 5000):
        table.add(k * 0x9E3779B97F4A7C15 % 2**64 or 1, k)
    assert len(table) == 5000 and table.get(0) == 5
    members, values = table.members()
    assert len(members) == 5000 and list(values[members == 0]) == [5]


def test_find_answers_many_digests_at_once_like_one_by_one():
    keys = _digests(20_000, seed=3)
    table = DigestTable(values=True)
    for i, k in enumerate(keys[::2]):
        table.setdefault(k, i)
    asked = np.asarray(keys + [12345, 2**63], dtype=np.uint64)
    found, values = table.find(asked)
    assert found.tolist() == [k in table for k in asked.tolist()]
    assert values[found].tolist() == [table.get(k) for k in asked[found].tolist()]
    plain = DigestTable.of(asked[:100])
    assert plain.find(asked)[1] is None and plain.find(asked)[0].sum() == len(set(asked[:100].tolist()) |
                                                                           ({0} & set(asked[:100].tolist())))


def test_keys_sharing_their_first_64_bits_are_told_apart_by_their_text():
    """The 64-bit collision branch (about once in 10^7 million-row runs), forced with made-up
    digests: the second key of a shared first half is kept aside, whole, and found by its text."""
    texts = ["k0", "k1", "k2", "k1", "k3"]
    a = np.asarray([5, 9, 5, 9, 11], dtype=np.uint64)
    b = np.asarray([1, 2, 3, 2, 4], dtype=np.int64)       # k2 shares k0's first half; k1 repeats
    built, first = RowKeySet.first_of_digests(a, b, texts.__getitem__)
    assert first.tolist() == [0, 1, 2, 4] and len(built) == 4
    assert built.has_digest(5, 3, "k2") and built.has_digest(5, 1, "k0") and not built.has_digest(5, 7, "k9")
    held = built.has_many(np.asarray([5, 5, 5, 9, 12], dtype=np.uint64), np.asarray([1, 3, 8, 2, 4]),
                          ["k0", "k2", "k8", "k1", "k4"].__getitem__)
    assert held.tolist() == [True, True, False, True, False]
    assert not built.add_digest(5, 3, "k2") and built.add_digest(5, 6, "k6") and len(built) == 5
