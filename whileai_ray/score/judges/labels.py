"""Gold labels on rows, and how far a judge agrees with them (the ``trust=`` check).

``attach_labels(rows, labels, kind="human")`` writes a person's (or a program's) 0/1 calls onto
rows in place: every label is kept in ``gold_labels`` (``{"label", "annotator", "kind"}``),
``gold_reward`` is their majority (a tie leaves it unset) and ``gold_kind`` their kind. A label
names its row by position (an int), by ``"<scenario_id>#<rollout_index>"``, by the row key string
(``store/schema.key_string(row_key(row))``) or, in a dict label, by ``prompt`` (+``final_text``).
``labels`` is a ``{key: 0/1}`` mapping, a list of dicts (``key``/``index``/``scenario_id`` +
``rollout_index``/``prompt``, and ``label``/``reward``/``gold_reward``), a list of 0/1 aligned
with ``rows``, or a JSONL path of such dicts.

``judge_agreement(rows)`` compares each row's judge ``reward`` with its ``gold_reward`` (only rows
where both are exactly 0 or 1): agreement, Cohen's kappa (1960), the confusion counts, the leak
rate (gold failures the judge passed) and the miss rate. ``trust_check(rows, mode)`` turns that
into the summary stamped on ``judge_meta["trust"]``: ``"warn"`` logs one line when the judge is
unmeasured or under the floors (Wilson lower bound of agreement >= 0.8, kappa >= 0.6),
``"require"`` raises :class:`JudgeTrustError` instead, ``"off"`` skips the check (returns None).
Only human or program gold measures a judge; model gold does so only with ``allow_model_gold``.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path

from ...core.identity import key_string, row_key
from ..intervals import wilson
from ...core.defaults import JUDGE_FLOORS
from ...errors import JudgeTrustError

__all__ = ["GOLD_KINDS", "TRUST_MODES", "JudgeTrustError", "attach_labels", "judge_agreement",
           "cohen_kappa", "trust_check", "has_gold_label", "label_plan", "apply_labels"]

log = logging.getLogger("whileai_ray.trust")
GOLD_KINDS = ("human", "program", "model")
TRUST_MODES = ("warn", "require", "off")
TRUSTED_KINDS = ("human", "program")
FLOORS = JUDGE_FLOORS


def _label(value) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return int(value.strip())
    return None


def has_gold_label(row: dict, gold: str = "gold_reward") -> bool:
    """Does the row carry a 0/1 gold label (what ``judge_agreement`` can compare against)?"""
    return _label(row.get(gold)) is not None


def _items(labels, n_rows: int) -> list[dict]:
    if isinstance(labels, (str, Path)):
        with open(labels, "r", encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    if isinstance(labels, Mapping):
        return [{"key": k, "label": v} for k, v in labels.items()]
    items = list(labels)
    if items and all(not isinstance(v, dict) for v in items):
        if len(items) != n_rows:
            raise ValueError(f"attach_labels: a plain list of labels must have one per row "
                             f"({n_rows}); got {len(items)}. Pass a {{key: label}} mapping instead")
        return [{"key": i, "label": v} for i, v in enumerate(items)]
    return items


_NO_TARGET = object()


def _row_keys(i: int, row: dict):
    """The names a label may give row ``i`` by (a row registers each; the first row wins)."""
    yield i
    yield key_string(row_key(row))
    if row.get("scenario_id") is not None:
        yield f"{row['scenario_id']}#{row.get('rollout_index', 0) or 0}"
    yield ("prompt", row.get("prompt"), row.get("final_text"))
    yield ("prompt", row.get("prompt"), None)


def _lookup(item: dict):
    """The row name a label item gives (``_NO_TARGET`` when it names none)."""
    for name in ("key", "index"):
        key = item.get(name)
        if key is not None:
            if isinstance(key, str) and key.isdigit():
                key = int(key)
            return _NO_TARGET if isinstance(key, bool) else key
    if item.get("scenario_id") is not None:
        return f"{item['scenario_id']}#{item.get('rollout_index', 0) or 0}"
    if item.get("prompt") is not None:
        return ("prompt", item["prompt"], item.get("final_text"))
    return _NO_TARGET


def _batches(rows):
    batches = getattr(rows, "batches", None)
    return batches() if callable(batches) else (rows,)


def _positions(rows, wanted: set) -> dict:
    """``{name: position}`` of the first row each wanted name fits, in one pass over ``rows``."""
    found: dict = {}
    pos = 0
    for batch in _batches(rows):
        for row in batch:
            if not isinstance(row, dict):
                continue
            for key in _row_keys(pos, row):
                if key in wanted and key not in found:
                    found[key] = pos
            pos += 1
    return found


def label_plan(rows, labels, kind: str = "human", annotator: str | None = None) -> tuple[dict, dict]:
    """Which rows get which labels: ``({position: [label entries, in order]}, counts)``, from one
    pass over ``rows`` (a list, or rows on disk). ``apply_labels`` writes a row's entries."""
    kind = "program" if kind == "verifier" else kind
    if kind not in GOLD_KINDS:
        raise ValueError(f"attach_labels(kind={kind!r}): kind is one of {', '.join(GOLD_KINDS)} "
                         "('verifier' reads as 'program')")
    n_rows = len(rows) if hasattr(rows, "batches") else sum(1 for r in rows if isinstance(r, dict))
    items = _items(labels, n_rows)
    invalid, parsed = 0, []
    for item in items:
        if not isinstance(item, dict):
            invalid += 1
            continue
        value = _label(item.get("label", item.get("reward", item.get("gold_reward"))))
        if value is None:
            invalid += 1
            continue
        parsed.append((_lookup(item), value, str(item.get("annotator") or annotator or "unknown"),
                       item.get("key", item.get("index", item.get("prompt")))))
    wanted = set()
    for key, *_ in parsed:
        if key is not _NO_TARGET:
            try:
                wanted.add(key)
            except TypeError:       # an unhashable name matches no row
                pass
    found = _positions(rows, wanted)
    plan: dict = {}
    matched, unmatched = 0, []
    for key, value, who, shown in parsed:
        try:
            pos = None if key is _NO_TARGET else found.get(key)
        except TypeError:
            pos = None
        if pos is None:
            unmatched.append(shown)
            continue
        plan.setdefault(pos, []).append({"label": value, "kind": kind, "annotator": who})
        matched += 1
    counts = {"labels": len(items), "matched": matched, "unmatched": len(unmatched),
              "unmatched_keys": [str(k) for k in unmatched[:10]], "invalid": invalid,
              "rows_labeled": len(plan), "ties": 0, "kind": kind}
    return plan, counts


def apply_labels(row: dict, entries: list, replace: bool = False) -> bool:
    """Add ``entries`` to the row's ``gold_labels`` and set its majority; True on a tie."""
    if replace or not isinstance(row.get("gold_labels"), list):
        row["gold_labels"] = []
    row["gold_labels"].extend(entries)
    votes = [r["label"] for r in row["gold_labels"] if _label(r.get("label")) is not None]
    ones, zeros = sum(votes), len(votes) - sum(votes)
    if ones == zeros:
        row.pop("gold_reward", None)
        row.pop("gold_kind", None)
        return True
    row["gold_reward"] = int(ones > zeros)
    kinds = {r.get("kind") for r in row["gold_labels"]}
    row["gold_kind"] = kinds.pop() if len(kinds) == 1 else "mixed"
    return False


def attach_labels(rows, labels, kind: str = "human", *, annotator: str | None = None,
                  replace: bool = False) -> dict:
    """Write gold labels onto ``rows`` in place; return ``{labels, matched, unmatched, invalid,
    rows_labeled, ties, kind}``. See the module docstring for the accepted shapes."""
    rows = [r for r in rows if isinstance(r, dict)]
    plan, counts = label_plan(rows, labels, kind, annotator)
    counts["ties"] = sum(apply_labels(rows[pos], entries, replace) for pos, entries in plan.items())
    return counts


def cohen_kappa(tp: int, fp: int, fn: int, tn: int) -> float | None:
    """Cohen's kappa of judge vs gold from the confusion counts; None when undefined
    (no rows, or both sides gave one class only, so chance agreement is 1)."""
    n = tp + fp + fn + tn
    if n == 0:
        return None
    observed = (tp + tn) / n
    chance = ((tp + fp) / n) * ((tp + fn) / n) + ((fn + tn) / n) * ((fp + tn) / n)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1.0 - chance)


def judge_agreement(rows, gold: str = "gold_reward", allow_model_gold: bool = False) -> dict:
    """Judge ``reward`` vs ``gold`` over rows where both are 0/1; see the module docstring."""
    tp = fp = fn = tn = 0
    kinds = set()
    for row in rows:
        if not isinstance(row, dict):
            continue
        reward = row.get("reward")
        g, j = _label(row.get(gold)), (None if isinstance(reward, bool) else _label(reward))
        if g is None or j is None:
            continue
        kinds.add(str(row.get("gold_kind") or "unknown"))
        tp += j == 1 and g == 1
        fp += j == 1 and g == 0
        fn += j == 0 and g == 1
        tn += j == 0 and g == 0
    n = tp + fp + fn + tn
    kind = (kinds.pop() if len(kinds) == 1 else "mixed") if kinds else None
    trusted = kind in TRUSTED_KINDS or (allow_model_gold and kind is not None)
    return {"n": n, "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
            "agreement": (tp + tn) / n if n else None,
            "ci95": wilson(tp + tn, n) if n else None,
            "kappa": cohen_kappa(tp, fp, fn, tn),
            "pass_when_gold_fail": fp / (fp + tn) if fp + tn else None,
            "fail_when_gold_pass": fn / (fn + tp) if fn + tp else None,
            "gold_kind": kind, "trusted": trusted}


def trust_check(rows, mode: str = "warn", *, gold: str = "gold_reward", floors=FLOORS,
                allow_model_gold: bool = False) -> dict | None:
    """The judge check against gold labels; returns the summary (None when ``mode="off"``)."""
    if mode not in TRUST_MODES:
        raise ValueError(f"trust={mode!r}: use 'warn' (log when unmeasured or failing), 'require' "
                         "(raise instead) or 'off' (skip the check)")
    if mode == "off":
        return None
    stats = judge_agreement(rows, gold, allow_model_gold)
    n, kappa, ci = stats["n"], stats["kappa"], stats["ci95"]
    measured = n > 0 and stats["trusted"]
    ok = bool(measured and ci[0] >= floors[0] and kappa is not None and kappa >= floors[1])
    if n == 0:
        note = ("judge accuracy not measured: no row has both a 0/1 judge reward and a human label; "
                "label some rows with attach_labels(rows, labels, kind='human') and grade again")
    elif not stats["trusted"]:
        note = (f"judge accuracy not measured: the gold labels are {stats['gold_kind']} labels, not a "
                "person's or a program's; attach_labels(..., kind='human')")
    elif ok:
        note = f"judge agrees with {n} labels: agreement {stats['agreement']:.2f}, kappa {kappa:.2f}"
    else:
        shown = "n/a" if kappa is None else f"{kappa:.2f}"
        note = (f"judge under the floors on {n} labels: agreement {stats['agreement']:.2f} (lower bound "
                f"{ci[0]:.2f}, floor {floors[0]:.2f}), kappa {shown} (floor {floors[1]:.2f}); change the "
                "rubric or the judge model, or label more rows")
    summary = {"measured": measured, "ok": ok, "n": n, "agreement": stats["agreement"],
               "ci95": list(ci) if ci else None, "kappa": kappa, "gold_kind": stats["gold_kind"],
               "note": note}
    if not ok:
        if mode == "require":
            raise JudgeTrustError(f"trust='require': {note}")
        log.warning("trust check: %s", note)
    return summary
