"""The validity facets (issue 39), proved on synthetic probers and recomputed by hand.

- a prober that answers from the template alone scores exactly 0 above the prompt bias, its control acc@k = acc@k;
- a prober that looks facts up by subject scores above-bias = acc@k (its control answers nothing);
- twelve queries: every facet recomputed with plain Python loops (brute force) from the rankings;
- ECE of a perfectly calibrated scorer is near 0 (within what its equal-mass bins allow), AURC's oracle and random;
- the loader refuses an edited facet value; an older prober that returns plain names runs, said, without the
  confidence facets; records without facets still load.
"""

from __future__ import annotations

import json
import math
import re
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import medprobe
import medprobe.run
from medprobe.contracts import Prober
from medprobe.counted import Counts, counts_estimator, mean_estimator
from medprobe.records.verify import RecordError, load_run
from medprobe.run import RunRequest, run
from medprobe.stats import Outcomes, estimate
from medprobe.stats import intervals as item_intervals
from medprobe.tasks.facets import FacetOptions, RankingRows, ShuffledControl, facet_estimators, rank_with_facets
from medprobe.validity import aurc, aurc_oracle, ece, intervals, mean_design_effect

SAMPLE = Path(medprobe.__file__).parent / "demo_data" / "medlama_sample"


def sample_rows(config: str = "hard") -> list[dict]:
    return [json.loads(line) for line in (SAMPLE / config / "test.jsonl").read_text(encoding="utf-8").splitlines()]


def template_of(query: str, templates: list[str]) -> tuple[str, str] | None:
    """(template, subject) of a query: the longest template whose [X] can be filled to give it."""
    for template in sorted(templates, key=len, reverse=True):
        pattern = re.escape(template).replace(re.escape("[X]"), "(.+)")
        found = re.fullmatch(pattern, query)
        if found:
            return template, found.group(1)
    return None


class TemplateOnlyProber(Prober):
    """Answers from the template alone: its relation's most frequent gold answers first, whatever the subject."""

    name, kinds = "template-only", ("ranking",)

    def __init__(self, rows: list[dict]):
        self.answers: dict[str, Counter] = {}
        for row in rows:
            self.answers.setdefault(row["template"], Counter()).update(row["answers"])

    def rank(self, queries, candidates, k):
        ranked = []
        for query in queries:
            template, _ = template_of(query, list(self.answers))
            counts = self.answers[template]
            best = sorted(candidates, key=lambda name: (-counts[name], name))[:k]
            ranked.append([(name, float(counts[name])) for name in best])
        return ranked


class LookupProber(Prober):
    """Looks facts up by subject: the gold answers of (template, subject) first, then the rest; an unknown subject
    (the control's placeholder) gets nothing."""

    name, kinds = "lookup-by-subject", ("ranking",)

    def __init__(self, rows: list[dict]):
        self.facts: dict[tuple[str, str], list[str]] = {}
        for row in rows:
            self.facts.setdefault((row["template"], row["head_name"]), []).extend(row["answers"])
        self.templates = sorted({template for template, _ in self.facts})

    def rank(self, queries, candidates, k):
        ranked = []
        for query in queries:
            gold = self.facts.get(template_of(query, self.templates), [])
            if not gold:
                ranked.append([])
                continue
            first = [name for name in candidates if name in set(gold)]
            rest = [name for name in candidates if name not in set(gold)]
            ranked.append([(name, 1.0) for name in first][:k] + [(name, 0.0) for name in rest][: max(0, k - len(first))])
        return ranked


class NamesOnlyProber(TemplateOnlyProber):
    """An older plugin's prober: rank returns plain names, no scores."""

    name = "names-only"

    def rank(self, queries, candidates, k):
        return [[name for name, _ in row] for row in super().rank(queries, candidates, k)]


def probe(monkeypatch, tmp_path, prober, config="hard", **task_options) -> dict:
    """`medprobe probe` of the medlama task on the shipped sample with `prober` standing in; the results JSON."""
    monkeypatch.setattr(medprobe.run, "make_prober", lambda *args, **kwargs: prober)
    out = tmp_path / f"{prober.name}.json"
    request = RunRequest(
        task="medlama",
        prober="contrastive",
        dataset=str(SAMPLE),
        config=config,
        model="none",
        task_options=task_options,
        out=str(out),
        resamples=200,
    )
    run(request, print_fn=print)
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.parametrize("exclude_head", [False, True])
def test_a_prober_that_ignores_the_subject_has_no_knowledge_above_the_prompt_bias(monkeypatch, tmp_path, exclude_head):
    record = probe(monkeypatch, tmp_path, TemplateOnlyProber(sample_rows()), exclude_head=exclude_head)
    metrics, n = record["metrics"], record["counts"]["queries"]
    for k in (1, 10):
        assert metrics[f"control_acc@{k}"] == metrics[f"acc@{k}"] > 0  # its control ranks exactly as its queries
        assert metrics[f"above_bias@{k}"] == 0.0
        assert metrics[f"answerable_from_template@{k}"] == round(metrics[f"acc@{k}"] * n)
        assert record["intervals"][f"above_bias@{k}"]["low"] == record["intervals"][f"above_bias@{k}"]["high"] == 0.0
    assert record["settings"]["control_placeholder"] == "X"
    assert record["timings"]["facet_queries"] >= 0  # the control's own rank call, timed (what it adds to a run)
    load_run(tmp_path / "template-only.json")  # every facet, interval and clustered interval recomputed


def test_a_prober_that_looks_facts_up_by_subject_knows_all_of_its_score(monkeypatch, tmp_path):
    record = probe(monkeypatch, tmp_path, LookupProber(sample_rows()))
    metrics = record["metrics"]
    for k in (1, 10):
        assert metrics[f"acc@{k}"] == 1.0 and metrics[f"control_acc@{k}"] == 0.0
        assert metrics[f"above_bias@{k}"] == metrics[f"acc@{k}"]
        assert metrics[f"answerable_from_template@{k}"] == 0
        for relation, values in record["per_group"].items():
            assert values[f"above_bias@{k}"] == values[f"acc@{k}"] == 1.0, relation
    interval = record["intervals"]["acc@10"]["clustered"]
    assert interval["clusters"] == len({row["head_cui"] for row in sample_rows()}) and "item-level" in interval["method"]
    load_run(tmp_path / "lookup-by-subject.json")


def test_the_shuffled_control_asks_whether_the_answer_needs_this_subject(monkeypatch, tmp_path):
    blind = probe(monkeypatch, tmp_path, TemplateOnlyProber(sample_rows()), shuffled_control=True)
    assert blind["metrics"]["shuffled_acc@10"] == blind["metrics"]["acc@10"] and blind["metrics"]["above_shuffled@10"] == 0
    knows = probe(monkeypatch, tmp_path, LookupProber(sample_rows()), shuffled_control=True)
    assert knows["metrics"]["shuffled_acc@1"] < 0.2 < knows["metrics"]["above_shuffled@1"]  # another subject's answers
    assert knows["settings"]["shuffled_control_seed"] == 0
    outcomes = [json.loads(line) for line in (tmp_path / "lookup-by-subject.outcomes.jsonl").read_text().splitlines()]
    assert all("shuffled_rank" in line and "cluster" in line for line in outcomes)
    load_run(tmp_path / "lookup-by-subject.json")


def test_only_control_misses_scores_the_queries_the_control_misses_as_a_subset(monkeypatch, tmp_path):
    prober = TemplateOnlyProber(sample_rows())
    whole = probe(monkeypatch, tmp_path, prober)
    kept = probe(monkeypatch, tmp_path, prober, only_control_misses=True)
    n = whole["counts"]["queries"]
    assert kept["counts"]["queries"] == n - whole["metrics"]["answerable_from_template@10"]
    assert kept["metrics"]["acc@10"] == 0.0  # what the template alone answers is gone, and this prober has nothing else
    assert kept["subset"]["subset"] and kept["subset"]["options"] == {"only_control_misses": True}
    assert kept["subset"]["of"] == {"probed": kept["counts"]["queries"], "total": n, "unit": "queries"}
    load_run(tmp_path / "template-only.json")


def test_an_older_prober_returning_names_runs_with_one_line_and_no_confidence_facets(monkeypatch, tmp_path, capsys):
    record = probe(monkeypatch, tmp_path, NamesOnlyProber(sample_rows()))
    said = capsys.readouterr().out
    assert said.count("returns names without scores") == 1 and "margin, AURC, ECE, Brier" in said
    assert not {"aurc", "aurc_oracle", "aurc_random", "ece", "brier"} & set(record["metrics"])
    assert record["settings"]["confidence"] is None and "margin" not in record["outcomes"]["fields"]
    assert record["metrics"]["above_bias@10"] == 0.0  # the control needs no scores
    load_run(tmp_path / "names-only.json")


def edited(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_the_loader_refuses_an_edited_facet_value(monkeypatch, tmp_path):
    probe(monkeypatch, tmp_path, TemplateOnlyProber(sample_rows()))
    path = tmp_path / "template-only.json"
    original = path.read_text(encoding="utf-8")
    changes = {
        "above_bias@10": lambda d: d["metrics"].update({"above_bias@10": 0.01}),
        "aurc of 'may_treat'": lambda d: d["per_group"]["may_treat"].update({"aurc": 0.5}),
        "the clustered interval's design_effect of acc@10": lambda d: d["intervals"]["acc@10"]["clustered"].update(
            {"design_effect": 1.5}
        ),
        "the clustered interval's high of control_acc@1": lambda d: d["intervals"]["control_acc@1"]["clustered"].update(
            {"high": 0.9}
        ),
    }
    for named, change in changes.items():
        edited(path, change)
        with pytest.raises(RecordError, match=re.escape(named)):
            load_run(path)
        path.write_text(original, encoding="utf-8")
    edited(path, lambda d: d["intervals"]["acc@10"].pop("clustered"))
    with pytest.raises(RecordError, match="lacks its clustered interval"):
        load_run(path)


# --- twelve queries by hand --------------------------------------------------------------------------------------


ROWS12 = [  # (group, subject, cluster, answers): 3 relations x 4 queries; two subjects in two relations
    ("treats", "aspirin", "C1", ["pain"]),
    ("treats", "heparin", "C2", ["clot"]),
    ("treats", "insulin", "C3", ["diabetes", "coma"]),
    ("treats", "ibuprofen", "C4", ["fever"]),
    ("causes", "aspirin", "C1", ["bleeding"]),
    ("causes", "smoking", "C5", ["cancer", "cough"]),
    ("causes", "heparin", "C2", ["bleeding"]),
    ("causes", "gout", "C6", ["pain"]),
    ("site", "gout", "C6", ["joint"]),
    ("site", "asthma", "C7", ["lung"]),
    ("site", "angina", "C8", ["heart"]),
    ("site", "fever", "C9", ["body"]),
]
TEMPLATES = {"treats": "[X] treats [Y] .", "causes": "[X] causes [Y] .", "site": "[X] is found in [Y] ."}


class TableProber(Prober):
    """Scores every candidate from a seeded table keyed by (query, name): log-probabilities, ties made on purpose."""

    name, kinds, probabilities = "table", ("ranking",), True

    def rank(self, queries, candidates, k):
        ranked = []
        for query in queries:
            raw = {name: float(zlib.crc32(f"{query}|{name}".encode()) % 4) for name in candidates}
            if "gout" in query:  # a tie at the top: the margin is 0
                raw["pain"] = raw["joint"] = 5.0
            total = math.log(sum(math.exp(v) for v in raw.values()))
            order = sorted(range(len(candidates)), key=lambda i: (-raw[candidates[i]], i))[:k]
            ranked.append([(candidates[i], raw[candidates[i]] - total) for i in order])
        return ranked


def hand_rank(names, answers, head, k):
    position = 0
    for name in names:
        if name == head:
            continue
        position += 1
        if position > k:
            return None
        if name in answers:
            return position
    return None


def hand_aurc(margins, correct):
    """Mean over i of the error rate of the i most confident; tied margins share their errors evenly."""
    n = len(margins)
    key = [-math.inf if m is None else m for m in margins]
    total, errors_before, position = 0.0, 0.0, 0
    for value in sorted(set(key), reverse=True):
        block = [1 - c for m, c in zip(key, correct) if m == value]
        for _ in block:
            position += 1
            errors_before += sum(block) / len(block)
            total += errors_before / position
    return total / n


def hand_ece(confidences, correct, bins):
    """Items sorted by confidence laid end to end as unit masses (tied ones sharing their accuracy), cut in `bins`."""
    line = []
    for value in sorted(set(confidences)):
        block = [c for p, c in zip(confidences, correct) if p == value]
        line += [(value, sum(block) / len(block))] * len(block)
    n, total = len(line), 0.0
    for b in range(bins):
        low, high = b * n / bins, (b + 1) * n / bins
        hits = mass = 0.0
        for i, (value, rate) in enumerate(line):
            overlap = max(0.0, min(high, i + 1) - max(low, i))
            hits, mass = hits + overlap * rate, mass + overlap * value
        total += abs(hits - mass)
    return total / n


def hand_design_effect(values, clusters):
    mean = sum(values) / len(values)
    residual = [v - mean for v in values]
    by_cluster: dict[str, float] = {}
    for r, c in zip(residual, clusters):
        by_cluster[c] = by_cluster.get(c, 0.0) + r
    independent = sum(r * r for r in residual)
    return sum(s * s for s in by_cluster.values()) / independent


def test_twelve_queries_recomputed_by_hand_give_every_facet():
    rows = RankingRows(
        ids=[f"q{i:02d}" for i in range(12)],
        groups=[group for group, *_ in ROWS12],
        queries=[TEMPLATES[group].replace("[X]", subject) for group, subject, *_ in ROWS12],
        answers=[answers for *_, answers in ROWS12],
        subjects=[subject for _, subject, *_ in ROWS12],
        templates=[TEMPLATES[group] for group, *_ in ROWS12],
        clusters=[cluster for _, _, cluster, _ in ROWS12],
    )
    space = sorted({name for *_, answers in ROWS12 for name in answers} | {subject for _, subject, *_ in ROWS12})
    prober = TableProber()
    options = FacetOptions(k=[1, 3], exclude_head=True, shuffled=True, seed=3, ece_bins=5)
    found = rank_with_facets(prober, rows, space, options, "table")
    outcomes = Outcomes.build(rows.ids, rows.groups, found.columns, clusters=rows.clusters)
    estimators = facet_estimators({"k": [1, 3], **found.settings}, "query")

    # by hand, from the same prober's rankings (k + 1 names: the head is left out)
    real = prober.rank(rows.queries, space, 4)
    control = {g: prober.rank([TEMPLATES[g].replace("[X]", "X")], space, 4)[0] for g in TEMPLATES}
    kept = [[(n, s) for n, s in r if n != subject][:3] for r, subject in zip(real, rows.subjects)]
    ranks = [hand_rank([n for n, _ in r], a, None, 3) for r, a in zip(kept, rows.answers)]
    controls = [hand_rank([n for n, _ in control[g]], a, h, 3) for g, a, h in zip(rows.groups, rows.answers, rows.subjects)]
    margins = [float(f"{r[0][1] - r[1][1]:.8g}") for r in kept]  # recorded to 8 significant digits
    confidence = [float(f"{math.exp(r[0][1]):.8g}") for r in kept]
    correct = [1 if r == 1 else 0 for r in ranks]
    assert [None if math.isnan(v) else v for v in found.columns["rank"]] == ranks
    assert [None if math.isnan(v) else v for v in found.columns["control_rank"]] == controls
    assert found.columns["margin"].tolist() == margins and found.columns["confidence"].tolist() == confidence
    assert 0.0 in margins  # the tie at the top of "gout"

    def hit(rank, k):
        return 1 if rank is not None and rank <= k else 0

    for k in (1, 3):
        assert estimate(outcomes, estimators[f"control_acc@{k}"]) == sum(hit(c, k) for c in controls) / 12
        above = sum(hit(r, k) - hit(c, k) for r, c in zip(ranks, controls)) / 12
        assert estimate(outcomes, estimators[f"above_bias@{k}"]) == above
        assert estimate(outcomes, estimators[f"answerable_from_template@{k}"]) == sum(hit(c, k) for c in controls)
    # float sums in another order: equal to a few ulps of 1 (the values are shares of 12 items)
    assert estimate(outcomes, estimators["aurc"]) == pytest.approx(hand_aurc(margins, correct), abs=1e-14)
    oracle = hand_aurc([float(c) for c in correct], correct)  # the correct items first
    assert estimate(outcomes, estimators["aurc_oracle"]) == pytest.approx(oracle, abs=1e-14)
    assert estimate(outcomes, estimators["aurc_random"]) == (12 - sum(correct)) / 12
    assert estimate(outcomes, estimators["ece"]) == pytest.approx(hand_ece(confidence, correct, 5), abs=1e-14)
    brier = sum((p - c) ** 2 for p, c in zip(confidence, correct)) / 12
    assert estimate(outcomes, estimators["brier"]) == pytest.approx(brier, abs=1e-15)
    hits3 = [float(hit(r, 3)) for r in ranks]
    effect = mean_design_effect(np.array(hits3), [(0, 12)], *cluster_numbers(rows.clusters))
    assert effect == pytest.approx(hand_design_effect(hits3, rows.clusters), abs=1e-12)
    partners = ShuffledControl.partners(rows, 3)  # the shuffled control: another subject of the same relation
    assert sorted(partners) == list(range(12)) and all(
        p != i and rows.groups[p] == rows.groups[i] for i, p in enumerate(partners)
    )


def cluster_numbers(clusters: list[str]) -> tuple[np.ndarray, int]:
    names = sorted(set(clusters))
    return np.array([names.index(c) for c in clusters]), len(names)


# --- the math on its own -----------------------------------------------------------------------------------------


def test_ece_of_a_perfectly_calibrated_scorer_is_near_zero():
    """With n items in B equal-mass bins, a calibrated scorer's |acc_b - conf_b| is the mean of n/B Bernoulli
    deviations: E|.| <= sqrt(2/pi) sqrt(B / 4n), about 0.0028 for n = 200,000 and B = 10; the test allows 3x that
    (its draws are seeded: it does not flicker) and checks that a scorer 0.1 overconfident is far outside."""
    rng = np.random.default_rng(7)
    n, bins = 200_000, 10
    confidence = rng.random(n)
    correct = (rng.random(n) < confidence).astype(float)
    bound = math.sqrt(2 / math.pi) * math.sqrt(bins / (4 * n))
    calibrated = ece(Counts.ones(n), confidence, correct, bins)[0]
    assert calibrated < 3 * bound
    overconfident = ece(Counts.ones(n), np.clip(confidence + 0.1, 0, 1), correct, bins)[0]
    assert overconfident > 0.08


def test_aurc_oracle_and_random():
    rng = np.random.default_rng(3)
    correct = (rng.random(500) < 0.3).astype(float)
    ones = Counts.ones(500)
    oracle = aurc_oracle(ones, correct)[0]
    assert aurc(ones, correct + rng.random(500) * 0.5, correct)[0] == pytest.approx(oracle, abs=1e-12)  # correct first
    assert aurc(ones, np.zeros(500), correct)[0] == pytest.approx(1 - correct.mean(), abs=1e-12)  # all tied: the error rate
    shuffled = [aurc(ones, rng.random(500), correct)[0] for _ in range(200)]
    assert np.mean(shuffled) == pytest.approx(1 - correct.mean(), abs=0.01)  # random order: about the error rate
    assert oracle < min(shuffled) and aurc(ones, -correct, correct)[0] > max(shuffled)  # worst: errors first
    errors = 500 - correct.sum()  # (e - (n - e)(H_n - H_{n-e})) / n
    by_hand = (errors - (500 - errors) * sum(1 / i for i in range(int(500 - errors) + 1, 501))) / 500
    assert oracle == pytest.approx(by_hand, abs=1e-12)


def test_aurc_of_resamples_with_ties_by_hand():
    """Both ways of counting positions (a running sum over every item; sums of the segments between the few items
    that carry the sum) give the hand-made AURC of each resample, its items repeated as often as drawn."""
    rng = np.random.default_rng(11)
    for n, share in ((400, 0.03), (400, 0.97), (60, 0.5)):
        margin = np.round(rng.random(n), 2)  # ties
        margin[rng.random(n) < 0.1] = np.nan  # no score: least confident
        correct = (rng.random(n) < share).astype(float)
        counts = rng.integers(0, 3, size=(3, n)).astype(np.float32)
        found = aurc(Counts(counts), margin, correct)
        for row, value in zip(counts, found):
            repeated = [(None if math.isnan(m) else m, c) for m, c, k in zip(margin, correct, row) for _ in range(int(k))]
            expected = hand_aurc([m for m, _ in repeated], [c for _, c in repeated])
            assert value == pytest.approx(expected, abs=1e-12)


def test_design_effect_is_the_cluster_size_for_identical_clusters_and_one_for_singletons():
    rng = np.random.default_rng(0)
    values = np.repeat(rng.random(50) < 0.4, 10).astype(float)  # 50 clusters of 10 identical items
    clusters = np.repeat(np.arange(50), 10)
    assert mean_design_effect(values, [(0, 500)], clusters, 50) == pytest.approx(10.0, abs=1e-9)
    assert mean_design_effect(values, [(0, 500)], np.arange(500), 500) == pytest.approx(1.0, abs=1e-12)


def test_the_shared_bootstrap_gives_the_intervals_of_the_seed():
    """validity.intervals counts each resample's items once for every mean; the draws and the intervals are the
    ones medprobe.stats gives (exactly for 0/1 means), and a clustered interval is wider for clustered items."""
    rng = np.random.default_rng(5)
    n = 600
    rank = np.where(np.repeat(rng.random(n // 6) < 0.5, 6), 1.0, np.nan)  # items of a cluster share their outcome
    groups = [f"g{i % 3}" for i in range(n)]
    outcomes = Outcomes.build([str(i) for i in range(n)], groups, {"rank": rank}, clusters=[str(i // 6) for i in range(n)])
    estimators = {
        "acc@1": mean_estimator(lambda c: c["rank"] <= 1, "query"),
        "macro_acc@1": mean_estimator(lambda c: c["rank"] <= 1, "query", stratified=True),
    }
    fast, plain = intervals(outcomes, estimators), item_intervals(outcomes, estimators)
    for name in estimators:
        assert (fast[name]["low"], fast[name]["high"]) == (plain[name]["low"], plain[name]["high"])
    clustered = fast["acc@1"]["clustered"]
    assert clustered["clusters"] == 100 and clustered["design_effect"] == pytest.approx(6.0, rel=0.05)
    assert clustered["high"] - clustered["low"] > 2 * (fast["acc@1"]["high"] - fast["acc@1"]["low"])


def test_the_clustered_interval_is_the_percentile_of_cluster_resamples_drawn_from_the_documented_stream():
    """Clusters drawn uniformly with replacement, 250 resamples a chunk, from default_rng([seed, 1]); each drawn
    cluster brings all its items; acc = hits / items of the resample: recomputed here with plain loops."""
    rng = np.random.default_rng(2)
    clusters = [f"s{i % 7:02d}" for i in range(40)]  # 7 subjects, uneven
    rank = np.where(rng.random(40) < 0.5, 1.0, np.nan)
    outcomes = Outcomes.build([str(i) for i in range(40)], ["g"] * 40, {"rank": rank}, clusters=clusters)
    estimators = {
        "acc@1": mean_estimator(lambda c: c["rank"] <= 1, "query"),
        "aurc_oracle": counts_estimator(lambda counts, c: aurc_oracle(counts, c["rank"] == 1), "query"),
    }
    found = intervals(outcomes, estimators, resamples=600, seed=4)  # chunks of 250, 250 and 100
    names = sorted(set(clusters))
    draws = np.random.default_rng([4, 1])
    accs, oracles = [], []
    for size in (250, 250, 100):
        for row in draws.integers(0, len(names), size=(size, len(names)), dtype=np.uint32):
            drawn = [r == 1 for d in row for cluster, r in zip(clusters, rank) if cluster == names[d]]
            accs.append(sum(drawn) / len(drawn))
            oracles.append(hand_aurc([float(c) for c in drawn], [float(c) for c in drawn]))
    tail = (1 - 0.95) / 2  # as medprobe.stats.percentile_interval writes it (0.025000000000000022)
    assert (found["acc@1"]["clustered"]["low"], found["acc@1"]["clustered"]["high"]) == tuple(np.quantile(accs, [tail, 1 - tail]))
    assert found["acc@1"]["clustered"]["clusters"] == 7
    oracle = found["aurc_oracle"]["clustered"]
    assert [oracle["low"], oracle["high"]] == pytest.approx(list(np.quantile(oracles, [tail, 1 - tail])), abs=1e-12)


def test_records_without_facets_or_clusters_still_load(tmp_path):
    from synthetic_runs import MEDLAMA_SETTINGS, medlama_ranks, write_run

    ids, groups, ranks = medlama_ranks(20, 0.5, seed=1)
    path = write_run(tmp_path / "old.json", ids, groups, {"rank": ranks}, settings=MEDLAMA_SETTINGS)
    loaded = load_run(path)
    assert not loaded.outcomes.clusters and "clustered" not in loaded.record.intervals["acc@10"]
