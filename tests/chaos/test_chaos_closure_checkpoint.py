"""Issue 28, item 8: the README's closure agent works with ``checkpoint=``.

``client = openai.OpenAI(...); def agent(m): ...`` ran without a checkpoint and failed with a
74,000-character "Could not serialize JobSpec" with one: the checkpoint's opener carried the
whole run config, agent included, to the Driver. Nothing of the caller's that stays home may
travel because a checkpoint is set: the Driver gets the checkpoint's header as plain data.
Each test runs ``simulate()`` in a thread joined with a limit, so a hang fails the test.
"""

import openai
import pytest

import whileai_ray as wai
from whileai_ray.store.schema import row_key
from whileai_ray.testing.server import start_server
from bounded_call import bounded

QUIET = {"progress_every_rows": 10**6, "progress_every_s": 3600.0}
LIMIT_S = 120


@pytest.fixture
def scripted():
    host, port, stop = start_server(port=0, ask_rate=0.0)
    yield f"http://{host}:{port}/v1", stop.server
    stop()


def reply_of(response):
    return {"steps": [], "final_text": response.choices[0].message.content or ""}


def test_a_closure_over_an_openai_client_runs_with_a_checkpoint_and_resumes(ray_local, tools, tmp_path, scripted):
    url, handler = scripted
    client = openai.OpenAI(base_url=url, api_key="x")

    def agent(message):
        return reply_of(client.chat.completions.create(
            model="scripted", messages=[{"role": "user", "content": message}]))

    ck = str(tmp_path / "run.jsonl")
    run = dict(tools=tools, simulator=False, seed=3, checkpoint=ck, advanced=QUIET)
    first = bounded(lambda: wai.simulate(agent, budget=12, **run))
    rows = first.rows()
    assert len(rows) == 12 and all(r["final_text"] for r in rows)
    assert len(wai.load(ck).rows()) == 12                       # every row landed on disk
    asked = handler.requests
    again = bounded(lambda: wai.simulate(agent, budget=12, **run))
    assert again.search["rollouts"]["resumed"] == 12 and handler.requests == asked   # nothing played twice
    more = bounded(lambda: wai.simulate(agent, budget=20, **run))
    assert len(more.rows()) == 20 and more.search["rollouts"]["resumed"] == 12
    assert len(wai.load(ck).rows()) == 20


def test_an_async_agent_sharing_one_async_client_runs_with_a_checkpoint_and_resumes(ray_local, tools, tmp_path,
                                                                                  scripted):
    url, _handler = scripted
    client = openai.AsyncOpenAI(base_url=url, api_key="x")

    async def agent(message):
        return reply_of(await client.chat.completions.create(
            model="scripted", messages=[{"role": "user", "content": message}]))

    ck = str(tmp_path / "async.jsonl")
    run = dict(tools=tools, simulator=False, seed=4, checkpoint=ck, concurrency=8, advanced=QUIET)
    first = bounded(lambda: wai.simulate(agent, budget=10, **run))
    assert len(first.rows()) == 10 and all(r["final_text"] for r in first.rows())
    assert len(wai.load(ck).rows()) == 10
    resumed = bounded(lambda: wai.simulate(agent, budget=16, **run))
    assert len(resumed.rows()) == 16 and resumed.search["rollouts"]["resumed"] == 10
    on_disk = wai.load(ck).rows()
    assert len(on_disk) == 16 and len({row_key(r) for r in on_disk}) == 16      # nothing landed twice
