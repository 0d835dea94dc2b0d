"""HandoffPool (runtime/pools/handoff_pool.py): while a lane's actor starts, its chunks go to the
caller's outbox; the actors start once the caller's first chunk is back, and once a lane's actor
answers, its chunks go to the actor. And when the caller may help at all."""
import asyncio
from types import SimpleNamespace

from whileai_ray.agents.forms import is_class_form
from whileai_ray.runtime.messages import PoolReply
from whileai_ray.runtime.pools.caller_pool import CallerOutbox, CallerPool
from whileai_ray.runtime.pools.handoff_pool import HandoffPool, caller_may_help


def _spec(**kw):
    base = dict(agent=lambda m: m, execute=None, model=None, shards=None, rollout_actors=0,
                concurrency_per_actor=0, actor_options={})
    return SimpleNamespace(**{**base, **kw})


PLAN = SimpleNamespace(where="actors", judges_where="actors", actors=2, per_actor=16)


def test_the_caller_helps_only_a_cold_one_node_pool_of_plain_callables():
    assert caller_may_help(_spec(), PLAN, True, True, is_class_form)
    assert not caller_may_help(_spec(), PLAN, True, False, is_class_form)          # warm actors: they play
    assert not caller_may_help(_spec(), PLAN, False, True, is_class_form)          # a cluster
    assert not caller_may_help(_spec(), SimpleNamespace(**{**vars(PLAN), "where": "caller"}), True, True,
                               is_class_form)

    class Agent:
        def __call__(self, message):
            return message
    assert not caller_may_help(_spec(agent=Agent), PLAN, True, True, is_class_form)   # built per actor
    for asked in (dict(rollout_actors=2), dict(concurrency_per_actor=4), dict(actor_options={"num_gpus": 1}),
                  dict(shards="/shared"), dict(model=object(), agent=None)):
        assert not caller_may_help(_spec(**asked), PLAN, True, True, is_class_form), asked


class _Actors:
    """The actors' side as the handoff pool sees it: lanes whose node is known once they answer."""
    slots, lanes = 16, 2

    def __init__(self):
        self.nodes: list = []
        self.actors = ["a0", "a1"]
        self.up = asyncio.Event()
        self.sent: list = []

    async def start(self):
        self.nodes = [None, None]
        await self.up.wait()
        self.nodes[0] = "node"

    def submit(self, lane, payload):
        self.sent.append((lane, payload))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(payload)
        return fut

    async def close(self):
        pass


def test_a_lanes_chunks_go_to_the_caller_until_its_actor_answers():
    async def main():
        actors, outbox = _Actors(), CallerOutbox()
        pool = HandoffPool(actors, CallerPool(outbox, "roll", 16, "node"))
        await pool.start()
        first = pool.submit(0, [1, 2])
        pool.submit(1, [3])
        chunks = await outbox.pull()
        assert [c.payload for c in chunks] == [[1, 2], [3]] and not actors.sent
        assert actors.nodes == []                        # the actors start once the caller's first chunk is back
        outbox.push(PoolReply(chunks[0].token, ["r1", "r2"]))
        assert await first == ["r1", "r2"]
        for _ in range(3):                               # its callback, then the pool's start
            await asyncio.sleep(0)
        assert actors.nodes == [None, None]              # starting
        actors.up.set()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert await pool.submit(0, [4]) == [4]          # lane 0's actor is up
        pool.submit(1, [5])                              # lane 1's is not: still the caller
        assert actors.sent == [(0, [4])] and [c.payload for c in await outbox.pull()] == [[5]]
        assert pool.caller_units == 4 and pool.lanes == 2 and pool.where == "actors"
        await pool.close()
        assert await outbox.pull() is None               # the caller's player ends
    asyncio.run(main())
