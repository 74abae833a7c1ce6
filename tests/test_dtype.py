"""`--dtype`: one rule resolves it (medprobe.models.resolve_dtype); the Contrastive-Probe loads in it
and records it. Tiny random BERTs (tiny_bert.py): plumbing, not accuracy."""

import pytest
import torch

from medprobe.contracts import UserError
from medprobe.contrastive import ContrastiveProbe
from medprobe.models import DTYPES, resolve_dtype
from ranked_names import names_of
from tiny_bert import tiny_bert, tiny_tokenizer, toy_corpus

CPU = torch.device("cpu")


def test_auto_is_float32_on_cpu_and_named_dtypes_resolve():
    assert resolve_dtype("auto", CPU) is torch.float32
    assert resolve_dtype("float32", CPU) is torch.float32
    assert resolve_dtype("bfloat16", CPU) is torch.bfloat16


def test_a_bad_dtype_is_a_user_error_listing_the_choices():
    with pytest.raises(UserError, match="unknown --dtype 'fp8'; expected one of auto, float32, bfloat16, float16"):
        resolve_dtype("fp8", CPU)
    assert DTYPES == ("auto", "float32", "bfloat16", "float16")


def test_float16_on_cpu_is_refused_with_the_alternative():
    # refused, not warned: CPU float16 kernels are missing or slower than float32 and overflow in softmax
    with pytest.raises(UserError, match="float16 is not supported on CPU.*bfloat16"):
        resolve_dtype("float16", CPU)


def test_a_tiny_encoder_probed_in_bfloat16_ranks_and_records_its_dtype_plumbing_tiny_random_bert():
    queries = [f"{w} might treat [Y] ." for w in ("alpha", "beta", "gamma")]
    names = toy_corpus(20)
    half = ContrastiveProbe(tiny_bert(), tiny_tokenizer(), device="cpu", show_progress=False, dtype="bfloat16")
    assert next(half.model.parameters()).dtype is torch.bfloat16 and half.settings["dtype"] == "bfloat16"
    ranked = names_of(half.rank(queries, names, 5))
    assert len(ranked) == 3 and all(len(r) == 5 and set(r) <= set(names) for r in ranked)
    assert half.encode_queries(queries).dtype is torch.float32  # search runs on float32 embeddings
    full = ContrastiveProbe(tiny_bert(), tiny_tokenizer(), device="cpu", show_progress=False)
    assert full.settings["dtype"] == "float32" and next(full.model.parameters()).dtype is torch.float32


def test_lm_probers_load_in_the_asked_dtype_and_record_it_plumbing_tiny_random_bert(tmp_path):
    from medprobe.lm.mask_average import MaskAverageProbe
    from tiny_models import tiny_random_bert_mlm

    model, tokenizer = tiny_random_bert_mlm()
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    half = MaskAverageProbe.from_pretrained(str(tmp_path), device="cpu", dtype="bfloat16")
    assert half.model.dtype is torch.bfloat16 and half.settings["dtype"] == "bfloat16"
    full = MaskAverageProbe.from_pretrained(str(tmp_path), device="cpu")
    assert full.model.dtype is torch.float32 and full.settings["dtype"] == "float32"
    with pytest.raises(UserError, match="unknown --dtype"):
        MaskAverageProbe.from_pretrained(str(tmp_path), device="cpu", dtype="half")
