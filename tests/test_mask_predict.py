"""MaskPredictProbe: beam filling of 1..M masks, product-of-probabilities ranking, pooling."""

import itertools
import math

import numpy as np
import pytest
import torch

from medprobe.lm.answer_pooling import normalise_answer, pool_predictions
from medprobe.lm.mask_predict import INIT_METHODS, MaskPredictProbe
from ranked_names import names_of
from tiny_models import tiny_random_bert_mlm

QUERIES = ["aspirin may treat [Y] .", "the gene has [Y] , the disease is alpha ."]
BIAS = {"fever": 6.0, "cough": 4.5, "pain": 2.0, "[MASK]": 8.0}  # [MASK] most likely, but never predicted
BOOSTED = ("fever", "cough", "pain")


def bias_only_bert():
    """Logits = output bias at every position, whatever the input: known token probabilities."""
    model, tokenizer = tiny_random_bert_mlm(tie_word_embeddings=False)
    head = model.get_output_embeddings()
    with torch.no_grad():
        head.weight.zero_()
        head.bias.zero_()
        for token, value in BIAS.items():
            head.bias[tokenizer.convert_tokens_to_ids(token)] = value
    logp = torch.log_softmax(head.bias.detach(), dim=0)
    token_logp = {token: logp[tokenizer.convert_tokens_to_ids(token)].item() for token in (*BOOSTED, "aspirin")}
    return model, tokenizer, token_logp


def brute_force_ranking(logp: dict[str, float], num_masks: int, beam_size: int) -> list[tuple[str, float]]:
    """Per mask count the best `beam_size` sequences of boosted tokens (exact here: positions are
    independent), pooled and sorted; cut where a sequence with an unboosted token could compete."""
    pooled = []
    for n in range(1, num_masks + 1):
        sequences = [(" ".join(words), sum(logp[w] for w in words)) for words in itertools.product(BOOSTED, repeat=n)]
        pooled += sorted(sequences, key=lambda item: -item[1])[:beam_size]
    return sorted((item for item in pooled if item[1] > logp["aspirin"] + 1e-6), key=lambda item: -item[1])


@pytest.mark.parametrize("init_method", INIT_METHODS)
def test_scores_are_products_of_known_token_probabilities_bias_only_bert(init_method):
    model, tokenizer, logp = bias_only_bert()
    probe = MaskPredictProbe(model, tokenizer, num_masks=3, beam_size=4, init_method=init_method, progress=False)
    expected = brute_force_ranking(logp, num_masks=3, beam_size=4)
    assert len(expected) >= 6
    for answers in probe.generate_answers(QUERIES):
        top = answers[: len(expected)]
        # the same scores in the same order (log of the product of token probabilities, no length
        # normalisation); names compared as a set because "fever cough" and "cough fever" tie
        assert [s for _, s in top] == pytest.approx([s for _, s in expected], abs=1e-5)
        assert {name for name, _ in top} == {name for name, _ in expected}
        assert [s for _, s in answers] == sorted((s for _, s in answers), reverse=True)
        assert "[MASK]" not in " ".join(name for name, _ in answers)


@pytest.mark.parametrize("init_method", INIT_METHODS)
def test_order_refinement_moves_every_beam_to_the_best_token_bias_only_bert(init_method):
    model, tokenizer, logp = bias_only_bert()
    probe = MaskPredictProbe(model, tokenizer, num_masks=3, init_method=init_method, iter_method="order", progress=False)
    for answers in probe.generate_answers(QUERIES):  # every position re-predicted as fever; merged duplicates
        assert answers == [(" ".join(["fever"] * n), pytest.approx(n * logp["fever"], abs=1e-5)) for n in (1, 2, 3)]


def test_order_beam_scores_equal_direct_left_to_right_computation_tiny_random_bert():
    model, tokenizer = tiny_random_bert_mlm(seed=2)
    probe = MaskPredictProbe(model, tokenizer, num_masks=2, init_method="order", progress=False)
    tokens, scores = probe.decode([probe.query_ids(q) for q in QUERIES], n=2)
    assert tokens.shape == (2, 5, 2)
    for q, query in enumerate(QUERIES):
        assert scores[q].tolist() == sorted(scores[q].tolist(), reverse=True)
        for beam in range(5):
            first, second = tokens[q, beam].tolist()
            expected = 0.0
            for filled, position_token in (
                (["[MASK]", "[MASK]"], first),
                ([tokenizer.convert_ids_to_tokens(first), "[MASK]"], second),
            ):
                inputs = tokenizer(query.replace("[Y]", " ".join(filled)), return_tensors="pt")
                with torch.no_grad():
                    row = torch.log_softmax(model(**inputs).logits[0], dim=-1)
                position = (inputs["input_ids"][0] == tokenizer.mask_token_id).nonzero().flatten()[0]
                expected += row[position, position_token].item()
            assert scores[q, beam].item() == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("init_method", INIT_METHODS)
def test_forward_passes_follow_the_decoding_method_tiny_random_bert(init_method):
    model, tokenizer = tiny_random_bert_mlm()
    probe = MaskPredictProbe(model, tokenizer, num_masks=3, beam_size=4, init_method=init_method, batch_size=8, progress=False)
    answers = probe.generate_answers(QUERIES)
    q = len(QUERIES)
    # independent: one pass of q rows per mask count; order/confidence: q rows, then q*B rows per further mask
    expected = 3 * q if init_method == "independent" else sum(q + q * 4 * (n - 1) for n in (1, 2, 3))
    assert probe.forward_passes == expected
    for pooled in answers:
        keys = [normalise_answer(name) for name, _ in pooled]
        assert 0 < len(pooled) <= 3 * 4 and len(keys) == len(set(keys))


def test_candidates_name_the_answers_and_can_restrict_them_bias_only_bert():
    model, tokenizer, _ = bias_only_bert()
    candidates = ["Cough", "The fever", "Heart failure"]
    ranked = names_of(MaskPredictProbe(model, tokenizer, num_masks=2, progress=False).rank(QUERIES[:1], candidates, k=3))
    assert ranked == [["The fever", "Cough", "fever fever"]]  # p = .11, .03, .013
    [scored] = MaskPredictProbe(model, tokenizer, num_masks=2, progress=False).rank(QUERIES[:1], candidates, k=3)
    # its scores are the answers' log-probabilities (MaskPredictProbe.probabilities): exp gives p
    assert MaskPredictProbe.probabilities and np.exp([score for _, score in scored]) == pytest.approx(
        [0.11, 0.03, 0.013], abs=0.006
    )
    only = MaskPredictProbe(model, tokenizer, num_masks=2, only_candidates=True, progress=False)
    assert names_of(only.rank(QUERIES[:1], candidates, k=4)) == [["The fever", "Cough"]]


def test_pooling_merges_normalised_duplicates_and_keeps_the_best_score():
    pooled = pool_predictions([("heart failure", -3.0), ("Heart-failure", -1.0), ("the", -0.5), ("Fever.", -2.0)], ["Fever"])
    assert pooled == [("Heart-failure", -1.0), ("Fever", -2.0)]  # "the" normalises to nothing: dropped
    assert math.isclose(pooled[0][1], -1.0)


def test_bad_settings_and_queries_are_errors_tiny_random_bert():
    model, tokenizer = tiny_random_bert_mlm(max_position_embeddings=12)
    with pytest.raises(ValueError, match="init_method must be one of"):
        MaskPredictProbe(model, tokenizer, init_method="random")
    probe = MaskPredictProbe(model, tokenizer, model_name="tiny-bert", num_masks=5, progress=False)
    with pytest.raises(ValueError, match=r"with 5 masks is 16 tokens, more than the 12 positions of 'tiny-bert'"):
        probe.generate_answers(["the gene has [Y] , the disease is alpha ."])
