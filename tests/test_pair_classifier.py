"""PairClassifierProbe, the DisKnE task and `medprobe probe --prober pair-classifier` with a tiny random BERT.

A 1-layer BERT with a hand-written vocabulary checks the plumbing (splits, Trainer, early
stopping, prediction, scoring, results file); it knows nothing, so no test asserts a score
level. The real MiniLM run is a measured run (see the README and the issue note).
"""

import json
import string

import pytest
from datasets import load_dataset

from medprobe.cli import main
from medprobe.contracts import DiseaseClassifier, Prober, UserError
from medprobe.lm.pair_classifier import PairClassifierProbe
from medprobe.registry import registry
from medprobe.run import RunRequest, run
from medprobe.tasks.disknE import DisKnETask, mean_std
from medprobe.tasks.disknE_splits import disease_splits, eligible_diseases

WORDS = ["patient", "was", "admitted", "for", "evaluation", "history", "of", "noted", "the", "to", "have", "disease"]


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """A 16-wide model spends its time synchronising threads; on a shared 2-core machine one is ~7x faster."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_random_bert(tmp_path_factory):
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny_bert")
    letters = string.ascii_lowercase + string.digits
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *letters, *(f"##{c}" for c in letters), *".,;:()-"]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=256,
    )
    BertModel(config).save_pretrained(folder)  # an encoder without a classification head, like MiniLM
    return str(folder)


@pytest.fixture(scope="module")
def terminological(built_disknE):
    return load_dataset(str(built_disknE), "terminological_similar", split="test")


def test_encode_uses_the_chosen_hypothesis(tiny_random_bert, terminological):
    rows = terminological.select(range(4))
    canonical = PairClassifierProbe(tiny_random_bert).encode(rows)
    full = PairClassifierProbe(tiny_random_bert, hypothesis="full").encode(rows)
    only = PairClassifierProbe(tiny_random_bert, hypothesis_only=True).encode(rows)
    assert canonical["labels"] == list(rows["label"])
    assert all(1 in types for types in canonical["token_type_ids"])  # two segments
    assert all(len(f) > len(c) for f, c in zip(full["input_ids"], canonical["input_ids"]))
    assert all(set(types) == {0} for types in only["token_type_ids"])  # the hypothesis alone
    with pytest.raises(ValueError, match="hypothesis must be one of"):
        PairClassifierProbe(tiny_random_bert, hypothesis="long")


def test_run_disease_is_seeded_plumbing_tiny_random_bert(tiny_random_bert, terminological):
    prober = PairClassifierProbe(tiny_random_bert, epochs=1)
    encoded = prober.encode(terminological)
    splits = disease_splits(terminological, eligible_diseases(terminological)[0][0])
    first, again = (prober.run_disease(encoded, splits, seed=5) for _ in range(2))
    assert first.predictions == again.predictions and len(first.predictions) == len(splits.test)
    assert first.references == [terminological[i]["label"] for i in splits.test]
    assert set(first.predictions) <= {0, 1} and first.epochs == 1 and first.best_validation_loss > 0


def test_probe_command_reports_per_disease_f1_plumbing_tiny_random_bert(tiny_random_bert, built_disknE, tmp_path, capsys):
    out = tmp_path / "results.json"
    code = main(
        [
            "probe",
            "--dataset",
            str(built_disknE),
            "--config",
            "terminological_similar",
            "--prober",
            "pair-classifier",
            "--model",
            tiny_random_bert,
            "--diseases",
            "2",
            "--epochs",
            "1",
            "--seeds",
            "2",
            "--seed",
            "11",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    record = json.loads(out.read_text())
    assert record["prober"] == "pair-classifier" and record["settings"]["seeds"] == [11, 12]
    assert record["benchmark"] == "disknE" and record["seed"] == 11 and record["settings"]["category"] is None
    assert record["settings"]["eval_batch_size"] == 64 and record["settings"]["hypothesis_only"] is False
    assert record["settings"]["max_epochs"] == 1 and record["settings"]["learning_rate"] == 2e-5
    assert len(record["per_group"]) == 2 and record["counts"]["trainings"] == 4
    for values in record["per_group"].values():
        assert len(values["f1_per_seed"]) == 2 and 0 <= values["f1"] <= 1 and values["test_positives"] >= 2
        assert values["train_rows"] > 1000 and values["epochs"] == 1
    # the averages are the metric's, per seed, then averaged over seeds
    per_group = record["per_group"].values()
    macro_per_seed = [sum(v["f1_per_seed"][i] for v in per_group) / 2 for i in range(2)]
    assert record["metrics"]["macro_f1"] == pytest.approx(sum(macro_per_seed) / 2)
    weights = [v["test_positives"] for v in per_group]
    weighted = sum(v["f1"] * w for v, w in zip(per_group, weights)) / sum(weights)
    assert record["metrics"]["weighted_f1"] == pytest.approx(weighted)
    assert record["timings"]["per_disease_mean"] > 0 and {"load_dataset", "load_model", "probe", "encode"} <= set(
        record["timings"]
    )
    table = capsys.readouterr().out
    assert "macro F1" in table and "weighted F1 (by positive test rows)" in table and "±" in table


def test_hypothesis_only_in_one_category_through_run_plumbing_tiny_random_bert(tiny_random_bert, built_disknE, tmp_path):
    request = RunRequest(
        task="disknE",
        prober="pair-classifier",
        dataset=str(built_disknE),
        config="medical_similar",
        model=tiny_random_bert,
        device="cpu",
        prober_options={"epochs": 1, "hypothesis_only": True},
        task_options={"category": "tests_diseases", "diseases": 1},
        out=str(tmp_path / "results.json"),
    )
    record = run(request, print_fn=lambda _: None)
    assert record.seed == 42 and record.settings["category"] == "tests_diseases" and record.settings["hypothesis_only"] is True
    (values,) = record.per_group.values()
    assert values["removed_from_training"]["hypothesis_contains_a_test_hypothesis"] > 0
    assert json.loads((tmp_path / "results.json").read_text())["per_group"] == json.loads(json.dumps(record.per_group))


def test_probe_command_errors(built_disknE, tmp_path, capsys):
    args = ["probe", "--dataset", str(built_disknE), "--config", "terminological_similar", "--prober", "pair-classifier"]
    with pytest.raises(SystemExit) as exit_:  # argparse: --model is required
        main([*args, "--out", str(tmp_path / "r.json")])
    assert exit_.value.code == 2 and "--model" in capsys.readouterr().err
    # the dataset's problems stop the run before the model loads (minilm is never loaded here)
    assert main([*args, "--model", "minilm", "--category", "tests_diseases", "--out", str(tmp_path / "r.json")]) == 2
    assert "has no categories" in capsys.readouterr().err
    assert main([*args, "--model", "minilm", "--diseases", "C0000000", "--out", str(tmp_path / "r.json")]) == 2
    assert "C0000000: not a target disease of this config" in capsys.readouterr().err
    # a flag of another prober or task is refused, naming its owner
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--model", "minilm", "--num-masks", "3"])
    assert exit_.value.code == 2 and "--prober mask-predict" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_run_without_model_is_a_user_error(built_disknE):
    request = RunRequest(task="disknE", prober="pair-classifier", dataset=str(built_disknE), config="terminological_similar")
    with pytest.raises(UserError, match="needs --model"):
        run(request)


def test_task_options_are_checked():
    with pytest.raises(UserError, match="--seeds"):
        DisKnETask(seeds=0)
    with pytest.raises(UserError, match="--diseases N needs N >= 1"):
        DisKnETask(diseases=0)
    assert DisKnETask(diseases="3").diseases == 3 and DisKnETask(diseases="C1, C2").diseases == ["C1", "C2"]
    with pytest.raises(UserError, match="--diseases: expected a number or comma-separated CUIs"):
        DisKnETask(diseases=",")


def test_load_picks_the_diseases_and_says_how_many(built_disknE, capsys):
    eligible, skipped = eligible_diseases(load_dataset(str(built_disknE), "terminological_similar", split="test"))
    data = DisKnETask(diseases=2).load(str(built_disknE), "terminological_similar", "test")
    assert data.diseases == eligible[:2] and data.eligible == eligible and data.skipped == skipped
    assert f"probing 2 of the {len(eligible)} target diseases with at least 2 positive test rows" in capsys.readouterr().out
    chosen = DisKnETask(diseases=[eligible[1]]).load(str(built_disknE), "terminological_similar", "test")
    assert chosen.diseases == [eligible[1]]


class FakeClassifier:
    """A DiseaseClassifier that predicts every test row positive: checks the task's splits and seeds."""

    def __init__(self, hypothesis_only: bool):
        self.hypothesis_only = hypothesis_only
        self.calls: list[tuple[str, int, int]] = []

    def encode(self, ds):
        return ds

    def run_disease(self, encoded, splits, seed):
        from medprobe.lm.pair_classifier import DiseaseRun

        self.calls.append((splits.cui, seed, len(splits.train) + len(splits.validation)))
        labels = list(encoded.select(splits.test)["label"])
        return DiseaseRun(splits.cui, seed, [1] * len(labels), labels, epochs=1.0, best_validation_loss=None, seconds=0.0)


def test_predict_derives_splits_for_the_prober_and_seeds(built_disknE):
    task = DisKnETask(diseases=2, seeds=2)
    data = task.load(str(built_disknE), "terminological_similar", "test")
    standard, only = FakeClassifier(hypothesis_only=False), FakeClassifier(hypothesis_only=True)
    assert isinstance(standard, DiseaseClassifier)
    outputs = task.predict(standard, data, seed=None)
    assert outputs.seeds == [42, 43] and [(cui, seed) for cui, seed, _ in standard.calls] == [
        (cui, seed) for seed in (42, 43) for cui in data.diseases
    ]
    task.predict(only, data, seed=7)
    assert [seed for _, seed, _ in only.calls] == [7, 7, 8, 8]
    # the hypothesis-only baseline also drops training rows holding a Test_X hypothesis (exclude_test_hypotheses)
    for cui in data.diseases:
        assert "hypothesis_contains_a_test_hypothesis" not in outputs.splits[cui].removed
        expected = disease_splits(data.ds, cui, exclude_test_hypotheses=True)
        assert expected.removed["hypothesis_contains_a_test_hypothesis"] > 0  # so the two pools differ
        assert next(n for c, _, n in only.calls if c == cui) == len(expected.train) + len(expected.validation)
        assert next(n for c, _, n in standard.calls if c == cui) > len(expected.train) + len(expected.validation)
    scored = task.score(data, outputs)
    assert scored.seed == 42 and scored.settings == {"category": None, "seeds": [42, 43]}
    assert scored.counts == {"rows": data.ds.num_rows, "diseases": 2, "skipped_diseases": len(data.skipped), "trainings": 4}
    assert set(task.timings) == {"split", "encode", "fine_tune_and_predict", "per_disease_mean"}
    for values in scored.per_group.values():  # all-positive predictions: recall 1, F1 the same for both seeds
        assert values["recall"] == 1 and values["f1_std"] == 0 and values["f1_per_seed"][0] == values["f1_per_seed"][1]


def test_mean_std_is_the_sample_std():
    assert mean_std([0.5]) == (0.5, 0.0)
    mean, std = mean_std([0.2, 0.4, 0.6])
    assert mean == pytest.approx(0.4) and std == pytest.approx(0.2)  # n - 1: population std would be 0.163


def test_defaults_are_the_registry_options(tiny_random_bert):
    import inspect

    parameters = inspect.signature(PairClassifierProbe.__init__).parameters
    for option in registry().probers["pair-classifier"].options:
        assert parameters[option.dest].default == option.default, option.flag
    parameters = inspect.signature(DisKnETask.__init__).parameters
    for option in registry().tasks["disknE"].options:
        assert parameters[option.dest].default == option.default, option.flag
    prober = PairClassifierProbe(tiny_random_bert, epochs=1.5, device="cpu")
    assert isinstance(prober, Prober) and prober.name == "pair-classifier" and prober.kinds == ("disease-classification",)
    assert isinstance(prober, DiseaseClassifier)
    assert prober.training_arguments("unused", seed=1).num_train_epochs == 1.5
    assert prober.settings["eval_batch_size"] == 64 and prober.settings["max_epochs"] == 1.5


def test_the_prober_is_exported_by_the_package():
    import medprobe

    assert medprobe.PairClassifierProbe is PairClassifierProbe
