"""``evaluate``: judge rollouts that already exist, and check a fixed list of asks against them.

    data = wai.simulate(agent, tools=TOOLS, simulator=False, seeds=ASKS)
    scored = wai.evaluate(data, my_judge, eval_set=ASKS)
    scored.eval_coverage      # {"eval_set": [...], "covered": [...], "missing": [...]}
    scored.pass_at

It rolls nothing out: the rows are graded as they are, through ``run_judge`` (the same engine as
``data.grade(judge=...)``), and a ``ScoredData`` comes back. The judge is ``judge=`` (a callable
honoring the judge contract, a ``wai.Judge`` or a rubric string with ``model=``) or ``grader=``
(a plain callable); one of them is required -- ``evaluate(rows, eval_set=asks)`` alone is a
TypeError, since coverage without a verdict is not an evaluation.

``eval_set``: the fixed asks (strings, or rows / dicts carrying ``prompt``). An ask is
*covered* when some row's prompt is the same text, compared after collapsing whitespace and
case; ``covered`` and ``missing`` keep the eval set's order and wording. ``eval_scores`` maps
each covered ask to its rows' mean reward (None when every row of it went unjudged).
"""
from __future__ import annotations

from ..cluster import Cluster
from .run_judge import run_judge

__all__ = ["evaluate", "eval_coverage"]


def _norm(text: str) -> str:
    return " ".join(str(text).split()).casefold()


def _asks(eval_set) -> list[str]:
    if isinstance(eval_set, str) or not isinstance(eval_set, (list, tuple)):
        raise TypeError(f"eval_set= is a list of asks (strings or rows with 'prompt'); got {type(eval_set).__name__}")
    asks = []
    for i, item in enumerate(eval_set):
        text = item.get("prompt") if isinstance(item, dict) else item
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"eval_set item {i} is {item!r:.60}; each one is an ask (a non-empty string) "
                             "or a row with a 'prompt'")
        asks.append(text)
    if not asks:
        raise ValueError("eval_set= is empty; pass the asks that must have run")
    return list(dict.fromkeys(asks))


def eval_coverage(rows, eval_set) -> dict:
    """``{"eval_set", "covered", "missing"}`` for rows against a fixed list of asks."""
    asks = _asks(eval_set)
    ran = {_norm(r.get("prompt") or "") for r in rows if isinstance(r, dict)}
    covered = [a for a in asks if _norm(a) in ran]
    missing = [a for a in asks if _norm(a) not in ran]
    return {"eval_set": asks, "covered": covered, "missing": missing}


def _scores(rows, asks) -> dict:
    by_ask: dict = {}
    for r in rows:
        by_ask.setdefault(_norm(r.get("prompt") or ""), []).append(r.get("reward"))
    out = {}
    for ask in asks:
        got = by_ask.get(_norm(ask))
        if got is None:
            continue
        vals = [v for v in got if isinstance(v, (int, float)) and not isinstance(v, bool)]
        out[ask] = sum(vals) / len(vals) if vals else None
    return out


def evaluate(rows=None, judge=None, *, grader=None, model=None, eval_set=None, judge_name: str | None = None,
             run_id: str | None = None, concurrency: int = 8, timeout: float | None = None, scale=None,
             tools=None, cluster: Cluster | None = None):
    """Judge existing rollouts (nothing is rolled out); see the module docstring."""
    if rows is None:
        raise TypeError("evaluate() needs rows: a SimulationData, its rows() or a JSONL path of rollouts; "
                        "it judges rollouts that exist and rolls nothing out (simulate() makes them)")
    if judge is None and grader is None:
        raise TypeError("evaluate() needs a judge: pass judge= (a callable, a wai.Judge, or a rubric with "
                        "model=) or grader= (a callable row -> score); eval_set= alone only lists asks")
    if judge is not None and grader is not None:
        raise ValueError("pass judge= or grader=, not both; they are the same role")
    asks = _asks(eval_set) if eval_set is not None else None    # a bad eval set fails before any judging
    scored = run_judge(rows, judge if judge is not None else grader, judge_name=judge_name, model=model,
                       run_id=run_id, concurrency=concurrency, timeout=timeout, scale=scale, tools=tools,
                       source="evaluate", cluster=cluster)
    if asks is not None:
        scored.eval_coverage = eval_coverage(scored.trajectories, asks)
        scored.eval_scores = _scores(scored.trajectories, scored.eval_coverage["covered"])
        missing = scored.eval_coverage["missing"]
        if missing:
            scored.warnings.append(f"{len(missing)} of {len(asks)} asks of eval_set never ran (see "
                                   "eval_coverage['missing']); pass them as simulate(seeds=...) to run them")
    return scored
