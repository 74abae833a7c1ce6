"""Every facet of issue 39 in one MedLAMA run (the shipped sample): the prompt-bias and shuffled controls, the
confidence columns, clustered intervals, --variants all and the memorisation signal, with a synthetic prober that
returns (name, log-probability) pairs; and the count-based paths of the variants' and memorisation's metrics (one
bootstrap pass over item counts, clustered intervals) against their own item-by-item definitions.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import medprobe
import medprobe.run
from medprobe.contracts import Prober
from medprobe.counted import Counts, CountSample, MeanTable, count_rows
from medprobe.records.verify import load_run
from medprobe.run import RunRequest, run
from medprobe.stats import Outcomes, Sample
from medprobe.tasks import memorisation, variants
from medprobe.validity import cluster_index

SAMPLE = Path(medprobe.__file__).parent / "demo_data" / "medlama_sample"
FACET_COLUMNS = {"rank", "margin", "confidence", "control_rank", "shuffled_rank"}
VARIANT_COLUMNS = {"variant_ranks", "variant_top1_same"}


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


class KnowsEveryNameProber(Prober):
    """Knows each fact under every query that asks it (its own, the other template, a synonym of its subject): the
    gold answers first, with log-probabilities normalised over the candidates. A query it does not know (a
    control's, another subject's) gets the most frequent answers of the sample first: a prompt bias. Its
    memorisation signal is made up from the text's length (ties included)."""

    name, kinds = "knows-every-name", ("ranking",)
    probabilities = True
    mink_percent = 20.0

    def __init__(self, memorisation: bool = True):
        self.memorisation = memorisation
        self.facts = {row["query"]: row["answers"] for row in lines(SAMPLE / "hard" / "test.jsonl")}
        self.facts.update({row["query"]: row["answers"] for row in lines(SAMPLE / "variants" / "test.jsonl")})
        self.frequent = Counter(name for answers in self.facts.values() for name in answers)

    def rank(self, queries, candidates, k):
        ranked = []
        for query in queries:
            gold = set(self.facts.get(query, []))
            weight = {name: (10.0 if name in gold else 0.1) if gold else 1.0 + self.frequent[name] for name in candidates}
            total = sum(weight.values())
            best = sorted(candidates, key=lambda name: (-weight[name], name))[:k]
            ranked.append([(name, math.log(weight[name] / total)) for name in best])
        return ranked

    def memorisation_scores(self, texts):
        return np.array([-float(len(text) % 7) for text in texts])


def probe(monkeypatch, tmp_path, prober, name: str, **task_options) -> dict:
    monkeypatch.setattr(medprobe.run, "make_prober", lambda *args, **kwargs: prober)
    out = tmp_path / f"{name}.json"
    request = RunRequest(
        task="medlama",
        prober="contrastive",
        dataset=str(SAMPLE),
        config="hard",
        model="none",
        task_options={**task_options, "predictions": str(tmp_path / f"{name}.jsonl")},
        out=str(out),
        resamples=200,
    )
    run(request, print_fn=lambda *a: None)
    return json.loads(out.read_text(encoding="utf-8"))


def test_every_facet_in_one_run_is_recorded_and_recomputed_and_the_predictions_do_not_change(monkeypatch, tmp_path):
    whole = probe(monkeypatch, tmp_path, KnowsEveryNameProber(), "all", variants="all", shuffled_control=True)
    probe(monkeypatch, tmp_path, KnowsEveryNameProber(memorisation=False), "plain", control=False)
    assert (tmp_path / "all.jsonl").read_bytes() == (tmp_path / "plain.jsonl").read_bytes()
    assert {name: whole["metrics"][name] for name in ("acc@1", "acc@10")} == {"acc@1": 1.0, "acc@10": 1.0}
    found = lines(tmp_path / "all.outcomes.jsonl")
    assert set(found[0]) == {"id", "group", "item", "cluster"} | FACET_COLUMNS | VARIANT_COLUMNS | {"mink_pp"}
    metrics, intervals = whole["metrics"], whole["intervals"]
    for k in (1, 10):  # looked up under every name: consistent, robust; the bias answers what it answers anyway
        assert metrics[f"consistency@{k}"] == metrics[f"robust_acc@{k}"] == 1.0
        assert metrics[f"above_bias@{k}"] == pytest.approx(1.0 - metrics[f"control_acc@{k}"], abs=1e-12)
    assert metrics["control_acc@10"] > 0 and metrics["consistency_top1"] == 1.0
    probed = {line["id"] for line in found}
    with_variants = {row["id"] for row in lines(SAMPLE / "variants" / "test.jsonl") if row["id"] in probed}
    assert whole["counts"]["items_with_variants"] == intervals["consistency@1"]["n"] == len(with_variants) > 0
    for name in ("consistency@10", "robust_acc@10", "consistency_top1", "mink_high_minus_low@10", "control_acc@10", "ece"):
        assert intervals[name]["facet"] and intervals[name]["clustered"]["clusters"] > 1, name
    settings = whole["settings"]
    assert settings["variants"] == "all" and settings["mink_percent"] == 20.0 and settings["shuffled_control_seed"] == 0
    assert settings["confidence"] == "margin and probability" and settings["control_placeholder"] == "X"
    load_run(tmp_path / "all.json")  # every value, per-relation value, interval and clustered interval recomputed


def test_only_control_misses_keeps_every_column_of_the_same_queries(monkeypatch, tmp_path):
    probe(monkeypatch, tmp_path, KnowsEveryNameProber(), "all", variants="templates")
    kept = probe(monkeypatch, tmp_path, KnowsEveryNameProber(), "misses", variants="templates", only_control_misses=True)
    before, after = lines(tmp_path / "all.outcomes.jsonl"), lines(tmp_path / "misses.outcomes.jsonl")
    assert after == [line for line in before if line["control_rank"] is None]  # the same lines, every column
    assert 0 < len(after) == kept["counts"]["queries"] < len(before)
    assert kept["counts"]["items_with_variants"] == sum(any(r is not None for r in line["variant_ranks"]) for line in after)
    assert kept["counts"]["variant_queries"] == sum(r is not None for line in after for r in line["variant_ranks"])
    assert kept["counts"]["queries_with_mink_pp"] == len(after)
    load_run(tmp_path / "misses.json")


# --- the count-based paths against the item-by-item definitions ---------------------------------------------------


def made_up(n: int, seed: int) -> Outcomes:
    rng = np.random.default_rng(seed)
    rank = np.where(rng.random(n) < 0.5, rng.integers(1, 11, n), np.nan)
    slots = np.where(rng.random((n, 3)) < 0.5, rng.integers(0, 11, (n, 3)).astype(float), np.nan)
    same = np.where(np.isnan(slots).all(axis=1), np.nan, rng.random(n) < 0.5)
    scores = np.round(rng.normal(size=n), 1)  # ties
    scores[rng.random(n) < 0.2] = np.nan  # items without a score
    columns = {"rank": rank, "variant_ranks": slots, "variant_top1_same": same, "mink_pp": scores}
    clusters = [f"c{c}" for c in rng.integers(0, max(1, n // 3), n)]
    return Outcomes.build([str(i) for i in range(n)], ["g"] * n, columns, None, clusters)


def cluster_resamples(outcomes: Outcomes, draws: int, seed: int) -> tuple[Counts, list[np.ndarray]]:
    """Cluster resamples as counts, and the same resamples as explicit lists of items."""
    of_item, clusters = cluster_index(outcomes)
    drawn = np.random.default_rng(seed).integers(0, clusters, (draws, clusters))
    items = [np.concatenate([np.flatnonzero(of_item == c) for c in row]) for row in drawn]
    return Counts(count_rows(drawn, clusters), of_item, {}), items


@pytest.mark.parametrize("n", [1, 2, 7, 255, 256, 600])
def test_memorisation_thirds_from_counts_are_those_of_each_resample_sorted(n):
    outcomes = made_up(n, seed=n)
    index = np.random.default_rng(1).integers(0, n, (30, n))
    counts, items = cluster_resamples(outcomes, 20, seed=2)
    for k in (1, 10):
        for part in (*memorisation.TERTILES, "high_minus_low"):
            sorted_each = memorisation.tertile_metric(Sample(outcomes, index), k, part)
            counted = memorisation.tertile_metric(CountSample(outcomes, index, None), k, part)
            assert np.array_equal(counted, sorted_each, equal_nan=True), (k, part)
            clustered = memorisation.tertile_metric(CountSample(outcomes, None, None, counts), k, part)
            one_by_one = [memorisation.tertile_metric(Sample(outcomes, row[None, :]), k, part)[0] for row in items]
            assert np.array_equal(clustered, one_by_one, equal_nan=True), (k, part)


def test_the_variants_metrics_from_counts_are_their_item_by_item_definitions():
    outcomes = made_up(300, seed=3)
    index = np.random.default_rng(4).integers(0, 300, (40, 300))
    estimators = variants.variant_estimators([1, 10])
    table = MeanTable(outcomes, estimators)  # every mean's sums from one product of the counts
    for k in (1, 10):
        definitions = {
            f"consistency@{k}": lambda s, k=k: variants.consistency(s, k),
            f"robust_acc@{k}": lambda s, k=k: variants.robust_acc(s, k),
            "consistency_top1": variants.consistency_top1,
        }
        for name, definition in definitions.items():
            expected = definition(Sample(outcomes, index))
            assert np.array_equal(estimators[name].compute(CountSample(outcomes, index, table)), expected), name
            assert np.array_equal(estimators[name].compute(Sample(outcomes, index)), expected), name
    assert estimators["consistency@1"].count(outcomes) == int((~np.isnan(outcomes.columns["variant_ranks"])).any(axis=1).sum())


def test_group_sums_of_whole_numbers_over_slices_are_reduceats():
    outcomes = Outcomes.build([str(i) for i in range(50)], [f"g{i % 4}" for i in range(50)], {"rank": np.ones(50)})
    values = np.random.default_rng(5).random((6, 50)) < 0.4
    expected = np.add.reduceat(values, outcomes.starts, axis=1)
    assert np.array_equal(Sample(outcomes, None).group_sum(values), expected)
    assert np.array_equal(Sample(outcomes, None).group_sum(values.astype(np.int64)), expected)
