"""CausalLMProbe: cached, batched scores (through prefix trees, or one row per candidate) equal a direct
per-candidate log-likelihood."""

import random

import numpy as np
import pytest
import torch

from medprobe.lm import tree_scoring
from medprobe.lm.candidate_scoring import ShortlistProber, top_k
from medprobe.lm.causal_lm import CausalLMProbe
from medprobe.lm.prefix_tree import ancestor_mask, build_tree, cut_rows
from ranked_names import names_of
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
    assert names_of(probe.rank(QUERIES, CANDIDATES, 3)) == [top_k(CANDIDATES, row, 3) for row in large]


def test_rank_scores_are_log_probabilities_over_the_candidates_ranked_tiny_random_gpt2():
    """The causal LM's rank scores are its log-likelihoods normalised over the candidates it ranked (softmax): the
    run's confidence is a probability; a shortlist normalises over the shortlist."""
    tokenizer = byte_bpe_tokenizer()
    probe = CausalLMProbe(tiny_random_gpt2(tokenizer), tokenizer, progress=False)
    assert probe.probabilities
    raw = probe.score_candidates(QUERIES, [CANDIDATES] * 2)
    for row, ranked in zip(raw, probe.rank(QUERIES, CANDIDATES, len(CANDIDATES))):
        assert sum(np.exp(score) for _, score in ranked) == pytest.approx(1.0, abs=1e-12)
        shift = {name: float(row[CANDIDATES.index(name)]) - score for name, score in ranked}  # one constant per query
        assert max(shift.values()) - min(shift.values()) < 1e-9
    shortlist = ShortlistProber(probe, {QUERIES[0]: ["cough", "fever"]}).rank(QUERIES[:1], CANDIDATES, k=1)
    [[(_, best)]] = shortlist
    assert np.exp(best) >= 0.5  # the better of two


def test_shortlist_prober_scores_only_the_shortlisted_candidates_tiny_random_gpt2():
    tokenizer = byte_bpe_tokenizer()
    probe = CausalLMProbe(tiny_random_gpt2(tokenizer), tokenizer, progress=False)
    shortlists = {QUERIES[0]: ["cough", "not a candidate", "fever"], QUERIES[1]: ["alphazine"]}
    ranked = names_of(ShortlistProber(probe, shortlists, source="test").rank(QUERIES, CANDIDATES, k=10))
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


# --- prefix trees ---------------------------------------------------------------------------------

NAME_WORDS = ["heart", "failure", "chronic", "renal", "of", "the", "gene", "alphazine", "betaitis", "acute", "zq", "cough"]
TREE_QUERIES = ["aspirin may treat [Y] .", "the gene has [Y] , the disease is alpha .", "ibuprofen might treat [Y]"]


def names_with_shared_prefixes(seed: int, count: int) -> list[str]:
    """Made-up names, most of them an earlier name plus a word ("heart", "heart failure", "heart failure of the")."""
    rng = random.Random(seed)
    names: list[str] = []
    while len(names) < count:
        stem = rng.choice(names) + " " if names and rng.random() < 0.7 else ""
        name = stem + rng.choice(NAME_WORDS)
        if name not in names and len(name.split()) <= 6:
            names.append(name)
    rng.shuffle(names)
    return names


def test_prefix_tree_shares_prefixes_and_its_rows_run_each_inner_node_once():
    continuations = [[5, 6, 7], [5, 6, 8, 9], [5, 10], [11], [5, 6, 7]]
    tree = build_tree(continuations)
    assert [[tree.tokens[node] for node in path] for path in tree.paths] == continuations
    assert len(tree.tokens) == 7 and tree.paths[0] == tree.paths[4]  # 5, 6, 7, 8, 9, 10, 11
    assert [tree.tokens[node] for node in tree.inner] == [5, 6, 8]  # the nodes with children, depth first
    for row_length in (1, 3, 64):
        rows = cut_rows(tree, row_length)
        own = [node for row in rows for node in row.nodes[row.own_from :]]
        assert sorted(own) == sorted(tree.inner)
        for row in rows:  # every node's parent is before it in the row, or the context
            parents = row.local_parents(tree)
            assert all(parent < i for i, parent in enumerate(parents))
            assert len(row.nodes) <= max(row_length, 4)  # the deepest inner node (depth 2) and one own node
    [row] = cut_rows(tree, 64)
    mask = ancestor_mask(row.local_parents(tree), 4)
    assert mask.tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [0, 0, 0, 1]]  # 5; 5 6; 5 6 8; padding


def direct_scores(model, tokenizer, query: str, names: list[str], mean: bool, suffix: bool) -> list[float]:
    return [direct_log_likelihood(model, tokenizer, query, name, mean, suffix) for name in names]


@pytest.mark.parametrize("make_model", [tiny_random_gpt2, tiny_random_llama], ids=["tiny_random_gpt2", "tiny_random_llama"])
@pytest.mark.parametrize(("normalization", "suffix"), [("mean", True), ("none", True), ("mean", False), ("none", False)])
@pytest.mark.parametrize(("batch_size", "row_length"), [(1, 1), (3, 4), (64, 64)], ids=["rows_1", "rows_3x4", "rows_64"])
def test_prefix_tree_scores_equal_one_forward_per_candidate(
    make_model, normalization, suffix, batch_size, row_length, monkeypatch
):
    """Many candidate sets with shared prefixes and different lengths; small batches and rows split the tree,
    and the output head runs on 5 positions at a time."""
    tokenizer = byte_bpe_tokenizer()
    monkeypatch.setattr(tree_scoring, "HEAD_LOGITS", 5 * len(tokenizer))
    model = make_model(tokenizer, seed=3)
    probe = CausalLMProbe(
        model,
        tokenizer,
        length_normalization=normalization,
        score_suffix=suffix,
        literal_template=True,
        batch_size=batch_size,
        progress=False,
    )
    probe.row_length = row_length
    lists = [names_with_shared_prefixes(seed, count) for seed, count in [(0, 30), (1, 3), (2, 17)]]
    scores = probe.score_candidates(TREE_QUERIES, lists)
    assert probe.prefix_tree is True
    for query, names, row in zip(TREE_QUERIES, lists, scores):
        expected = direct_scores(model, tokenizer, query, names, normalization == "mean", suffix)
        np.testing.assert_allclose(row, expected, rtol=0, atol=1e-4)


def test_prefix_tree_runs_each_shared_token_once_tiny_random_llama():
    tokenizer = byte_bpe_tokenizer()
    probe = CausalLMProbe(tiny_random_llama(tokenizer), tokenizer, literal_template=True, progress=False)
    probe.row_length = 1000  # one row: no ancestor is repeated
    names = names_with_shared_prefixes(4, 40)
    probe.score_candidates(TREE_QUERIES[:1], [names])
    _, parts = probe.query_parts(TREE_QUERIES[0], names)
    tree = build_tree([continuation for continuation, _ in parts])
    one_row_each = sum(len(continuation) for continuation, _ in parts)
    ran = probe._passes.tokens
    assert ran["rows"] == ran["head"] == len(tree.inner) < one_row_each / 2 and ran["padding"] == 0
    assert ran["contexts"] == len(tokenizer("aspirin may treat")["input_ids"])


def test_queries_with_few_candidates_share_one_batch_tiny_random_gpt2(monkeypatch):
    tokenizer = byte_bpe_tokenizer()
    model = tiny_random_gpt2(tokenizer)
    probe = CausalLMProbe(model, tokenizer, literal_template=True, batch_size=8, progress=False)
    probe.uses_prefix_tree()
    batches = []
    original = tree_scoring.TreePasses.run
    monkeypatch.setattr(tree_scoring.TreePasses, "run", lambda passes, batch: (batches.append(batch), original(passes, batch)))
    queries = [f"{drug} may treat [Y] ." for drug in ("aspirin", "ibuprofen", "alphazine", "the gene")]
    lists = [["heart failure", "heart attack"], ["cough"], [], ["renal failure", "renal pain", "fever"]]
    scores = probe.score_candidates(queries, lists)
    assert len(batches) == 1 and [group.query for group in batches[0].groups] == [0, 1, 3]
    for query, names, row in zip(queries, lists, scores):
        np.testing.assert_allclose(row, direct_scores(model, tokenizer, query, names, True, True), rtol=0, atol=1e-4)


def test_a_model_that_ignores_the_tree_mask_is_scored_one_row_per_candidate_tiny_random_gpt2(monkeypatch):
    """When the one-time check finds tree scores that differ from plain passes (here: the mask lets every
    node see its siblings), the prober warns and scores every candidate in its own row."""
    monkeypatch.setattr(tree_scoring, "ancestor_mask", lambda parents, width: np.ones((width, width), dtype=bool))
    tokenizer = byte_bpe_tokenizer()
    model = tiny_random_gpt2(tokenizer)
    probe = CausalLMProbe(model, tokenizer, length_normalization="none", literal_template=True, progress=False)
    names = names_with_shared_prefixes(5, 12)
    with pytest.warns(UserWarning, match="prefix-tree scoring does not reproduce plain forward passes"):
        [row] = probe.score_candidates(TREE_QUERIES[:1], [names])
    assert probe.prefix_tree is False
    np.testing.assert_allclose(row, direct_scores(model, tokenizer, TREE_QUERIES[0], names, False, True), rtol=0, atol=1e-4)


def test_prefix_tree_scores_a_bfloat16_model_like_its_float32_self_tiny_random_llama():
    """The default dtype on a GPU is bfloat16: the tree's mask is built in it and the one-time check accepts it."""
    tokenizer = byte_bpe_tokenizer()
    model = tiny_random_llama(tokenizer, seed=2)
    names = names_with_shared_prefixes(6, 20)
    expected = direct_scores(model, tokenizer, TREE_QUERIES[0], names, True, True)
    probe = CausalLMProbe(model.to(torch.bfloat16), tokenizer, literal_template=True, batch_size=2, progress=False)
    probe.row_length = 4
    [row] = probe.score_candidates(TREE_QUERIES[:1], [names])
    assert probe.prefix_tree is True
    np.testing.assert_allclose(row, expected, rtol=0, atol=0.05)


def test_a_gguf_file_is_parsed_once_per_load_and_gguf_is_restored_after(tmp_path):
    gguf = pytest.importorskip("gguf")
    from medprobe.lm.loading import gguf_parsed_once

    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.arange(6, dtype=np.float32).reshape(2, 3))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    original_reader, original_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with gguf_parsed_once():
        first, again = gguf.GGUFReader(path), gguf.GGUFReader(str(path))
        assert first is again  # transformers' three reads (tokenizer, config, weights) share one parse
        assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 1) is gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 1)
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (original_reader, original_map)
    assert gguf.GGUFReader(path) is not first
    np.testing.assert_array_equal(first.tensors[0].data, np.arange(6, dtype=np.float32).reshape(2, 3))
