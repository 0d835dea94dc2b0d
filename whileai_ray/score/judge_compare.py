"""``compare_judges``: several judges grade the same rows; one table ranks them against gold.

    wai.attach_labels(rows, {0: 1, 1: 0, ...}, kind="human")
    table = compare_judges(rows, {"rules": my_grader, "qwen": "vllm:qwen@http://host:8000/v1"})
    print(table)          # agree (Wilson 95% CI), kappa, leak, unsure, unjudged, s/row, ok
    table.best.name       # the first judge that clears both floors, else the top of the ranking

``judges`` maps a display name to a judge -- any callable under the judge contract, a
``wai.Judge``, or a spec string / ``wai.OpenAI`` backend (made into a conduct-floor ``Judge``
with ``policy=`` and ``tools=``) -- or is a list of them (named by ``judge_name``). Each judge
grades its own copies of the rows (gold keys hidden from it; the originals stay untouched) and
is scored by ``labels.judge_agreement``: agreement with its Wilson interval, Cohen's kappa, the
leak rate (gold failures it passed), rows it called unsure (``judge_meta["unsure"]``), rows it
left unjudged, and seconds per row. ``ok`` needs trusted gold (human or program, or any with
``allow_model_gold``), the Wilson lower bound of agreement >= ``floors[0]`` (0.8) and kappa >=
``floors[1]`` (0.6). Ranking: kappa, then agreement, then name; a judge with no kappa goes last.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..agents.backends import OpenAI
from .grading import call_grader
from .judges.contract import apply_verdict, judge_name, new_scoring_run_id
from .judges.labels import FLOORS, judge_agreement
from .judges.llm_judge import Judge, judge_rows

__all__ = ["JudgeScore", "JudgeComparison", "compare_judges"]

_GOLD_KEYS = ("gold_reward", "gold_labels", "gold_kind")


@dataclass
class JudgeScore:
    """One judge's line in the table; ``rows`` are its graded copies."""
    name: str
    n: int
    agreement: float | None
    ci95: tuple | None
    kappa: float | None
    leak: float | None
    miss: float | None
    unsure: int
    unjudged: int
    seconds: float
    seconds_per_row: float
    ok: bool
    confusion: dict = field(default_factory=dict)
    rows: list = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "rows"}
        out["ci95"] = list(self.ci95) if self.ci95 else None
        return out


def _num(value) -> str:
    return "-" if value is None else f"{value:.2f}"


@dataclass
class JudgeComparison:
    """The ranked table ``compare_judges`` returns; ``print()`` it, index it by judge name."""
    scores: list
    n_rows: int
    gold_kind: str | None
    floors: tuple
    warnings: list = field(default_factory=list)

    @property
    def best(self) -> JudgeScore | None:
        return next((s for s in self.scores if s.ok), self.scores[0] if self.scores else None)

    @property
    def names(self) -> list:
        return [s.name for s in self.scores]

    def __getitem__(self, name: str) -> JudgeScore:
        for score in self.scores:
            if score.name == name:
                return score
        raise KeyError(f"no judge named {name!r}; judges: {self.names}")

    def __iter__(self):
        return iter(self.scores)

    def __len__(self) -> int:
        return len(self.scores)

    def to_dict(self) -> dict:
        return {"n_rows": self.n_rows, "gold_kind": self.gold_kind,
                "floors": {"agreement": self.floors[0], "kappa": self.floors[1]},
                "best": self.best.name if self.best else None,
                "judges": [s.to_dict() for s in self.scores], "warnings": list(self.warnings)}

    def __str__(self) -> str:
        head = ["judge", "agree", "95% CI", "kappa", "leak", "unsure", "unjudged", "s/row", "ok"]
        table = [head] + [[s.name, _num(s.agreement), f"[{s.ci95[0]:.2f}..{s.ci95[1]:.2f}]" if s.ci95 else "-",
                           _num(s.kappa), _num(s.leak), str(s.unsure) if s.unsure else "-",
                           str(s.unjudged) if s.unjudged else "-", f"{s.seconds_per_row:.2f}",
                           "yes" if s.ok else "no"] for s in self.scores]
        widths = [max(len(r[i]) for r in table) for i in range(len(head))]
        lines = [f"compare_judges: {len(self.scores)} judges on {self.n_rows} rows, gold={self.gold_kind or 'none'}, "
                 f"floors agreement>={self.floors[0]:.2f} kappa>={self.floors[1]:.2f}"]
        lines += ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in table]
        best = self.best
        if best is not None and best.ok:
            lines.append(f"best: {best.name} (kappa {_num(best.kappa)}), clears both floors")
        elif best is not None:
            lines.append(f"best: {best.name} (kappa {_num(best.kappa)}); no judge clears the floors")
        lines += [f"! {w}" for w in self.warnings]
        return "\n".join(lines)

    __repr__ = __str__


def _named(judges) -> list:
    if isinstance(judges, Mapping):
        pairs = [(str(k), v) for k, v in judges.items()]
    elif isinstance(judges, (str, OpenAI)) or callable(judges):
        pairs = [(judge_name(judges) if callable(judges) else str(judges), judges)]
    else:
        pairs = []
        for value in judges:
            base = judge_name(value) if callable(value) else str(getattr(value, "name", value))
            name, i = base, 2
            while name in {n for n, _ in pairs}:
                name, i = f"{base}#{i}", i + 1
            pairs.append((name, value))
    if not pairs:
        raise ValueError("compare_judges(judges=...) needs at least one judge: a callable, a wai.Judge, "
                         "or a spec string")
    return pairs


def _copy(row: dict) -> dict:
    out = dict(row)
    if isinstance(out.get("lineage"), dict):
        out["lineage"] = dict(out["lineage"])
    return out


def _view(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in _GOLD_KEYS}


def _verdicts(judge, views: list, concurrency: int, policy: str, tools) -> list:
    if isinstance(judge, (str, OpenAI)):
        judge = Judge(model=judge, policy=policy, tools=tools)
    if isinstance(judge, Judge):
        return judge_rows(judge, views, concurrency)
    if not callable(judge):
        raise TypeError(f"compare_judges: a judge is a callable, a wai.Judge or a spec string; "
                        f"got {type(judge).__name__}")

    with ThreadPoolExecutor(max_workers=max(1, min(int(concurrency), 64))) as pool:
        return list(pool.map(lambda row: call_grader(judge, row, internal=True), views))


def compare_judges(rows, judges, gold: str = "gold_reward", *, allow_model_gold: bool = False,
                   concurrency: int = 8, policy: str = "", tools=None, floors=FLOORS) -> JudgeComparison:
    """Grade copies of ``rows`` with every judge and rank them against ``gold``; see the module
    docstring. ``rows`` is a row list (internal rows when judges should see ``privileged``)."""
    source = [r for r in rows if isinstance(r, dict)]
    if not source:
        raise ValueError("compare_judges needs rows; got none")
    floors = (float(floors[0]), float(floors[1]))
    scores, kinds = [], set()
    for name, judge in _named(judges):
        copies = [_copy(r) for r in source]
        started = time.perf_counter()
        verdicts = _verdicts(judge, [_view(r) for r in copies], concurrency, policy, tools)
        seconds = time.perf_counter() - started
        run_id = new_scoring_run_id("compare", name, len(copies))
        for row, verdict in zip(copies, verdicts):
            apply_verdict(row, verdict, name, run_id)
            if isinstance(verdict.get("judge_meta"), dict):
                row["judge_meta"] = dict(verdict["judge_meta"])
        stats = judge_agreement(copies, gold, allow_model_gold)
        if stats["gold_kind"]:
            kinds.add(stats["gold_kind"])
        ci, kappa = stats["ci95"], stats["kappa"]
        ok = bool(stats["trusted"] and ci and ci[0] >= floors[0] and kappa is not None and kappa >= floors[1])
        scores.append(JudgeScore(
            name=name, n=stats["n"], agreement=stats["agreement"],
            ci95=(round(ci[0], 4), round(ci[1], 4)) if ci else None, kappa=kappa,
            leak=stats["pass_when_gold_fail"], miss=stats["fail_when_gold_pass"],
            unsure=sum(1 for r in copies if (r.get("judge_meta") or {}).get("unsure")),
            unjudged=sum(1 for r in copies if r.get("reward") is None),
            seconds=round(seconds, 4), seconds_per_row=round(seconds / len(copies), 4), ok=ok,
            confusion=stats["confusion"], rows=copies))
    scores.sort(key=lambda s: (s.kappa is None, -(s.kappa or 0.0), -(s.agreement or 0.0), s.name))
    warnings = []
    if not kinds:
        warnings.append(f"no row carries a 0/1 {gold!r}: nothing to compare against; label rows with "
                        "attach_labels(rows, labels, kind='human') and compare again")
    elif any(k not in ("human", "program") for k in kinds) and not allow_model_gold:
        warnings.append(f"gold labels are {sorted(kinds)}: only human or program labels measure a judge "
                        "(pass allow_model_gold=True to accept model labels)")
    gold_kind = (next(iter(kinds)) if len(kinds) == 1 else "mixed") if kinds else None
    return JudgeComparison(scores=scores, n_rows=len(source), gold_kind=gold_kind, floors=floors,
                           warnings=warnings)
