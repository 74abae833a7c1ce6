"""GenerativeProbe: beam search answers, sorted by the documented beam score (plumbing: tiny random T5/BART)."""

import pytest
import torch

from medprobe.lm.seq2seq import GenerativeProbe
from ranked_names import names_of
from tiny_models import tiny_random_bart, tiny_random_bert_mlm, tiny_random_t5, word_level_tokenizer

QUERIES = ["aspirin may treat [Y] .", "the gene has [Y] , the disease is alpha ."]


def teacher_forced_score(model, tokenizer, query: str, sequence: list[int], eos: int) -> float:
    """Sum of the generated tokens' log-probabilities / their number (length_penalty 1.0)."""
    generated = sequence[1:]  # after the decoder start token
    if eos in generated:
        generated = generated[: generated.index(eos) + 1]
    inputs = tokenizer(query.replace("[Y]", "<extra_id_0>"), return_tensors="pt")
    decoder_input = torch.tensor([sequence[: len(generated)]])
    with torch.no_grad():
        logp = torch.log_softmax(model(**inputs, decoder_input_ids=decoder_input).logits[0], dim=-1)
    return sum(logp[t, token].item() for t, token in enumerate(generated)) / len(generated)


def test_beam_output_is_sorted_by_the_documented_score_tiny_random_t5():
    model, tokenizer = tiny_random_t5(seed=4)
    probe = GenerativeProbe(model, tokenizer, max_new_tokens=5, progress=False)
    sequences, scores = probe.beam_search(QUERIES)
    assert sequences.shape[0] == scores.shape[0] == 2 * 10
    for q, query in enumerate(QUERIES):
        rows = range(q * 10, (q + 1) * 10)
        assert [scores[r].item() for r in rows] == sorted((scores[r].item() for r in rows), reverse=True)
        for r in rows:
            expected = teacher_forced_score(model, tokenizer, query, sequences[r].tolist(), eos=1)
            assert scores[r].item() == pytest.approx(expected, abs=1e-4)
    # rank keeps that order, merges duplicates, and returns at most num_return answers
    for answers, pooled in zip(probe.generate(QUERIES), probe.generate_answers(QUERIES)):
        assert len(answers) == 10 and 0 < len(pooled) <= 10
        assert [s for _, s in pooled] == sorted((s for _, s in pooled), reverse=True)
        assert pooled[0] == next(a for a in answers if a[0])


def test_answers_are_read_from_the_sentinel_span_and_from_the_regenerated_sentence():
    model, tokenizer = tiny_random_t5()
    t5 = GenerativeProbe(model, tokenizer, progress=False)
    ids = tokenizer.convert_tokens_to_ids(["<pad>", "<extra_id_0>", "heart", "failure", "<extra_id_1>", "cough", "</s>"])
    assert t5.answer_text(torch.tensor(ids), QUERIES[0]) == "heart failure"
    bart_model, bart_tokenizer = tiny_random_bart()
    bart = GenerativeProbe(bart_model, bart_tokenizer, progress=False)
    assert bart.blank == "<mask>"
    sentence = bart_tokenizer("aspirin may treat heart failure .")["input_ids"]
    assert bart.answer_text(torch.tensor(sentence), QUERIES[0]) == "heart failure"


def test_bart_answers_are_named_by_the_candidates_tiny_random_bart():
    model, tokenizer = tiny_random_bart(seed=2)
    with torch.no_grad():  # "</s>" or "fever </s>" are the likely outputs, whatever the input
        model.final_logits_bias[0, tokenizer.convert_tokens_to_ids(["fever", "</s>"])] += torch.tensor([20.0, 21.0])
    probe = GenerativeProbe(model, tokenizer, beam_size=4, num_return=3, max_new_tokens=6, progress=False)
    ranked = names_of(probe.rank(QUERIES, ["Fever", "Cough"], k=10))
    assert [r[0] for r in ranked] == ["Fever", "Fever"] and all(len(r) <= 3 for r in ranked)
    only = GenerativeProbe(model, tokenizer, beam_size=4, num_return=3, max_new_tokens=6, only_candidates=True, progress=False)
    assert names_of(only.rank(QUERIES, ["Fever", "Cough"], k=10)) == [["Fever"], ["Fever"]]


def test_wrong_models_and_tokenizers_are_errors_that_name_the_model():
    model, _ = tiny_random_t5()
    plain = word_level_tokenizer(["<pad>", "</s>", "<unk>"], "$A </s>", pad_token="<pad>", eos_token="</s>")
    with pytest.raises(ValueError, match=r"tokenizer of 'plain-t5' has neither a T5 sentinel"):
        GenerativeProbe(model, plain, model_name="plain-t5")
    bert, bert_tokenizer = tiny_random_bert_mlm()
    with pytest.raises(ValueError, match=r"'tiny-bert' cannot be used here: BertForMaskedLM is not a seq2seq class"):
        GenerativeProbe(bert, bert_tokenizer, model_name="tiny-bert")
    with pytest.raises(ValueError, match="num_return"):
        GenerativeProbe(*tiny_random_t5(), beam_size=2, num_return=3)
