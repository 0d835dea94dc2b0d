"""The Driver's loop without Ray: real planner, real players, pools that run in this process.

``InProcessPool`` is the pool protocol (``runtime/pools/protocol.py``) over plain ``RolloutWorker`` /
``JudgeWorker`` objects: each lane plays its chunks on this event loop (a sync agent in the
worker's threads), after a scripted delay, and can be told to fail (an actor that died).
"""
import asyncio
import random

import pytest

from whileai_ray.agents.seeded import seeded_agent
from whileai_ray.core.identity import row_key
from whileai_ray.core.rows import export_row
from whileai_ray.core.unit import RunMeta
from whileai_ray.runtime.driver import rules
from whileai_ray.runtime.driver.chunk_retry import NODE_LOST, WORKER_CRASHED
from whileai_ray.runtime.driver.chunk_sizing import QUICK_SLOTS, SLOW_S
from whileai_ray.runtime.driver.loop import DriverLoop, LoopSettings
from whileai_ray.runtime.pools.judge_worker import JudgeWorker
from whileai_ray.runtime.driver.landing import Landing
from whileai_ray.runtime.pools.protocol import LaneFailed
from whileai_ray.runtime.pools.rollout_worker import RolloutWorker
from whileai_ray.search.planner.settings import PlanSettings
from whileai_ray.search.planner.planner import Planner
from whileai_ray.situations.grid import build_axes, pairwise_cells
from whileai_ray.situations.template_writer import TemplateWriter
from whileai_ray.store.checkpoint.resume import ResumeIndex
from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS, truthful

META = RunMeta(run_id="r", seed=3, tools=TOOLS, system_prompt=SYSTEM, model_version="seeded_agent")


class InProcessPool:
    """Lanes are plain workers in this process. ``delay(lane, n)`` seconds before the ``n``-th chunk
    sent plays; ``fail(lane, n)`` True makes that chunk fail as a dead actor's would; ``up_after``:
    ``{lane: seconds}`` a lane takes to start (its actor's process), counted from the loop's first look;
    ``unplaced``: those lanes never come up, and at that time the pool says so (as Ray's placement timeout does)."""
    where = "actors"
    lends = True

    def __init__(self, make_lane, lanes=1, slots=8, delay=None, fail=None, on_submit=None, poison=None,
                 up_after=None, unplaced=False):
        self.make_lane, self.slots = make_lane, slots
        self.workers = [make_lane(i) for i in range(lanes)]
        self.delay, self.fail, self.on_submit, self.poison = delay, fail, on_submit, poison
        self.sent, self.replaced, self.nodes, self.played_alone = 0, [], [], []
        self.up_after, self._starting, self.unplaced = up_after or {}, None, unplaced
        self.chunks = []                  # (lane, units, lent, that lane was up when it was sent)

    @property
    def lanes(self):
        return len(self.workers)

    async def start(self):
        self.nodes = [getattr(w, "node_id", "judge") for w in self.workers]

    def _started(self):
        if self._starting is None:
            self._starting = {lane: asyncio.ensure_future(asyncio.sleep(s)) for lane, s in self.up_after.items()}
        return self._starting

    def lanes_up(self):
        starting = self._started()
        if self.unplaced and any(t.done() for t in starting.values()):
            raise RuntimeError("1 of the 2 rollout actor(s) could not be placed within 0s")
        return [lane not in starting or starting[lane].done() for lane in range(self.lanes)]

    def starting(self):
        return [t for t in self._started().values() if not t.done()]

    def submit(self, lane, payload, lent=False):
        n, self.sent = self.sent, self.sent + 1
        self.chunks.append((lane, len(payload), lent, self.unplaced or self.lanes_up()[lane]))
        if self.on_submit is not None:
            self.on_submit(lane, payload)
        return self._play(lane, n, payload, lent) if lent else self._play(lane, n, payload)

    async def _play(self, lane, n, payload, lent=False):
        await asyncio.sleep(self.delay(lane, n) if self.delay else 0)
        if self.fail is not None and self.fail(lane, n):
            raise LaneFailed(f"lane {lane} died on chunk {n}")
        if self.poison is not None and any(self.poison(u) for u in payload if not isinstance(u, dict)):
            raise LaneFailed(f"a unit of chunk {n} killed the worker playing it")
        worker = self.workers[lane]
        if isinstance(worker, JudgeWorker):
            return await worker.judge_chunk(payload)
        return await worker.run_chunk(payload, lent)

    def replace(self, lane, error):
        """A dead actor's lane: its units are sent again as they are when its node was lost; a worker
        that a unit killed makes every unit of the chunk a suspect."""
        self.replaced.append((lane, str(error)))
        if lane >= 0:
            self.workers[lane] = self.make_lane(lane)
        return WORKER_CRASHED if "killed the worker" in str(error) else NODE_LOST

    def submit_alone(self, payload):
        self.played_alone.extend(u.key for u in payload)
        return self._play(0, self.sent, payload)

    def alone_ok(self):
        pass

    async def close(self):
        pass


def rollout_lanes(lanes=1, slots=8, agent=None, **kw):
    agent = agent or seeded_agent(TOOLS, rate=0.35, seed=3)
    return InProcessPool(lambda i: RolloutWorker(agent, META, concurrency=slots, node_id=f"lane-{i}"),
                         lanes=lanes, slots=slots, **kw)


def judge_lanes(grader, lanes=1, slots=8, **kw):
    return InProcessPool(lambda i: JudgeWorker(grader, slots), lanes=lanes, slots=slots, **kw)


def planner(budget=120, **kw):
    axes = build_axes(TOOLS, SYSTEM, None)
    settings = PlanSettings(run_id="r", seed=3, budget=budget, round_size=16, tools=TOOLS, axes=axes, **kw)
    return Planner(settings, TemplateWriter(TOOLS, SYSTEM, 3), pairwise_cells(axes))


def run(plan, rollouts, judges=None, resume=None, clock=None, **settings):
    settings = {"lag": 2, "chunk_size": 4, "concurrency": 8, "judge_chunk": 4, **settings}
    landing = Landing(judge_name="truthful" if judges else None, scoring_run_id="s" if judges else None)
    loop = DriverLoop(LoopSettings(**settings), plan, rollouts, landing, resume or ResumeIndex([], None, None),
                      judges=judges, **({"clock": clock} if clock else {}))
    asyncio.run(loop.run())
    return loop, Landed(landing)


class Landed:
    """What a Landing handed on, read back from its spool: ``every`` row in the order the spool
    keeps, the ``rows`` played here and the ``resumed_rows`` settled from disk."""

    def __init__(self, landing):
        self.every = landing.spool.finish()
        self.rows = [r for r in self.every if not (r.get("lineage") or {}).get("resumed")]
        self.resumed_rows = [r for r in self.every if (r.get("lineage") or {}).get("resumed")]
        self.errors, self.landed, self.resumed_count = landing.errors, landing.landed, landing.resumed_count


def played(landing):
    rows = sorted(landing.rows + landing.resumed_rows, key=lambda r: r["_ordinal"])
    return [(r["_ordinal"], r["scenario_id"], r["prompt"], r["rollout_index"], r["final_text"]) for r in rows]


# ------------------------------------------------------------------------ decisions alone
def test_the_stop_rule_waits_for_units_in_flight_only_at_the_budget():
    assert rules.stop_reason(None, "running", 5, 0) is None
    assert rules.stop_reason("budget", "running", 3, 0) is None        # in flight: part of the budget
    assert rules.stop_reason("budget", "running", 0, 2) is None        # still being judged
    assert rules.stop_reason("budget", "running", 0, 0) == "budget"
    assert rules.stop_reason("agent_failed", "running", 7, 1) == "agent_failed"   # no waiting for a dead agent


def test_past_the_deadline_nothing_starts_and_in_flight_work_lands_until_the_grace_is_over():
    from whileai_ray.search.planner.clock import DRAINING, OVER, RUNNING
    assert rules.may_start(RUNNING) and not rules.may_start(DRAINING) and not rules.may_start(OVER)
    assert rules.stop_reason(None, DRAINING, 9, 0) is None             # in flight: may still land
    assert rules.stop_reason("agent_failed", DRAINING, 1, 0) is None   # past the deadline only the clock speaks
    assert rules.stop_reason(None, DRAINING, 0, 2) is None             # still being judged
    assert rules.stop_reason(None, DRAINING, 0, 0) == "time_budget"    # nothing out: stop now
    assert rules.stop_reason(None, OVER, 9, 9) == "time_budget"        # deadline + timeout: cut
    assert rules.local_deadline(1_000.0, wall_now=990.0, now=5.0) == 15.0
    assert rules.local_deadline(None, 990.0, 5.0) is None


def test_dispatch_goes_to_the_least_loaded_lane_until_every_lane_is_full():
    assert rules.pick_lane([4, 1, 1], limit=8) == 1                    # ties: the lowest index
    assert rules.pick_lane([8, 8], limit=8) is None
    assert rules.chunk_limit(slots=16, chunk=4) == 20                  # slots plus one chunk of prefetch
    assert rules.wait_s(now=10.0, edge=10.2) == pytest.approx(0.2)
    assert rules.wait_s(now=11.0, edge=10.0) == 0.0
    assert rules.wait_s(now=11.0, edge=None) == rules.WAIT_S
    assert rules.may_decide(True, book_allows=False, queued=0, inflight=0, target=99) is False
    assert rules.may_decide(False, book_allows=False, queued=3, inflight=4, target=8) is True


# --------------------------------------------------------------------------- the loop
def test_rows_are_the_same_whatever_the_lanes_and_the_completion_order():
    one, one_rows = run(planner(), rollout_lanes(lanes=1))
    draw = random.Random(11)
    delays = {}
    shuffled = rollout_lanes(lanes=3, slots=4, delay=lambda lane, n: delays.setdefault(n, draw.random() * 0.01))
    three, three_rows = run(planner(), shuffled)
    assert len(played(one_rows)) == 120 and one.stopped_because == "budget"
    assert played(three_rows) == played(one_rows)
    assert {r["_node"] for r in three_rows.rows} == {"lane-0", "lane-1", "lane-2"}
    # the spool hands them on in schedule order, though they landed in another
    ordinals = [r["_ordinal"] for r in three_rows.every]
    assert ordinals == sorted(ordinals) and three_rows.landed == 120


def test_round_r_plus_lag_is_decided_only_once_round_r_is_observed():
    seen = []
    loop_ref = {}

    def check(lane, payload):
        book = loop_ref["loop"].book
        seen.append(book.next_decide - 1 - book.observed)

    rollouts = rollout_lanes(lanes=2, slots=4, on_submit=check,
                             delay=lambda lane, n: 0.002 * ((n * 7) % 5))
    plan = planner()
    landing = Landing()
    loop = DriverLoop(LoopSettings(lag=3, chunk_size=4, concurrency=8), plan, rollouts, landing,
                      ResumeIndex([], None, None))
    loop_ref["loop"] = loop
    asyncio.run(loop.run())
    assert seen and max(seen) <= 3 and max(seen) == 3              # the pipe is kept full, never past the lag


def test_the_first_round_goes_out_before_the_others_are_decided():
    """The first chunk leaves once one round is decided (the lanes have work), not after all the
    lag allows; nothing is observed before the rest are decided, so the rows are the same."""
    decided_at_first_send = []
    loop_ref = {}

    def check(lane, payload):
        if not decided_at_first_send:
            decided_at_first_send.append(loop_ref["loop"].book.next_decide)

    rollouts = rollout_lanes(lanes=2, slots=4, on_submit=check)
    loop = DriverLoop(LoopSettings(lag=4, chunk_size=4, concurrency=8), planner(), rollouts, Landing(),
                      ResumeIndex([], None, None))
    loop_ref["loop"] = loop
    asyncio.run(loop.run())
    # round 0 (4 units, search/planner/rounds.py) leaves alone; rounds 1, 2 follow it a round a turn
    assert decided_at_first_send == [1]
    _, every_round_first = run(planner(), rollout_lanes(lanes=2, slots=4), lag=4, concurrency=64)
    landed = Landed(loop.landing)
    assert played(landed) == played(every_round_first) and len(landed.rows) == 120


def test_a_lane_that_dies_has_its_chunks_sent_again_and_every_key_lands_once():
    clean, clean_rows = run(planner(), rollout_lanes(lanes=2, slots=4))
    dying = rollout_lanes(lanes=2, slots=4, fail=lambda lane, n: n in (1, 4))
    loop, landing = run(planner(), dying)
    keys = [row_key(r) for r in landing.rows]
    assert len(keys) == len(set(keys)) == 120
    assert played(landing) == played(clean_rows)
    assert loop.chunks_reissued == 2 and len(dying.replaced) == 2
    assert any("died on chunk 1" in e for e in landing.errors)


def test_a_poison_unit_is_tried_alone_and_lost_while_its_chunk_mates_land():
    poison = lambda u: u.ordinal % 37 == 5                            # kills whatever plays it
    pool = rollout_lanes(lanes=2, slots=4, poison=poison)
    loop, landing = run(planner(), pool)
    lost = loop.planner.stats("budget").lost_by.get("worker_crashed", 0)
    assert lost >= 3 and len(landing.rows) == 120 and loop.stopped_because == "budget"
    assert not any(r["_ordinal"] % 37 == 5 for r in landing.rows)     # a poison unit never lands
    suspects = pool.played_alone
    assert len(suspects) == len(set(suspects))                        # each suspect tried alone once
    assert loop.retry.stats()["lost_by"] == {"worker_crashed": lost}
    assert loop.retry.stats()["cleared"] == len(suspects) - lost      # its chunk mates landed after all
    assert {tuple(r["_key"]) for r in landing.rows if "_key" in r} <= set(suspects) | {tuple(r["_key"]) for r in landing.rows}


def test_time_budget_stops_dispatch_at_the_deadline_and_lets_what_is_in_flight_land():
    now, sent_at = [0.0], []
    pool = rollout_lanes(lanes=2, slots=4, on_submit=lambda lane, payload: sent_at.append(now[0]))
    real_play = pool._play

    async def play(lane, n, payload):   # every chunk that comes back costs the run one second of its clock
        out = await real_play(lane, n, payload)
        now[0] += 1.0
        return out
    pool._play = play
    # lag 8: units are decided ahead of the lanes, so some are surely waiting when the deadline passes
    loop, landing = run(planner(budget=400), pool, clock=lambda: now[0], time_budget=8.0, lag=8)
    assert loop.stopped_because == "time_budget"
    assert sent_at and max(sent_at) < 8.0                           # nothing dispatched at or past the deadline
    assert 0 < len(landing.rows) < 400
    assert loop.abandoned == 0 and not loop.flights                 # what was out landed (well within the grace)
    summary = loop.clock_summary()
    assert summary["cut"] == 0 and summary["skipped"] > 0           # decided, never sent: skipped
    assert summary["time_budget"] == 8.0 and summary["stopped_after_s"] >= 8.0


def test_a_hung_rollout_is_cut_at_deadline_plus_timeout():
    now = [0.0]

    def clock():                        # each look at the clock moves it on: the run's time passes
        now[0] += 0.02
        return now[0]
    hung = rollout_lanes(lanes=1, slots=4, delay=lambda lane, n: 3600.0 if n >= 2 else 0.0)
    loop, landing = run(planner(budget=400), hung, clock=clock, time_budget=1.0, timeout=0.5)
    assert loop.stopped_because == "time_budget"
    summary = loop.clock_summary()
    assert summary["cut"] > 0 and summary["cut"] == loop.abandoned  # the hung chunks were cut...
    assert summary["overrun_s"] >= 0.5                               # ...at deadline + timeout, not before
    assert summary["overrun_s"] < 0.5 + 0.5                          # (within a turn of the loop: its clock reads)
    assert 0 < len(landing.rows) < 400


def test_a_rollout_worker_skips_units_it_had_not_started_when_the_deadline_passed():
    import time as _time
    units = planner(budget=8).decide(0)[:3]
    late = RolloutWorker(seeded_agent(TOOLS, seed=3), META, node_id="lane", deadline_at=_time.time() - 1.0)
    out = asyncio.run(late.run_chunk(units))
    assert [r.skipped for r in out] == [True, True, True] and all(r.row is None for r in out)
    on_time = RolloutWorker(seeded_agent(TOOLS, seed=3), META, node_id="lane", deadline_at=_time.time() + 3600)
    assert all(r.row is not None for r in asyncio.run(on_time.run_chunk(units)))


def test_graded_rows_land_with_their_verdict_and_steer_the_search():
    calls = []

    def grader(row):
        calls.append(row["prompt"])
        return truthful(row)

    judges = judge_lanes(grader, lanes=2, fail=lambda lane, n: n == 0)   # the first judge chunk is lost
    loop, landing = run(planner(), rollout_lanes(lanes=2, slots=4), judges=judges)
    assert len(landing.rows) == 120 and loop.stopped_because == "budget"
    assert all(r["judge_status"] == "ok" for r in landing.rows)
    assert [r["reward"] for r in landing.rows] == [truthful(r) for r in landing.rows]
    assert len(calls) == 120 and len(judges.replaced) == 1               # re-judged, once each
    stats = loop.planner.stats("budget")
    assert stats.mutation_aims["graded_failure"]["parents"] > 0          # failed verdicts became new asks


def test_a_resumed_run_settles_rows_on_disk_and_plays_only_the_rest():
    full, full_rows = run(planner(), rollout_lanes())
    on_disk = [export_row(r) for r in full_rows.rows[:50]]
    loop, landing = run(planner(), rollout_lanes(), resume=ResumeIndex(on_disk, None, None))
    assert len(landing.resumed_rows) == 50 and len(landing.rows) == 70
    assert played(landing) == played(full_rows) and landing.resumed_count == 50
    assert all(r["lineage"]["resumed"] for r in landing.resumed_rows)


def test_not_reproducible_mode_keeps_the_lanes_full_and_stops_at_the_budget():
    loop, landing = run(planner(), rollout_lanes(lanes=2, slots=4), reproducible=False)
    assert len(landing.rows) == 120 and loop.stopped_because == "budget" and loop.abandoned == 0


def test_not_reproducible_mode_refills_freed_slots_from_a_reserve_before_the_planner_decides_more():
    """Rollouts that started together come back together; their slots refill from units already
    decided (a reserve of a quarter of the concurrency beyond what the lanes hold), not after the
    planner has decided more."""
    plan, events = planner(budget=400), []
    decide = plan.decide

    def logged_decide(r):
        units = decide(r)
        events.append(("decide", len(units)))
        return units
    plan.decide = logged_decide
    lanes = rollout_lanes(lanes=1, slots=64, delay=lambda lane, n: 0.3,
                          on_submit=lambda lane, payload: events.append(("send", len(payload))))
    real_play = lanes._play

    async def play(lane, n, payload):
        out = await real_play(lane, n, payload)
        events.append(("back", len(payload)))
        return out
    lanes._play = play
    loop, landing = run(plan, lanes, reproducible=False, concurrency=64, chunk_size=4)
    assert rules.decide_target(64, 4, 1) == 64 + 4 and rules.reserve(64) == 16
    first_back = events.index(("back", 4))
    decided = sum(n for kind, n in events[:first_back] if kind == "decide")
    sent = sum(n for kind, n in events[:first_back] if kind == "send")
    assert sent == 64 + 4 and decided >= 64 + 4 + 16          # the lane and its prefetch, then the reserve
    assert next(kind for kind, _ in events[first_back:] if kind != "back") == "send"
    assert len(landing.rows) == 400 and loop.stopped_because == "budget"


def test_progress_is_heard_after_each_chunk_even_when_chunks_come_back_together():
    """Chunks that finish together (here: every lane answers at the same instant) are settled in one
    turn; the progress hook runs after each of them, so a progress mark every 10 events never
    jumps by a whole turn's worth (tests/ray/test_seeds_part_three.py saw 40 -> 53 under load)."""
    heard = []
    landing = Landing()
    pool = rollout_lanes(lanes=4, slots=2, delay=lambda lane, n: 0.05)    # all four lanes answer together
    loop = DriverLoop(LoopSettings(lag=2, chunk_size=2, concurrency=8, judge_chunk=4), planner(budget=64), pool,
                      landing, ResumeIndex([], None, None), on_settled=lambda: heard.append(landing.landed))
    asyncio.run(loop.run())
    assert landing.landed == 64 and heard[-1] == 64
    steps = [b - a for a, b in zip(heard, heard[1:]) if b != a]
    assert max(steps) <= 2, heard                 # one chunk (2 units) at a time, never a turn's 8


def _logged(plan, lanes, events):
    """``events`` hears each round the planner decides (``("decide", round, units)``), each chunk's
    call as the pool makes it (``("call", n)``: an actor pool's ``.remote()`` runs when its
    coroutine starts, not when the loop dispatches it) and each chunk that comes back."""
    decide, real_play = plan.decide, lanes._play

    def logged_decide(r):
        units = decide(r)
        events.append(("decide", r, len(units)))
        return units

    async def play(lane, n, payload):
        events.append(("call", n))
        out = await real_play(lane, n, payload)
        events.append(("back", n))
        return out
    plan.decide, lanes._play = logged_decide, play


def test_a_freed_lane_gets_its_next_chunk_before_the_planner_decides_more():
    """Reproducible mode: a chunk that comes back frees its lane's slots; the chunk that refills
    them is sent (its call made) before the loop's planner decides the next round, so a ~25 ms
    decision never leaves the lane idle (the latency bench's ramp lost ~100 ms a lane to it)."""
    plan, events = planner(budget=400), []
    lanes = rollout_lanes(lanes=1, slots=16, delay=lambda lane, n: 0.02)
    _logged(plan, lanes, events)
    loop, landing = run(plan, lanes, lag=8, chunk_size=16, concurrency=16)
    assert len(landing.rows) == 400 and loop.stopped_because == "budget"
    first = []          # after each chunk back that more was decided and sent after: which came first
    for i, event in enumerate(events):
        after = [e[0] for e in events[i + 1:] if e[0] != "back"]
        if event[0] == "back" and "decide" in after and "call" in after:
            first.append(after[0])
    # (a chunk that comes back while the loop yields, after a settle, may see a decision first: a few)
    assert len(first) >= 5 and first.count("call") >= 0.8 * len(first), first


def test_deciding_stops_while_the_queue_keeps_the_lanes_busy():
    """Reproducible mode: once the decided units waiting to go out keep every lane busy
    (``decide_target``), the loop decides no more (nor observes the rounds whose outcomes would
    let it) until the lanes take them: no burst of rounds decided ahead while results wait, and
    the same rows as a run whose lanes hold everything at once."""
    plan, queued_at_decide = planner(budget=400), []
    decide = plan.decide
    loop_ref = {}

    def logged_decide(r):
        queued_at_decide.append(len(loop_ref["loop"].queue))
        return decide(r)
    plan.decide = logged_decide
    lanes = rollout_lanes(lanes=2, slots=4, delay=lambda lane, n: 0.01)
    landing = Landing()
    loop = DriverLoop(LoopSettings(lag=8, chunk_size=4, concurrency=8), plan, lanes, landing,
                      ResumeIndex([], None, None))
    loop_ref["loop"] = loop
    asyncio.run(loop.run())
    target = rules.decide_target(8, 4, 2)
    assert target == 16 and max(queued_at_decide) < target, queued_at_decide
    _, wide = run(planner(budget=400), rollout_lanes(lanes=1, slots=64), lag=8, chunk_size=4, concurrency=400)
    assert played(Landed(landing)) == played(wide) and len(played(wide)) == 400


def test_priming_decides_a_round_a_call_until_the_queue_would_keep_every_lane_busy():
    """While the rollout lanes start, the Driver primes its loop a round at a time
    (``driver/run.py``): each call decides one round and says whether more may be decided before
    the queue keeps every lane busy; once a lane answers, what is decided goes out first. The
    rows are those of a run that was never primed."""
    loop = DriverLoop(LoopSettings(lag=8, chunk_size=4, concurrency=8), planner(), rollout_lanes(lanes=2, slots=4),
                      Landing(), ResumeIndex([], None, None))
    answers, queued = [], []
    while not answers or answers[-1]:
        answers.append(loop.prime())
        queued.append(len(loop.queue))
    # rounds of 4, 4 and 8 units; decide_target(8, 4, 2) = 16 is reached on the third
    assert answers == [True, True, False] and queued == [4, 8, 16]
    asyncio.run(loop.run())
    _, unprimed = run(planner(), rollout_lanes(lanes=2, slots=4), lag=8)
    assert played(Landed(loop.landing)) == played(unprimed) and len(played(unprimed)) == 120


def test_first_units_are_the_whole_rounds_decided_before_a_first_result():
    """Rounds of 4, 4, 8, 8, 16, 16, 32, 32, then round_size: up to the queue's target, and no
    more than ``lag`` rounds when reproducible (the next one waits for an observed round)."""
    assert rules.first_units(96, True, 0, 8, 64) == 120         # 8 rounds (lag) = 120 units
    assert rules.first_units(96, True, 0, 4, 64) == 24          # 4 + 4 + 8 + 8
    assert rules.first_units(96, False, 0, 4, 64) == 120        # not reproducible: the target alone
    assert rules.first_units(10, True, 0, 8, 64) == 16          # whole rounds: 4 + 4 + 8
    assert rules.first_units(1000, True, 20, 8, 64) == 8 * 64   # a resume decides from its next round
    assert rules.first_units(0, True, 0, 8, 64) == 0


class _Peak:
    """The seeded agent behind a 20 ms wait, with the most calls in progress at once, before and
    after ``split`` seconds."""

    def __init__(self, split: float, wait: float = 0.02):
        import threading
        self.inner, self.lock = seeded_agent(TOOLS, rate=0.35, seed=3), threading.Lock()
        self.now, self.peak, self.early_peak, self.split, self.t0 = 0, 0, 0, split, None
        self.wait = wait
        self.__name__ = "seeded_agent"

    def __call__(self, message):
        import time
        with self.lock:
            self.t0 = self.t0 or time.monotonic()
            self.now += 1
            self.peak = max(self.peak, self.now)
            if time.monotonic() - self.t0 < self.split:
                self.early_peak = max(self.early_peak, self.now)
        if self.wait:
            time.sleep(self.wait)
        with self.lock:
            self.now -= 1
        return self.inner(message)


def test_a_lane_still_starting_lends_its_slots_and_the_run_keeps_its_concurrency():
    """Lane 1 takes 0.3 s to start: meanwhile lane 0 plays its slots and lane 1's (chunks marked
    lent); nothing is sent to lane 1 before it is up; at no instant do more than ``concurrency``
    calls run; lane 1 plays its share once up; and the rows are those of a run whose lanes were
    all up at once (which lane plays a unit never changes the plan)."""
    agent = _Peak(split=0.25)
    lanes = rollout_lanes(lanes=2, slots=4, agent=agent, up_after={1: 0.3})
    loop, landed = run(planner(budget=240), lanes, concurrency=8, lag=8)
    _, plain = run(planner(budget=240), rollout_lanes(lanes=2, slots=4), concurrency=8, lag=8)
    assert played(landed) == played(plain) and loop.stopped_because == "budget"
    lent = [c for c in lanes.chunks if c[2]]
    assert lent and all(lane == 0 for lane, _, _, _ in lent)
    assert all(was_up for lane, _, _, was_up in lanes.chunks)
    assert agent.peak <= 8 and agent.early_peak > 4, (agent.peak, agent.early_peak)
    assert {r["_node"] for r in landed.rows} == {"lane-0", "lane-1"}
    assert loop.lending.units_lent == sum(n for _, n, _, _ in lent) and not any(loop.lending.lent)


def test_a_lane_that_is_never_placed_stops_the_run_with_the_placement_error():
    """Its slots were lent meanwhile, but the run does not go on without it for good: the pool's
    placement error (``ActorPool.lanes_up``) ends the run, as a chunk waiting for it used to."""
    lanes = rollout_lanes(lanes=2, slots=4, up_after={1: 0.2}, unplaced=True,
                          delay=lambda lane, n: 0.01)
    with pytest.raises(RuntimeError, match="could not be placed"):
        run(planner(budget=100_000), lanes, concurrency=8, lag=8)
    assert any(lent for _, _, lent, _ in lanes.chunks) and all(lane == 0 for lane, _, _, _ in lanes.chunks)


def test_a_fast_agents_chunks_carry_twice_a_lanes_slots_and_no_more_than_its_slots_play_at_once():
    """``chunk_size=32`` on lanes of 4 slots: the first calls carry 4 units; once a chunk comes
    back fast (a 20 ms agent) they carry 8 (``driver/chunk_sizing.py``), the lane still plays 4 at a
    time, the run never has more than ``concurrency`` calls in progress, and its rows are those
    of a run sent in chunks of 4."""
    agent = _Peak(split=0.0)
    lanes = rollout_lanes(lanes=2, slots=4, agent=agent)
    loop, landed = run(planner(budget=120), lanes, concurrency=8, chunk_size=32)
    _, small = run(planner(budget=120), rollout_lanes(lanes=2, slots=4), concurrency=8, chunk_size=4)
    assert played(landed) == played(small) and loop.stopped_because == "budget"
    sizes = [n for _, n, _, _ in lanes.chunks]
    assert sizes[0] == 4 and loop.chunk == 8 and max(sizes) == 8
    assert agent.peak <= 8, agent.peak


def test_a_quick_agents_chunks_carry_four_times_a_lanes_slots_and_its_rows_are_the_same():
    """An agent whose units play in well under ``QUICK_UNIT_S`` (it waits on nothing): once a chunk
    comes back fast its calls carry four times a lane's slots (``chunk_size`` permitting), no more
    than ``concurrency`` units play at once, and the rows are those of a run sent in chunks of 4."""
    agent = _Peak(split=0.0, wait=0.0)
    lanes = rollout_lanes(lanes=2, slots=4, agent=agent)
    loop, landed = run(planner(budget=200), lanes, concurrency=8, chunk_size=64)
    _, small = run(planner(budget=200), rollout_lanes(lanes=2, slots=4), concurrency=8, chunk_size=4)
    assert played(landed) == played(small) and loop.stopped_because == "budget"
    sizes = [n for _, n, _, _ in lanes.chunks]
    assert sizes[0] == 4 and max(sizes) == 16 == 4 * QUICK_SLOTS
    assert agent.peak <= 8, agent.peak
    capped = rollout_lanes(lanes=2, slots=4, agent=_Peak(split=0.0, wait=0.0))
    run(planner(budget=200), capped, concurrency=8, chunk_size=6)
    assert max(n for _, n, _, _ in capped.chunks) == 6          # chunk_size still caps it


def test_a_slow_agents_chunks_stay_a_lanes_slots():
    """Chunks that come back after ``SLOW_S`` (a model agent's seconds-long calls) never grow: its
    rows land after one call, not two."""
    lanes = rollout_lanes(lanes=2, slots=4, delay=lambda lane, n: SLOW_S + 0.05)
    loop, landed = run(planner(budget=24), lanes, concurrency=8, chunk_size=32)
    assert len(landed.rows) == 24 and loop.chunk == 4
    assert max(n for _, n, _, _ in lanes.chunks) == 4
