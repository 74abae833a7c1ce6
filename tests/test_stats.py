"""medprobe.stats: bootstrap intervals, paired comparisons and chance levels, checked against closed forms,
against the evaluate metrics they must reproduce, and for determinism."""

import itertools
import math
from math import comb

import numpy as np
import pytest

from medprobe.stats import (
    Estimator,
    Outcomes,
    always_positive_f1,
    estimate,
    hit_chance,
    holm,
    intervals,
    paired,
    rank_change_chance,
)
from medprobe.tasks.context_variance import ContextVarianceTask
from medprobe.tasks.disknE import DisKnETask
from medprobe.tasks.medlama import MedLAMATask
from medprobe.tasks.mst import MSTTask
from medprobe.tasks.ranking import best_gold_ranks


def ranking_outcomes(n: int, hit_rate: float, seed: int, groups: int = 19) -> Outcomes:
    rng = np.random.default_rng(seed)
    ranks = np.where(rng.random(n) < hit_rate, rng.integers(1, 11, n), np.nan)
    return Outcomes.build([f"q{i}" for i in range(n)], [f"r{i % groups}" for i in range(n)], {"rank": ranks})


MEDLAMA = MedLAMATask.estimators({"k": [1, 10]})


def test_micro_acc_interval_width_agrees_with_the_normal_approximation():
    outcomes = ranking_outcomes(19_000, 0.2, seed=1)
    found = intervals(outcomes, {"acc@10": MEDLAMA["acc@10"]})["acc@10"]
    p = estimate(outcomes, MEDLAMA["acc@10"])
    normal = 2 * 1.96 * math.sqrt(p * (1 - p) / len(outcomes))
    assert found["n"] == 19_000 and found["level"] == 0.95
    assert found["high"] - found["low"] == pytest.approx(normal, rel=0.1)
    assert found["low"] < p < found["high"]


def test_intervals_are_seeded_and_deterministic():
    outcomes = ranking_outcomes(500, 0.3, seed=2)
    first = intervals(outcomes, MEDLAMA, resamples=200, seed=7)
    assert first == intervals(outcomes, MEDLAMA, resamples=200, seed=7)
    assert first != intervals(outcomes, MEDLAMA, resamples=200, seed=8)
    # the same draws whichever metrics are asked for: a metric's interval does not depend on the others
    alone = intervals(outcomes, {"macro_acc@10": MEDLAMA["macro_acc@10"]}, resamples=200, seed=7)
    assert alone["macro_acc@10"] == first["macro_acc@10"]


def test_macro_intervals_resample_within_groups():
    # one group always hits, the other never: within-group resampling cannot move the macro mean
    outcomes = Outcomes.build([f"q{i}" for i in range(40)], ["a"] * 10 + ["b"] * 30, {"rank": [1.0] * 10 + [math.nan] * 30})
    macro = intervals(outcomes, {"macro_acc@1": MEDLAMA["macro_acc@1"]}, resamples=300)["macro_acc@1"]
    assert macro["low"] == macro["high"] == 0.5 and macro["groups"] == 2
    micro = intervals(outcomes, {"acc@1": MEDLAMA["acc@1"]}, resamples=300)["acc@1"]
    assert micro["low"] < 0.25 < micro["high"]  # over all items the share of group a varies


def test_medlama_estimators_reproduce_acc_at_k(acc_at_k):
    rng = np.random.default_rng(3)
    names = [f"n{i}" for i in range(30)]
    predictions = [list(rng.choice(names, 10, replace=False)) for _ in range(200)]
    answers = [list(rng.choice(names, rng.integers(1, 4), replace=False)) for _ in range(200)]
    relations = [f"r{i % 7}" for i in range(200)]
    scores = acc_at_k.compute(predictions=predictions, references=answers, groups=relations, k=[1, 3, 10])
    outcomes = Outcomes.build(range(200), relations, {"rank": best_gold_ranks(predictions, answers)})
    for name, estimator in MedLAMATask.estimators({"k": [1, 3, 10]}).items():
        assert estimate(outcomes, estimator) == pytest.approx(scores[name], abs=1e-12), name


def test_disknE_estimators_reproduce_disease_f1_averaged_over_seeds():
    import evaluate

    from medprobe.resources import metric_path

    metric = evaluate.load(metric_path("disease_f1"))
    rng = np.random.default_rng(4)
    diseases = [f"C{i % 5}" for i in range(120)]
    labels = rng.integers(0, 2, 120)
    labels[[i for i, d in enumerate(diseases) if d == "C4"]] = 0  # a disease without positives: F1 0
    predictions = rng.integers(0, 2, (120, 3))
    per_seed = [
        metric.compute(predictions=predictions[:, s].tolist(), references=labels.tolist(), diseases=diseases) for s in range(3)
    ]
    outcomes = Outcomes.build(range(120), diseases, {"label": labels, "prediction": predictions})
    for name, estimator in DisKnETask.estimators({}).items():
        expected = np.mean([scores[name] for scores in per_seed])
        assert estimate(outcomes, estimator) == pytest.approx(expected, abs=1e-12), name


def test_mst_estimator_is_the_mean_over_seeds_of_the_mean_over_tasks():
    rng = np.random.default_rng(5)
    tasks = ["comparison"] * 50 + ["sorting"] * 30
    labels = rng.integers(0, 3, 80)
    predictions = rng.integers(0, 3, (80, 2))
    outcomes = Outcomes.build(range(80), tasks, {"label": labels, "prediction": predictions})
    correct = predictions == labels[:, None]
    expected = np.mean([np.mean([correct[:50, s].mean(), correct[50:, s].mean()]) for s in range(2)])
    assert estimate(outcomes, MSTTask.estimators({})["accuracy"]) == pytest.approx(expected)


def test_context_variance_estimators_reproduce_ucm_shares():
    import evaluate

    from medprobe.resources import metric_path

    rng = np.random.default_rng(6)
    instances, relations, steps = [], [], []
    for instance in range(40):
        relation = f"r{instance % 3}"
        for _ in range(rng.integers(1, 5)):
            steps.append((f"i{instance}", relation, int(rng.integers(1, 6)), int(rng.integers(1, 6)), bool(rng.random() < 0.7)))
        instances.append(f"i{instance}")
        relations.append(relation)
    scores = evaluate.load(metric_path("ucm")).compute(
        target_rank_before=[s[2] for s in steps],
        target_rank_after=[s[3] for s in steps],
        added_is_correct=[s[4] for s in steps],
        groups=[s[1] for s in steps],
    )
    columns = {name: np.zeros(40) for name in ("understand", "confuse", "misunderstand", "steps")}
    for instance, _, before, after, correct in steps:
        if correct:
            row = instances.index(instance)
            columns["understand" if after < before else "confuse" if after == before else "misunderstand"][row] += 1
            columns["steps"][row] += 1
    outcomes = Outcomes.build(instances, relations, columns)
    estimators = ContextVarianceTask.estimators({"k": []})
    for name in ("understand", "confuse", "misunderstand", "macro_understand", "macro_confuse", "macro_misunderstand"):
        assert estimate(outcomes, estimators[name]) == pytest.approx(scores[name], abs=1e-12), name


def test_paired_comparison_of_a_run_with_itself_and_with_a_better_one():
    a = ranking_outcomes(2000, 0.2, seed=9)
    same = paired(a, a, {"acc@10": MEDLAMA["acc@10"]}, resamples=300)["acc@10"]
    assert same["difference"] == same["low"] == same["high"] == 0 and same["p_value"] == 1
    better = Outcomes.build(a.ids, a.groups, {"rank": np.where(np.isnan(a.columns["rank"]), 1.0, a.columns["rank"])})
    result = paired(better, a, MEDLAMA, resamples=300)
    for name in ("acc@10", "macro_acc@10"):
        assert result[name]["difference"] > 0.7 and result[name]["low"] > 0.7 and result[name]["p_value"] < 0.01
        assert result[name]["n"] == 2000


def test_paired_comparison_pairs_items_by_id_and_refuses_different_items():
    a = ranking_outcomes(300, 0.4, seed=10)
    shuffled = a.select(list(reversed(a.ids)))
    assert paired(a, shuffled, {"acc@10": MEDLAMA["acc@10"]}, resamples=100)["acc@10"]["difference"] == 0
    with pytest.raises(ValueError, match="different items"):
        paired(a, ranking_outcomes(299, 0.4, seed=10), MEDLAMA, resamples=10)


def test_permutation_p_value_is_calibrated_under_no_difference():
    # two runs drawn from the same distribution: p < 0.05 in about 5% of comparisons
    rejections = 0
    for seed in range(60):
        a, b = ranking_outcomes(300, 0.3, seed=100 + seed), ranking_outcomes(300, 0.3, seed=200 + seed)
        rejections += paired(a, b, {"acc@10": MEDLAMA["acc@10"]}, resamples=200, seed=seed)["acc@10"]["p_value"] < 0.05
    assert rejections <= 9  # 60 x 0.05 = 3 expected; 9 or more has probability < 0.5%


def test_holm_adjusts_step_down():
    assert holm({"a": 0.01, "b": 0.04, "c": 0.03}) == {"a": 0.03, "b": 0.06, "c": 0.06}
    assert holm({"a": 0.5, "b": 0.9}) == {"a": 1.0, "b": 1.0}


@pytest.mark.parametrize("candidates,golds,k", [(5, 2, 2), (30, 1, 10), (30, 3, 1), (8, 0, 3), (6, 6, 1), (4, 1, 10)])
def test_hit_chance_is_exact(candidates, golds, k):
    brute = 1 - comb(candidates - golds, min(k, candidates)) / comb(candidates, min(k, candidates)) if golds else 0.0
    assert hit_chance(np.array([candidates]), np.array([golds]), k)[0] == pytest.approx(brute)


def test_rank_change_chance_matches_enumeration():
    c = 4
    counts = {"understand": 0, "confuse": 0, "misunderstand": 0}
    for before, after in itertools.product(range(1, c + 1), repeat=2):
        counts["understand" if after < before else "confuse" if after == before else "misunderstand"] += 1
    exact = rank_change_chance(np.array([c]))
    assert {name: float(value[0]) for name, value in exact.items()} == pytest.approx({n: v / c**2 for n, v in counts.items()})


def test_always_positive_f1():
    # 2 positives of 8 rows: precision 1/4, recall 1, F1 = 2 * 0.25 / 1.25
    assert always_positive_f1(np.array([2]), np.array([8]))[0] == pytest.approx(0.4)


def test_outcomes_refuse_repeated_ids_and_misaligned_columns():
    with pytest.raises(ValueError, match="unique"):
        Outcomes.build(["a", "a"], ["g", "g"], {"rank": [1, 2]})
    with pytest.raises(ValueError, match="2 rows for 3 items"):
        Outcomes.build(["a", "b", "c"], ["g"] * 3, {"rank": [1, 2]})


def test_an_estimator_sees_every_resample_at_once():
    seen = []

    def record_shape(sample):
        seen.append(sample["rank"].shape)
        return np.zeros(sample["rank"].shape[0])

    intervals(ranking_outcomes(50, 0.5, seed=0), {"x": Estimator(record_shape, "query")}, resamples=600)
    assert seen == [(250, 50), (250, 50), (100, 50)]
