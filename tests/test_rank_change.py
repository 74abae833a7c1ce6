"""RankChangeProbe and `medprobe probe --prober rank-change` with stand-in scorers (plumbing, no model).

The real scorers (probers.lm.mask_average.MaskAverageProbe, probers.lm.causal_lm.CausalLMProbe) share
the interface the stand-ins implement: score_candidates(queries with [Y], candidates) -> arrays.
"""

import argparse
import json
import re

import numpy as np
import pytest

from probers.hub.build import build
from probers.cli import main
from probers.lm.rank_change import RankChangeProbe, ranks_from_scores, slot_query, ucm_inputs

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
            scores.append(np.array([len(re.findall(rf"(?<!\w){re.escape(n.casefold())}(?!\w)", text)) for n in names], dtype=float))
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
            input4: {"discolored nasal discharge": 2, "nasal stuffiness": 20, "postnasal drip": 6, "sick feeling": 3, "heartburn": 5},
            input5: {"discolored nasal discharge": 1, "nasal stuffiness": 2, "postnasal drip": 3, "sick feeling": 10, "heartburn": 6},
        }
    )
    row_ranks = RankChangeProbe(scorer, progress=False).rank(rows)
    assert row_ranks[4]["nasal stuffiness"] == 20  # the object added next is ranked before it is added
    inputs = ucm_inputs(rows, row_ranks)
    step5 = 4  # entries are steps 1..10
    assert inputs["target_rank_before"][step5] == 2 and inputs["target_rank_after"][step5] == 1
    assert inputs["added_is_correct"][step5] is True
    assert inputs["added_rank_changes"][step5] == -18
    assert inputs["correct_rank_changes"][step5] == [-3]
    assert inputs["incorrect_rank_changes"][step5] == [7, 1]

    import evaluate

    from probers.hub.resources import metric_path

    one_step = {key: values[step5 : step5 + 1] for key, values in inputs.items() if key not in ("ranks_without_context", "ranks_with_context")}
    result = evaluate.load(metric_path("ucm")).compute(**one_step)
    assert result["understand"] == 1.0
    assert result["rank_change"]["correct_added"] == {"RC-Ot": -1.0, "RC-Oa": -18.0, "RC-Ocor": -3.0, "RC-Oincor": 4.0, "steps": 1}


def test_probe_scores_each_distinct_query_once_in_batches(hub):
    ds = load(hub)
    scorer = MentionCountScorer()
    probe = RankChangeProbe(scorer, batch_size=50, progress=False)
    row_ranks = probe.rank(ds)
    distinct = len(set(ds["text"]))
    assert distinct < ds.num_rows  # step 0 (the prompt alone) repeats across documents
    assert scorer.calls == -(-distinct // 50)
    assert len(row_ranks) == ds.num_rows and probe.settings["tie_break"] == "candidate order"
    # a copying model ranks the target first once S1 (which mentions it) is in the context, unless tied and listed later
    step1 = [rr for rr, step in zip(row_ranks, ds["step"]) if step == 1]
    assert sum(rr[rr.target] == 1 for rr in step1) > len(step1) / 2


def test_scorer_returning_the_wrong_number_of_scores_is_an_error(hub):
    class Broken:
        def score_candidates(self, queries, candidates):
            return [np.zeros(2) for _ in queries]

    with pytest.raises(ValueError, match="returned 2 scores for"):
        RankChangeProbe(Broken(), progress=False).rank(load(hub).select(range(3)))
    with pytest.raises(TypeError, match="has no score_candidates"):
        RankChangeProbe(object())


def probe_args(hub, tmp_path, **overrides):
    values = dict(
        dataset=str(hub), config="real-target", split="test", prober="rank-change", model="stand-in", seed=None, batch_size=64,
        k=[1, 10], candidates="set", per_relation=None, out=str(tmp_path / "results.json"), plot=None, predictions=None, scorer="auto",
    )  # fmt: skip
    values.update(overrides)
    return argparse.Namespace(**values)


def test_rank_change_run_writes_the_ucm_table_and_results(hub, tmp_path, capsys):
    from probers.tasks.context_variance import run_rank_change

    ds = load(hub)
    args = probe_args(hub, tmp_path, predictions=str(tmp_path / "ranks.jsonl"), plot=str(tmp_path / "ucm.png"))
    assert run_rank_change(args, scorer=MentionCountScorer()) == 0
    record = json.loads((tmp_path / "results.json").read_text())
    metrics = record["metrics"]
    steps = ds.num_rows - len(set(ds["instance_id"]))
    correct_steps = sum(c for c, s in zip(ds["added_is_correct"], ds["step"]) if s > 0)
    assert record["counts"]["steps"] == steps and metrics["steps"] == correct_steps and metrics["excluded_steps"] == steps - correct_steps
    assert metrics["understand"] + metrics["confuse"] + metrics["misunderstand"] == pytest.approx(1.0)
    assert set(record["per_group"]) == {"has_symptom", "may_treat", "adverse_effect"}
    assert set(metrics["rank_change"]) == {"correct_added", "incorrect_added"}
    assert "acc@10_without_context" in metrics and "acc@10_with_context" in metrics
    # a copying model gains from context: the answers it is shown rise
    assert metrics["acc@10_with_context"] > metrics["acc@10_without_context"]
    assert metrics["rank_change"]["correct_added"]["RC-Oa"] < 0
    assert record["settings"]["scorer"] == "MentionCountScorer" and "probe" in record["timings"]
    table = capsys.readouterr().out
    assert "UCM_m (all)" in table and "has_symptom" in table and "RC-Oincor" in table
    assert len((tmp_path / "ranks.jsonl").read_text().splitlines()) == ds.num_rows
    assert (tmp_path / "ucm.png").stat().st_size > 1000


def test_per_relation_keeps_whole_instances(hub, tmp_path):
    from probers.tasks.context_variance import run_rank_change

    run_rank_change(probe_args(hub, tmp_path, config="real-negative", per_relation=2), scorer=MentionCountScorer())
    record = json.loads((tmp_path / "results.json").read_text())
    assert record["counts"]["instances"] == 6
    assert record["counts"]["steps"] == record["counts"]["rows"] - 6


def test_cli_rank_change_errors_are_one_line(hub, capsys):
    assert main(["probe", "--dataset", str(hub), "--prober", "rank-change"]) == 2
    assert "--prober rank-change needs --model" in capsys.readouterr().err
    assert main(["probe", "--dataset", str(hub), "--config", "nope", "--prober", "rank-change", "--model", "x"]) == 2
    assert "does not load (config 'nope', split 'test'): BuilderConfig 'nope' not found" in capsys.readouterr().err


def test_missing_scorer_module_is_a_clear_error(tmp_path, monkeypatch):
    import probers.tasks.context_variance as runner

    monkeypatch.setitem(runner.SCORER_CLASSES, "causal-lm", ("probers.not_there", "CausalLMProbe"))
    args = argparse.Namespace(model=str(tmp_path), scorer="causal-lm")
    with pytest.raises(ValueError, match=r"the causal-lm scorer \(probers.not_there.CausalLMProbe\) is not available"):
        runner.make_rank_change_scorer(args)


def test_auto_scorer_follows_the_model_config(tmp_path):
    from transformers import BertConfig, LlamaConfig

    from probers.tasks.context_variance import scorer_kind

    BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32).save_pretrained(tmp_path / "bert")
    LlamaConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32).save_pretrained(tmp_path / "llama")
    assert scorer_kind(str(tmp_path / "bert")) == "mask-average"
    assert scorer_kind(str(tmp_path / "llama")) == "causal-lm"
