"""MaskAverageProbe: the batched per-length scores equal a direct per-candidate computation."""

import numpy as np
import pytest
import torch

from medprobe.lm.candidate_scoring import top_k
from medprobe.lm.mask_average import MaskAverageProbe
from ranked_names import names_of
from tiny_models import tiny_random_bert_mlm

QUERIES = ["aspirin may treat [Y] .", "the gene has [Y] , the disease is alpha ."]
CANDIDATES = ["fever", "heart failure", "renal failure", "cough", "alphazine", "betaitis", "heart attack of the gene"]


def direct_mean_log_prob(model, tokenizer, query: str, candidate: str) -> float:
    """The definition, one candidate at a time: L masks in the slot, mean log p of its tokens there."""
    ids = tokenizer(candidate, add_special_tokens=False)["input_ids"]
    text = query.replace("[Y]", " ".join([tokenizer.mask_token] * len(ids)))
    inputs = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        logp = torch.log_softmax(model(**inputs).logits[0], dim=-1)
    masks = (inputs["input_ids"][0] == tokenizer.mask_token_id).nonzero().flatten().tolist()
    return float(np.mean([logp[position, token].item() for position, token in zip(masks, ids)]))


def test_batched_scores_equal_direct_per_candidate_computation_tiny_random_bert():
    model, tokenizer = tiny_random_bert_mlm()
    probe = MaskAverageProbe(model, tokenizer, batch_size=3, progress=False)
    lists = [CANDIDATES, CANDIDATES[::-1][:5]]  # one list per query, different lengths and orders
    scores = probe.score_candidates(QUERIES, lists)
    for query, names, row in zip(QUERIES, lists, scores):
        assert row.shape == (len(names),)
        expected = [direct_mean_log_prob(model, tokenizer, query, name) for name in names]
        np.testing.assert_allclose(row, expected, rtol=1e-5, atol=1e-5)
    # the MLM head ran on the mask positions only; the full forward pass gives the same scores
    assert probe.logits_at.head is model.cls
    probe.logits_at.head = None
    for full, row in zip(probe.score_candidates(QUERIES, lists), scores):
        np.testing.assert_allclose(full, row, rtol=1e-5, atol=1e-5)
    probe.forward_passes //= 2
    # one forward pass per (query, distinct candidate length), never one per candidate
    lengths = [{len(tokenizer(n, add_special_tokens=False)["input_ids"]) for n in names} for names in lists]
    assert probe.forward_passes == sum(map(len, lengths)) < sum(map(len, lists))


def test_rank_is_built_on_the_scores_tiny_random_bert():
    model, tokenizer = tiny_random_bert_mlm(seed=3)
    probe = MaskAverageProbe(model, tokenizer, progress=False)
    ranked = names_of(probe.rank(QUERIES, CANDIDATES, k=4))
    scores = probe.score_candidates(QUERIES, [CANDIDATES] * 2)
    assert ranked == [top_k(CANDIDATES, row, 4) for row in scores]
    assert [len(r) for r in ranked] == [4, 4] and all(len(set(r)) == 4 for r in ranked)


def test_output_bias_makes_the_known_multi_token_candidate_win_tiny_random_bert():
    model, tokenizer = tiny_random_bert_mlm(seed=1)
    with torch.no_grad():
        model.get_output_embeddings().bias[tokenizer.convert_tokens_to_ids(["heart", "failure"])] += 30.0
    probe = MaskAverageProbe(model, tokenizer, progress=False)
    candidates = ["fever", "heart attack", "renal failure", "heart failure", "cough"]  # winner neither first nor last
    assert [r[0] for r in names_of(probe.rank(QUERIES, candidates, k=2))] == ["heart failure", "heart failure"]
    # heart attack and renal failure each hold one boosted token: they come next, ahead of fever and cough
    assert set(names_of(probe.rank(QUERIES[:1], candidates, k=3))[0][1:]) == {"heart attack", "renal failure"}


def test_equal_scores_keep_candidate_order_bias_only_bert():
    model, tokenizer = tiny_random_bert_mlm(tie_word_embeddings=False)
    with torch.no_grad():  # logits = bias = 0: every token equally likely, every candidate ties
        model.get_output_embeddings().weight.zero_()
        model.get_output_embeddings().bias.zero_()
    probe = MaskAverageProbe(model, tokenizer, progress=False)
    assert names_of(probe.rank(QUERIES[:1], CANDIDATES, k=len(CANDIDATES))) == [CANDIDATES]


def test_bad_candidates_are_errors_that_name_the_model_tiny_random_bert():
    model, tokenizer = tiny_random_bert_mlm(max_position_embeddings=16)
    probe = MaskAverageProbe(model, tokenizer, model_name="tiny-bert", progress=False)
    with pytest.raises(ValueError, match=r"more than the 16 positions of 'tiny-bert'"):
        probe.score_candidates(QUERIES[:1], [["fever", " ".join(["heart failure"] * 8)]])
    with pytest.raises(ValueError, match="give no tokens"):
        probe.score_candidates(QUERIES[:1], [["fever", "  "]])
    with pytest.raises(ValueError, match="one candidate list per query"):
        probe.score_candidates(QUERIES, [CANDIDATES])
    with pytest.raises(ValueError, match=r"no \[Y\] slot"):
        probe.rank(["aspirin may treat fever ."], CANDIDATES, 1)
