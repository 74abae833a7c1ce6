"""The context_variance task's ranking (medprobe.tasks.context_variance_ranks) with any candidate scorer
(`medprobe probe --prober mask-average|causal-lm|contrastive --task context_variance`), with stand-in
scorers (plumbing, no model), and once on a tiny random masked LM and causal LM; the removed
`--prober rank-change` runs the scorer the model calls for, with a warning.

The real scorers (medprobe.lm.mask_average.MaskAverageProbe, medprobe.lm.causal_lm.CausalLMProbe) share
the interface the stand-ins implement: score_candidates(queries with [Y], candidates) -> arrays.
"""

import json
import re

import numpy as np
import pytest

from medprobe.building.build import build
from medprobe.cli import main
from medprobe.run import RunRequest, run
from medprobe.tasks.context_variance_ranks import rank_rows, ranks_from_scores, score_queries, slot_query, ucm_steps

NOTE = "notes/ent_clinic_nasal_polyp.txt"
FIGURE1 = f"mp:nasal_polyp-has_symptom|discolored nasal discharge|{NOTE}"


class MentionCountScorer:
    """Scores a candidate by how often the query mentions it: a model that copies from its context."""

    settings = {"kind": "mention-count"}

    def __init__(self):
        self.calls = 0

    def score_candidates(self, queries, candidates):
        self.calls += 1
        scores = []
        for query, names in zip(queries, candidates):
            assert query.count("[Y]") == 1 and "[MASK]" not in query
            text = query.casefold()
            scores.append(
                np.array([len(re.findall(rf"(?<!\w){re.escape(n.casefold())}(?!\w)", text)) for n in names], dtype=float)
            )
        return scores


class ScriptedScorer:
    """Gives chosen candidates chosen ranks in chosen queries; everything else ties (candidate order decides)."""

    def __init__(self, script: dict[str, dict[str, int]]):
        self.script = script

    def score_candidates(self, queries, candidates):
        out = []
        for query, names in zip(queries, candidates):
            wanted = self.script.get(query, {})
            free = iter(r for r in range(1, len(names) + 1) if r not in wanted.values())
            ranks = [wanted[n] if n in wanted else next(free) for n in names] if wanted else [1] * len(names)
            out.append(-np.array(ranks, dtype=float))
        return out


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    out = tmp_path_factory.mktemp("cv_probe") / "hub"
    build("context_variance", out, configs=["real-target", "real-negative"])
    return out


def load(hub, config="real-target"):
    from datasets import load_dataset

    return load_dataset(str(hub), config, split="test")


def test_ties_break_by_candidate_order_and_nan_ranks_last():
    assert ranks_from_scores(np.array([1.0, 3.0, 3.0, 0.0])).tolist() == [3, 1, 2, 4]
    assert ranks_from_scores(np.array([np.nan, 0.5, 0.5])).tolist() == [3, 1, 2]
    assert ranks_from_scores(np.zeros(3)).tolist() == [1, 2, 3]


def test_row_slot_becomes_the_scorers_slot():
    assert slot_query("Context. asthma has symptoms such as [MASK] .", "r") == "Context. asthma has symptoms such as [Y] ."
    with pytest.raises(ValueError, match="row 'r7': expected exactly one \\[MASK\\]"):
        slot_query("asthma has symptoms such as fever .", "r7")
    with pytest.raises(ValueError, match="row 'r8'"):
        slot_query("[MASK] then [MASK]", "r8")


def test_figure1_rank_changes_through_the_probe(hub):
    ds = load(hub)
    rows = ds.filter(lambda r: r["instance_id"] == FIGURE1)
    input4, input5 = (slot_query(rows[i]["text"], "") for i in (4, 5))
    scorer = ScriptedScorer(
        {
            input4: {
                "discolored nasal discharge": 2,
                "nasal stuffiness": 20,
                "postnasal drip": 6,
                "sick feeling": 3,
                "heartburn": 5,
            },
            input5: {
                "discolored nasal discharge": 1,
                "nasal stuffiness": 2,
                "postnasal drip": 3,
                "sick feeling": 10,
                "heartburn": 6,
            },
        }
    )
    row_ranks = rank_rows(rows, scorer, progress=False)
    assert row_ranks[4]["nasal stuffiness"] == 20  # the object added next is ranked before it is added
    inputs = ucm_steps(rows, row_ranks).inputs
    step5 = 4  # entries are steps 1..10
    assert inputs["target_rank_before"][step5] == 2 and inputs["target_rank_after"][step5] == 1
    assert inputs["added_is_correct"][step5] is True
    assert inputs["added_rank_changes"][step5] == -18
    assert inputs["correct_rank_changes"][step5] == [-3]
    assert inputs["incorrect_rank_changes"][step5] == [7, 1]

    import evaluate

    from medprobe.resources import metric_path

    one_step = {
        key: values[step5 : step5 + 1]
        for key, values in inputs.items()
        if key not in ("ranks_without_context", "ranks_with_context")
    }
    result = evaluate.load(metric_path("ucm")).compute(**one_step)
    assert result["understand"] == 1.0
    assert result["rank_change"]["correct_added"] == {
        "RC-Ot": -1.0,
        "RC-Oa": -18.0,
        "RC-Ocor": -3.0,
        "RC-Oincor": 4.0,
        "steps": 1,
    }


def test_probe_scores_each_distinct_query_once_in_batches(hub):
    ds = load(hub)
    scorer = MentionCountScorer()
    row_ranks = rank_rows(ds, scorer, batch_size=50, progress=False)
    distinct = len(set(ds["text"]))
    assert distinct < ds.num_rows  # step 0 (the prompt alone) repeats across documents
    assert scorer.calls == -(-distinct // 50)
    assert len(row_ranks) == ds.num_rows
    # a copying model ranks the target first once S1 (which mentions it) is in the context, unless tied and listed later
    step1 = [rr for rr, step in zip(row_ranks, ds["step"]) if step == 1]
    assert sum(rr[rr.target] == 1 for rr in step1) > len(step1) / 2


def test_scorer_returning_the_wrong_number_of_scores_is_an_error(hub):
    class Broken:
        def score_candidates(self, queries, candidates):
            return [np.zeros(2) for _ in queries]

    with pytest.raises(ValueError, match="returned 2 scores for"):
        rank_rows(load(hub).select(range(3)), Broken(), progress=False)
    with pytest.raises(TypeError, match="has no score_candidates"):
        score_queries(object(), ["a [Y] ."], [["b"]])


@pytest.fixture
def stand_in(monkeypatch):
    """`run` builds a MentionCountScorer for whatever prober it is asked for (the list holds the ones built)."""
    built = []

    def make_prober(name, model, **kwargs):
        built.append(MentionCountScorer())
        return built[-1]

    monkeypatch.setattr("medprobe.run.make_prober", make_prober)
    return built


def request(hub, tmp_path, prober="mask-average", **task_options):
    return RunRequest(
        task="context_variance",
        prober=prober,
        dataset=str(hub),
        config=task_options.pop("config", "real-target"),
        model="stand-in",
        out=str(tmp_path / "results.json"),
        plot=task_options.pop("plot", None),
        task_options=task_options,
    )


def test_context_variance_run_writes_the_ucm_table_and_results(hub, tmp_path, capsys, stand_in):
    ds = load(hub)
    run(request(hub, tmp_path, predictions=str(tmp_path / "ranks.jsonl"), plot=str(tmp_path / "ucm.png")))
    record = json.loads((tmp_path / "results.json").read_text())
    metrics = record["metrics"]
    steps = ds.num_rows - len(set(ds["instance_id"]))
    correct_steps = sum(c for c, s in zip(ds["added_is_correct"], ds["step"]) if s > 0)
    assert (
        record["counts"]["steps"] == steps
        and metrics["steps"] == correct_steps
        and metrics["excluded_steps"] == steps - correct_steps
    )
    assert metrics["understand"] + metrics["confuse"] + metrics["misunderstand"] == pytest.approx(1.0)
    assert set(record["per_group"]) == {"has_symptom", "may_treat", "adverse_effect"}
    assert set(metrics["rank_change"]) == {"correct_added", "incorrect_added"}
    assert "acc@10_without_context" in metrics and "acc@10_with_context" in metrics
    # a copying model gains from context: the answers it is shown rise
    assert metrics["acc@10_with_context"] > metrics["acc@10_without_context"]
    assert metrics["rank_change"]["correct_added"]["RC-Oa"] < 0
    assert record["prober"] == "mask-average" and record["benchmark"] == "context_variance"
    assert record["settings"]["tie_break"] == "candidate order"
    assert record["settings"]["scorer"] == "MentionCountScorer" and record["settings"]["kind"] == "mention-count"
    assert record["settings"]["k"] == [1, 10] and record["settings"]["batch_size"] == 64 and "probe" in record["timings"]
    table = capsys.readouterr().out
    assert "UCM_m (all)" in table and "has_symptom" in table and "RC-Oincor" in table
    assert len((tmp_path / "ranks.jsonl").read_text().splitlines()) == ds.num_rows
    assert (tmp_path / "ucm.png").stat().st_size > 1000


def test_per_relation_keeps_whole_instances(hub, tmp_path, capsys, stand_in):
    ds = load(hub, "real-negative")
    first_two = {
        r: list(dict.fromkeys(i for i, rel in zip(ds["instance_id"], ds["relation"]) if rel == r))[:2]
        for r in set(ds["relation"])
    }
    kept = sum(i in {x for two in first_two.values() for x in two} for i in ds["instance_id"])
    run(request(hub, tmp_path, config="real-negative", per_relation=2, k=[1, 5]))
    assert f"probing the first 2 instances of each relation: {kept} of {ds.num_rows} rows" in capsys.readouterr().out
    record = json.loads((tmp_path / "results.json").read_text())
    assert record["counts"]["instances"] == 6 and record["counts"]["rows"] == kept < ds.num_rows
    assert record["counts"]["steps"] == record["counts"]["rows"] - 6
    assert record["settings"]["per_relation"] == 2 and "acc@5_with_context" in record["metrics"]


def test_a_folder_named_otherwise_records_the_benchmark_context_variance(hub, tmp_path, stand_in):
    renamed = tmp_path / "my probes" / "cv-2021"
    renamed.parent.mkdir()
    renamed.symlink_to(hub, target_is_directory=True)
    record = run(request(renamed, tmp_path))
    assert record.benchmark == "context_variance" and record.dataset == str(renamed)
    assert json.loads((tmp_path / "results.json").read_text())["benchmark"] == "context_variance"


def exit_code(argv: list[str]) -> int:
    """`medprobe ARGV`'s exit status, whether main returns it or argparse exits with it."""
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code


def test_cli_context_variance_errors_are_one_line(hub, tmp_path, capsys):
    common = ["probe", "--dataset", str(hub), "--prober", "mask-average", "--task", "context_variance"]
    assert exit_code(common) == 2
    assert "the following arguments are required: --model" in capsys.readouterr().err
    out = str(tmp_path / "r.json")
    assert exit_code([*common, "--config", "nope", "--model", "minilm", "--out", out]) == 2
    assert "does not load (config 'nope', split 'test'): BuilderConfig 'nope' not found" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_removed_rank_change_prober_says_which_prober_to_use(hub, tmp_path, capsys):
    # without a model (or with an unknown --scorer) there is nothing to choose from: the message names the probers
    for extra in ([], ["--model", "x", "--scorer", "bm25"]):
        assert exit_code(["probe", "--dataset", str(hub), "--prober", "rank-change", *extra]) == 2
        err = capsys.readouterr().err
        assert "--prober rank-change was removed" in err and "mask-average" in err and "--task context_variance" in err
    with pytest.raises(ValueError, match="--prober rank-change was removed: .*causal-lm"):
        run(request(hub, tmp_path, prober="rank-change"))
    from medprobe.registry import registry

    assert "rank-change" not in registry().probers


def test_auto_scorer_follows_the_model_config(tmp_path):
    from transformers import BertConfig, LlamaConfig

    from medprobe.tasks.context_variance_ranks import scorer_kind

    BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32).save_pretrained(
        tmp_path / "bert"
    )
    LlamaConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32).save_pretrained(
        tmp_path / "llama"
    )
    assert scorer_kind(str(tmp_path / "bert")) == "mask-average"
    assert scorer_kind(str(tmp_path / "llama")) == "causal-lm"


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory):
    from tiny_models import tiny_random_bert_mlm

    model, tokenizer = tiny_random_bert_mlm(max_position_embeddings=256)  # context steps run to ~150 word pieces
    folder = tmp_path_factory.mktemp("tiny_mlm")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_deprecated_rank_change_runs_mask_average_with_task_context_variance_plumbing_tiny_random_bert(
    hub, tiny_mlm, tmp_path, capsys
):
    common = ["--dataset", str(hub), "--config", "real-negative", "--model", tiny_mlm, "--device", "cpu", "--per-relation", "1"]
    assert (
        main(
            [
                "probe",
                "--prober",
                "rank-change",
                *common,
                "--out",
                str(tmp_path / "rc.json"),
                "--predictions",
                str(tmp_path / "rc.jsonl"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "probe",
                "--prober",
                "mask-average",
                "--task",
                "context_variance",
                *common,
                "--out",
                str(tmp_path / "ma.json"),
                "--predictions",
                str(tmp_path / "ma.jsonl"),
            ]
        )
        == 0
    )
    rank_change, mask_average = (json.loads((tmp_path / name).read_text()) for name in ("rc.json", "ma.json"))
    assert "warning: --prober rank-change is deprecated" in capsys.readouterr().err
    assert (rank_change["prober"], mask_average["prober"]) == ("mask-average", "mask-average")
    assert rank_change["settings"]["scorer"] == mask_average["settings"]["scorer"] == "MaskAverageProbe"
    for key in ("benchmark", "metrics", "per_group", "counts"):
        assert rank_change[key] == mask_average[key], key
    assert rank_change["benchmark"] == "context_variance" and rank_change["counts"]["instances"] == 3
    assert (tmp_path / "rc.jsonl").read_bytes() == (tmp_path / "ma.jsonl").read_bytes()


@pytest.fixture(scope="module")
def tiny_causal_lm(tmp_path_factory):
    from tiny_models import byte_bpe_tokenizer, tiny_random_gpt2

    tokenizer = byte_bpe_tokenizer()
    folder = tmp_path_factory.mktemp("tiny_gpt2")
    tiny_random_gpt2(tokenizer, n_positions=1024).save_pretrained(folder)  # context steps are long in byte pieces
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_causal_lm_and_mask_average_rank_context_steps_plumbing_tiny_random_gpt2(hub, tiny_causal_lm, tiny_mlm):
    from medprobe.run import check_request, make_prober
    from medprobe.tasks.context_variance import ContextVarianceTask

    rows = load(hub, "real-negative").select(range(2))  # two rows are enough to compare the ranks
    task = ContextVarianceTask()
    small = make_prober("causal-lm", tiny_causal_lm, device="cpu", options={"batch_size": 8})
    direct = make_prober("causal-lm", tiny_causal_lm, device="cpu")
    through_small, through_causal_lm = task.predict(small, rows, None), task.predict(direct, rows, None)
    assert [r.ranks for r in through_small.row_ranks] == [r.ranks for r in through_causal_lm.row_ranks]
    assert through_small.settings["batch_size"] == 8 and through_causal_lm.settings["batch_size"] == 64
    assert through_causal_lm.settings["scorer"] == "CausalLMProbe"
    masked = task.predict(make_prober("mask-average", tiny_mlm, device="cpu"), rows, None)
    assert masked.settings["scorer"] == "MaskAverageProbe" and len(masked.row_ranks) == 2
    for prober in ("causal-lm", "mask-average", "contrastive"):  # every candidate scorer may run the task
        check_request(RunRequest(task="context_variance", prober=prober, dataset=str(hub), model="m", out=None))
