"""Issue 28 items 3 and 9, through ``simulate()`` on Ray: what an agent returns never aborts a
run, and the rows a run resumes are the rows it ran.

A real agent passes its SDK's values through: openai's ``CompletionUsage`` / ``ResponseUsage``
objects as ``usage``, a proxy's ``{"cost": "0.002"}``, ``datetime``s, numpy scalars and arrays,
``bytes``, ``set``s, tuples, ``NaN``, dicts keyed by ints or None, a tool named ``123``, a reply
cut in the middle of an emoji (a lone surrogate). The usage must land in the documented names,
every row landing, with one warning for the usage no metric can read. The odd values' run has a
checkpoint: its fresh rows must equal the rows ``wai.load`` reads back and the rows a resume
settles, the checkpoint must stay resumable, and ``to_html`` must work on all three results.

The usage agent is an object that stays in the caller's process (the caller's pool plays it),
the odd-values agent a function that travels to the rollout actors: both paths build rows in the
same place. Every ``simulate()`` runs in a thread joined with a timeout: a run that hangs fails
the test."""
import datetime
import json
import zlib

import numpy as np
import pytest
from openai.types import CompletionUsage
from openai.types.responses import ResponseUsage

import whileai_ray as wai
from whileai_ray.testing.seeded_rows import TOOLS
from bounded_call import bounded

QUIET = {"progress_every_rows": 10**6, "progress_every_s": 3600.0}
BUDGET = 24


def kind(message) -> int:
    return zlib.crc32(message.encode()) % 4


# what each kind of usage must land as (in the documented names; the last kept as data)
LANDS_AS = [{"input_tokens": 11, "output_tokens": 5, "total_tokens": 16},
            {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10,
             "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
             "output_tokens_details": {"reasoning_tokens": 1}},
            {"input_tokens": 12, "output_tokens": 4, "cost": 0.002},
            {"input_tokens": 2, "cost": "cheap"}]


class UsageAgent:
    """A plain reply whose usage is what an SDK or a proxy handed over, by the prompt's hash. An
    object holding the caller's data (``calls``): it plays in the caller's own pool, not on an actor."""

    def __init__(self):
        self.calls = []

    def __call__(self, message):
        self.calls.append(message)
        return usage_reply(message)


def usage_reply(message):
    usage = [CompletionUsage(prompt_tokens=11, completion_tokens=5, total_tokens=16),
             ResponseUsage(input_tokens=7, output_tokens=3, total_tokens=10,
                           input_tokens_details={"cached_tokens": 0, "cache_write_tokens": 0},
                           output_tokens_details={"reasoning_tokens": 1}),
             {"input_tokens": "12", "output_tokens": 4, "cost": "0.002"},
             {"input_tokens": 2, "cost": "cheap"}][kind(message)]
    return {"steps": [{"tool": "lookup_order", "arguments": {"order_id": "A-1"}, "result": {"status": "ok"}}],
            "final_text": "Your order is fine.", "usage": usage}


def odd_agent(message):
    """A tool named 123, a tool result holding values no JSON has, a reply cut inside an emoji."""
    result = {"status": "ok", "when": datetime.datetime(2026, 1, 2, 3, 4, 5), "count": np.int64(7),
              "score": np.float32(0.5), "flag": np.bool_(True), "vec": np.arange(3), "raw": b"\xffbytes",
              "tags": {"b", "a", "c"}, "pair": (1, 2), "nan": float("nan"), "inf": float("-inf"),
              1: "int key", None: "none key"}
    return {"steps": [{"tool": 123, "arguments": {"order_id": np.str_("A-1")}, "result": result},
                      {"tool": "lookup_order", "arguments": {"order_id": "A-1"}, "result": {"status": "ok"}}],
            "final_text": "Your order is fine \ud83d. " + message[:20]}


def run(agent, ck=None):
    return bounded(lambda: wai.simulate(agent, tools=TOOLS, simulator=False, budget=BUDGET, seed=5,
                                        checkpoint=None if ck is None else str(ck), advanced=QUIET))


def by_key(rows):
    return sorted(rows, key=lambda r: (r["prompt"], r["rollout_index"]))


def without_resumed_mark(row):
    lineage = {k: v for k, v in row["lineage"].items() if k != "resumed"}
    return {**row, "lineage": lineage}


@pytest.fixture(scope="module")
def odd_runs(ray_local, tmp_path_factory):
    """A fresh run with a checkpoint, the checkpoint loaded, and the same run resumed from it."""
    ck = tmp_path_factory.mktemp("odd") / "run.jsonl"
    fresh = run(odd_agent, ck)
    loaded = wai.load(str(ck))
    resumed = run(odd_agent, ck)
    return fresh, loaded, resumed


# -- item 3 -----------------------------------------------------------------------------------------
def test_sdk_usage_objects_and_numeric_strings_never_abort_a_run(ray_local):
    agent = UsageAgent()
    data = run(agent)
    rows = data.rows()
    assert len(agent.calls) >= BUDGET            # played in the caller's pool (the object stayed home)
    assert len(rows) == BUDGET, (len(rows), data.warnings, data.search.get("first_agent_error"))
    assert [r["usage"] for r in rows] == [LANDS_AS[kind(r["prompt"])] for r in rows]
    assert {kind(r["prompt"]) for r in rows} == {0, 1, 2, 3}, "every kind of usage was played"
    said = [w for w in data.warnings if "usage" in w]
    cheap = sum(kind(r["prompt"]) == 3 for r in rows)
    assert len(said) == 1 and "cheap" in said[0] and said[0].startswith(f"{cheap} of {BUDGET} row"), data.warnings


# -- item 9 -----------------------------------------------------------------------------------------
def test_odd_values_land_in_their_json_form(odd_runs):
    fresh, _, _ = odd_runs
    rows = fresh.rows()
    assert len(rows) == BUDGET, (len(rows), fresh.warnings, fresh.search.get("first_agent_error"))
    for r in rows:
        result = r["steps"][0]["result"]
        assert result["when"] == "2026-01-02T03:04:05" and result["count"] == 7 and result["flag"] is True
        assert result["vec"] == [0, 1, 2] and result["tags"] == ["a", "b", "c"] and result["pair"] == [1, 2]
        assert result["nan"] is None and result["inf"] is None and isinstance(result["raw"], str)
        assert result["1"] == "int key" and result["null"] == "none key"
        assert r["json_repairs"]["steps.0.result.nan"] == "NaN" and r["json_repairs"]["final_text"] == "lone surrogate"
        assert "\ud83d" not in r["final_text"] and "\ufffd" in r["final_text"]
        assert r["tools_used"] == [123, "lookup_order"]
    assert json.loads(json.dumps(rows)) == rows          # plain JSON data, nothing else


def test_the_rows_read_back_and_resumed_are_the_rows_that_ran(odd_runs):
    fresh, loaded, resumed = odd_runs
    rows = by_key(fresh.rows())
    assert by_key(loaded.rows()) == rows
    assert resumed.search["rollouts"]["resumed"] == BUDGET       # a tool named 123 leaves it resumable
    assert [without_resumed_mark(r) for r in by_key(resumed.rows())] == rows


def test_every_result_writes_its_html_report(odd_runs, tmp_path):
    for name, data in zip(("fresh", "loaded", "resumed"), odd_runs):
        page = tmp_path / f"{name}.html"
        data.to_html(str(page))
        assert "Your order is fine" in page.read_text(encoding="utf-8"), name
