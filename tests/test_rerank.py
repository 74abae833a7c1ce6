"""`medprobe probe --rerank`: a shortlist file that is malformed, or leaves a query nothing to rank, is
an error naming the file, line or rows before any model loads; never a silent 0.00.

The scorer is a stand-in (plumbing): it prefers names in their shortlist order.
"""

import json

import numpy as np
import pytest

from medprobe.cli import main
from medprobe.contracts import Prober
from medprobe.lm.candidate_scoring import ShortlistProber, rank_by_scores, read_shortlists, shortlists_by_query


class ShortlistOrderScorer(Prober):
    """Scores candidates in the order given: the first is best."""

    name = "mask-average"
    kinds = ("ranking", "candidate-scoring")

    @property
    def settings(self):
        return {"kind": "shortlist-order"}

    def score_candidates(self, queries, candidates):
        return [np.arange(len(names), 0, -1, dtype=float) for names in candidates]

    def rank(self, queries, candidates, k):
        return rank_by_scores(self, queries, candidates, k)


class RankOnlyProber(Prober):
    """A ranking prober that scores no candidates (as mask-predict and generative)."""

    name = "mask-predict"
    kinds = ("ranking",)

    def rank(self, queries, candidates, k):
        return [list(candidates[:k]) for _ in queries]


@pytest.fixture
def rows(synthetic_medlama_hub):
    from datasets import load_dataset

    return load_dataset(str(synthetic_medlama_hub), "full", split="test")


@pytest.fixture
def scorer_loads(monkeypatch):
    """`MaskAverageProbe.from_pretrained` returns the stand-in, and records that a model was loaded."""
    from medprobe.lm.mask_average import MaskAverageProbe

    loaded = []

    def fake_from_pretrained(*args, **kwargs):
        loaded.append(args)
        return ShortlistOrderScorer()

    monkeypatch.setattr(MaskAverageProbe, "from_pretrained", fake_from_pretrained)
    # the stand-in's --model "tiny" names no model: skip the command's early check of the name
    monkeypatch.setattr("medprobe.cli.probe.check_model_first", lambda prober, model: None)
    return loaded


def write_lines(path, lines) -> str:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines), encoding="utf-8")
    return str(path)


def gold_first(rows) -> list[dict]:
    return [
        {"id": i, "predictions": [*answers, head]} for i, answers, head in zip(rows["id"], rows["answers"], rows["head_name"])
    ]


def rerank(hub, tmp_path, shortlist_file, *extra):
    out = tmp_path / "r.json"
    argv = [
        "probe",
        "--dataset",
        str(hub),
        "--config",
        "full",
        "--prober",
        "mask-average",
        "--model",
        "tiny",
        "--rerank",
        shortlist_file,
        "--out",
        str(out),
        *map(str, extra),
    ]
    return main(argv), out


def last_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1].split("\r")[-1]


def test_rerank_of_gold_first_shortlists_scores_one(synthetic_medlama_hub, rows, tmp_path, scorer_loads):
    code, out = rerank(synthetic_medlama_hub, tmp_path, write_lines(tmp_path / "p.jsonl", gold_first(rows)), "--rerank-top", 3)
    record = json.loads(out.read_text())
    assert code == 0 and record["metrics"]["acc@1"] == 1.0 and record["counts"]["queries_without_predictions"] == 0
    assert record["settings"]["shortlist"].startswith("top 3 of ") and record["settings"]["shortlist_size"] == 3
    assert record["settings"]["kind"] == "shortlist-order"


@pytest.mark.parametrize("top", ["0", "-2", "x"])
def test_rerank_top_must_be_a_positive_integer(synthetic_medlama_hub, tmp_path, top, capsys):
    with pytest.raises(SystemExit):
        rerank(synthetic_medlama_hub, tmp_path, "p.jsonl", "--rerank-top", top)
    assert "--rerank-top: expected a positive integer" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"id": "X", "predictions": "Alphazine"}, "predictions must be a list of strings, found str"),
        ({"id": "X", "predictions": ["Alphazine", 3]}, "predictions must be a list of strings, found a list holding int"),
        ({"id": 7, "predictions": ["Alphazine"]}, "the id must be a string, found int 7"),
        ({"id": "X", "names": ["Alphazine"]}, "found keys ['id', 'names']"),
        ("not json", "not JSON"),
        ({"id": "X", "predictions": ["Alphazine", "Alphazine"]}, "the name 'Alphazine' appears twice"),
    ],
    ids=["string_predictions", "number_in_predictions", "number_id", "no_predictions_key", "not_json", "name_twice"],
)
def test_malformed_line_names_the_file_and_line_before_the_model_loads(
    synthetic_medlama_hub, rows, tmp_path, scorer_loads, capsys, bad, message
):
    lines = gold_first(rows)
    if isinstance(bad, dict) and bad.get("id") == "X":
        bad = {**bad, "id": lines[1]["id"]}
    lines[1] = bad
    path = write_lines(tmp_path / "p.jsonl", lines)
    assert rerank(synthetic_medlama_hub, tmp_path, path)[0] == 2
    error = last_error(capsys)
    assert error.startswith(f"medprobe: error: --rerank {path}, line 2") and message in error
    assert scorer_loads == []


def test_id_seen_twice_is_an_error(synthetic_medlama_hub, rows, tmp_path, scorer_loads, capsys):
    lines = gold_first(rows)
    path = write_lines(tmp_path / "p.jsonl", [*lines, {**lines[0], "predictions": ["Zetapathy"]}])
    assert rerank(synthetic_medlama_hub, tmp_path, path)[0] == 2
    assert f"line {len(lines) + 1}: id {lines[0]['id']!r} again (first on line 1)" in last_error(capsys)


def test_rows_without_a_shortlist_are_counted_and_named_before_the_model_loads(
    synthetic_medlama_hub, rows, tmp_path, scorer_loads, capsys
):
    path = write_lines(tmp_path / "p.jsonl", gold_first(rows)[:50])
    assert rerank(synthetic_medlama_hub, tmp_path, path)[0] == 2
    error = last_error(capsys)
    assert f"--rerank {path} has no predictions for 7 of the 57 probed rows (e.g. {rows['id'][50]!r}" in error
    assert scorer_loads == []


def test_a_per_relation_file_covers_a_per_relation_run(synthetic_medlama_hub, rows, tmp_path, scorer_loads):
    first_ids = {}
    for example_id, relation in zip(rows["id"], rows["relation"]):
        first_ids.setdefault(relation, example_id)
    lines = [line for line in gold_first(rows) if line["id"] in first_ids.values()]
    code, out = rerank(synthetic_medlama_hub, tmp_path, write_lines(tmp_path / "p.jsonl", lines), "--per-relation", 1)
    assert code == 0 and json.loads(out.read_text())["counts"]["queries"] == 19


def test_shortlist_with_no_candidate_is_an_error_not_a_silent_zero(synthetic_medlama_hub, rows, tmp_path, scorer_loads, capsys):
    lines = gold_first(rows)
    lines[3] = {"id": lines[3]["id"], "predictions": ["not a name of this set", "nor this"]}
    assert rerank(synthetic_medlama_hub, tmp_path, write_lines(tmp_path / "p.jsonl", lines))[0] == 2
    error = last_error(capsys)
    assert f"the shortlists of 1 of the 57 probed rows hold no candidate name (e.g. {lines[3]['id']!r})" in error
    assert scorer_loads == []


def test_queries_left_with_no_prediction_are_counted_and_reported(synthetic_medlama_hub, rows, tmp_path, scorer_loads, capsys):
    """Only the head shortlisted, and --exclude-head: the query has nothing left; said aloud, and in the record."""
    lines = gold_first(rows)
    lines[0] = {"id": lines[0]["id"], "predictions": [rows["head_name"][0]]}
    code, out = rerank(synthetic_medlama_hub, tmp_path, write_lines(tmp_path / "p.jsonl", lines), "--exclude-head")
    assert code == 0
    assert json.loads(out.read_text())["counts"]["queries_without_predictions"] == 1
    assert f"note: 1 of 57 queries got no predictions and count as misses (e.g. {lines[0]['id']})" in capsys.readouterr().out


def test_rerank_with_a_prober_that_cannot_use_it_is_an_error(synthetic_medlama_hub, rows, tmp_path, capsys, monkeypatch):
    from medprobe.lm.mask_predict import MaskPredictProbe

    monkeypatch.setattr(MaskPredictProbe, "from_pretrained", lambda *args, **kwargs: RankOnlyProber())
    monkeypatch.setattr("medprobe.cli.probe.check_model_first", lambda prober, model: None)  # "tiny" names no model
    path = write_lines(tmp_path / "p.jsonl", gold_first(rows))
    assert (
        main(
            [
                "probe",
                "--dataset",
                str(synthetic_medlama_hub),
                "--prober",
                "mask-predict",
                "--model",
                "tiny",
                "--rerank",
                path,
                "--out",
                str(tmp_path / "r.json"),
            ]
        )
        == 2
    )
    error = last_error(capsys)
    assert (
        "--rerank works with --prober contrastive, mask-average or causal-lm (they score a shortlist), not mask-predict" in error
    )
    assert not (tmp_path / "r.json").exists()


def test_empty_file_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="holds no predictions"):
        read_shortlists(write_lines(tmp_path / "p.jsonl", ["", "  "]), 10)


def test_shared_query_text_needs_one_shortlist():
    rows = [("a", "X may treat [Y] .", {"p", "q"}), ("b", "X may treat [Y] .", {"p", "q"})]
    assert shortlists_by_query({"a": ["p"], "b": ["p"]}, rows, "f") == {"X may treat [Y] .": ["p"]}
    with pytest.raises(ValueError, match="rows 'a' and 'b' share the query"):
        shortlists_by_query({"a": ["p"], "b": ["q"]}, rows, "f")


def test_shortlist_prober_refuses_a_query_with_nothing_to_rank():
    prober = ShortlistProber(ShortlistOrderScorer(), {"q [Y]": ["elsewhere"]})
    with pytest.raises(ValueError, match="holds none of the candidates"):
        prober.rank(["q [Y]"], ["a", "b"], k=1)
