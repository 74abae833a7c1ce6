"""`--variants`: every query asked other ways (the release's other prompt, subject synonyms), ranked by the same prober
over the same candidates; consistency@k, consistency_top1 and robust_acc@k from the per-item outcomes, recomputed
by the record loader (medprobe.tasks.variants).

Synthetic probers prove the metrics: one that looks facts up by the subject is consistent whatever the template; one
keyed on the template's words is not. A brute-force recomputation on 12 queries checks every metric exactly.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import medprobe.run
from medprobe.contracts import Prober
from medprobe.records.verify import RecordError, load_run, verify_seed_spread
from medprobe.run import RunRequest, run
from medprobe.stats import Estimator, Outcomes, estimate, intervals
from medprobe.tasks.variants import variant_estimators

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE = REPO_ROOT / "medprobe" / "demo_data" / "medlama_sample"
HEADS = {"Alphazine": ["Betaitis", "Gammaosis"], "Deltoma": ["Deltoma of skin"], "Waldenström epsilon": ["Zetapathy"]}


def scored(names: list[str]) -> list[tuple[str, float]]:
    """A ranked list as `rank` returns it: (name, score) pairs, best first (the variants read their names)."""
    return [(name, -float(position)) for position, name in enumerate(names)]


class SubjectProber(Prober):
    """Knows the answers of two of the three heads, whatever the query's words around the head: a fact looked up by
    its subject (the synthetic release gives every relation the same three heads and answers)."""

    name, kinds = "subject", ("ranking",)
    known = ("Alphazine", "Deltoma")

    def rank(self, queries, candidates, k):
        ranked = []
        for query in queries:
            gold = next((HEADS[head] for head in self.known if head in query), [])
            ranked.append(scored((gold + [c for c in candidates if c not in gold])[:k]))
        return ranked


class TemplateProber(Prober):
    """Answers from the human prompt's words only: under the release's other prompt it knows nothing."""

    name, kinds = "template", ("ranking",)

    def rank(self, queries, candidates, k):
        ranked = []
        for query in queries:
            gold = [g for head, names in HEADS.items() if head in query and "is related to" in query for g in names]
            ranked.append(scored((gold + [c for c in candidates if c not in gold])[:k]))
        return ranked


def probe(monkeypatch, prober, dataset, out: Path, config="hard", **task_options):
    monkeypatch.setattr(medprobe.run, "make_prober", lambda *args, **kwargs: prober)
    request = RunRequest(
        task="medlama",
        prober="contrastive",
        dataset=str(dataset),
        config=config,
        model="none",
        task_options=task_options,
        out=str(out),
    )
    return run(request, print_fn=lambda *a: None)


def outcome_lines(results: Path) -> list[dict]:
    return [json.loads(line) for line in results.with_name(f"{results.stem}.outcomes.jsonl").read_text().splitlines()]


# --- the synthetic probers -----------------------------------------------------------------------------------


def test_a_prober_that_looks_facts_up_by_subject_is_consistent_and_robust_acc_is_acc(
    synthetic_medlama_hub, tmp_path, monkeypatch
):
    record = probe(monkeypatch, SubjectProber(), synthetic_medlama_hub, tmp_path / "r.json", variants="templates")
    metrics = record.metrics
    assert 0 < metrics["acc@1"] < 1  # it does not know every head: robust_acc = acc is no accident of 0 or 1
    for k in (1, 10):
        assert metrics[f"consistency@{k}"] == 1.0 and metrics[f"robust_acc@{k}"] == metrics[f"acc@{k}"]
    assert metrics["consistency_top1"] == 1.0
    assert record.settings["variants"] == "templates" and record.settings["variant_slots"] == ["default_prompt"]
    assert record.counts["variant_queries"] == record.counts["items_with_variants"] == record.counts["queries"] == 38
    assert record.intervals["consistency@1"]["n"] == 38 and record.intervals["robust_acc@1"]["low"] is not None
    assert {line["variant_ranks"][0] for line in outcome_lines(tmp_path / "r.json")} <= {1, 2, 3, 4, 5}
    assert load_run(tmp_path / "r.json").record.metrics == record.metrics  # the loader recomputes every one
    per_relation = probe(
        monkeypatch, SubjectProber(), synthetic_medlama_hub, tmp_path / "s.json", variants="templates", candidates="relation"
    )
    assert per_relation.metrics["consistency@1"] == 1.0 and per_relation.metrics["robust_acc@1"] == per_relation.metrics["acc@1"]


def test_a_prober_keyed_on_the_template_is_not_consistent(synthetic_medlama_hub, tmp_path, monkeypatch):
    record = probe(monkeypatch, TemplateProber(), synthetic_medlama_hub, tmp_path / "r.json", variants="templates")
    metrics = record.metrics
    assert metrics["acc@1"] == 1.0 and metrics["robust_acc@1"] == 0.0  # right under one prompt, wrong under the other
    assert metrics["consistency@1"] < 1 and metrics["consistency_top1"] < 1
    assert record.per_group["may_treat"]["consistency@1"] == 0.0
    load_run(tmp_path / "r.json")


def test_without_variants_the_record_is_as_before(synthetic_medlama_hub, tmp_path, monkeypatch):
    record = probe(monkeypatch, SubjectProber(), synthetic_medlama_hub, tmp_path / "r.json")
    assert not any(name.startswith(("consistency", "robust")) for name in record.metrics)
    assert "variants" not in record.settings and "variant_queries" not in record.counts
    # the columns of the facets every ranking run has (medprobe.tasks.facets), and no variant column
    assert set(outcome_lines(tmp_path / "r.json")[0]) == {"id", "group", "item", "cluster", "rank", "control_rank", "margin"}


# --- the metrics, brute force -----------------------------------------------------------------------------------


def brute_force(rank, variants, same, k):
    """The definitions, item by item, in plain Python."""
    hit = [r is not None and r <= k for r in rank]
    asked = [[v for v in row if v is not None] for row in variants]
    agree = [bool(vs) and all((1 <= v <= k) == h for v in vs) for h, vs in zip(hit, asked)]
    robust = [h and all(1 <= v <= k for v in vs) for h, vs in zip(hit, asked)]
    with_variants = sum(1 for vs in asked if vs)
    top1 = [s for s in same if s is not None]
    return {
        f"consistency@{k}": sum(agree) / with_variants,
        f"robust_acc@{k}": sum(robust) / len(rank),
        "consistency_top1": sum(1 for s in top1 if s == 1) / len(top1),
        "n": with_variants,
    }


def test_consistency_robust_acc_and_top1_agree_with_a_brute_force_recomputation_on_12_queries():
    rng = np.random.default_rng(12)
    rank = [None if rng.random() < 0.3 else int(rng.integers(1, 11)) for _ in range(12)]
    variants, same = [], []
    for item in range(12):
        slots = [None if rng.random() < 0.3 else int(rng.integers(0, 11)) for _ in range(3)]  # 0: no gold in the top K
        if item in (3, 7):
            slots = [None, None, None]  # an item without a variant
        variants.append(slots)
        same.append(None if all(v is None for v in slots) else int(rng.integers(0, 2)))
    outcomes = Outcomes.build(
        [f"q{i}" for i in range(12)],
        ["a"] * 6 + ["b"] * 6,
        {
            "rank": [np.nan if r is None else r for r in rank],
            "variant_ranks": [[np.nan if v is None else v for v in row] for row in variants],
            "variant_top1_same": [np.nan if s is None else s for s in same],
        },
    )
    estimators = variant_estimators([1, 3, 10])
    found = intervals(outcomes, estimators, resamples=50, seed=1)
    for k in (1, 3, 10):
        expected = brute_force(rank, variants, same, k)
        for name in (f"consistency@{k}", f"robust_acc@{k}", "consistency_top1"):
            assert estimate(outcomes, estimators[name]) == expected[name], name  # to the last digit
        assert found[f"consistency@{k}"]["n"] == expected["n"] == 10 and found[f"robust_acc@{k}"]["n"] == 12
    assert found["consistency_top1"]["n"] == 10
    first = outcomes.group("a")  # per group too: the first six items alone
    assert estimate(first, estimators["robust_acc@3"]) == brute_force(rank[:6], variants[:6], same[:6], 3)["robust_acc@3"]


def test_a_variant_column_is_never_read_as_seeds():
    """A task trained with seeds whose outcomes also hold variant ranks: the spread is over the seed column only."""
    outcomes = Outcomes.build(
        ["a", "b", "c"],
        ["g"] * 3,
        {"correct": [[1, 0], [1, 1], [0, 1]], "variant_ranks": [[1, 2, np.nan], [0, 1, 1], [1, np.nan, np.nan]]},
    )
    accuracy = Estimator(lambda sample: sample["correct"].mean(axis=(1, 2)), "item")

    class Record:
        metrics = {"accuracy": 2 / 3, "accuracy_std": 0.0}  # both seeds score 2/3

    verify_seed_spread(Record(), outcomes, {"accuracy": accuracy}, "population", Path("r.json"), "item")
    Record.metrics = {"accuracy": 2 / 3, "accuracy_std": 0.5}
    with pytest.raises(RecordError, match="accuracy_std is 0.5 in the file but 0.0"):
        verify_seed_spread(Record(), outcomes, {"accuracy": accuracy}, "population", Path("r.json"), "item")


# --- records that disagree, data without variants ----------------------------------------------------------------


def test_the_loader_refuses_an_edited_consistency(synthetic_medlama_hub, tmp_path, monkeypatch):
    probe(monkeypatch, TemplateProber(), synthetic_medlama_hub, tmp_path / "r.json", variants="templates")
    data = json.loads((tmp_path / "r.json").read_text())
    data["metrics"]["consistency@10"] = 0.99
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(RecordError, match=r"consistency@10 is 0.99 in the file but .* from its 38 per-item outcomes"):
        load_run(tmp_path / "r.json")


def test_synonyms_of_a_release_build_are_refused_naming_the_umls_build(synthetic_medlama_hub, tmp_path, monkeypatch):
    with pytest.raises(ValueError, match=r"holds no subject synonyms .* --umls-dir META\); use --variants templates"):
        probe(monkeypatch, SubjectProber(), synthetic_medlama_hub, tmp_path / "r.json", variants="all")


def test_variants_with_rerank_are_refused():
    from medprobe.tasks.medlama import MedLAMATask

    with pytest.raises(ValueError, match="leave out --rerank or --variants"):
        MedLAMATask(rerank="p.jsonl", variants="templates")
    with pytest.raises(ValueError, match="--variants must be one of none, templates, synonyms, all"):
        MedLAMATask(variants="paraphrases")


def test_cli_on_data_without_a_variants_config_is_one_line_before_any_model_loads(tmp_path):
    older = write_folder(tmp_path / "older", {"full": [item(0, "Aspirin", ["pain"])]})  # a build from before variants
    command = [sys.executable, "-m", "medprobe.cli", "probe", "--dataset", str(older), "--config", "full"]
    command += ["--prober", "contrastive", "--model", "minilm", "--variants", "templates"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env={**_env(), "PYTHONPATH": str(REPO_ROOT)})
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "--variants templates needs the 'variants' config of --dataset" in done.stderr


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


# --- synonyms and --exclude-head -----------------------------------------------------------------------------------


def write_folder(folder: Path, configs: dict[str, list[dict]]) -> Path:
    """A Hub-layout folder of these configs' rows (e.g. `full` and its `variants`, as `medprobe build` writes them)."""
    import datasets

    from medprobe.digests import sha256_file

    paths = {}
    for config, rows in configs.items():
        (folder / config).mkdir(parents=True)
        datasets.Dataset.from_list(rows).to_parquet(str(folder / config / "test.parquet"))
        # named by content, as a build names them: datasets caches a local folder by the paths its card names
        paths[config] = f"{config}/test-{sha256_file(folder / config / 'test.parquet')[:16]}.parquet"
        (folder / config / "test.parquet").rename(folder / paths[config])
    configs = "".join(f"- config_name: {c}\n  data_files:\n  - split: test\n    path: {path}\n" for c, path in paths.items())
    (folder / "README.md").write_text(f"---\nconfigs:\n{configs}---\n", encoding="utf-8")
    return folder


def item(number: int, head: str, answers: list[str]) -> dict:
    return {
        "id": f"may_treat-{number:04d}",
        "relation": "may_treat",
        "head_name": head,
        "query": f"{head} might treat [Y] .",
        "answers": answers,
    }


def variant(of: dict, kind: str, subject: str, template: str) -> dict:
    return {**of, "variant": kind, "subject": subject, "query": template.replace("[X]", subject)}


class EchoProber(Prober):
    """Ranks first the names the query contains (its subject), then the head of that subject, then its answers: an
    encoder's echo of the subject, which --exclude-head is there to leave out."""

    name, kinds = "echo", ("ranking",)
    head_of = {"ASA": "Aspirin", "Aspirin": "Aspirin", "Metformin": "Metformin"}
    answers = {"Aspirin": ["pain"], "Metformin": ["diabetes"]}

    def rank(self, queries, candidates, k):
        ranked = []
        for query in queries:
            echo = [c for c in candidates if f"{c} " in query]
            heads = [self.head_of[c] for c in echo if c in self.head_of]
            gold = [a for h in heads for a in self.answers.get(h, [])]
            ranked.append(list(dict.fromkeys(echo + heads + gold + list(candidates)))[:k])
        return ranked


@pytest.fixture
def synonyms_folder(tmp_path) -> Path:
    aspirin, metformin, headache = item(0, "Aspirin", ["pain"]), item(1, "Metformin", ["diabetes"]), item(2, "Headache", ["ASA"])
    rows = [
        variant(aspirin, "default_prompt", "Aspirin", "[X] may treat [Y] ."),
        variant(aspirin, "synonym_1", "ASA", "[X] might treat [Y] ."),  # "ASA" is a candidate: another item's answer
        variant(metformin, "default_prompt", "Metformin", "[X] may treat [Y] ."),
    ]
    return write_folder(tmp_path / "data", {"full": [aspirin, metformin, headache], "variants": rows})


def test_exclude_head_leaves_a_synonym_variants_head_and_synonym_out_of_its_predictions(synonyms_folder, tmp_path, monkeypatch):
    def ranks(**options) -> list:
        probe(monkeypatch, EchoProber(), synonyms_folder, tmp_path / "r.json", config="full", variants="all", **options)
        return [line["variant_ranks"] for line in outcome_lines(tmp_path / "r.json")]

    # without it: the echo first, then the head; with it: the answer first, under every variant
    assert ranks(k=[1, 3]) == [[2, 3], [2, None], [None, None]]
    excluded = ranks(k=[1, 3], exclude_head=True)
    assert excluded == [[1, 1], [1, None], [None, None]]
    record = load_run(tmp_path / "r.json").record
    assert record.settings["variant_slots"] == ["default_prompt", "synonym_1"] and record.metrics["robust_acc@1"] == 1.0
    assert record.metrics["consistency@1"] == 1.0 and record.intervals["consistency@1"]["n"] == 2


def test_templates_leave_the_synonym_slots_null_so_every_run_of_one_data_set_has_one_width(
    synonyms_folder, tmp_path, monkeypatch
):
    probe(monkeypatch, EchoProber(), synonyms_folder, tmp_path / "r.json", config="full", variants="templates")
    assert [line["variant_ranks"] for line in outcome_lines(tmp_path / "r.json")] == [[2, None], [2, None], [None, None]]
    probe(monkeypatch, EchoProber(), synonyms_folder, tmp_path / "s.json", config="full", variants="synonyms")
    assert [line["variant_ranks"] for line in outcome_lines(tmp_path / "s.json")] == [[None, 3], [None, None], [None, None]]


def test_a_variant_of_another_build_is_refused_naming_its_row(tmp_path, monkeypatch):
    aspirin = item(0, "Aspirin", ["pain"])
    other = variant({**aspirin, "answers": ["fever"]}, "default_prompt", "Aspirin", "[X] x [Y] .")
    folder = write_folder(tmp_path / "data", {"full": [aspirin], "variants": [other]})
    with pytest.raises(
        ValueError, match=r"row 1: variant default_prompt of 'may_treat-0000' is not a variant of the probed item"
    ):
        probe(monkeypatch, EchoProber(), folder, tmp_path / "r.json", config="full", variants="templates")


def test_probe_help_lists_the_variants_option(capsys):
    from medprobe.cli import main

    with pytest.raises(SystemExit):
        main(["probe", "--prober", "contrastive", "--help"])
    assert "--variants {none,templates,synonyms,all}" in capsys.readouterr().out


def test_the_shipped_sample_has_variants_that_pair_with_its_items(tmp_path, monkeypatch):
    record = probe(monkeypatch, SubjectProber(), SAMPLE, tmp_path / "r.json", variants="all")
    assert record.settings["variant_slots"] == ["default_prompt", "synonym_1", "synonym_2"]
    assert record.counts["variant_queries"] == 118 and record.counts["items_with_variants"] == 100  # hard: 106 of 108 items


def test_compare_pairs_a_run_with_variants_with_a_plain_one_and_two_with_variants_on_every_metric(
    synthetic_medlama_hub, tmp_path, monkeypatch
):
    from medprobe.cli import main

    probe(monkeypatch, SubjectProber(), synthetic_medlama_hub, tmp_path / "plain.json")
    subject = probe(monkeypatch, SubjectProber(), synthetic_medlama_hub, tmp_path / "subject.json", variants="templates")
    template = probe(monkeypatch, TemplateProber(), synthetic_medlama_hub, tmp_path / "template.json", variants="templates")
    assert main(["compare", str(tmp_path / "plain.json"), str(tmp_path / "subject.json"), "--out", str(tmp_path / "c1")]) == 0
    (first,) = json.loads((tmp_path / "c1" / "compare.json").read_text())["comparisons"]
    assert "acc@1" in first["differences"] and "consistency@1" not in first["differences"]  # the same data: it pairs
    assert main(["compare", str(tmp_path / "subject.json"), str(tmp_path / "template.json"), "--out", str(tmp_path / "c2")]) == 0
    (second,) = json.loads((tmp_path / "c2" / "compare.json").read_text())["comparisons"]
    found = second["differences"]["consistency@1"]
    assert found["difference"] == pytest.approx(template.metrics["consistency@1"] - subject.metrics["consistency@1"], abs=1e-12)
    assert found["low"] <= found["difference"] <= found["high"]
