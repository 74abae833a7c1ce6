"""`medprobe import lm-eval` refuses, in one line (exit 2) and writing nothing: logs without samples, no lm-eval
results, tasks medprobe did not export, logs of other data, logs and results that disagree, partial runs unless
--allow-subset (then a subset, kept apart), files it did not write at its outputs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lm_eval_output import (
    build_exports,
    medprobe_cli,
    one_line,
    results_of,
    write_output,
)
from medprobe.contracts import UserError
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


# --- refused, in one line -------------------------------------------------------------------------------


@pytest.fixture
def mst_run(exports, tmp_path) -> Path:
    """A full MST run's results JSON in tmp_path/out/<model>/."""
    return write_output(tmp_path / "out", exports["mst"], ["medprobe_mst"])


def test_logs_without_samples_are_refused(mst_run, tmp_path):
    for path in mst_run.parent.glob("samples_*"):
        path.unlink()
    assert "run lm_eval with --log_samples" in one_line(medprobe_cli("import", "lm-eval", "out", cwd=tmp_path))
    assert [p.name for p in mst_run.parent.iterdir()] == [mst_run.name]  # nothing written


def test_a_folder_without_lm_eval_results_or_with_two_runs_is_refused(mst_run, tmp_path):
    (tmp_path / "empty").mkdir()
    assert "holds no lm-eval results" in one_line(medprobe_cli("import", "lm-eval", "empty", cwd=tmp_path))
    mst_run.with_name("results_2026-11-29T00-00-00.0.json").write_text(mst_run.read_text())
    assert "holds 2 lm-eval runs" in one_line(medprobe_cli("import", "lm-eval", "out", cwd=tmp_path))


def test_tasks_not_exported_by_medprobe_are_refused(mst_run, tmp_path):
    results = results_of(mst_run)
    results["configs"] = {"arc_easy": {"task": "arc_easy", "metadata": {"version": 1.0}}}
    mst_run.write_text(json.dumps(results))
    assert "holds no task exported by medprobe (it ran arc_easy)" in one_line(
        medprobe_cli("import", "lm-eval", "out", cwd=tmp_path)
    )
    for config in results["configs"].values():
        config["metadata"] = {"version": 1.0}
    results["configs"]["medprobe_mst_sorting"] = {"task": "medprobe_mst_sorting", "metadata": {"version": 1.0}}
    mst_run.write_text(json.dumps(results))
    assert "exported by an older medprobe" in one_line(medprobe_cli("import", "lm-eval", "out", cwd=tmp_path))


def edit_first_sample(results: Path, task: str, change) -> None:
    path = results.with_name(f"samples_{task}_2026-11-28T12-00-00.000000.jsonl")
    lines = path.read_text().splitlines()
    sample = json.loads(lines[0])
    change(sample)
    path.write_text("\n".join([json.dumps(sample, ensure_ascii=False), *lines[1:]]) + "\n")


def test_logs_of_other_data_are_refused_by_their_content_digest(mst_run, tmp_path):
    def other_text(sample):
        sample["doc"]["text"] = sample["doc"]["text"].replace("[MASK]", "[MASK] indeed")

    edit_first_sample(mst_run, "medprobe_mst_comparison", other_text)
    error = one_line(medprobe_cli("import", "lm-eval", "out", cwd=tmp_path))
    assert "samples_medprobe_mst_comparison_" in error and "line 1: doc 'comparison/0' has content digest" in error
    assert "lm-eval logged other data than was exported" in error


def test_docs_the_export_did_not_stamp_are_refused(mst_run, tmp_path):
    edit_first_sample(mst_run, "medprobe_mst_argminmax", lambda sample: sample["doc"].pop("medprobe_item"))
    assert "carries no medprobe id and digest" in one_line(medprobe_cli("import", "lm-eval", "out", cwd=tmp_path))


def test_log_likelihoods_that_do_not_give_the_logged_metric_are_refused(mst_run, tmp_path):
    def swapped(sample):
        sample["filtered_resps"] = sample["filtered_resps"][::-1]  # the other choice wins: acc no longer follows

    edit_first_sample(mst_run, "medprobe_mst_comparison", swapped)
    assert "lm-eval logged acc" in one_line(medprobe_cli("import", "lm-eval", "out", cwd=tmp_path))


def test_a_reported_number_the_samples_do_not_give_is_refused(mst_run, tmp_path):
    results = results_of(mst_run)
    results["results"]["medprobe_mst"]["acc,none"] += 0.01
    mst_run.write_text(json.dumps(results))
    error = one_line(medprobe_cli("import", "lm-eval", "out", cwd=tmp_path))
    assert "lm-eval's group medprobe_mst: lm-eval reports acc" in error and "not of one run" in error


def test_a_partial_run_is_refused_unless_recorded_as_a_subset(exports, tmp_path):
    write_output(tmp_path / "out", exports["medlama"], ["medprobe_medlama_hard"], limit=2)
    error = one_line(medprobe_cli("import", "lm-eval", "out", "--out", "records", cwd=tmp_path))
    assert "a partial run of medlama/hard (lm_eval --limit 2: 18 of 106 queries)" in error and "--allow-subset" in error
    assert not (tmp_path / "records").exists()
    result = medprobe_cli("import", "lm-eval", "out", "--out", "records", "--allow-subset", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "18 of 106 queries (a subset)" in result.stdout
    from medprobe.hub.subsets import subset_phrase

    (path,) = (tmp_path / "records").glob("*_hard_*.json")
    record = load_run(path).record
    assert record.subset["subset"] and record.settings["per_relation"] == 2 and "--limit 2" in record.command
    assert subset_phrase(record) == "first 2 queries per relation, 18 of 106 queries"  # what publish and boards say


def test_publish_refuses_an_imported_subset_unless_told(exports, tmp_path):
    write_output(tmp_path / "out", exports["mst"], ["medprobe_mst"], limit=2)
    (path,) = import_lm_eval(tmp_path / "out", allow_subset=True)
    argv = ["publish", "results", str(path), "--model-repo", "my-lab/x", "--dataset-id", "my-lab/mst", "--dry-run"]
    assert "probed a subset (limit 2, 10 of 30 items)" in one_line(medprobe_cli(*argv, "--model-mismatch-ok", cwd=tmp_path))


def test_some_tasks_of_a_record_alone_are_a_subset(exports, tmp_path):
    write_output(tmp_path / "out", exports["mst"], ["medprobe_mst_sorting", "medprobe_mst_comparison"])
    error = one_line(medprobe_cli("import", "lm-eval", "out", cwd=tmp_path))
    assert "a partial run of mst/all (3 of its 5 tasks not run: 12 of 30 items)" in error
    (path,) = import_lm_eval(tmp_path / "out", allow_subset=True)
    assert load_run(path).record.subset["options"] == {"tasks": "medprobe_mst_comparison,medprobe_mst_sorting"}


def test_files_at_the_outputs_that_medprobe_did_not_write_are_refused_unless_overwrite(mst_run, tmp_path):
    (tmp_path / "records").mkdir()
    mine = tmp_path / "records" / "medprobe_mst_all_2026-11-28T12-00-00.000000.json"
    mine.write_text("my notes")
    assert "records/medprobe_mst_all_" in one_line(medprobe_cli("import", "lm-eval", "out", "--out", "records", cwd=tmp_path))
    assert mine.read_text() == "my notes"
    result = medprobe_cli("import", "lm-eval", "out", "--out", "records", "--overwrite", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert load_run(mine).record.prober == "lm-eval"
    again = medprobe_cli("import", "lm-eval", "out", "--out", "records", cwd=tmp_path)  # its own record: replaced
    assert again.returncode == 0, again.stderr


def test_the_python_api_raises_user_errors(tmp_path):
    with pytest.raises(UserError, match="no_such_folder"):
        import_lm_eval(tmp_path / "no_such_folder")
