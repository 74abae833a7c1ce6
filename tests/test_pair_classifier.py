"""PairClassifierProbe and `medprobe probe --prober pair-classifier` with a tiny random BERT.

A 1-layer BERT with a hand-written vocabulary checks the plumbing (splits, Trainer, early
stopping, prediction, scoring, results file); it knows nothing, so no test asserts a score
level. The real MiniLM run is a measured run (see the README and the issue note).
"""

import json
import string

import pytest
from datasets import load_dataset

from probers.cli import main
from probers.tasks.disknE_splits import disease_splits, eligible_diseases
from probers.lm.pair_classifier import PairClassifierProbe

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
    code = main([
        "probe", "--dataset", str(built_disknE), "--config", "terminological_similar", "--prober", "pair-classifier",
        "--model", tiny_random_bert, "--diseases", "2", "--epochs", "1", "--seeds", "2", "--seed", "11", "--out", str(out),
    ])  # fmt: skip
    assert code == 0
    record = json.loads(out.read_text())
    assert record["prober"] == "pair-classifier" and record["settings"]["seeds"] == [11, 12]
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
    assert record["timings"]["per_disease_mean"] > 0
    table = capsys.readouterr().out
    assert "macro F1" in table and "weighted F1 (by positive test rows)" in table and "±" in table


def test_probe_command_errors(built_disknE, tmp_path, capsys):
    args = ["probe", "--dataset", str(built_disknE), "--config", "terminological_similar", "--prober", "pair-classifier"]
    assert main(args) == 2 and "needs --model" in capsys.readouterr().err
    assert main([*args, "--model", "minilm", "--category", "tests_diseases"]) == 2
    assert "has no categories" in capsys.readouterr().err
    assert main([*args, "--model", "minilm", "--diseases", "C0000000"]) == 2
    assert "C0000000: not a target disease of this config" in capsys.readouterr().err


def test_the_prober_is_exported_by_the_package():
    import probers

    assert probers.PairClassifierProbe is PairClassifierProbe
