"""The ranking runner of `medprobe probe` with a stand-in prober (plumbing only, no model)."""

import argparse
import json

import pytest

from probers.probe import run_ranking
from probers.ranking import answer_space, fill_mask_slot, relation_answer_spaces


class LookupProber:
    """Ranks the gold answers of known queries first, then the other candidates in their order."""

    settings = {"kind": "lookup"}

    def __init__(self, gold: dict[str, list[str]]):
        self.gold = gold
        self.seen_candidates: list[list[str]] = []

    def rank(self, queries, candidates, k):
        self.seen_candidates.append(list(candidates))
        ranked = []
        for query in queries:
            first = [c for c in self.gold.get(query, []) if c in candidates]
            ranked.append((first + [c for c in candidates if c not in first])[:k])
        return ranked


@pytest.fixture
def hub(synthetic_medlama_hub):
    return synthetic_medlama_hub


def args_for(hub, tmp_path, **overrides):
    values = dict(
        dataset=str(hub), config="full", split="test", prober="lookup", model="none", seed=None, batch_size=8,
        k=[1, 10], candidates="set", exclude_head=False, per_relation=None, out=str(tmp_path / "results.json"), plot=None, predictions=None,
    )  # fmt: skip
    values.update(overrides)
    return argparse.Namespace(**values)


def test_perfect_prober_scores_one_and_the_results_file_has_the_contract(hub, tmp_path, capsys):
    from datasets import load_dataset

    ds = load_dataset(str(hub), split="test")
    prober = LookupProber(dict(zip(ds["query"], ds["answers"])))
    assert run_ranking(prober=prober, args=args_for(hub, tmp_path, plot=str(tmp_path / "bars.png"))) == 0
    record = json.loads((tmp_path / "results.json").read_text())
    for key in ("benchmark", "dataset", "config", "split", "prober", "model", "seed", "settings", "metrics", "per_group", "timings", "versions"):
        assert key in record
    assert record["metrics"]["acc@1"] == 1.0 and record["metrics"]["macro_acc@10"] == 1.0
    assert len(record["per_group"]) == 19
    assert record["counts"] == {"queries": 57, "candidates": len(answer_space(ds)), "queries_without_predictions": 0}
    assert record["settings"]["kind"] == "lookup" and "torch" in record["versions"]
    assert (tmp_path / "bars.png").stat().st_size > 1000
    table = capsys.readouterr().out
    assert "micro (all)" in table and "macro" in table and "may_treat" in table


def test_wrong_prober_scores_zero_and_predictions_are_written(hub, tmp_path):
    prober = LookupProber({})  # ranks candidates in sorted order: the gold names are never first
    run_ranking(prober=prober, args=args_for(hub, tmp_path, k=[1], predictions=str(tmp_path / "p.jsonl")))
    record = json.loads((tmp_path / "results.json").read_text())
    assert record["metrics"]["acc@1"] < 0.5
    lines = (tmp_path / "p.jsonl").read_text().splitlines()
    assert len(lines) == 57 and json.loads(lines[0])["id"].endswith("-0000")


def test_per_relation_subset_keeps_the_whole_answer_space(hub, tmp_path):
    from datasets import load_dataset

    prober = LookupProber({})
    run_ranking(prober=prober, args=args_for(hub, tmp_path, per_relation=1))
    record = json.loads((tmp_path / "results.json").read_text())
    assert record["counts"]["queries"] == 19
    # the first row of each relation has head Alphazine; the space still holds every name of the set
    assert prober.seen_candidates[0] == answer_space(load_dataset(str(hub), split="test"))
    assert "Zetapathy" in prober.seen_candidates[0]


def test_relation_candidates_give_each_relation_its_own_answers(hub, tmp_path):
    from datasets import load_dataset

    ds = load_dataset(str(hub), split="test")
    prober = LookupProber({})
    run_ranking(prober=prober, args=args_for(hub, tmp_path, candidates="relation"))
    spaces = relation_answer_spaces(ds)
    assert len(prober.seen_candidates) == 19
    assert prober.seen_candidates[0] == spaces[ds[0]["relation"]]


def test_mask_slot_and_missing_fields_errors(hub, tmp_path):
    assert fill_mask_slot("Aspirin may treat [Y] .", "[MASK]") == "Aspirin may treat [MASK] ."
    with pytest.raises(ValueError, match=r"no \[Y\] slot"):
        fill_mask_slot("Aspirin may treat fever .", "[MASK]")
    with pytest.raises(ValueError, match=r"does not load \(config 'medium', split 'test'\): BuilderConfig 'medium' not found"):
        run_ranking(prober=LookupProber({}), args=args_for(hub, tmp_path, config="medium"))


def test_exclude_head_drops_the_query_head_and_keeps_k_names(hub, tmp_path):
    from datasets import load_dataset

    ds = load_dataset(str(hub), split="test")
    # ranks each query's head name first, then its gold answers: a head-retrieving encoder
    prober = LookupProber({q: [h, *a] for q, h, a in zip(ds["query"], ds["head_name"], ds["answers"])})
    run_ranking(prober=prober, args=args_for(hub, tmp_path, k=[1, 3], predictions=str(tmp_path / "kept.jsonl")))
    kept = json.loads((tmp_path / "results.json").read_text())
    run_ranking(prober=prober, args=args_for(hub, tmp_path, k=[1, 3], exclude_head=True, predictions=str(tmp_path / "p.jsonl")))
    excluded = json.loads((tmp_path / "results.json").read_text())
    assert kept["metrics"]["acc@1"] == 0.0 and excluded["metrics"]["acc@1"] == 1.0
    assert excluded["settings"]["exclude_head"] is True
    for line, head in zip((tmp_path / "p.jsonl").read_text().splitlines(), ds["head_name"]):
        predictions = json.loads(line)["predictions"]
        assert head not in predictions and len(predictions) == 3
