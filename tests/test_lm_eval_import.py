"""`medprobe import lm-eval`: an lm-eval output folder of medprobe's exported tasks comes back as verified records,
which compare, the leaderboard, review and publish take like any run.

The output folders are written as lm-eval 0.4.13 writes them (tests/lm_eval_output.py: the shape of a real run, the
exported utils.py's own docs, made-up or a tiny causal LM's log-likelihoods), so these tests need neither lm-eval nor
a model; tests/test_lm_eval_round_trip.py runs lm-eval itself. The data are a small MST build and the MedLAMA-format
sample shipped with medprobe (never MedLAMA's text).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lm_eval_output import (
    MST_CONFIGS,
    build_exports,
    length_scores,
    medprobe_cli,
    medprobe_run,
    mst_digests,
    probe_scores,
    results_of,
    tiny_causal_lm_at,
    write_output,
)
from medprobe.interchange.lm_eval_import import import_lm_eval
from medprobe.records import load_run


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    return build_exports(tmp_path_factory.mktemp("exports"))


@pytest.fixture(scope="module")
def mst_folder(built) -> Path:
    return built[0]


@pytest.fixture(scope="module")
def exports(built) -> dict[str, Path]:
    return built[1]


@pytest.fixture(scope="module")
def tiny_causal_lm(tmp_path_factory):
    return tiny_causal_lm_at(tmp_path_factory.mktemp("tiny_gpt2"))


# --- a run of MST and of MedLAMA comes in --------------------------------------------------------------


def test_an_mst_run_comes_in_as_a_verified_record_with_medprobes_ids_digests_and_data(exports, mst_folder, tmp_path):
    from medprobe.provenance import dataset_fingerprint

    results = write_output(tmp_path / "out", exports["mst"], ["medprobe_mst"])
    (path,) = import_lm_eval(tmp_path / "out")
    assert path.parent == results.parent and path.name == "medprobe_mst_all_2026-11-28T12-00-00.000000.json"
    run = load_run(path)  # the one loader: every number recomputed from the outcomes
    record, reported = run.record, results_of(results)["results"]
    assert (record.task, record.benchmark, record.config, record.split, record.prober) == ("mst", "mst", None, "test", "lm-eval")
    assert record.metrics["accuracy"] == pytest.approx(reported["medprobe_mst"]["acc,none"], abs=1e-12)
    assert f"{record.metrics['accuracy']:.4f}" == f"{reported['medprobe_mst']['acc,none']:.4f}"  # lm-eval prints 4 digits
    for config in MST_CONFIGS:
        assert record.per_group[config]["accuracy"] == pytest.approx(reported[f"medprobe_mst_{config}"]["acc,none"], abs=1e-12)
    assert (list(run.outcomes.ids), list(run.outcomes.contents)) == mst_digests(mst_folder)  # pairs with medprobe's own
    assert record.data_fingerprint == dataset_fingerprint(str(mst_folder), [(config, "test") for config in MST_CONFIGS])
    assert record.subset["subset"] is False and record.intervals["accuracy"]["n"] == 30
    assert record.settings["scored_by"] == "lm-eval" and record.settings["backend"] == "hf"
    assert record.source["scored_by"] == "lm-eval" and record.source["lm_eval"]["lm_eval_version"] == "0.4.13"
    assert record.source["lm_eval"]["task_versions"] == {f"medprobe_mst_{c}": 1.0 for c in MST_CONFIGS}
    assert record.model == "tiny-model" and record.model_identity["model_args"] == {"pretrained": "tiny-model"}
    assert record.command.startswith("lm_eval --model hf --model_args pretrained=tiny-model --tasks medprobe_mst ")
    assert "--log_samples" in record.command and "--limit" not in record.command
    assert record.versions["lm-eval"] == "0.4.13" and record.citations[-1] == "medprobe"


def test_one_config_run_alone_is_a_record_of_that_config(exports, tmp_path):
    write_output(tmp_path / "out", exports["mst"], ["medprobe_mst_sorting"])
    (path,) = import_lm_eval(tmp_path / "out", tmp_path / "records")
    record = load_run(path).record
    assert path.name.startswith("medprobe_mst_sorting_") and record.config == "sorting" and record.subset["subset"] is False
    assert record.command.split("--tasks ")[1].startswith("medprobe_mst_sorting ")


def test_a_medlama_run_records_ranks_per_relation_and_the_top_ten_names(exports, tmp_path):
    results = write_output(tmp_path / "out", exports["medlama"], ["medprobe_medlama_hard"])
    (path,) = import_lm_eval(tmp_path / "out", tmp_path / "records")
    run, reported = load_run(path), results_of(results)["results"]
    record = run.record
    assert (record.task, record.config, record.settings["candidates"], record.settings["exclude_head"]) == (
        "medlama",
        "hard",
        "relation",
        False,
    )
    for k in (1, 10):
        assert record.metrics[f"macro_acc@{k}"] == pytest.approx(reported["medprobe_medlama_hard"][f"acc_at_{k},none"], abs=1e-12)
    for relation, values in record.per_group.items():
        assert values["acc@1"] == pytest.approx(reported[f"medprobe_medlama_hard_{relation}"]["acc_at_1,none"], abs=1e-12)
    predictions = [json.loads(line) for line in path.with_name(f"{path.stem}.predictions.jsonl").read_text().splitlines()]
    assert [row["id"] for row in predictions] == list(run.outcomes.ids) and all(len(r["predictions"]) <= 10 for r in predictions)
    assert record.counts["queries"] == 106 and record.chance["acc@10"]["value"] > 0


# --- it pairs with medprobe's own run (compare), and goes on boards, sheets and cards --------------------


@pytest.fixture(scope="module")
def paired_runs(exports, tiny_causal_lm, tmp_path_factory) -> tuple[Path, Path]:
    """medprobe's causal-lm run on the first 2 queries of each relation, and an lm-eval run of the same model and items
    (--limit 2) imported as a subset."""
    folder, probe = tiny_causal_lm
    root = tmp_path_factory.mktemp("paired")
    ours = medprobe_run(folder, root / "ours.json", per_relation=2)
    write_output(root / "out", exports["medlama"], ["medprobe_medlama_hard"], scores=probe_scores(probe), limit=2)
    (theirs,) = import_lm_eval(root / "out", root / "records", allow_subset=True)
    return ours, theirs


def test_compare_pairs_the_import_with_medprobes_run_on_the_same_items_with_a_difference_of_zero(paired_runs):
    from medprobe.comparison.compare import compare
    from medprobe.comparison.inputs import read_inputs

    ours, theirs = paired_runs
    found = compare(read_inputs([ours, theirs]), resamples=200)["comparisons"][0]
    assert found["items"]["compared"] == 18 and found["intersected"] is False  # same data and items: no --intersect
    assert {name: diff["difference"] for name, diff in found["differences"].items()} == {
        "acc@1": 0.0,
        "macro_acc@1": 0.0,
        "acc@10": 0.0,
        "macro_acc@10": 0.0,
    }
    assert found["differing"]["prober"] == ["causal-lm", "lm-eval"] and "length_normalization" not in found["differing"]
    assert load_run(theirs).record.subset == {
        "subset": True,
        "options": {"per_relation": 2},
        "of": {"probed": 18, "total": 106, "unit": "queries"},
        "items": 18,
        "item_ids_sha256": load_run(ours).record.subset["item_ids_sha256"],
    }


def test_compare_on_the_command_line(paired_runs, tmp_path):
    ours, theirs = paired_runs
    result = medprobe_cli("compare", str(ours), str(theirs), "--resamples", "100", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "18 queries paired" in result.stdout and "+0.00 | [+0.00, +0.00]" in result.stdout


def lm_eval_mst_runs(exports, tmp_path, names=("model-a", "model-b")) -> list[Path]:
    """Two imported MST runs of other 'models' (other log-likelihoods) on the same items."""
    paths = []
    for index, name in enumerate(names):

        def scores(doc, context, continuations, flip=index):
            values = length_scores(doc, context, continuations)
            return values[::-1] if flip else values

        write_output(tmp_path / name, exports["mst"], ["medprobe_mst"], scores=scores, model=name)
        paths += import_lm_eval(tmp_path / name, tmp_path / "records" / name)
    return paths


def test_the_leaderboard_puts_imported_runs_on_one_board_and_leaves_a_subset_out(exports, tmp_path):
    from medprobe.leaderboard.boards import leaderboard_data
    from medprobe.leaderboard.sources import read_sources

    paths = lm_eval_mst_runs(exports, tmp_path)
    write_output(tmp_path / "limited", exports["mst"], ["medprobe_mst"], limit=2, model="model-c")
    paths += import_lm_eval(tmp_path / "limited", tmp_path / "records" / "limited", allow_subset=True)
    runs, excluded = read_sources([str(path) for path in paths], workers=1)
    assert len(runs) == 2 and len(excluded) == 1 and "a subset of its benchmark (limit 2, 10 of 30 items)" in excluded[0].reason
    data = leaderboard_data(runs, excluded, resamples=100, seed=0)
    (board,) = data["boards"]
    assert board["prober"] == "lm-eval" and sorted(row["model"] for row in board["rows"]) == ["model-a", "model-b"]


def test_the_leaderboard_command_builds_its_site_from_imported_runs(exports, tmp_path):
    paths = lm_eval_mst_runs(exports, tmp_path)
    result = medprobe_cli("leaderboard", *map(str, paths), "--out", str(tmp_path / "site"), "--resamples", "50", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "leaderboard.json").is_file()


def test_review_export_reads_an_imported_medlama_run(paired_runs, tmp_path):
    from medprobe.review.sheets import export

    _, theirs = paired_runs
    files = export(theirs, tmp_path / "review", sample=5, top_k=3, raters=["a", "b"], seed=0)
    assert "raters/a.csv" in files and "manifest.json" in files


def test_publish_results_dry_run_takes_an_imported_run_and_repeats_it_with_lm_eval(exports, tmp_path):
    write_output(tmp_path / "out", exports["mst"], ["medprobe_mst"])
    (path,) = import_lm_eval(tmp_path / "out")
    argv = ["publish", "results", str(path), "--model-repo", "my-lab/tiny", "--dataset-id", "my-lab/mst", "--dry-run"]
    result = medprobe_cli(*argv, "--model-mismatch-ok", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (
        "lm_eval --model hf --model_args pretrained=my-lab/tiny" in result.stdout
        and "lm-evaluation-harness 0.4.13 (scored by lm-eval, imported and checked by medprobe" in result.stdout
    )
