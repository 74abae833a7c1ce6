"""The Hub's current evaluation formats: `publish results` writes `.eval_results/*.yaml` entries beside the model-index,
and `publish dataset --eval-yaml` the benchmark's eval.yaml, each checked against the fields the Hub documents
(https://huggingface.co/docs/hub/eval-results, hub-docs docs/hub/eval-results.md at e3bb58f5). The Hub is faked
(tests/hub_mock.py)."""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path

import pytest
import yaml

import medprobe.hub.eval_yaml as eval_yaml
from hub_mock import serving
from medprobe.cli import main
from test_publish import TOKEN, model_repo, published_card, write_results

# --- the documented formats, as checks -----------------------------------------------------------------------------

# .eval_results/*.yaml: a list of entries ("Adding Evaluation Results"; hub-docs eval_results.yaml)
ENTRY_FIELDS = {"dataset": dict, "value": (int, float), "verifyToken": str, "date": str, "source": dict, "notes": str}
ENTRY_REQUIRED = ("dataset", "value")
DATASET_FIELDS = {"id": str, "task_id": str, "revision": str}
DATASET_REQUIRED = ("id", "task_id")
SOURCE_FIELDS = {"url": str, "name": str, "user": str, "org": str}
# eval.yaml ("Eval.yaml specification")
EVAL_YAML_FIELDS = {"name": str, "description": str, "evaluation_framework": str, "tasks": list}
TASK_FIELDS = {"id": str, "config": str, "split": str}


def fields_problems(data: object, fields: dict, required: tuple, where: str) -> list[str]:
    if not isinstance(data, dict):
        return [f"{where}: not a mapping"]
    problems = [f"{where}.{key}: required" for key in required if key not in data]
    problems += [f"{where}.{key}: not documented" for key in data if key not in fields]
    problems += [f"{where}.{key}: type" for key, kind in fields.items() if key in data and not isinstance(data[key], kind)]
    return problems


def entry_file_problems(text: str) -> list[str]:
    entries = yaml.safe_load(text)
    if not isinstance(entries, list) or not entries:
        return ["not a list of entries"]
    problems = []
    for number, entry in enumerate(entries):
        where = f"[{number}]"
        problems += fields_problems(entry, ENTRY_FIELDS, ENTRY_REQUIRED, where)
        problems += fields_problems(entry.get("dataset"), DATASET_FIELDS, DATASET_REQUIRED, f"{where}.dataset")
        if "source" in entry:
            problems += fields_problems(entry["source"], SOURCE_FIELDS, ("url",), f"{where}.source")
        if "date" in entry:
            datetime.datetime.fromisoformat(entry["date"])  # ISO-8601
    return problems


def eval_yaml_problems(text: str) -> list[str]:
    data = yaml.safe_load(text)
    problems = fields_problems(data, EVAL_YAML_FIELDS, tuple(EVAL_YAML_FIELDS), "eval.yaml")
    for number, task in enumerate(data.get("tasks") or []):
        problems += fields_problems(task, TASK_FIELDS, ("id",), f"tasks[{number}]")
    return problems


def test_the_checks_refuse_what_the_documents_do_not_allow():
    good = "- dataset:\n    id: Idavidrein/gpqa\n    task_id: gpqa_diamond\n  value: 0.412\n"
    assert entry_file_problems(good) == []
    assert entry_file_problems("- dataset:\n    id: a/b\n  value: 1\n  n: 3\n") == [
        "[0].n: not documented",
        "[0].dataset.task_id: required",
    ]
    assert eval_yaml_problems("name: x\ndescription: y\nevaluation_framework: mteb\ntasks:\n- id: t\n  config: c\n") == []
    assert eval_yaml_problems("name: x\ntasks:\n- {config: c}\n") == [
        "eval.yaml.description: required",
        "eval.yaml.evaluation_framework: required",
        "tasks[0].id: required",
    ]


# --- publish results: .eval_results entries --------------------------------------------------------------------------

EVAL_YAML = """name: MedLAMA
description: Biomedical knowledge probing.
evaluation_framework: inspect-ai
tasks:
  - id: hard
    config: hard
    split: test
  - id: full
    config: full
    split: validation
"""


@pytest.fixture
def hub(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    with serving(monkeypatch, tmp_path) as fake:
        yield fake


def eval_files(hub) -> dict[str, str]:
    files = hub.repos[("model", "my-lab/bert")].files
    return {path: content.decode() for path, content in files.items() if path.startswith(".eval_results/")}


def test_a_run_s_headline_goes_into_eval_results_beside_the_model_index(hub, tmp_path, capsys):
    run = write_results(tmp_path / "hard.json")
    model_repo(hub)
    hub.repos[("dataset", "my-lab/medlama")].files["eval.yaml"] = EVAL_YAML.encode()
    assert main(["publish", "results", str(run), "--model-repo", "my-lab/bert"]) == 0
    (commit,) = hub.repos[("model", "my-lab/bert")].commits
    assert set(commit["files"]) == {"README.md", ".eval_results/medprobe_medlama_hard_contrastive.yaml"}  # one commit
    (text,) = eval_files(hub).values()
    assert entry_file_problems(text) == []
    (entry,) = yaml.safe_load(text)
    from medprobe.records import load_run

    record = load_run(run).record
    interval = record.intervals["acc@10"]
    assert entry["dataset"] == {"id": "my-lab/medlama", "task_id": "hard"}
    assert entry["value"] == record.metrics["acc@10"] == 0.2
    assert entry["date"] == record.created
    assert entry["source"]["url"] == "https://huggingface.co/my-lab/bert"
    assert f"95% CI [{interval['low']:.4f}, {interval['high']:.4f}]" in entry["notes"]
    assert "medprobe contrastive; acc@10; n = 100 querys" not in entry["notes"] and "n = 100 queries" in entry["notes"]
    # the model-index stays, for older readers
    assert {result.metric_type for result in published_card(hub).data.eval_results} >= {"acc@10", "acc@1"}


def test_an_entry_is_written_only_for_a_task_the_dataset_declares(hub, tmp_path, capsys):
    model_repo(hub)
    hard = write_results(tmp_path / "hard.json")
    assert main(["publish", "results", str(hard), "--model-repo", "my-lab/bert"]) == 0  # no eval.yaml
    assert eval_files(hub) == {}
    assert "my-lab/medlama has no eval.yaml (not a Hub benchmark, or no such dataset)" in capsys.readouterr().out
    hub.repos[("dataset", "my-lab/medlama")].files["eval.yaml"] = EVAL_YAML.encode()
    full = write_results(tmp_path / "full.json", config="full")
    assert main(["publish", "results", str(full), "--model-repo", "my-lab/bert"]) == 0
    assert eval_files(hub) == {}
    assert "task 'full' of my-lab/medlama is config full, split validation" in capsys.readouterr().out


def test_the_dry_run_lists_the_entries_and_a_subset_run_has_none(hub, tmp_path, capsys):
    run = write_results(tmp_path / "hard.json")
    assert main(["publish", "results", str(run), "--model-repo", "my-lab/bert", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert ".eval_results/medprobe_medlama_hard_contrastive.yaml (task hard of my-lab/medlama: config hard, split test)" in out
    assert "hf_hub_download(repo_id='my-lab/medlama', repo_type='dataset', filename='eval.yaml')" in out
    assert "operations=['README.md', '.eval_results/medprobe_medlama_hard_contrastive.yaml']" in out
    assert "task_id: hard" in out and "model-index:" in out
    assert hub.log == []
    subset = write_results(
        tmp_path / "subset.json",
        subset={
            "subset": True,
            "options": {"per_relation": 10},
            "items": 100,
            "of": {"probed": 100, "total": 400, "unit": "queries"},
        },
    )
    assert main(["publish", "results", str(subset), "--model-repo", "my-lab/bert", "--dry-run", "--allow-subset"]) == 0
    out = capsys.readouterr().out
    assert "no .eval_results entry: it probed a subset" in out and "operations=['README.md']" in out


def test_a_profile_gives_an_entry_per_whole_run(tmp_path, hub, capsys):
    from test_profile import written_profile

    folder = written_profile(tmp_path / "profile")
    ids = ["--dataset-id", "medlama=my-lab/medlama", "--dataset-id", "mst=my-lab/mst"]
    assert main(["publish", "results", str(folder), "--model-repo", "my-lab/bert", *ids, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert ".eval_results/medprobe_medlama_full_contrastive.yaml (task full of my-lab/medlama" in out
    assert ".eval_results/medprobe_mst_all_mlm_head.yaml (task default of my-lab/mst: config default, split test)" in out
    assert "scratch" not in out.split(".eval_results (")[1]  # a floor has no entry


# --- publish dataset: eval.yaml -----------------------------------------------------------------------------------------


@pytest.fixture
def folder(synthetic_medlama_hub, tmp_path) -> Path:
    return Path(shutil.copytree(synthetic_medlama_hub, tmp_path / "built"))


def test_eval_yaml_is_refused_while_the_hub_lists_no_framework_that_runs_medprobe(hub, folder, capsys):
    for extra in (["--dry-run"], []):
        assert main(["publish", "dataset", str(folder), "--repo", "my-lab/medlama", "--eval-yaml", *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "'medprobe' is not on it: the push would be refused" in err
        assert "leave out --eval-yaml" in err
    assert hub.log == [] and not (folder / "eval.yaml").exists()


def test_eval_yaml_declares_a_task_per_config_that_publish_results_names(hub, folder, tmp_path, capsys, monkeypatch):
    """Were medprobe on the Hub's list: the file follows the specification, goes up after the data, and the entries of
    `publish results` name its tasks."""
    monkeypatch.setattr(eval_yaml, "EVALUATION_FRAMEWORKS", eval_yaml.EVALUATION_FRAMEWORKS | {"medprobe"})
    args = ["publish", "dataset", str(folder), "--repo", "my-lab/medlama", "--eval-yaml"]
    assert main([*args, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "upload_file(path_or_fileobj=" in out and "path_in_repo='eval.yaml'" in out and "evaluation_framework: medprobe" in out
    assert main(args) == 0
    repo = hub.repos[("dataset", "my-lab/medlama")]
    text = repo.files["eval.yaml"].decode()
    assert eval_yaml_problems(text) == []
    data = yaml.safe_load(text)
    assert data["name"] == "MedLAMA" and data["description"].startswith("MedLAMA probes the biomedical factual knowledge")
    assert data["tasks"] == [{"id": config, "config": config, "split": "test"} for config in ("full", "hard", "variants")]
    assert [commit["files"].keys() for commit in repo.commits][-1] == {"eval.yaml"}  # after the data's commit
    assert not (folder / "eval.yaml").exists()  # never written into the built folder
    # publish results then writes the entry of the task it declares
    hub.add_repo("model", "my-lab/bert", files={"model.safetensors": b"the probed model's weights", "config.json": b"{}"})
    run = write_results(tmp_path / "hard.json")
    assert main(["publish", "results", str(run), "--model-repo", "my-lab/bert", "--dataset-mismatch-ok"]) == 0
    assert list(eval_files(hub)) == [".eval_results/medprobe_medlama_hard_contrastive.yaml"]


def test_the_spec_check_names_what_does_not_follow_it():
    assert eval_yaml.spec_problems(
        {"name": "x", "description": "y", "evaluation_framework": "inspect-ai", "tasks": [{"id": "t"}]}
    ) == [
        "tasks[0].field_spec: required with inspect-ai",
        "tasks[0].solvers: required with inspect-ai",
        "tasks[0].scorers: required with inspect-ai",
    ]
    problems = eval_yaml.spec_problems({"name": "x", "tasks": [{"id": "t"}, {"id": "t", "metric": "acc"}]})
    assert "description: missing" in problems and "tasks: id 't' given twice" in problems
    assert "tasks[1].metric: not a field of a task" in problems
