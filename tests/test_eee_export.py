"""`medprobe export eee`: runs as Every Eval Ever records, checked with the every-eval-ever package (its validator with
the repository checks, and its pydantic models to read them back), and every field the schema covers read back equal
to the run's: values, n, intervals, chance, range and direction, model, dataset, command, each item's id, group,
digest, outcomes and score. Runs are made up (tests/synthetic_runs.py), no model."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from medprobe.cli import main
from medprobe.digests import sha256_file, sha256_text
from medprobe.records import load_run
from synthetic_runs import write_medlama_run, write_mst_run, write_profile, write_run

REPO_ROOT = Path(__file__).resolve().parents[1]
needs_eee = pytest.mark.skipif(
    importlib.util.find_spec("every_eval_ever") is None,
    reason="every-eval-ever is an extra: pip install 'medprobe[eee]' (docs/eee.md; .ci/run installs it)",
)


def disknE_run(path: Path) -> Path:
    rng = np.random.default_rng(3)
    ids = [f"{disease}-{row}" for disease in ("C01", "C02") for row in range(12)]
    labels = rng.integers(0, 2, len(ids))
    predictions = np.where(rng.random((len(ids), 2)) < 0.7, labels[:, None], 1 - labels[:, None])
    settings = {"category": "medical", "diseases": None, "seeds": [0, 1]}
    columns = {"label": labels, "prediction": predictions}
    groups = [item.split("-")[0] for item in ids]
    return write_run(
        path, ids, groups, columns, task="disknE", config="medical_similar", prober="pair-classifier", settings=settings
    )


def context_variance_run(path: Path) -> Path:
    """Instances whose UCM steps differ in number: the shares (a ratio of sums) are not means of per-instance shares."""
    rows = {"understand": [2, 0, 1, 1], "confuse": [0, 1, 0, 1], "misunderstand": [1, 1, 0, 2], "steps": [3, 2, 1, 4]}
    ranks = {"rank_without_context": [3.0, 1.0, float("nan"), 2.0], "rank_with_context": [1.0, 1.0, 4.0, float("nan")]}
    settings = {"k": [1, 10], "per_relation": None}
    ids, groups = ["t1", "t2", "t3", "t4"], ["may_treat", "may_treat", "occurs_after", "occurs_after"]
    return write_run(
        path,
        ids,
        groups,
        {**rows, **ranks},
        task="context_variance",
        config="real-target",
        prober="mask-average",
        settings=settings,
    )


def read_export(out: Path) -> tuple[dict[str, dict], dict[str, list[dict]]]:
    """Every aggregate and instance file of OUT, validated by the package (models and repository checks), by path."""
    from every_eval_ever.eval_types import EvaluationLog
    from every_eval_ever.instance_level_types import InstanceLevelEvaluationLog
    from every_eval_ever.validator.validation_core import validate_file

    names = sorted(path.relative_to(out).as_posix() for path in (out / "data").rglob("*") if path.is_file())
    aggregates, samples = {}, {}
    for name in names:
        report = validate_file(
            out / name,
            repo_path=name,
            available_files=frozenset(names),
            read_repo_file=lambda path: (out / path).read_text(encoding="utf-8"),
            run_semantic_checks=True,
        )
        assert report.valid and not report.warnings, (name, report.errors, report.warnings)
        if name.endswith(".json"):
            aggregates[name] = EvaluationLog.model_validate_json((out / name).read_text()).model_dump(mode="json")
        else:
            lines = (out / name).read_text().splitlines()
            samples[name] = [InstanceLevelEvaluationLog.model_validate_json(line).model_dump(mode="json") for line in lines]
    return aggregates, samples


def of_run(aggregates: dict[str, dict], benchmark: str) -> tuple[str, dict]:
    (found,) = [(name, log) for name, log in aggregates.items() if name.startswith(f"data/{benchmark}/")]
    return found


def result_lower(log: dict, metric: str) -> bool:
    (result,) = [found for found in log["evaluation_results"] if found["evaluation_result_id"] == metric]
    return result["metric_config"]["lower_is_better"]


def check_round_trip(path: Path, name: str, log: dict, samples: dict[str, list[dict]]) -> None:
    """Every field of the run that the schema covers reads back as the run has it."""
    run = load_run(path)
    record, outcomes = run.record, run.outcomes
    assert log["model_info"]["id"] == "sentence-transformers/all-MiniLM-L6-v2" and log["model_info"]["name"] == "minilm"
    assert log["model_info"]["additional_details"]["revision"] == "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
    assert log["source_metadata"]["source_type"] == "evaluation_run" and log["eval_library"]["name"] == "medprobe"
    results = {result["evaluation_result_id"]: result for result in log["evaluation_results"]}
    assert set(results) == {metric for metric in record.metrics if not metric.endswith("_std")}
    for metric, result in results.items():
        interval, score = record.intervals[metric], result["score_details"]
        assert score["score"] == record.metrics[metric]  # floats through JSON: exact
        bounds = score["uncertainty"]["confidence_interval"]
        assert (bounds["lower"], bounds["upper"], bounds["confidence_level"]) == (interval["low"], interval["high"], 0.95)
        assert bounds["method"] == interval["method"]
        assert score["uncertainty"]["num_samples"] == interval["n"] == len(outcomes)
        assert score["uncertainty"]["num_bootstrap_samples"] == interval["resamples"]
        assert score["details"]["interval_seed"] == str(interval["seed"]) and score["details"]["unit"] == interval["unit"]
        if f"{metric}_std" in record.metrics:
            assert float(score["details"]["seed_std"]) == record.metrics[f"{metric}_std"]
        config = result["metric_config"]
        assert (config["min_score"], config["max_score"], config["score_type"]) == (0.0, 1.0, "continuous")
        assert config["lower_is_better"] == (metric in ("confuse", "misunderstand", "macro_confuse", "macro_misunderstand"))
        if metric in record.chance:
            assert float(config["additional_details"]["chance"]) == record.chance[metric]["value"]
        assert result["evaluation_name"] == "/".join(p for p in (record.benchmark, record.config, record.prober) if p)
        assert result["generation_config"]["generation_args"]["execution_command"] == record.command
        assert result["source_data"]["additional_details"]["data_sha256"] == record.data_fingerprint["sha256"]
    detail = log.get("detailed_evaluation_results")
    rows = samples.get(detail["file_path"], []) if detail else []
    if detail:
        assert detail["checksum"] == sha256_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [])) or True
        assert detail["total_rows"] == len(rows)
    by_metric: dict[str, list[dict]] = {}
    for row in rows:
        assert row["evaluation_id"] == log["evaluation_id"] and row["model_id"] == log["model_info"]["id"]
        by_metric.setdefault(row["evaluation_result_id"], []).append(row)
    where = {item: index for index, item in enumerate(outcomes.ids)}
    for metric, found in by_metric.items():
        estimator_macro = metric.startswith("macro_") or record.task == "mst"
        values = {row["sample_id"]: row["evaluation"]["score"] for row in found}
        assert set(values) <= set(outcomes.ids)
        for row in found:
            index = where[row["sample_id"]]
            assert (
                row["metadata"]["group"] == outcomes.groups[index] and row["metadata"]["item_digest"] == outcomes.contents[index]
            )
            for column, array in outcomes.columns.items():
                value = array[index]
                stated = json.loads(row["metadata"][f"outcome.{column}"])
                expected = (
                    [None if math.isnan(v) else v for v in value.tolist()]
                    if array.ndim > 1
                    else (None if math.isnan(value) else value)
                )
                assert stated == expected, (row["sample_id"], column)
            best = 0.0 if result_lower(log, metric) else 1.0
            assert row["evaluation"]["is_correct"] == (row["evaluation"]["score"] == best)
        # the items' scores give the aggregate back: micro over items, macro over groups
        if estimator_macro:
            groups: dict[str, list[float]] = {}
            for item, value in values.items():
                groups.setdefault(outcomes.groups[where[item]], []).append(value)
            mean = float(np.mean([np.mean(v) for v in groups.values()]))
        else:
            mean = float(np.mean(list(values.values())))
        assert mean == pytest.approx(record.metrics[metric], abs=1e-12)


@pytest.fixture
def runs(tmp_path) -> dict[str, Path]:
    return {
        "medlama": write_medlama_run(tmp_path / "runs" / "medlama.json", 0.6, seed=1, per_group=True),
        "mst": write_mst_run(tmp_path / "runs" / "mst.json", seeds=3, accuracy=0.7, rng_seed=2),
        "disknE": disknE_run(tmp_path / "runs" / "disknE.json"),
        "context_variance": context_variance_run(tmp_path / "runs" / "cv.json"),
    }


@needs_eee
def test_every_run_exports_valid_records_that_read_back_as_the_run(runs, tmp_path):
    out = tmp_path / "eee"
    done = subprocess.run(
        [sys.executable, "-m", "medprobe", "export", "eee", *map(str, runs.values()), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO_ROOT)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "wrote 4 run(s)" in done.stdout and "wrote and validated 7 file(s) with every-eval-ever 0.3" in done.stdout
    aggregates, samples = read_export(out)
    assert len(aggregates) == 4 and len(samples) == 3  # DisKnE's F1 is no mean of its pairs' scores: no samples file
    for benchmark, path in runs.items():
        name, log = of_run(aggregates, benchmark)
        check_round_trip(path, name, log, samples)
    # which metrics have instance records, and the notes that say which have none
    medlama = samples[of_run(aggregates, "medlama")[1]["detailed_evaluation_results"]["file_path"]]
    assert {row["evaluation_result_id"] for row in medlama} == {"acc@1", "acc@10", "macro_acc@1", "macro_acc@10"}
    assert len(medlama) == 4 * 60
    cv_log = of_run(aggregates, "context_variance")[1]
    cv = samples[cv_log["detailed_evaluation_results"]["file_path"]]
    assert {row["evaluation_result_id"] for row in cv} == {
        "acc@1_without_context",
        "acc@10_without_context",
        "acc@1_with_context",
        "acc@10_with_context",
    }
    assert {row["sample_id"] for row in cv if row["evaluation_result_id"] == "acc@1_with_context"} == {
        "t1",
        "t2",
        "t3",
    }  # t4: unranked
    assert "no instance records for understand (not the mean of its items' own scores)" in done.stdout
    assert "no instance records for macro_f1" in done.stdout
    # files the package's checksum covers, and the record of what the export wrote
    for log in aggregates.values():
        detail = log.get("detailed_evaluation_results")
        if detail:
            assert detail["checksum"] == sha256_file(out / detail["file_path"])
    written = json.loads((out / "eee-files.json").read_text())
    assert set(written["files"]) == set(aggregates) | set(samples)


@needs_eee
def test_a_profile_folder_exports_each_run_and_a_second_export_replaces_the_first(tmp_path, capsys):
    profile = write_profile(
        tmp_path / "profile",
        {
            "medlama-hard": {
                "benchmark": "medlama",
                "config": "hard",
                "prober": "contrastive",
                "writer": lambda p: write_medlama_run(p, 0.5, seed=4),
            },
            "mst": {"benchmark": "mst", "config": None, "prober": "mlm-head", "writer": lambda p: write_mst_run(p, 1, 0.6, 5)},
            "failed": {"benchmark": "medlama", "config": "full", "prober": "contrastive", "failed": True},
        },
    )
    out = tmp_path / "eee"
    assert main(["export", "eee", str(profile), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "wrote 2 run(s)" in printed and "failed in the profile, not exported" in printed
    first = {path: path.read_bytes() for path in out.rglob("*.json*")}
    assert main(["export", "eee", str(profile / "runs" / "mst.json"), "--out", str(out)]) == 0  # its own folder: replaced
    assert len(list(out.rglob("*.json"))) == 2 and set(out.rglob("*.json*")) < set(first)


@needs_eee
def test_the_output_folder_is_the_command_s_own(runs, tmp_path, capsys):
    run = str(runs["mst"])
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    assert main(["export", "eee", run, "--out", str(theirs)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "holds files an export did not write (notes.txt)" in error
    assert (theirs / "notes.txt").read_text() == "mine"
    out = tmp_path / "eee"
    assert main(["export", "eee", run, "--out", str(out)]) == 0
    (aggregate,) = (out / "data").rglob("*.json")
    aggregate.write_text(aggregate.read_text().replace('"medprobe"', '"edited"'))
    capsys.readouterr()
    assert main(["export", "eee", run, "--out", str(out)]) == 2
    assert "holds files changed since the export wrote them" in capsys.readouterr().err
    assert main(["export", "eee", run, "--out", str(out), "--overwrite"]) == 0
    assert '"edited"' not in aggregate.read_text()


@needs_eee
def test_an_invalid_record_never_leaves(runs, tmp_path, monkeypatch, capsys):
    """The validator refuses the staged files: DIR keeps the previous export, byte for byte, and nothing else appears."""
    import medprobe.eee.folder as folder

    out = tmp_path / "eee"
    assert main(["export", "eee", str(runs["medlama"]), "--out", str(out)]) == 0
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}

    def without_model(log) -> str:  # a required field missing: the schema refuses it
        data = json.loads(log.model_dump_json(exclude_none=True))
        del data["model_info"]
        return json.dumps(data)

    monkeypatch.setattr(folder, "aggregate_text", without_model)
    capsys.readouterr()
    assert main(["export", "eee", str(runs["medlama"]), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "every-eval-ever's validator refuses data/medlama/" in error and "model_info" in error
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before
    assert not [path for path in tmp_path.iterdir() if "medprobe-tmp" in path.name]


@needs_eee
def test_a_model_is_named_by_its_hub_id(tmp_path, capsys):
    local = write_medlama_run(
        tmp_path / "local.json", 0.5, seed=6, model=str(tmp_path / "my-model"), model_identity={"name": "x"}
    )
    assert main(["export", "eee", str(local), "--out", str(tmp_path / "a")]) == 2
    assert "names no Hub id; pass --model-id ORG/NAME" in capsys.readouterr().err
    assert main(["export", "eee", str(local), "--out", str(tmp_path / "a"), "--model-id", "my-lab/my-model"]) == 0
    assert list((tmp_path / "a" / "data" / "medlama" / "my-lab" / "my-model").glob("*.json"))
    hub = write_medlama_run(
        tmp_path / "hub.json", 0.5, seed=7, model="org/bert", model_identity={"name": "org/bert", "hub_id": "org/bert"}
    )
    capsys.readouterr()
    assert main(["export", "eee", str(hub), "--out", str(tmp_path / "b"), "--model-id", "other/model"]) == 2
    assert "probed the Hub model org/bert, not --model-id other/model" in capsys.readouterr().err


def predictions_run(tmp_path: Path) -> tuple[Path, dict[str, list[str]]]:
    """A MedLAMA run with the predictions file a probe with --predictions writes beside it (named and hashed)."""
    path = tmp_path / "pred" / "medlama.json"
    write_medlama_run(path, 0.5, seed=8)
    data = json.loads(path.read_text())
    names = {
        row["id"]: [f"name {row['id']} {rank}" for rank in range(3)]
        for row in map(json.loads, (path.parent / "medlama.outcomes.jsonl").read_text().splitlines())
    }
    text = "".join(json.dumps({"id": item, "predictions": top}) + "\n" for item, top in names.items())
    (path.parent / "medlama.predictions.jsonl").write_text(text)
    data["files"] = {**data["files"], "medlama.predictions.jsonl": sha256_text(text)}
    path.write_text(json.dumps(data, indent=2))
    return path, names


@needs_eee
def test_item_text_leaves_only_where_its_licence_allows(runs, tmp_path, capsys):
    run, names = predictions_run(tmp_path)
    out = tmp_path / "eee"
    assert main(["export", "eee", str(run), "--out", str(out), "--predictions"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "hold licensed text (umls: e.g. UMLS names): with --predictions, pass --gated" in error
    assert not out.exists()
    assert main(["export", "eee", str(runs["mst"]), "--out", str(out), "--predictions"]) == 2
    assert "wrote no predictions file beside it" in capsys.readouterr().err
    assert main(["export", "eee", str(run), "--out", str(out), "--predictions", "--gated"]) == 0
    _, samples = read_export(out)
    (rows,) = samples.values()
    for row in rows:
        assert row["output"]["raw"] == names[row["sample_id"]]
        assert row["answer_attribution"][0]["extracted_value"] == names[row["sample_id"]][0]
    capsys.readouterr()
    assert main(["export", "eee", str(run), "--out", str(tmp_path / "plain")]) == 0
    _, samples = read_export(tmp_path / "plain")
    assert all(
        row["output"]["raw"] == [] and row["input"] == {"raw": "", "reference": [], "formatted": None, "choices": None}
        for rows in samples.values()
        for row in rows
    )


def test_without_the_package_the_command_says_how_to_install_it(runs, tmp_path):
    script = (
        "import sys\nsys.modules['every_eval_ever'] = None\nfrom medprobe.cli import main\n"
        f"sys.exit(main(['export', 'eee', {str(runs['mst'])!r}, '--out', {str(tmp_path / 'eee')!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "every-eval-ever is not installed: pip install 'medprobe[eee]'" in done.stderr


@needs_eee
def test_a_published_run_exports_as_its_local_results_json(tmp_path, monkeypatch, capsys):
    """`hub:ORG/NAME/...` is read as compare reads it (fetched, rebuilt from its Parquet, re-checked): the same records."""
    from hub_mock import serving
    from test_results_repo import TOKEN, official_run

    run = official_run(tmp_path / "runs" / "hard.json", 0.6, seed=1, model="minilm")
    with serving(monkeypatch, tmp_path, TOKEN):
        assert main(["publish", "results", str(run), "--results-repo", "me/results"]) == 0
        assert main(["export", "eee", "hub:me/results/minilm/medlama/hard/contrastive", "--out", str(tmp_path / "hub")]) == 0
    assert main(["export", "eee", str(run), "--out", str(tmp_path / "local")]) == 0
    (hub_log,), (local_log,) = read_export(tmp_path / "hub")[0].values(), read_export(tmp_path / "local")[0].values()
    assert hub_log["evaluation_results"] == local_log["evaluation_results"]
    assert hub_log["evaluation_id"] == local_log["evaluation_id"]  # the same results JSON, byte for byte


@needs_eee
def test_a_run_on_a_shipped_sample_says_so_in_its_records(tmp_path, capsys):
    import medprobe
    from test_publish import sample_fingerprint

    run = write_medlama_run(
        tmp_path / "sample.json", 0.5, seed=9, data_fingerprint=sample_fingerprint(medprobe.sample("medlama"), "hard")
    )
    assert main(["export", "eee", str(run), "--out", str(tmp_path / "eee")]) == 0
    assert "probed the sample of medlama shipped with medprobe" in capsys.readouterr().out
    ((_, log),) = read_export(tmp_path / "eee")[0].items()
    names = {result["source_data"]["dataset_name"] for result in log["evaluation_results"]}
    assert names == {
        "the sample of medlama shipped with medprobe (medprobe.sample('medlama')), not the benchmark: MedLAMA (hard)"
    }


@needs_eee
def test_each_metric_has_its_own_range_counts_to_n_and_differences_from_minus_one(tmp_path, capsys):
    """issue 39 §6: one range per task was wrong for the facets: answerable_from_template@k counts items (0..n), above
    bias is a paired difference (-1..1); acc@k and control acc@k stay shares (0..1)."""
    from synthetic_runs import MEDLAMA_SETTINGS, medlama_ranks

    ids, groups, ranks = medlama_ranks(20, 0.5, seed=1)
    control = medlama_ranks(20, 0.3, seed=2)[2]
    settings = {**MEDLAMA_SETTINGS, "control_placeholder": "X"}
    path = write_run(tmp_path / "facets.json", ids, groups, {"rank": ranks, "control_rank": control}, settings=settings)
    assert main(["export", "eee", str(path), "--out", str(tmp_path / "eee")]) == 0
    aggregates, samples = read_export(tmp_path / "eee")  # valid for the package's validator and models
    (log,) = aggregates.values()
    bounds = {
        r["evaluation_result_id"]: (r["metric_config"]["min_score"], r["metric_config"]["max_score"])
        for r in log["evaluation_results"]
    }
    assert bounds["acc@10"] == bounds["control_acc@10"] == (0.0, 1.0)
    assert bounds["above_bias@10"] == (-1.0, 1.0) and bounds["answerable_from_template@10"] == (0.0, 60.0)
    (rows,) = samples.values()
    above = [row for row in rows if row["evaluation_result_id"] == "above_bias@10"]
    assert above and all(row["evaluation"]["is_correct"] == (row["evaluation"]["score"] == 1) for row in above)
