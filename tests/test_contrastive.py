"""Contrastive-Probe mechanics: rewiring pairs, the loss, rewiring with the Trainer, retrieval.

The models here are tiny random BERTs (see tiny_bert.py): the tests check plumbing, not knowledge.
"""

import random

import pytest
import torch
import torch.nn.functional as F

from floats import float32_atol
from medprobe.contrastive import ContrastiveProbe, InfoNCELoss, build_pairs, mask_tail_span, rewiring_arguments, search
from medprobe.contrastive.encoding import (
    bert_style,
    cls_embeddings,
    encode_cls,
    mask_window,
    pad_batch,
    tokenize_keeping_mask,
)
from medprobe.contrastive.search import search_with_misses, top_k_sorting_ties, top_k_with_ties_by_index
from ranked_names import names_of
from tiny_bert import tiny_bert, tiny_tokenizer, toy_corpus

# --- pairs from raw sentences -------------------------------------------------------------------


def test_pairs_cut_a_tail_span_with_normalised_white_space():
    pairs, stats = build_pairs(["the  heart pumps   blood to the lungs "], "[MASK]", seed=1)
    (pair,) = pairs
    words = "the heart pumps blood to the lungs".split()
    context, _, mask = pair.masked.rpartition(" ")
    assert mask == "[MASK]" and "  " not in pair.masked and "  " not in pair.span
    # the span is the sentence's tail, never empty, and the context keeps at least one word
    assert f"{context} {pair.span}".split() == words
    assert 1 <= len(pair.span.split()) <= 1 + int(0.5 * len(words)) and context
    assert stats.pairs == 1 and stats.too_short == 0


def test_span_lengths_follow_the_released_rule_and_the_seed():
    rng = random.Random(0)
    words = [f"w{i}" for i in range(10)]
    lengths = {len(mask_tail_span(words, "[MASK]", rng).span.split()) for _ in range(500)}
    assert lengths == set(range(1, 7))  # uniform in 1 .. 1 + int(0.5 * 10)
    two_words = {mask_tail_span(["a", "b"], "[MASK]", rng) for _ in range(50)}
    assert {(p.masked, p.span) for p in two_words} == {("a [MASK]", "b")}  # one word always stays visible
    corpus = toy_corpus(30)
    assert build_pairs(corpus, "[MASK]", seed=5) == build_pairs(corpus, "[MASK]", seed=5)
    assert build_pairs(corpus, "[MASK]", seed=5)[0] != build_pairs(corpus, "[MASK]", seed=6)[0]


def test_short_and_blank_lines_are_skipped_and_counted():
    pairs, stats = build_pairs(["one", "", "   ", "two words", "x", "three words here"], "[MASK]")
    assert (stats.lines, stats.blank, stats.too_short, stats.pairs) == (6, 2, 2, 2) and len(pairs) == 2
    assert stats.first_too_short == [1, 5]
    assert "skipped 2 blank; 2 with fewer than 2 words (e.g. line 1, 5)" in stats.summary("corpus.txt")


def test_truncation_keeps_the_mask():
    assert mask_window(10, 3, 20) == (0, 10)  # fits
    assert mask_window(60, 10, 46) == (0, 46)  # the mask survives cutting the end
    start, end = mask_window(60, 58, 46)  # "<long context> [MASK] ." keeps its end
    assert (start, end) == (14, 60) and start <= 58 < end
    start, end = mask_window(100, 60, 10)  # mask deep inside: up to half the window after it
    assert end - start == 10 and start <= 60 < end and end == 65
    tokenizer = tiny_tokenizer()
    long_text = " ".join(["alpha"] * 80) + " [MASK] ."
    (ids,) = tokenize_keeping_mask(tokenizer, [long_text], 48)
    assert len(ids) == 48 and tokenizer.mask_token_id in ids
    assert ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id
    assert tokenizer.convert_ids_to_tokens(ids[-3:]) == ["[MASK]", ".", "[SEP]"]


# --- the loss -------------------------------------------------------------------------------------


def test_info_nce_matches_its_definition():
    torch.manual_seed(0)
    anchors, positives = torch.randn(4, 8), torch.randn(4, 8)
    z = F.normalize(torch.cat([anchors, positives]), dim=-1)
    expected = 0.0
    for i in range(8):
        partner = (i + 4) % 8
        others = [j for j in range(8) if j != i]
        denominator = sum(torch.exp(z[i] @ z[j] / 0.1) for j in others)
        expected += -torch.log(torch.exp(z[i] @ z[partner] / 0.1) / denominator)
    assert torch.allclose(InfoNCELoss(0.1)(anchors, positives), expected / 8, atol=1e-5)
    # aligned pairs cost (almost) nothing, swapped pairs a lot
    eye = torch.eye(4)
    assert InfoNCELoss(0.04)(eye, eye) < 1e-3 < InfoNCELoss(0.04)(eye, eye.flip(0))
    with pytest.raises(ValueError, match="temperature"):
        InfoNCELoss(0.0)


# --- rewiring with the Trainer --------------------------------------------------------------------


def rewire_tiny(tmp_path, steps=40, seed=33):
    probe = ContrastiveProbe(tiny_bert(dropout=0.0), tiny_tokenizer(), device="cpu", show_progress=False)
    args = rewiring_arguments(
        str(tmp_path),
        max_steps=steps,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        logging_steps=1,
        use_cpu=True,
        disable_tqdm=True,
        seed=seed,
    )
    return probe, probe.rewire(toy_corpus(48), args)


def test_rewiring_loss_falls_plumbing_tiny_random_bert(tmp_path):
    probe, report = rewire_tiny(tmp_path)
    losses = [loss for _, loss in report.losses]
    assert report.steps == 40 and len(losses) == 40 and report.corpus.pairs == 48
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < 0.75 * first, losses
    assert probe.settings["rewiring"]["losses"] == report.losses and probe.settings["rewired"]
    assert not probe.model.training  # back in eval mode: no dropout while probing


def test_rewiring_with_the_same_seed_is_reproducible_plumbing_tiny_random_bert(tmp_path):
    queries = ["alpha might treat [Y] .", "the gene beta may cause [Y] ."]
    names = ["gamma", "delta epsilon", "lung", "heart", "acute fever"]
    runs = []
    for seed in (7, 7, 8):
        probe, report = rewire_tiny(tmp_path / str(len(runs)), steps=5, seed=seed)
        runs.append((report.losses, names_of(probe.rank(queries, names, 3)), probe.encode_names(names)))
    assert runs[0][0] == runs[1][0] and runs[0][1] == runs[1][1] and torch.equal(runs[0][2], runs[1][2])
    assert runs[0][0] != runs[2][0]


def test_rewiring_rejects_a_corpus_without_usable_lines(tmp_path):
    probe = ContrastiveProbe(tiny_bert(), tiny_tokenizer(), device="cpu", show_progress=False)
    with pytest.raises(ValueError, match=r"no sentence of at least two words .*3 lines: 1 blank, 2 too short"):
        probe.rewire(["alpha", "", "beta"], rewiring_arguments(str(tmp_path), use_cpu=True))
    with pytest.raises(FileNotFoundError, match="missing.txt does not exist"):
        probe.rewire(tmp_path / "missing.txt")


# --- retrieval ------------------------------------------------------------------------------------


def test_search_finds_the_right_neighbour_by_cosine_and_by_l2():
    candidates = torch.tensor([[10.0, 0.0], [0.0, 1.0], [0.9, 1.0]])
    query = torch.tensor([[1.0, 0.1]])
    # by angle the query points along the first candidate; by distance it is nearest the third
    assert search(query, candidates, 3, similarity="cos").tolist() == [[0, 2, 1]]
    assert search(query, candidates, 3, similarity="l2").tolist() == [[2, 1, 0]]
    with pytest.raises(ValueError, match="unknown similarity"):
        search(query, candidates, 1, similarity="dot")
    with pytest.raises(ValueError, match="empty"):
        search(query, candidates[:0], 1)


def test_a_top_k_decided_by_float_rounding_is_counted():
    """Candidates whose vectors differ below float32's resolution (as MiniLM's first 3 layers give every text
    nearly the same [CLS] vector) leave the top k to rounding: each such query is counted, a clear one is not."""
    generator = torch.Generator().manual_seed(0)
    base = torch.randn(1, 8, generator=generator)
    alike = base + 1e-9 * torch.randn(20, 8, generator=generator)  # cosines to any query within one float32 step
    queries = torch.randn(5, 8, generator=generator)
    assert search_with_misses(queries, alike, 3)[1] == 5
    distinct = torch.eye(8)[:6]
    clear = distinct[:3] + 0.1 * torch.randn(3, 8, generator=generator)  # each nearest one candidate by far
    found, misses = search_with_misses(clear, distinct, 1)
    assert misses == 0 and found.tolist() == search(clear, distinct, 1).tolist()


def test_the_prober_says_when_rounding_picks_the_top_k(tmp_path):
    """A prober whose encoder maps every text to nearly one vector warns that acc@k is rounding's, and counts the
    queries in its timings (what the results file records)."""
    probe = ContrastiveProbe(tiny_bert(), tiny_tokenizer(), device="cpu", show_progress=False)
    flat = torch.randn(1, 32).expand(4, 32) + 1e-9 * torch.randn(4, 32)
    probe.encode_queries = lambda texts: flat[: len(texts)].clone()
    probe._encode_distinct_names = lambda names: (flat[: len(names)].clone(), list(range(len(names))))
    with pytest.warns(UserWarning, match="rounding, not the model, picks their top 1"):
        probe.rank(["a [Y] .", "b [Y] ."], ["x", "y", "z"], 1)
    assert probe.timings["queries_ranked_below_float32_resolution"] == 2


def test_equal_scores_go_to_the_earlier_candidate_whatever_the_chunking():
    torch.manual_seed(0)
    scores = torch.randint(0, 4, (50, 30)).float()  # many ties
    expected = [sorted(range(30), key=lambda j: (-scores[i, j].item(), j))[:7] for i in range(50)]
    assert top_k_with_ties_by_index(scores, 7).tolist() == expected
    candidates = torch.randn(6, 5)
    candidates = torch.cat([candidates, candidates])  # every vector twice
    queries = torch.randn(33, 5)
    for chunk in (1, 4, 64):
        top = search(queries, candidates, 12, chunk_size=chunk)
        assert all(row.index(j) < row.index(j + 6) for row in top.tolist() for j in range(6))
    with pytest.raises(ValueError, match="NaN"):
        top_k_with_ties_by_index(torch.full((2, 3), float("nan")), 2)


def test_rows_settled_by_top_k_plus_one_agree_with_looking_at_every_column():
    """The search settles a row from torch.topk's k+1 best when the k-th beats the (k+1)-th; rows tied
    at the k-th place go through every column. Both must give the same k, in the same order."""
    generator = torch.Generator().manual_seed(0)
    tied_rows = 0
    for trial in range(200):
        rows, columns = torch.randint(1, 40, (2,), generator=generator).tolist()
        k = int(torch.randint(1, columns + 1, (1,), generator=generator))
        if trial % 2:  # few distinct values: ties everywhere, at the k-th place too
            scores = torch.randint(
                0, int(torch.randint(1, 6, (1,), generator=generator)), (rows, columns), generator=generator
            ).float()
        else:  # distinct values, then a tie planted at the k-th place of the first row
            scores = torch.randn(rows, columns, generator=generator)
            if k < columns:
                order = scores[0].argsort(descending=True)
                scores[0, order[k]] = scores[0, order[k - 1]]
        if k < columns:
            tied_rows += int((scores.topk(k + 1).values[:, k - 1] == scores.topk(k + 1).values[:, k]).sum())
        assert torch.equal(top_k_with_ties_by_index(scores, k), top_k_sorting_ties(scores, k)), trial
    assert tied_rows > 100  # the tied path was taken, not only the settled one
    for column in (0, 5, 9):  # a NaN among the best or the rest: an error, whichever path the row takes
        scores = torch.randn(3, 10, generator=generator)
        scores[1, column] = float("nan")
        with pytest.raises(ValueError, match="NaN"):
            top_k_with_ties_by_index(scores, 3)


def test_a_candidate_equal_to_the_query_is_ranked_first_plumbing_tiny_random_bert():
    probe = ContrastiveProbe(tiny_bert(), tiny_tokenizer(), device="cpu", show_progress=False, batch_size=2)
    queries = ["aspirin might treat [Y] .", "the gene alpha may cause [Y] .", "insulin may prevent [Y] ."]
    names = [
        "lung",
        "heart",
        "insulin may prevent [MASK] .",
        "aspirin might treat [MASK] .",
        "gout",
        "the gene alpha may cause [MASK] .",
        "acute chronic fever",
    ]
    for similarity in ("cos", "l2"):
        probe.similarity = similarity
        ranked = names_of(probe.rank(queries, names, 4))
        assert [r[0] for r in ranked] == [q.replace("[Y]", "[MASK]") for q in queries]
        assert all(len(r) == 4 and len(set(r)) == 4 for r in ranked)


def test_names_that_tokenize_alike_tie_and_keep_answer_space_order_plumbing_tiny_random_bert():
    probe = ContrastiveProbe(tiny_bert(), tiny_tokenizer(), device="cpu", show_progress=False)
    names = ["Aspirin", "asthma", "aspirin", "gout", "ASPIRIN"]  # uncased vocabulary: three spellings, one text
    embeddings = probe.encode_names(names)
    assert torch.equal(embeddings[0], embeddings[2]) and torch.equal(embeddings[0], embeddings[4])
    for ranked in names_of(probe.rank(["aspirin might treat [Y] .", "gout may cause [Y] ."], names, 5)):
        where = [ranked.index(n) for n in ("Aspirin", "aspirin", "ASPIRIN")]
        assert where == sorted(where) and where[2] - where[0] == 2  # adjacent, in answer-space order


def test_score_candidates_ranks_as_rank_does_plumbing_tiny_random_bert():
    """Contrastive-Probe is a CandidateScorer: ranking by its scores gives rank()'s names, ties included."""
    from medprobe.contracts import CandidateScorer
    from medprobe.lm.candidate_scoring import rank_by_scores

    probe = ContrastiveProbe(tiny_bert(), tiny_tokenizer(), device="cpu", show_progress=False, batch_size=3)
    assert isinstance(probe, CandidateScorer) and probe.name == "contrastive"
    queries = [f"{w} might treat [Y] ." for w in ("alpha", "beta", "gamma", "aspirin")]
    names = [*toy_corpus(12), "Aspirin", "aspirin", "ASPIRIN"]  # three spellings, one embedding: exact ties
    for similarity in ("cos", "l2"):
        probe.similarity = similarity
        assert names_of(rank_by_scores(probe, queries, names, 8)) == names_of(probe.rank(queries, names, 8))
        # rank's scores are score_candidates' (the similarity), to float noise of their terms (l2: |q|^2 + |n|^2)
        terms = float((probe.encode_queries(queries) ** 2).sum(-1).max() + (probe.encode_names(names) ** 2).sum(-1).max())
        for by_scores, ranked in zip(rank_by_scores(probe, queries, names, 8), probe.rank(queries, names, 8)):
            assert [s for _, s in ranked] == pytest.approx([s for _, s in by_scores], abs=float32_atol(terms))
    # its own candidates per query, in their order, each name encoded once
    lists = [["gout", "lung"], ["lung"], [], ["heart", "gout", "lung"]]
    scores = probe.score_candidates(queries, lists)
    assert [len(row) for row in scores] == [2, 1, 0, 3]
    [[alone]] = probe.score_candidates(queries[:1], [["lung"]])
    query, gout = probe.encode_queries(queries[:1]), probe.encode_names(["gout"])
    # l2 scores are -(|q|^2 - 2 q.n + |n|^2): terms of about |q|^2 + |n|^2 = 64 that cancel to about -0.003, so a
    # query scored beside others (another batch shape, another summation order) moves by ulps of 64, not of 0.003
    # (rel=1e-5 failed on another CPU: -0.002388 vs -0.0023899); names differ by about 1e-3, far above this
    atol = float32_atol(float((query**2).sum() + (gout**2).sum()))
    assert float(scores[0][1]) == pytest.approx(float(alone), abs=atol)  # a name scores the same in any list
    expected = -((query - gout) ** 2).sum()
    assert float(scores[0][0]) == pytest.approx(float(expected), abs=atol)  # l2: the negative squared distance
    assert abs(float(scores[0][0]) - float(scores[0][1])) > 10 * atol  # the tolerance tells gout from lung
    with pytest.raises(ValueError, match="one candidate list per query"):
        probe.score_candidates(queries, [["gout"]])


def test_untuned_retrieval_is_deterministic_plumbing_tiny_random_bert():
    queries = [f"{w} might treat [Y] ." for w in ("alpha", "beta", "gamma", "delta", "aspirin")] * 3
    names = toy_corpus(40)
    first = ContrastiveProbe(tiny_bert(), tiny_tokenizer(), device="cpu", show_progress=False, batch_size=4)
    second = ContrastiveProbe(tiny_bert(), tiny_tokenizer(), device="cpu", show_progress=False, batch_size=4)
    assert first.rank(queries, names, 10) == second.rank(queries, names, 10)
    assert torch.equal(first.encode_queries(queries), second.encode_queries(queries))


def test_layers_l_runs_only_the_first_l_layers_plumbing_tiny_random_bert():
    model = tiny_bert(layers=4)
    tokenizer = tiny_tokenizer()
    calls = []
    for index, layer in enumerate(model.encoder.layer):
        layer.register_forward_hook(lambda module, args, output, index=index: calls.append(index))
    probe = ContrastiveProbe(model, tokenizer, layers=2, device="cpu", show_progress=False)
    queries = ["aspirin might treat [Y] .", "the gene alpha may cause [Y] ."]
    truncated = probe.encode_queries(queries)
    assert set(calls) == {0}  # layer 1 runs at [CLS] only (its parts, not its forward); 2 and 3 never
    calls.clear()
    batch = tokenizer([q.replace("[Y]", "[MASK]") for q in queries], padding=True, return_tensors="pt")
    with torch.inference_mode():
        hidden = model(**batch, output_hidden_states=True).hidden_states
    assert set(calls) == {0, 1, 2, 3} and len(model.encoder.layer) == 4  # the full model is intact
    assert torch.allclose(truncated, hidden[2][:, 0], atol=1e-5)
    assert not torch.allclose(truncated, hidden[4][:, 0], atol=1e-3)
    with pytest.raises(ValueError, match="between 1 and 4"):
        ContrastiveProbe(model, tokenizer, layers=5, device="cpu")


def test_last_layer_at_cls_only_equals_the_whole_forward_pass_plumbing_tiny_random_bert():
    model, tokenizer = tiny_bert(layers=3), tiny_tokenizer()
    texts = ["aspirin might treat [MASK] .", "the gene alpha beta gamma may cause [MASK] .", "[MASK] ."]
    sequences = tokenize_keeping_mask(tokenizer, texts, 48)
    input_ids, attention_mask = pad_batch(sequences, tokenizer.pad_token_id)  # padded: the mask matters
    with torch.inference_mode():
        whole = cls_embeddings(model.eval(), input_ids, attention_mask)
    assert bert_style(model.encoder.layer[-1])
    fast = encode_cls(model, sequences, pad_id=tokenizer.pad_token_id, batch_size=3, device=torch.device("cpu"))
    assert torch.allclose(fast, whole, atol=1e-5)
    calls = []
    model.encoder.layer[-1].register_forward_hook(lambda *_: calls.append(1))
    encode_cls(model, sequences, pad_id=tokenizer.pad_token_id, batch_size=3, device=torch.device("cpu"))
    assert not calls  # the last layer's own forward (every position) never ran


def test_bad_probe_inputs_give_clear_errors_plumbing_tiny_random_bert():
    with pytest.raises(ValueError, match="no mask token"):
        ContrastiveProbe(tiny_bert(), tiny_tokenizer(mask=False), device="cpu")
    probe = ContrastiveProbe(tiny_bert(), tiny_tokenizer(), device="cpu", show_progress=False)
    with pytest.raises(ValueError, match=r"no \[Y\] slot"):
        probe.rank(["aspirin might treat fever ."], ["gout"], 1)
    with pytest.raises(ValueError, match="answer space is empty"):
        probe.rank(["aspirin might treat [Y] ."], [], 1)
    with pytest.raises(ValueError, match="unknown similarity"):
        ContrastiveProbe(tiny_bert(), tiny_tokenizer(), similarity="dot", device="cpu")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ContrastiveProbe.from_pretrained("./no/such/model")
