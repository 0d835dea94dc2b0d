"""Asks written at an edge (``search/edge_asks.py``) are exactly what the planner would write,
sketch and family-key itself; the forecast (``search/ask_forecast.py``) names every grid ask a
cell picker hands out, whatever the fault draws and however the picks interleave."""
import random
from types import SimpleNamespace

import numpy as np
import pytest

from whileai_ray.core.columns import prompt_digest
from whileai_ray.search.ask_forecast import AskForecast, heap_shares
from whileai_ray.search.cell_picker import CellPicker
from whileai_ray.search.edge_asks import PROBE, AskBuilder, AskDesk, WrittenAsks, write_batch
from whileai_ray.search.family_cap import FamilyCap, family_key
from whileai_ray.search.novelty import sketch
from whileai_ray.search.traces.steering import SteeredPicker
from whileai_ray.situations.covering import fold_fault_cells, pairwise_cells
from whileai_ray.situations.grid import build_axes
from whileai_ray.situations.template_writer import TemplateWriter
from whileai_ray.testing.seeded_rows import TOOLS


def _cells():
    return fold_fault_cells(pairwise_cells(build_axes(TOOLS, "Be careful. Ünïcödé rules ✓", None)))


def _builder(seed=5):
    return AskBuilder([dict(t) for t in TOOLS], "Be careful. Ünïcödé rules ✓", seed, _cells())


def test_a_batch_is_what_the_planner_would_write_sketch_and_family_key():
    b = _builder()
    desk, token = AskDesk(), b.token()
    assert desk.write(token, [(0, 0, 0)]) is None               # never shown the builder: no answer
    desk.learn(token, b)
    rnd = random.Random(1)
    requests = [(rnd.randrange(len(b.cells)), rnd.choice([0, 1, 7, 1_000_003, 500_000_000]), rnd.randrange(3))
                for _ in range(120)]
    probes = [(PROBE, i, 0) for i in (0, 3, 17)]               # open-ended probes: writer.probe(index)
    odd = [(len(b.cells), 0, 0), (-2, 0, 0), (PROBE, -1, 0), (PROBE, 2, 1)]
    keys, rows, sks, fams, digests, seconds = desk.write(token, requests + probes + odd)
    assert keys == requests + probes and seconds > 0            # (cells it does not have are left out)
    local = TemplateWriter(b.tools, b.system_prompt, b.seed)
    asks = WrittenAsks()
    asks.fill((keys, rows, sks, fams, digests, seconds), requests + probes)
    digest_of = dict(zip(keys, digests.tolist()))               # the digests the desk made
    cap = FamilyCap(3)
    for (ci, instance, phrasing) in requests + probes:
        mine = local.probe(instance) if ci == PROBE else local.write(b.cells[ci], instance, phrasing)
        got = asks.take(ci, instance, phrasing, cap)
        if got is None:                                         # (a request repeated: taken once)
            continue
        assert got == mine and type(got) is type(mine)
        assert np.array_equal(asks.sketch(got.prompt), sketch(mine.prompt))
        assert asks.sketch(got.prompt).dtype == sketch(mine.prompt).dtype
        assert cap.family(got.prompt) == family_key(mine.prompt)
        assert digest_of[(ci, instance, phrasing)] == asks.digest(got.prompt) == prompt_digest(mine.prompt)
    assert asks.take(*requests[0]) is None                      # each ask is handed out once


def test_the_cache_is_bounded_and_says_what_it_did():
    b = _builder()
    reqs = [(i % len(b.cells), i, 0) for i in range(40)]
    asks = WrittenAsks(limit=10)
    assert asks.wanted(reqs) == reqs and asks.wanted(reqs) == []  # asked once
    asks.fill(write_batch(b.writer(), b.cells, reqs), reqs)
    assert len(asks) == 10 and asks.asked == set()
    assert asks.take(*reqs[0]) is None and asks.take(*reqs[-1]) is not None    # the oldest went first
    f = asks.figures()
    assert (f["hits"], f["misses"], f["written"], f["unused"]) == (1, 1, 40, 39)
    asks.fill(None, [(1, 2, 3)])                                # a lost answer
    with pytest.raises(ValueError, match="differ in length"):
        asks.fill(([(0, 0, 0)], [], np.zeros((0, 32), np.uint32), [], np.zeros(0, np.uint64), 0.0))
    with pytest.raises(ValueError, match="6 parts"):           # (a batch without its digests)
        asks.fill(([(0, 0, 0)], [()], np.zeros((1, 32), np.uint32), ["f"], 0.0))
    with pytest.raises(TypeError, match="AskBuilder"):
        AskDesk().learn("x", {"tools": []})


def test_the_token_names_what_builds_the_writer():
    assert _builder(5).token() == _builder(5).token() != _builder(6).token()


def _forecast_covers(picker, fault_rate, picks=600, novelty_candidates=2, n=1, seed=0):
    planner = SimpleNamespace(picker=picker, pinned_mode=False, situations_opened=0, capacity=lambda: 10**9,
                              book=SimpleNamespace(adaptive=False),
                              s=SimpleNamespace(fault_rate=fault_rate, novelty_candidates=novelty_candidates, n=n,
                                                k=1, probe=1, situations=None))
    forecast, named, rnd = AskForecast(planner), set(), random.Random(seed)
    for i in range(picks):
        if i % 7 == 0:
            named.update(forecast.due(64))
        ci, instance = picker.pick_index(rnd.random() < fault_rate)
        assert (ci, instance, 0) in named, f"pick {i} was not foreseen"
        assert (ci, instance + 1_000_003, 0) in named and (n == 1 or (ci, instance, n - 1) in named)


@pytest.mark.parametrize("fault_rate,hard_share", [(0.0, 0.3), (0.1, 0.3), (0.6, 0.0), (0.5, 1.0)])
def test_the_forecast_names_every_grid_pick_whatever_the_fault_draws(fault_rate, hard_share):
    _forecast_covers(CellPicker(_cells(), 3, hard_share), fault_rate, n=2)


def test_the_forecast_names_every_pick_of_a_steered_picker():
    cells = _cells()
    _forecast_covers(SteeredPicker(cells[:9], cells[9:], 4, 0.3, 0.7), 0.2)


def test_heap_shares_add_up_to_one():
    for classes in ([(True, True), (True, False), (False, True), (False, False)], [(False, False)],
                    [(True, False), (False, True)]):
        shares = heap_shares(classes, 0.3, 0.2)
        assert abs(sum(shares.values()) - 1.0) < 1e-9 and set(shares) == set(classes)
