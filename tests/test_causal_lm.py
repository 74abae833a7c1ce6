"""CausalLMProbe: cached, batched scores equal a direct per-candidate log-likelihood."""

import numpy as np
import pytest
import torch

from probers.lm.candidate_scoring import ShortlistProber, top_k
from probers.lm.causal_lm import CausalLMProbe
from tiny_models import byte_bpe_tokenizer, tiny_random_bert_mlm, tiny_random_gpt2, tiny_random_llama, tiny_random_t5

QUERIES = ["aspirin may treat [Y] .", "the gene has [Y] , the disease is alpha ."]
CANDIDATES = ["fever", "heart failure", "renal failure", "cough", "alphazine", "chronic heart failure of the gene"]


def direct_log_likelihood(model, tokenizer, query: str, candidate: str, mean: bool, suffix: bool) -> float:
    """The definition, one candidate and one full forward pass at a time (no cache, no batching)."""
    before, after = query.split("[Y]")
    context = len(tokenizer(before.rstrip())["input_ids"])
    answer_end = len(tokenizer(before + candidate)["input_ids"])
    full = tokenizer(before + candidate + after)["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([full])).logits[0], dim=-1)
    values = [logp[t - 1, full[t]].item() for t in range(context, len(full) if suffix else answer_end)]
    return float(np.mean(values) if mean else np.sum(values))


@pytest.mark.parametrize("make_model", [tiny_random_gpt2, tiny_random_llama], ids=["tiny_random_gpt2", "tiny_random_llama"])
@pytest.mark.parametrize("bos", [False, True], ids=["no_bos", "bos"])
@pytest.mark.parametrize(("normalization", "suffix"), [("mean", True), ("none", True), ("none", False)])
def test_cached_batched_scores_equal_direct_log_likelihood(make_model, bos, normalization, suffix):
    tokenizer = byte_bpe_tokenizer(bos=bos)
    model = make_model(tokenizer)
    probe = CausalLMProbe(
        model,
        tokenizer,
        length_normalization=normalization,
        score_suffix=suffix,
        literal_template=True,
        batch_size=4,
        progress=False,
    )
    lists = [CANDIDATES, CANDIDATES[::-1][:4]]
    scores = probe.score_candidates(QUERIES, lists)
    for query, names, row in zip(QUERIES, lists, scores):
        expected = [direct_log_likelihood(model, tokenizer, query, n, normalization == "mean", suffix) for n in names]
        np.testing.assert_allclose(row, expected, rtol=1e-4, atol=1e-4)


def test_space_before_the_final_period_is_removed_unless_literal_tiny_random_gpt2():
    tokenizer = byte_bpe_tokenizer()
    model = tiny_random_gpt2(tokenizer)
    tidy = CausalLMProbe(model, tokenizer, progress=False).score_candidates(["aspirin may treat [Y] ."], [CANDIDATES])
    literal = CausalLMProbe(model, tokenizer, literal_template=True, progress=False)
    np.testing.assert_allclose(tidy[0], literal.score_candidates(["aspirin may treat [Y]."], [CANDIDATES])[0], atol=1e-5)
    assert not np.allclose(tidy[0], literal.score_candidates(["aspirin may treat [Y] ."], [CANDIDATES])[0], atol=1e-3)


def test_slot_at_the_start_is_conditioned_on_bos_tiny_random_gpt2():
    tokenizer = byte_bpe_tokenizer()
    model = tiny_random_gpt2(tokenizer)
    probe = CausalLMProbe(model, tokenizer, length_normalization="none", literal_template=True, progress=False)
    [row] = probe.score_candidates(["[Y] may treat fever ."], [["aspirin", "ibuprofen"]])
    for name, score in zip(["aspirin", "ibuprofen"], row):
        full = [tokenizer.bos_token_id] + tokenizer(name + " may treat fever .")["input_ids"]
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([full])).logits[0], dim=-1)
        assert score == pytest.approx(sum(logp[t - 1, full[t]].item() for t in range(1, len(full))), abs=1e-4)


def test_rank_uses_the_scores_and_batch_size_changes_nothing_tiny_random_llama():
    tokenizer = byte_bpe_tokenizer()
    model = tiny_random_llama(tokenizer, seed=5)
    small = CausalLMProbe(model, tokenizer, batch_size=1, progress=False).score_candidates(QUERIES, [CANDIDATES] * 2)
    probe = CausalLMProbe(model, tokenizer, batch_size=64, progress=False)
    large = probe.score_candidates(QUERIES, [CANDIDATES] * 2)
    for a, b in zip(small, large):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert probe.rank(QUERIES, CANDIDATES, 3) == [top_k(CANDIDATES, row, 3) for row in large]


def test_shortlist_prober_scores_only_the_shortlisted_candidates_tiny_random_gpt2():
    tokenizer = byte_bpe_tokenizer()
    probe = CausalLMProbe(tiny_random_gpt2(tokenizer), tokenizer, progress=False)
    shortlists = {QUERIES[0]: ["cough", "not a candidate", "fever"], QUERIES[1]: ["alphazine"]}
    ranked = ShortlistProber(probe, shortlists, source="test").rank(QUERIES, CANDIDATES, k=10)
    [scores] = probe.score_candidates(QUERIES[:1], [["cough", "fever"]])
    assert ranked == [top_k(["cough", "fever"], scores, 10), ["alphazine"]]
    with pytest.raises(ValueError, match="no shortlist for the query"):
        ShortlistProber(probe, {}, source="test").rank(QUERIES, CANDIDATES, k=1)


def test_wrong_models_and_long_candidates_are_errors_that_name_the_model():
    tokenizer = byte_bpe_tokenizer()
    t5, _ = tiny_random_t5()
    with pytest.raises(ValueError, match=r"'tiny-t5' cannot be used here: it is an encoder-decoder model \(t5\)"):
        CausalLMProbe(t5, tokenizer, model_name="tiny-t5")
    bert, _ = tiny_random_bert_mlm()
    with pytest.raises(ValueError, match=r"'tiny-bert' cannot be used here: .*not a causal LM"):
        CausalLMProbe(bert, tokenizer, model_name="tiny-bert")
    probe = CausalLMProbe(tiny_random_gpt2(tokenizer), tokenizer, model_name="tiny-gpt2", progress=False)
    with pytest.raises(ValueError, match=r"more than the 64 positions of 'tiny-gpt2'"):
        probe.score_candidates(QUERIES[:1], [["fever", " ".join(["chronic heart failure"] * 30)]])
    with pytest.raises(ValueError, match="blank candidate"):
        probe.score_candidates(QUERIES[:1], [["fever", ""]])
