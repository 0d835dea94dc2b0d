"""A result field worked out on first read (``result/data.py``: ``Later``)."""
from whileai_ray.result.data import Later, SimulationData
from whileai_ray.search.explain import duplicate_rate

LONG = "please cancel my order for the blue kettle because it arrived broken and i would like a full refund to my card"
PROMPTS = [LONG + " today", LONG + " tomorrow",
           "Where is my refund for the blue kettle?",
           "Where is my refund for the blue kettle?",
           "Change the delivery address on my last order to 4 Elm Street."]


def test_the_duplicate_rate_is_worked_out_once_on_first_read_and_a_value_passes_through():
    rows = [{"prompt": p} for p in PROMPTS]
    data, calls = SimulationData(trajectories=rows), []
    data.semantic_duplicate_rate = Later(lambda: calls.append(1) or duplicate_rate(r["prompt"] for r in rows))
    assert calls == []                                        # nothing worked out yet
    rate = data.semantic_duplicate_rate
    assert rate == duplicate_rate(PROMPTS) and 0.0 < rate < 1.0     # one near copy of four distinct prompts
    assert data.semantic_duplicate_rate == rate and data.meta_dict()["semantic_duplicate_rate"] == rate
    assert calls == [1]                                       # once
    assert SimulationData(semantic_duplicate_rate=0.5).semantic_duplicate_rate == 0.5   # the constructor's field
    assert SimulationData().semantic_duplicate_rate is None
