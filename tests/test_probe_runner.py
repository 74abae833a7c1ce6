"""The MedLAMA task through the run loop (medprobe.run.run) with a stand-in prober (plumbing only, no model)."""

import json
import shutil

import pytest

import medprobe.run
from medprobe.contracts import Prober, fill_mask_slot
from medprobe.run import RunRequest, run
from medprobe.tasks.medlama import MedLAMATask, answer_space, relation_answer_spaces


class LookupProber(Prober):
    """Ranks the gold answers of known queries first, then the other candidates in their order."""

    name = "lookup"
    kinds = ("ranking",)

    def __init__(self, gold: dict[str, list[str]]):
        self.gold = gold
        self.seen_candidates: list[list[str]] = []

    @property
    def settings(self) -> dict:
        return {"kind": "lookup"}

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


def run_with(monkeypatch, prober, hub, tmp_path, dataset=None, plot=None, **task_options):
    """`run` of the medlama task with `prober` standing in for the registered contrastive prober."""
    monkeypatch.setattr(medprobe.run, "make_prober", lambda *args, **kwargs: prober)
    request = RunRequest(
        task="medlama",
        prober="contrastive",
        dataset=str(dataset or hub),
        config="full",
        model="none",
        task_options=task_options,
        out=str(tmp_path / "results.json"),
        plot=plot,
    )
    return run(request)


def test_perfect_prober_scores_one_and_the_results_file_has_the_contract(hub, tmp_path, capsys, monkeypatch):
    from datasets import load_dataset

    ds = load_dataset(str(hub), split="test")
    prober = LookupProber(dict(zip(ds["query"], ds["answers"])))
    run_with(monkeypatch, prober, hub, tmp_path, plot=str(tmp_path / "bars.png"))
    record = json.loads((tmp_path / "results.json").read_text())
    for key in (
        "benchmark",
        "dataset",
        "config",
        "split",
        "prober",
        "model",
        "seed",
        "settings",
        "metrics",
        "per_group",
        "timings",
        "versions",
    ):
        assert key in record
    assert record["metrics"]["acc@1"] == 1.0 and record["metrics"]["macro_acc@10"] == 1.0
    assert len(record["per_group"]) == 19
    assert record["counts"] == {"queries": 57, "candidates": len(answer_space(ds)), "queries_without_predictions": 0}
    assert record["settings"] == {
        "k": [1, 10],
        "candidates": "set",
        "exclude_head": False,
        "per_relation": None,
        "kind": "lookup",
        # the validity facets measured (medprobe.tasks.facets): this prober returns plain names, so no confidence
        "confidence": None,
        "control_placeholder": "X",
        "shuffled_control_seed": None,
        "control_misses_only": False,
        "clusters": "subject: head_cui, else head_name",
    }
    assert "torch" in record["versions"]
    assert {"load_dataset", "load_model", "probe", "score"} <= set(record["timings"])
    assert (tmp_path / "bars.png").stat().st_size > 1000
    table = capsys.readouterr().out
    assert "micro (all)" in table and "macro" in table and "may_treat" in table


def test_benchmark_is_the_task_not_the_folder_name(hub, tmp_path, monkeypatch):
    """The old runner recorded the folder name: a set built into out/medlama_hard was benchmark "medlama_hard"."""
    folder = tmp_path / "out" / "medlama_hard"
    shutil.copytree(hub, folder)
    run_with(monkeypatch, LookupProber({}), hub, tmp_path, dataset=folder)
    record = json.loads((tmp_path / "results.json").read_text())
    assert record["benchmark"] == "medlama" and record["dataset"] == str(folder)


def test_wrong_prober_scores_zero_and_predictions_are_written(hub, tmp_path, monkeypatch):
    prober = LookupProber({})  # ranks candidates in sorted order: the gold names are never first
    run_with(monkeypatch, prober, hub, tmp_path, k=[1], predictions=str(tmp_path / "p.jsonl"))
    record = json.loads((tmp_path / "results.json").read_text())
    assert record["metrics"]["acc@1"] < 0.5
    lines = (tmp_path / "p.jsonl").read_text().splitlines()
    assert len(lines) == 57 and json.loads(lines[0])["id"].endswith("-0000")


def test_per_relation_subset_keeps_the_whole_answer_space(hub, tmp_path, monkeypatch, capsys):
    from datasets import load_dataset

    prober = LookupProber({})
    run_with(monkeypatch, prober, hub, tmp_path, per_relation=1)
    record = json.loads((tmp_path / "results.json").read_text())
    assert record["counts"]["queries"] == 19 and record["settings"]["per_relation"] == 1
    assert record["subset"]["subset"] and record["subset"]["of"] == {"probed": 19, "total": 57, "unit": "queries"}
    assert "probing the first 1 queries of each relation: 19 of 57 queries" in capsys.readouterr().out
    # the first row of each relation has head Alphazine; the space still holds every name of the set
    assert prober.seen_candidates[0] == answer_space(load_dataset(str(hub), split="test"))
    assert "Zetapathy" in prober.seen_candidates[0]


def test_relation_candidates_give_each_relation_its_own_answers(hub, tmp_path, monkeypatch):
    from datasets import load_dataset

    ds = load_dataset(str(hub), split="test")
    prober = LookupProber({})
    run_with(monkeypatch, prober, hub, tmp_path, candidates="relation")
    spaces = relation_answer_spaces(ds)
    assert len(prober.seen_candidates) == 2 * 19  # each relation's queries, then its control query (one call more)
    assert prober.seen_candidates[0] == spaces[ds[0]["relation"]]
    assert prober.seen_candidates[19:] == prober.seen_candidates[:19]  # the control ranks the same candidates
    record = json.loads((tmp_path / "results.json").read_text())
    assert record["counts"]["candidates"] == sum(map(len, spaces.values()))


def test_mask_slot_and_missing_config_errors(hub, tmp_path, monkeypatch):
    assert fill_mask_slot("Aspirin may treat [Y] .", "[MASK]") == "Aspirin may treat [MASK] ."
    with pytest.raises(ValueError, match=r"no \[Y\] slot"):
        fill_mask_slot("Aspirin may treat fever .", "[MASK]")
    with pytest.raises(ValueError, match=r"does not load \(config 'medium', split 'test'\): BuilderConfig 'medium' not found"):
        MedLAMATask().load(str(hub), "medium", "test")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"k": []}, "--k needs positive integers"),
        ({"candidates": "all"}, "--candidates must be one of set, relation"),
        ({"per_relation": 0}, "--per-relation must be a positive integer"),
        ({"rerank_top": 0}, "--rerank-top must be"),
    ],
)
def test_bad_task_options_are_user_errors(options, message):
    with pytest.raises(ValueError, match=message):
        MedLAMATask(**options)


def test_task_steps_without_the_run_loop(hub):
    """The task contract directly: load -> predict -> score, and the table of the record."""
    task = MedLAMATask(k=[3, 1], exclude_head=True)
    data = task.load(str(hub), "full", "test")
    outputs = task.predict(LookupProber({}), data, seed=None)
    scored = task.score(data, outputs)
    assert task.k == [1, 3] and task.plot_metric == "acc@3"
    facets = {f"{name}@{k}" for name in ("control_acc", "above_bias", "answerable_from_template") for k in (1, 3)}
    assert set(scored.metrics) == {"acc@1", "acc@3", "macro_acc@1", "macro_acc@3", *facets}
    assert all(len(names) == 3 and head not in names for names, head in zip(outputs.predictions, data.rows["head_name"]))
    assert [path for path, _ in task.writers(data, outputs)] == [None]


def test_exclude_head_drops_the_query_head_and_keeps_k_names(hub, tmp_path, monkeypatch):
    from datasets import load_dataset

    ds = load_dataset(str(hub), split="test")
    # ranks each query's head name first, then its gold answers: a head-retrieving encoder
    prober = LookupProber({q: [h, *a] for q, h, a in zip(ds["query"], ds["head_name"], ds["answers"])})
    run_with(monkeypatch, prober, hub, tmp_path, k=[1, 3], predictions=str(tmp_path / "kept.jsonl"))
    kept = json.loads((tmp_path / "results.json").read_text())
    run_with(monkeypatch, prober, hub, tmp_path, k=[1, 3], exclude_head=True, predictions=str(tmp_path / "p.jsonl"))
    excluded = json.loads((tmp_path / "results.json").read_text())
    assert kept["metrics"]["acc@1"] == 0.0 and excluded["metrics"]["acc@1"] == 1.0
    assert excluded["settings"]["exclude_head"] is True
    for line, head in zip((tmp_path / "p.jsonl").read_text().splitlines(), ds["head_name"]):
        predictions = json.loads(line)["predictions"]
        assert head not in predictions and len(predictions) == 3
