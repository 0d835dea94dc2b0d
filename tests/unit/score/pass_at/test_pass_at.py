"""pass@1 / pass^k / pass@k: exact values, the printed line of reference 5.1, intervals."""
import itertools
import math
import random

import numpy as np
import pytest

from whileai_ray.score.intervals import bootstrap_ci, t_quantile, wilson
from whileai_ray.score.pass_at.estimate import PassAt, pass_at


def rows_from(groups, key="scenario_id", text="lookup_order for ORD-1: ok."):
    return [{key: task, "reward": r, "final_text": text} for task, rewards in groups.items() for r in rewards]


def brute(groups, k):
    at_k, pow_k = [], []
    for rewards in groups.values():
        if len(rewards) < k:
            continue
        subsets = list(itertools.combinations(rewards, k))
        at_k.append(sum(any(s) for s in subsets) / len(subsets))
        pow_k.append(sum(all(s) for s in subsets) / len(subsets))
    return (sum(at_k) / len(at_k), sum(pow_k) / len(pow_k)) if at_k else (None, None)


def test_pass_at_k_and_pass_pow_k_match_brute_force_subsets():
    rng = random.Random(20240601)
    checked = 0
    for trial in range(300):
        k = rng.randint(1, 5)
        groups = {f"t{i}": [int(rng.random() < rng.random()) for _ in range(rng.randint(1, 9))]
                  for i in range(rng.randint(1, 8))}
        result = pass_at(rows_from(groups), k, min_k=1)
        want_at, want_pow = brute(groups, k)
        if want_at is None:
            assert result.pass_at_k is None and result.pass_pow_k is None
            continue
        checked += 1
        assert math.isclose(result.pass_at_k, want_at, abs_tol=1e-12), (groups, k)
        assert math.isclose(result.pass_pow_k, want_pow, abs_tol=1e-12), (groups, k)
        want_p1 = sum(sum(v) / len(v) for v in groups.values()) / len(groups)
        assert math.isclose(result.pass_at_1, want_p1, abs_tol=1e-12)
        assert result.n_groups_at_k == sum(1 for v in groups.values() if len(v) >= k)
    assert checked >= 200


def test_eight_tasks_six_of_eight_gives_pass_pow_4_of_15_over_70():
    result = pass_at(rows_from({f"t{i}": [1] * 6 + [0] * 2 for i in range(8)}), k=4)
    assert math.isclose(result.pass_pow_k, 15 / 70)
    assert f"{result.pass_pow_k:.2f}" == "0.21"


def test_pass_at_1_interval_covers_true_mean_about_95_percent():
    """2,000 simulated evals of 40 tasks drawn from a population of task pass rates."""
    for (a, b), seed in (((2.0, 2.0), 11), ((3.0, 1.0), 12)):
        rng = np.random.default_rng(seed)
        true_mean = a / (a + b)
        rates = rng.beta(a, b, size=(2000, 40))
        per_task = rng.binomial(4, rates) / 4
        hits = 0
        for values in per_task:
            lo, hi = bootstrap_ci(values)
            hits += lo <= true_mean <= hi
        assert 0.93 <= hits / 2000 <= 0.97, (a, b, hits / 2000)


def test_printed_lines_of_reference_5_1():
    ungraded = [{"prompt": f"p{i}", "final_text": "ok"} for i in range(5)]
    assert str(pass_at(ungraded)) == ("pass@1 n/a | pass^1 (pass_pow_k) n/a | pass@1 n/a | headroom n/a "
                                      "(0 groups, k=1; no binary rewards; grade first)")
    assert str(pass_at(ungraded, 4)) == ("pass@1 n/a | pass^4 (pass_pow_k) n/a | pass@4 n/a | headroom n/a "
                                         "(0 groups, k=4; no binary rewards; grade first)")

    four = rows_from({f"t{i}": [1, 1, 0, 1] for i in range(4)}, key="task_id")
    assert str(pass_at(four)) == ("pass@1 0.75 [0.75..0.75] | pass^4 (pass_pow_k) 0.00 [0.00..0.00] | "
                                  "pass@4 1.00 [1.00..1.00] | headroom 0.25 (4 groups, k=4)")

    one = rows_from({"t": [1, 0]})
    assert str(pass_at(one)) == (
        "pass@1 0.50 | pass^2 (pass_pow_k) n/a | pass@2 n/a | headroom n/a (1 groups, k=2; set repeats>=4 "
        "for pass^k and pass@k; no interval on pass@1: 1 task, and a bootstrap needs 3; it resamples tasks, "
        "so run more tasks, or give each row its own task_id when the rows are separate items)")

    all_one = [{"prompt": f"p{i % 15}", "reward": 1.0, "final_text": "x"} for i in range(16)]
    assert str(pass_at(all_one)) == (
        "pass@1 1.00 [1.00..1.00] | pass^2 (pass_pow_k) n/a | pass@2 n/a | headroom n/a (15 groups, k=2; "
        "every row scored 1 (16 of 16); check the judge before reading this number; set repeats>=4 for "
        "pass^k and pass@k)")

    failed = [{"prompt": f"p{i}", "judge_status": "error", "final_text": "x"} for i in range(10)]
    assert str(pass_at(failed)) == ("pass@1 n/a | pass^1 (pass_pow_k) n/a | pass@1 n/a | headroom n/a "
                                    "(0 groups, k=1; the judge failed on all 10 rows (error); re-run the judge)")

    halves = [{"prompt": f"p{i}", "reward": 0.5, "final_text": "x"} for i in range(20)]
    assert str(pass_at(halves)).endswith(
        "(0 groups, k=1; every row scored 0.50 (20 of 20); check the judge before reading this number; "
        "no binary rewards; grade first)")

    partial = rows_from({f"t{i}": [i % 2] for i in range(5)}) + [{"scenario_id": "t9", "reward": 0.4,
                                                                   "final_text": "x"}]
    assert str(pass_at(partial)).endswith(
        "(5 groups, k=1; set repeats>=4 for pass^k and pass@k; 1 row(s) carried a reward that is not 0 or 1 "
        "and are not in this number; give each Criterion kind='hard' for a 0/1 verdict)")


def test_uneven_group_notes():
    rng = random.Random(5)
    sizes = [1] * 39 + [2] * 9 + [3]
    explore = rows_from({f"s{i}": [int(rng.random() < 0.7) for _ in range(n)] for i, n in enumerate(sizes)})
    assert len(explore) == 60
    assert str(pass_at(explore)).endswith(
        "(49 groups, k=2; groups are uneven (2 to 3 repeats); k defaults to the smallest, so pass k=3 to "
        "score the 1 group(s) that reached it, or finish the cut groups)")
    fixed = rows_from({f"s{i}": [int(rng.random() < 0.6) for _ in range(4 if i < 40 else 8)] for i in range(48)})
    line = str(pass_at(fixed, k=4))
    assert line.startswith("pass@1 0.") and "| pass^4 (pass_pow_k) 0." in line
    assert line.endswith("(48 groups, k=4; groups are uneven (4 to 8 repeats); k is the smallest)")


def test_extra_tail_fragments_for_token_cap_and_silent_rows():
    rows = rows_from({f"t{i}": [1, 0, 1, 1] for i in range(5)})
    rows[0]["finish_reason"] = "length"
    rows[1]["final_text"] = ""
    note = pass_at(rows).note
    assert note.endswith("5% of rows cut by the token cap; 5% of rows have no spoken reply")


def test_partial_judge_failures_are_named_not_scored_as_zero():
    rows = rows_from({f"t{i}": [1, 1] for i in range(4)})
    rows += [{"scenario_id": "t0", "judge_status": "timeout", "final_text": "x"}] * 2
    result = pass_at(rows)
    assert result.pass_at_1 == 1.0
    assert "the judge failed on 2 of 10 rows (timeout)" in result.note


def test_row_order_does_not_change_any_number():
    rng = random.Random(9)
    rows = rows_from({f"t{i}": [int(rng.random() < 0.5) for _ in range(4)] for i in range(30)})
    shuffled = rows[:]
    random.Random(1).shuffle(shuffled)
    assert str(pass_at(rows)) == str(pass_at(shuffled))
    assert pass_at(rows).ci95 != pass_at(rows).pass_pow_k_ci95


def test_grouping_falls_back_to_task_id_then_prompt_and_reward_to_qwen_reward():
    rows = [{"task_id": "a", "reward": 1}, {"task_id": "a", "reward": 0},
            {"prompt": "hello", "qwen_reward": 1}, {"prompt": "hello", "reward": True}]
    result = pass_at(rows)
    assert result.per_task == {"a": 0.5, "hello": 1.0}
    assert result.n_rows == 3                      # the bool reward is not a reward


def test_unanimous_short_groups_are_imputed():
    rows = rows_from({"a": [1, 1], "b": [0, 0], "c": [1, 0, 1, 1], "d": [1, 0]})
    plain = pass_at(rows, 4)
    imputed = pass_at(rows, 4, unanimous_short=True)
    assert plain.n_groups_at_k == 1 and plain.n_groups_imputed == 0
    assert imputed.n_groups_at_k == 1 and imputed.n_groups_imputed == 2
    assert math.isclose(imputed.pass_at_k, (1 + 1 + 0) / 3)
    assert math.isclose(imputed.pass_pow_k, (0 + 1 + 0) / 3)


def test_to_dict_has_fields_headroom_and_list_intervals():
    result = pass_at(rows_from({f"t{i}": [1, 0, 1, 1] for i in range(6)}))
    d = result.to_dict()
    assert isinstance(result, PassAt)
    assert math.isclose(d["headroom"], result.pass_at_k - result.pass_at_1)
    assert isinstance(d["ci95"], list) and d["config"]["n_tasks"] == 6 and d["config"]["graded_share"] == 1.0


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="k must be a positive int"):
        pass_at([], k=0)
    with pytest.raises(TypeError, match=r"rows\[1\]"):
        pass_at([{"reward": 1}, "oops"])


def test_twenty_thousand_rows_score():   # how fast: the bench's micro lines
    rng = random.Random(3)
    rows = rows_from({f"t{i}": [int(rng.random() < 0.6) for _ in range(4)] for i in range(5000)})
    result = pass_at(rows)
    assert result.n_rows == 20000 and result.ci95[0] < result.pass_at_1 < result.ci95[1]


def test_interval_helpers():
    assert bootstrap_ci([0.5, 1.0]) is None
    lo, hi = wilson(8, 10)
    assert math.isclose(lo, 0.4902, abs_tol=1e-4) and math.isclose(hi, 0.9433, abs_tol=1e-4)
    assert math.isclose(t_quantile(0.975, 2), 4.3027, abs_tol=1e-4)
    assert math.isclose(t_quantile(0.975, 39), 2.0227, abs_tol=1e-4)
