"""`medprobe publish`: pre-publish checks, the exact repos and files sent to a fake Hub, dry runs,
bad input stopped before any request, and a token that never shows in output or logs."""

import hashlib
import json
import logging
import shutil
from pathlib import Path

import httpx2
import pytest
import yaml
from huggingface_hub import ModelCard, constants

import medprobe.hub.publish as publish
from built_folder import data_file
from hub_mock import HEAD, dataset_card, serving
from medprobe.cli import main
from medprobe.hub.checks import (
    CARD_SECTIONS,
    DatasetCheck,
    PublishError,
    access_for,
    check_dataset_folder,
    check_metric_folder,
    folder_files,
    raw_data_dirs,
    raw_file_findings,
)
from medprobe.resources import available, card_template, metric_path
from synthetic_medlama import write_release
from synthetic_runs import medlama_hits, write_run

TOKEN = "hf_TestTokenThatMustNeverBePrinted0123"


def medlama_files(folder: Path) -> set[str]:
    """What a MedLAMA folder uploads: its card and the test file of each config (named by content)."""
    configs = ("full", "hard", "variants")
    return {"README.md", *(data_file(folder, config).relative_to(folder).as_posix() for config in configs)}


@pytest.fixture
def folder(synthetic_medlama_hub, tmp_path) -> Path:
    """A copy of the synthetic Hub folder that a test may change."""
    return Path(shutil.copytree(synthetic_medlama_hub, tmp_path / "hub"))


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """A fake Hub that every huggingface_hub request goes to; the tests are otherwise offline."""
    with serving(monkeypatch, tmp_path) as fake:
        yield fake


@pytest.fixture
def token(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    return TOKEN


@pytest.fixture
def no_token(monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(publish, "get_token", lambda: None)


def edit_card(folder: Path, change) -> None:
    """Apply `change(meta: dict)` to the YAML header of folder/README.md."""
    text = (folder / "README.md").read_text(encoding="utf-8")
    _, header, body = text.split("---\n", 2)
    meta = yaml.safe_load(header)
    change(meta)
    (folder / "README.md").write_text(f"---\n{yaml.safe_dump(meta, sort_keys=False)}---\n{body}", encoding="utf-8")


def make_open(meta: dict) -> None:
    meta["medprobe_licence"] = "open"
    for key in ("extra_gated_prompt", "extra_gated_fields", "extra_gated_heading"):
        meta.pop(key)


def assert_token_hidden(capsys, caplog) -> None:
    out, err = capsys.readouterr()
    assert TOKEN not in out and TOKEN not in err and TOKEN not in caplog.text


# --- datasets ---------------------------------------------------------------------------------------


def test_umls_dataset_is_uploaded_gated_and_only_then_opened(hub, token, folder, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/medlama"]) == 0

    assert list(hub.repos) == [("dataset", "my-lab/medlama")]
    repo = hub.repos[("dataset", "my-lab/medlama")]
    assert (repo.private, repo.gated) == (False, "manual")
    [commit] = repo.commits
    assert set(commit["files"]) == medlama_files(folder)
    assert all(commit["files"][p] == (folder / p).read_bytes() for p in medlama_files(folder))
    # the data landed while the repo was private and gated; it was opened afterwards
    assert (commit["private"], commit["gated"]) == (True, "manual")
    assert hub.settings_calls == [
        ("my-lab/medlama", {"gated": "manual", "visibility": "private"}),
        ("my-lab/medlama", {"visibility": "public"}),
    ]
    assert hub.authorizations == {f"Bearer {TOKEN}"}
    assert "Request" in caplog.text  # the Hub client did log its requests, without the token
    assert_token_hidden(capsys, caplog)


def test_private_flag_keeps_a_gated_repo_private(hub, token, folder):
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/medlama", "--private"]) == 0
    repo = hub.repos[("dataset", "my-lab/medlama")]
    assert (repo.private, repo.gated) == (True, "manual")
    assert set(repo.files) == medlama_files(folder)


def test_open_dataset_is_public_and_not_gated(hub, token, folder):
    edit_card(folder, make_open)
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/synthetic"]) == 0
    repo = hub.repos[("dataset", "my-lab/synthetic")]
    assert (repo.private, repo.gated) == (False, False) and hub.settings_calls == []
    assert set(repo.files) == medlama_files(folder)


def test_existing_public_repo_is_gated_before_the_upload(hub, token, folder):
    hub.add_repo("dataset", "my-lab/medlama", private=False)
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/medlama"]) == 0
    [commit] = hub.repos[("dataset", "my-lab/medlama")].commits
    assert commit["gated"] == "manual" and commit["private"]


def test_republishing_a_dataset_replaces_its_data_files(hub, token, folder, capsys):
    """Data files are named by their content: a rebuild's files sit beside the old ones unless the upload deletes them."""
    old = {
        "full/test-00000-of-00001-0123456789abcdef.parquet": b"old full",
        "hard/test-00000-of-00001-0123456789abcdef.parquet": b"old hard",
    }
    repo = hub.add_repo("dataset", "my-lab/medlama", files={**old, "README.md": b"old card", "notes/keep.txt": b"not data"})
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/medlama", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert (
        "delete_patterns=['full/*.parquet', 'hard/*.parquet', 'variants/*.parquet']" in out
        and "replaces the repo's data files" in out
    )
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/medlama"]) == 0
    assert set(repo.files) == medlama_files(folder) | {"notes/keep.txt"}  # only the new data files, and what is not data
    assert all(repo.files[path] == (folder / path).read_bytes() for path in medlama_files(folder))
    [commit] = repo.commits
    assert sorted(commit["deleted"]) == sorted(old)  # in the upload's own commit: no moment with both or neither
    # the same folder again: nothing to delete, the files stay
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/medlama"]) == 0
    assert set(repo.files) == medlama_files(folder) | {"notes/keep.txt"} and repo.commits[-1]["deleted"] == []


def test_credentialed_data_is_refused_unless_private(hub, token, folder, capsys):
    edit_card(folder, lambda meta: meta.update(medprobe_licence="credentialed"))
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/disknE"]) == 2
    assert "MedNLI" in capsys.readouterr().err and hub.log == []

    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/disknE", "--private"]) == 0
    repo = hub.repos[("dataset", "my-lab/disknE")]
    assert repo.private and repo.commits[0]["private"] and set(repo.files) == medlama_files(folder)


def test_dry_run_prints_every_file_and_sends_nothing(hub, token, folder, capsys):
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/medlama", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert hub.log == []
    assert "my-lab/medlama (dataset)" in out and "public, gated (manual approval)" in out
    assert "gated='manual'" in out and "found (HF_TOKEN)" in out and TOKEN not in out
    for path in medlama_files(folder):
        assert f"{path}  " in out and f"{(folder / path).stat().st_size:,} B" in out


def test_dry_run_needs_no_token(hub, no_token, folder, capsys):
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/medlama", "--dry-run"]) == 0
    assert "none: a real run stops here" in capsys.readouterr().out and hub.log == []


@pytest.mark.parametrize("repo_id", ["medlama", "a/b/c", "my lab/medlama", "my-lab/med--lama", "-lab/medlama", "lab/"])
def test_repo_id_of_the_wrong_form(hub, token, folder, capsys, repo_id):
    assert main(["publish", "dataset", str(folder), f"--repo={repo_id}"]) == 2
    assert "expected <org>/<name>" in capsys.readouterr().err and hub.log == []


def test_no_token_stops_before_any_request(hub, no_token, folder, capsys):
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/medlama"]) == 2
    assert "no Hugging Face token" in capsys.readouterr().err and hub.log == []


def test_offline_mode_stops_before_any_request(hub, token, folder, capsys, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/medlama"]) == 2
    assert "HF_HUB_OFFLINE" in capsys.readouterr().err and hub.log == []


def test_folder_that_does_not_load(hub, token, folder, capsys):
    data_file(folder, "hard").write_bytes(b"not parquet")
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/medlama"]) == 2
    err = capsys.readouterr().err
    assert "load_dataset(folder, 'hard') fails" in err and hub.log == []


def test_card_with_broken_yaml(hub, token, folder, capsys):
    card = folder / "README.md"
    card.write_text(card.read_text().replace("pretty_name: MedLAMA", "pretty_name: [MedLAMA"), encoding="utf-8")
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/medlama"]) == 2
    assert "YAML header does not parse" in capsys.readouterr().err and hub.log == []


def test_missing_folder_and_missing_card(tmp_path, token, capsys):
    assert main(["publish", "dataset", str(tmp_path / "nowhere"), "--repo", "my-lab/x"]) == 2
    assert f"{tmp_path / 'nowhere'} does not exist" in capsys.readouterr().err
    assert main(["publish", "dataset", str(tmp_path), "--repo", "my-lab/x"]) == 2
    assert "README.md is missing" in capsys.readouterr().err


def test_card_without_licence_marker(folder):
    edit_card(folder, lambda meta: meta.pop("medprobe_licence"))
    with pytest.raises(PublishError, match="medprobe_licence"):
        check_dataset_folder(folder, [])


def test_card_without_a_citation_section(folder):
    card = folder / "README.md"
    card.write_text(card.read_text().replace("## Citation", "## References"), encoding="utf-8")
    with pytest.raises(PublishError, match="no section on citation"):
        check_dataset_folder(folder, [])


@pytest.mark.parametrize("benchmark", available("datasets"))
def test_every_card_template_has_the_sections_publish_requires(benchmark):
    """A built card is its template plus tables: each template must carry the sections the check asks for."""
    headings = [line.lower() for line in card_template(f"{benchmark}.md").read_text().splitlines() if line.startswith("## ")]
    assert [word for word in CARD_SECTIONS if not any(word in h for h in headings)] == []


def test_umls_card_without_gating_prompt_is_refused(folder):
    edit_card(folder, lambda meta: meta.pop("extra_gated_prompt"))
    with pytest.raises(PublishError, match="extra_gated_prompt"):
        access_for(check_dataset_folder(folder, []), private=False)


def test_several_configs_need_a_default(folder):
    text = (folder / "README.md").read_text()
    (folder / "README.md").write_text(text.replace("  default: true\n", ""), encoding="utf-8")
    with pytest.raises(PublishError, match="none has `default: true`"):
        check_dataset_folder(folder, [])


def test_files_no_config_names_are_refused(folder, tmp_path):
    release = write_release(tmp_path / "release")
    shutil.copy(release / "2021AA" / "may_treat_1000.csv", folder / "full" / "may_treat_1000.csv")
    with pytest.raises(PublishError, match=r"1 file\(s\) that no config of its card names: full/may_treat_1000.csv"):
        check_dataset_folder(folder, [])


def test_raw_files_are_found_by_name_and_by_bytes(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "notes.txt").write_text("licensed sentence\n")
    data = tmp_path / "data"
    data.mkdir()
    (data / "renamed.bin").write_text("licensed sentence\n")
    (data / "DisknE_medical_similar_annotation.csv").write_text("pair_id\n")
    (data / "MRCONSO.RRF").write_text("x\n")
    (data / "fine.parquet").write_text("something else\n")
    findings = raw_file_findings(data, folder_files(data), raw_data_dirs([raw]))
    assert len(findings) == 3
    assert any("renamed.bin: same bytes as the raw file" in f for f in findings)
    assert any("DisKnE annotation file" in f for f in findings) and any("UMLS" in f for f in findings)


def test_open_data_with_raw_files_needs_a_private_repo(tmp_path):
    check = DatasetCheck(tmp_path, "open", None, {}, [], raw_findings=["x.csv: named like a MedLAMA release file"])
    with pytest.raises(PublishError, match="holds raw licensed files: x.csv"):
        access_for(check, private=False)
    assert access_for(check, private=True).private


def test_real_medlama_release_files_are_recognised_by_bytes(tmp_path):
    from conftest import shared_path

    release_file = shared_path("medlama", "2021AA", "may_treat_1000.csv")
    (tmp_path / "data.bin").write_bytes(release_file.read_bytes())
    findings = raw_file_findings(tmp_path, folder_files(tmp_path), raw_data_dirs([shared_path()]))
    assert findings and "same bytes as the raw file" in findings[0]


def test_built_real_medlama_passes_the_checks(built_medlama):
    from conftest import shared_path

    plan = publish.dataset_plan(str(built_medlama), "my-lab/medlama", False, [str(shared_path())])
    assert plan.visibility == "public, gated (manual approval)"
    assert {f.path for f in plan.files} == medlama_files(built_medlama)
    assert "full/test 19,000, hard/test 15,329" in plan.calls[2].kwargs["commit_message"]
    assert not any("raw licensed" in note for note in plan.notes)


# --- metrics ----------------------------------------------------------------------------------------


def test_metric_space_holds_module_card_requirements_and_app(hub, token, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    assert main(["publish", "metric", "acc_at_k", "--repo", "my-lab/acc_at_k"]) == 0
    repo = hub.repos[("space", "my-lab/acc_at_k")]
    assert repo.sdk == "gradio" and not repo.private
    assert set(repo.files) == {"acc_at_k.py", "README.md", "requirements.txt", "app.py"}
    assert repo.files["app.py"] == card_template("metric_app.py").read_bytes()
    assert repo.files["acc_at_k.py"] == (Path(metric_path("acc_at_k")) / "acc_at_k.py").read_bytes()
    assert_token_hidden(capsys, caplog)


def test_metric_dry_run(hub, token, capsys):
    assert main(["publish", "metric", "acc_at_k", "--repo", "my-lab/acc_at_k", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert hub.log == [] and "space_sdk='gradio'" in out
    assert all(name in out for name in ("acc_at_k.py", "README.md", "requirements.txt", "app.py"))


@pytest.fixture
def metric_copy(tmp_path) -> Path:
    return Path(shutil.copytree(metric_path("acc_at_k"), tmp_path / "acc_at_k"))


def test_shipped_metric_passes_the_checks(metric_copy):
    check = check_metric_folder(metric_copy)
    assert check.name == "acc_at_k" and {f.path for f in check.files} == {"acc_at_k.py", "README.md", "requirements.txt"}


@pytest.mark.parametrize(
    "breakage, message",
    [
        (lambda f: (f / "README.md").write_text("---\ntitle: [acc\n---\n"), "YAML header does not parse"),
        (lambda f: (f / "README.md").write_text("---\ntitle: acc\nsdk: streamlit\n---\n"), "sdk: gradio"),
        (lambda f: (f / "acc_at_k.py").write_text("import evaluate\nclass Broken(evaluate.Metric:\n"), "evaluate.load"),
        (lambda f: (f / "requirements.txt").unlink(), "requirements.txt"),
        (lambda f: (f / "notes.txt").write_text("x"), "not part of a metric Space: notes.txt"),
    ],
)
def test_broken_metric_folders(metric_copy, breakage, message):
    breakage(metric_copy)
    with pytest.raises(PublishError, match=message):
        check_metric_folder(metric_copy)


def test_unknown_metric_name(capsys, token):
    assert main(["publish", "metric", "no_such_metric", "--repo", "my-lab/x", "--dry-run"]) == 2
    assert "shipped: acc_at_k" in capsys.readouterr().err


def space_app(metric_copy: Path):
    """The shared app, loaded from a folder laid out like the Space."""
    import importlib.util

    shutil.copy(card_template("metric_app.py"), metric_copy / "app.py")
    spec = importlib.util.spec_from_file_location("space_app", metric_copy / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    return app


def test_space_app_computes_the_card_example(metric_copy, acc_at_k):
    app = space_app(metric_copy)
    assert app.module_file() == metric_copy / "acc_at_k.py"
    metric = acc_at_k
    arguments = app.default_arguments(metric, app.card_text())
    assert arguments == {
        "predictions": [["aspirin", "ibuprofen"], ["fever"]],
        "references": [["ibuprofen"], ["cough", "dyspnea"]],
        "k": [1, 2],
    }
    assert app.compute(metric, json.dumps(arguments)) == {"acc@1": 0.0, "acc@2": 0.5}
    with pytest.raises(ValueError, match="not valid JSON"):
        app.compute(metric, "{predictions: [")
    assert not app.card_text().startswith("---")


def test_space_app_falls_back_to_a_skeleton_from_the_features(metric_copy, acc_at_k):
    app = space_app(metric_copy)
    skeleton = app.default_arguments(acc_at_k, "no examples here")
    assert skeleton == {"predictions": [["text", "text"]], "references": [["text", "text"]], "groups": ["text"]}
    assert app.compute(acc_at_k, json.dumps(skeleton))["per_group"] == {"text": {"acc@1": 1.0, "acc@10": 1.0, "queries": 1}}


def test_space_app_builds_with_current_gradio(metric_copy):
    pytest.importorskip("gradio", reason="gradio is not a test dependency; the Space installs it")
    app = space_app(metric_copy)
    assert app.build_demo() is not None


# --- results ----------------------------------------------------------------------------------------

EXISTING_CARD = """---
license: apache-2.0
tags:
- biomedical
model-index:
- name: bert
  results:
  - task:
      type: text-classification
    dataset:
      type: glue
      name: GLUE
    metrics:
    - type: accuracy
      value: 0.9
---

# bert

Text the owner wrote.
"""


WEIGHTS = b"the probed model's weights"
OTHER_WEIGHTS = b"another model's weights!!!"  # the same size


def weights_identity(**files: bytes) -> dict:
    """model_identity's weights entries for weight files of these names and bytes (as medprobe.provenance records them)."""
    from medprobe.digests import combined_digest

    weights = {
        name.replace("_", "."): {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()} for name, data in files.items()
    }
    return {"weights_sha256": combined_digest(weights), "weights": weights}


WHOLE = {"may_treat": 25, "may_prevent": 75}  # queries per relation of a made-up whole run
DATA_FILES = {config: {f"{config}/test-00000-of-00001-abc.parquet": "e" * 64} for config in ("full", "hard")}


def fingerprint(config: str = "hard") -> dict:
    """The data fingerprint of a run that read DATA_FILES[config] (as medprobe.provenance names and combines them)."""
    from medprobe.provenance import files_digest

    files = {f"{config}/test/{Path(path).name}": digest for path, digest in DATA_FILES[config].items()}
    return {"sha256": files_digest(files), "files": files}


COMMAND = (
    "medprobe probe --prober contrastive --task medlama --dataset /home/someone/out/medlama --config hard --split test "
    "--model /home/someone/models/bert --out /home/someone/runs/hard.json --device cpu --dtype float32"
)


def write_results(path: Path, at_1=(2, 3), at_10=(8, 12), sizes: dict[str, int] = WHOLE, **fields) -> Path:
    """A results JSON and its outcomes as `medprobe probe` writes them (tests/synthetic_runs.py): a whole config of a
    local model folder, with provenance; every number is the outcomes'. Of each relation's `sizes` queries the first
    `at_1` rank a gold answer 1st and the first `at_10` one in the top 10: by default acc@1 5% (2 of 25, 3 of 75),
    acc@10 20%, macro_acc@1 6% and macro_acc@10 24%, each with a 1,000-resample interval over 100 queries."""
    ids, groups, ranks = medlama_hits(sizes, dict(zip(sizes, at_1)), dict(zip(sizes, at_10)))
    record = dict(
        dataset="my-lab/medlama",
        seed=1,
        model="/home/someone/models/bert",
        data_fingerprint=fingerprint(fields.get("config", "hard")),
        model_identity={
            "name": "/home/someone/models/bert",
            "path": "/home/someone/models/bert",
            **weights_identity(model_safetensors=WEIGHTS),
        },
        source={"version": "0.2.0", "commit": "a" * 40, "dirty": False},
        command=COMMAND,
    )
    return write_run(path, ids, groups, {"rank": ranks}, resamples=1000, per_group=True, **{**record, **fields})


def values(path: Path) -> dict[str, float]:
    """The overall metrics of a results JSON."""
    return json.loads(path.read_text())["metrics"]


@pytest.fixture
def results_file(tmp_path) -> Path:
    return write_results(tmp_path / "results.json")


def model_repo(hub, card: str | None = EXISTING_CARD, weights: dict[str, bytes] | None = None):
    """The fake model repo my-lab/bert holding the probed weights (or `weights`) and `card`, and the dataset repos
    the runs name (my-lab/medlama, my-lab/data), unless published already, whose cards state the runs' data files
    (DATA_FILES)."""
    for dataset_id in [name for name in ("my-lab/medlama", "my-lab/data") if ("dataset", name) not in hub.repos]:
        hub.add_repo("dataset", dataset_id, files={"README.md": dataset_card(DATA_FILES)})
    files = dict(weights if weights is not None else {"model.safetensors": WEIGHTS, "config.json": b"{}"})
    if card is not None:
        files["README.md"] = card.encode()
    return hub.add_repo("model", "my-lab/bert", files=files)


def published_card(hub, repo_id="my-lab/bert") -> ModelCard:
    return ModelCard(hub.repos[("model", repo_id)].files["README.md"].decode())


def test_results_merge_into_the_existing_model_card(hub, token, results_file, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    model_repo(hub)
    assert main(["publish", "results", str(results_file), "--model-repo", "my-lab/bert"]) == 0
    card = published_card(hub)
    assert "Text the owner wrote." in card.text and card.data.license == "apache-2.0"
    assert card.data.datasets == ["my-lab/medlama"]
    results = card.data.eval_results
    assert [r.dataset_type for r in results] == ["glue"] + ["my-lab/medlama"] * 4
    medlama = {r.metric_type: r for r in results[1:]}
    assert {name: r.metric_value for name, r in medlama.items()} == pytest.approx(
        {"acc@1": 0.05, "acc@10": 0.2, "macro_acc@1": 0.06, "macro_acc@10": 0.24}
    )
    first = medlama["acc@1"]
    assert (first.dataset_config, first.dataset_split, first.task_type) == ("hard", "test", "fill-mask")
    assert "contrastive" in first.task_name
    # the commit follows the revision whose card was merged, so a concurrent edit is not lost
    assert hub.repos[("model", "my-lab/bert")].commits[0]["parent"] == HEAD
    assert_token_hidden(capsys, caplog)


def test_publishing_a_result_again_updates_it(hub, token, results_file, tmp_path, capsys):
    model_repo(hub)
    assert main(["publish", "results", str(results_file), "--model-repo", "my-lab/bert"]) == 0
    data = json.loads(results_file.read_text())
    data["metrics"]["acc@1"] = 0.07  # edited by hand: its outcomes say 0.05, and it is not published
    results_file.write_text(json.dumps(data))
    assert main(["publish", "results", str(results_file), "--model-repo", "my-lab/bert", "--metric", "acc@1"]) == 2
    assert "acc@1 is 0.07 in the file but 0.05 from its 100 per-item outcomes" in capsys.readouterr().err
    write_results(results_file, at_1=(4, 3))  # the run again, 7 of its 100 queries now right at 1
    assert main(["publish", "results", str(results_file), "--model-repo", "my-lab/bert", "--metric", "acc@1"]) == 0
    results = published_card(hub).data.eval_results
    assert len(results) == 5
    assert [r.metric_value for r in results if r.metric_type == "acc@1"] == [pytest.approx(0.07)]


def test_results_to_a_repo_without_a_card_and_as_a_pull_request(hub, token, results_file, capsys):
    repo = model_repo(hub, card=None)
    assert main(["publish", "results", str(results_file), "--model-repo", "my-lab/bert", "--create-pr"]) == 0
    [commit] = repo.commits
    assert commit["create_pr"] and "README.md" not in repo.files  # a PR leaves main as it was
    card = ModelCard(commit["files"]["README.md"].decode())
    assert card.data.model_name == "bert" and len(card.data.eval_results) == 4
    assert "discussions/1" in capsys.readouterr().out


def test_results_to_a_missing_model_repo(hub, token, results_file, capsys):
    assert main(["publish", "results", str(results_file), "--model-repo", "my-lab/nothing"]) == 2
    assert "no such model repo" in capsys.readouterr().err


def test_results_of_a_local_dataset_need_its_hub_id(hub, token, tmp_path, capsys):
    results_file = write_results(tmp_path / "local.json", dataset=str(tmp_path))
    assert main(["publish", "results", str(results_file), "--model-repo", "my-lab/bert"]) == 2
    assert "--dataset-id" in capsys.readouterr().err and hub.log == []


def test_results_dry_run_shows_the_model_index(hub, token, results_file, capsys):
    args = ["publish", "results", str(results_file), "--model-repo", "my-lab/bert", "--dataset-id", "org/medlama"]
    assert main([*args, "--dry-run", "--metric", "acc@10"]) == 0
    out = capsys.readouterr().out
    assert hub.log == [] and "type: org/medlama" in out and "type: acc@10" in out and "acc@1\n" not in out


def test_unknown_metric_in_results(hub, token, results_file, capsys):
    assert main(["publish", "results", str(results_file), "--model-repo", "my-lab/bert", "--metric", "f1"]) == 2
    assert "available: acc@1, macro_acc@1, acc@10, macro_acc@10" in capsys.readouterr().err and hub.log == []


def test_hub_refusal_is_one_line_without_the_token(hub, token, results_file, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    model_repo(hub)
    hub.fail_commits_with = 403
    assert main(["publish", "results", str(results_file), "--model-repo", "my-lab/bert"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("medprobe: error: publish to my-lab/bert failed: HTTP 403 Forbidden") and err.count("\n") == 1
    assert TOKEN not in err and TOKEN not in caplog.text


# --- results: what is published is what was measured (issue 21 §5) ----------------------------------------

SUBSETS = {  # task, subset as the run records it, the words in the model card
    "medlama": (
        "medlama",
        {"options": {"per_relation": 10}, "of": {"probed": 20, "total": 15329, "unit": "queries"}},
        "first 10 queries per relation, 20 of 15,329 queries",
    ),
    "context_variance": (
        "context_variance",
        {"options": {"per_relation": 5}, "of": {"probed": 10, "total": 900, "unit": "instances"}},
        "first 5 instances per relation, 10 of 900 instances",
    ),
    "disknE_cuis": (
        "disknE",
        {"options": {"diseases": ["C0020538", "C0011849"]}, "of": {"probed": 2, "total": 37, "unit": "eligible diseases"}},
        "diseases C0020538,C0011849, 2 of 37 eligible diseases",
    ),
}


def subset_outcomes(task: str) -> tuple[list[str], list[str], dict, dict]:
    """Ids, groups, outcome columns and settings of a made-up subset run of `task` (as SUBSETS describes it)."""
    if task == "medlama":
        ids, groups, ranks = medlama_hits({"may_treat": 10, "may_prevent": 10}, {"may_treat": 1, "may_prevent": 0}, WHOLE)
        return ids, groups, {"rank": ranks}, {}
    if task == "context_variance":
        ids = [f"{relation}-{row}" for relation in ("may_treat", "may_prevent") for row in range(5)]
        steps = [2.0] * 10
        columns = {"understand": [1.0] * 10, "confuse": [1.0] * 10, "misunderstand": [0.0] * 10, "steps": steps}
        columns.update(rank_without_context=[3.0] * 10, rank_with_context=[1.0] * 10)
        return ids, [item.split("-")[0] for item in ids], columns, {"settings": {"k": [1, 10], "per_relation": 5}}
    ids = [f"{disease}/{row}" for disease in ("C0020538", "C0011849") for row in range(4)]
    columns = {"label": [1, 0, 1, 0] * 2, "prediction": [[1], [0], [0], [0]] * 2}
    return ids, [item.split("/")[0] for item in ids], columns, {"settings": {"category": "medical", "seeds": [0]}}


def subset_record(task: str, subset: dict, tmp_path: Path) -> Path:
    ids, groups, columns, settings = subset_outcomes(task)
    return write_run(
        tmp_path / "subset.json",
        ids,
        groups,
        columns,
        task=task,
        config="hard" if task == "medlama" else "real-target" if task == "context_variance" else "medical_similar",
        subset_options=subset["options"],
        subset_of=subset["of"],
        dataset="my-lab/data",
        data_fingerprint=fingerprint("hard"),
        model_identity={"name": "/home/someone/models/bert", **weights_identity(model_safetensors=WEIGHTS)},
        source={"version": "0.2.0", "commit": "a" * 40, "dirty": False},
        command=COMMAND,
        **settings,
    )


def publish_results(path: Path, *extra: str) -> int:
    return main(["publish", "results", str(path), "--model-repo", "my-lab/bert", "--dataset-id", "my-lab/data", *extra])


@pytest.mark.parametrize("case", list(SUBSETS))
def test_a_subset_run_is_refused_naming_the_subset_and_the_flag(hub, token, tmp_path, capsys, case):
    task, subset, words = SUBSETS[case]
    path = subset_record(task, subset, tmp_path)
    model_repo(hub)
    for dry_run in ([], ["--dry-run"]):
        assert publish_results(path, *dry_run) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{path} probed a subset ({words})" in err and "--allow-subset" in err
    assert hub.log == []


def test_allow_subset_labels_the_model_index_and_the_card_as_a_subset(hub, token, tmp_path, capsys):
    task, subset, words = SUBSETS["medlama"]
    path = subset_record(task, subset, tmp_path)
    model_repo(hub, card=None)
    assert publish_results(path, "--allow-subset") == 0
    card = published_card(hub)
    names = {result.dataset_name for result in card.data.eval_results}
    assert names == {f"MedLAMA (hard; subset: {words})"}  # never "MedLAMA (hard)" alone
    assert f"### MedLAMA (hard; subset: {words})" in card.text and f"- subset: {words}" in card.text


def test_a_subset_goes_into_the_model_index_config_not_only_into_its_name(hub, token, tmp_path, results_file):
    """Measured before: a subset run's model-index entries had config "hard" and split "test" like a whole run's, the
    subset named only in the display name, so anything that aggregates by config and split mixed the two."""
    model_repo(hub, card=None)
    assert publish_results(results_file) == 0
    assert publish_results(subset_record(*SUBSETS["medlama"][:2], tmp_path), "--allow-subset") == 0
    results = published_card(hub).data.eval_results
    by_config = {(r.dataset_config, r.dataset_split): r.metric_value for r in results if r.metric_type == "acc@1"}
    assert by_config == pytest.approx({("hard", "test"): 0.05, ("hard/subset:per_relation=10", "test"): 0.05})
    assert len(results) == 8  # four metrics of each run, none replacing the other's


def test_the_model_index_config_of_a_subset_names_every_option(tmp_path):
    from medprobe.hub.subsets import subset_config
    from medprobe.records import load_run

    expected = {
        "context_variance": "real-target/subset:per_relation=5",
        "disknE_cuis": "medical_similar/subset:diseases=C0020538+C0011849",
    }
    for case, config in expected.items():
        assert subset_config(load_run(subset_record(*SUBSETS[case][:2], tmp_path / case)).record) == config
    assert subset_config(load_run(write_results(tmp_path / "old.json", subset={})).record) == "hard/subset:not-recorded"
    assert subset_config(load_run(write_results(tmp_path / "whole.json")).record) == "hard"


def test_a_whole_run_is_not_labelled_a_subset(hub, token, results_file, capsys):
    model_repo(hub)
    assert main(["publish", "results", str(results_file), "--model-repo", "my-lab/bert", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "subset:  none" in out and "name: MedLAMA (hard)\n" in out and "subset:" not in out.split("subset:  none")[1]


def test_a_results_file_that_does_not_record_its_subset_is_refused(hub, token, tmp_path, capsys):
    path = write_results(tmp_path / "old.json", subset={})  # written by a medprobe before 0.2
    assert publish_results(path, "--dry-run") == 2
    assert f"{path} does not record which items it probed" in capsys.readouterr().err
    assert publish_results(path, "--dry-run", "--allow-subset") == 0
    assert "name: 'MedLAMA (hard; subset: not recorded)'" in capsys.readouterr().out


def sample_fingerprint(folder: Path, config: str = "hard") -> dict:
    """The data fingerprint a run on `folder` records (medprobe.provenance, as `medprobe probe` computes it)."""
    from medprobe.provenance import dataset_fingerprint

    return dataset_fingerprint(str(folder), [(config, "test")])


@pytest.mark.parametrize("where", ["shipped", "copy", "renamed_copy"])
def test_a_run_on_the_shipped_sample_is_refused_whatever_dataset_id_says(hub, token, tmp_path, capsys, where):
    """Measured before: a run on medprobe.sample("medlama") published with --dataset-id me/medlama planned "MedLAMA
    (hard)", subset none, acc@10 42.45: the sample's numbers as MedLAMA's. Recognised by the sample's file contents,
    so a copy of the folder, or one whose files were renamed, is refused too."""
    import medprobe

    folder = Path(medprobe.sample("medlama"))
    if where != "shipped":
        folder = Path(shutil.copytree(folder, tmp_path / "my-medlama"))
    if where == "renamed_copy":
        (folder / "hard" / "test.jsonl").rename(folder / "hard" / "data.jsonl")
        text = (folder / "README.md").read_text().replace("hard/test.jsonl", "hard/data.jsonl")
        (folder / "README.md").write_text(text)
    path = write_results(tmp_path / "sample.json", dataset=str(folder), data_fingerprint=sample_fingerprint(folder))
    model_repo(hub)
    for dry_run in (["--dry-run"], []):
        assert main(["publish", "results", str(path), "--model-repo", "my-lab/bert", "--dataset-id", "me/medlama", *dry_run]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert f"{path} probed the sample of medlama shipped with medprobe" in err and "not the benchmark" in err
    assert hub.log == []


def test_a_profile_run_on_a_copy_of_the_sample_is_left_out_though_the_profile_calls_it_built(tmp_path, hub, capsys):
    import medprobe
    from test_profile import written_profile

    copy = Path(shutil.copytree(medprobe.sample("medlama"), tmp_path / "my-medlama"))
    folder = written_profile(tmp_path / "profile", medlama_fingerprint=sample_fingerprint(copy, "full"))
    ids = ["--dataset-id", "medlama=my-lab/medlama", "--dataset-id", "mst=my-lab/mst"]
    assert main(["publish", "results", str(folder), "--model-repo", "my-lab/bert", *ids, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "medlama-full-contrastive: left out, its data is the sample of medlama shipped with medprobe" in out
    assert "type: my-lab/mst" in out and "type: my-lab/medlama" not in out


def test_the_fingerprint_a_dataset_card_states_is_the_one_a_run_on_that_folder_records(synthetic_medlama_hub, tmp_path):
    """The card's medprobe_build record (what `publish dataset` uploads) gives each config/split the fingerprint
    medprobe.provenance computes from the files themselves."""
    from medprobe.hub.data_check import card_fingerprint
    from medprobe.records import load_record_file

    card = (synthetic_medlama_hub / "README.md").read_text()
    for config in ("full", "hard"):
        found = sample_fingerprint(synthetic_medlama_hub, config)
        record = load_record_file(write_results(tmp_path / f"{config}.json", data_fingerprint=found))
        assert card_fingerprint(card, record) == found["sha256"]
    assert card_fingerprint("---\nlicense: mit\n---\n", record) is None  # a card without a build record states none


@pytest.fixture
def published_dataset(hub, token, folder, capsys) -> Path:
    """The synthetic MedLAMA folder published to my-lab/medlama by `medprobe publish dataset` (its card uploaded)."""
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/medlama"]) == 0
    capsys.readouterr()
    return folder


def test_a_real_publish_compares_the_run_s_data_with_the_fingerprint_the_dataset_card_states(
    hub, token, tmp_path, published_dataset, capsys
):
    """Measured before: --dataset-id was never compared with the record's data; a run on any data was published
    under the id given."""
    model_repo(hub)
    run = write_results(tmp_path / "hard.json", data_fingerprint=sample_fingerprint(published_dataset))
    args = ["publish", "results", str(run), "--model-repo", "my-lab/bert", "--dataset-id", "my-lab/medlama"]
    log = len(hub.log)
    assert main([*args, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "dataset fingerprint: not checked offline" in out and len(hub.log) == log
    assert "hf_hub_download(repo_id='my-lab/medlama', repo_type='dataset', filename='README.md')" in out
    assert main(args) == 0
    ours = sample_fingerprint(published_dataset)["sha256"][:12]
    assert (
        f"dataset checked: hard/test of my-lab/medlama has the data fingerprint {ours} the run recorded"
        in capsys.readouterr().out
    )

    other = Path(shutil.copytree(published_dataset, tmp_path / "other"))
    data_file(other, "hard").write_bytes(b"other rows")
    run = write_results(tmp_path / "other.json", data_fingerprint=sample_fingerprint(other))
    commits = len(hub.repos[("model", "my-lab/bert")].commits)
    assert main(["publish", "results", str(run), "--model-repo", "my-lab/bert", "--dataset-id", "my-lab/medlama"]) == 2
    err = capsys.readouterr().err
    theirs = sample_fingerprint(other)["sha256"][:12]
    assert err.count("\n") == 1 and f"{run} probed other data than --dataset-id my-lab/medlama holds" in err
    assert f"data fingerprint {theirs} (hard/test) in the run, {ours} from the dataset card" in err
    assert "--dataset-mismatch-ok" in err and len(hub.repos[("model", "my-lab/bert")].commits) == commits
    assert (
        main(
            [
                "publish",
                "results",
                str(run),
                "--model-repo",
                "my-lab/bert",
                "--dataset-id",
                "my-lab/medlama",
                "--dataset-mismatch-ok",
            ]
        )
        == 0
    )


@pytest.mark.parametrize(
    "card, message",
    [
        (None, "--dataset-id my-lab/nothing: no such dataset repo"),
        (b"---\nlicense: mit\n---\n", "its card states no sha256 of the data files of hard/test"),
    ],
    ids=["no_repo", "no_build_record"],
)
def test_a_dataset_whose_card_states_no_fingerprint_is_refused(hub, token, results_file, capsys, card, message):
    model_repo(hub)
    if card is not None:
        hub.add_repo("dataset", "my-lab/nothing", files={"README.md": card})
    args = ["publish", "results", str(results_file), "--model-repo", "my-lab/bert", "--dataset-id", "my-lab/nothing"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "--dataset-mismatch-ok" in err
    assert main([*args, "--dataset-mismatch-ok"]) == 0


def test_a_run_that_read_another_hub_dataset_is_refused_even_in_a_dry_run(hub, token, tmp_path, capsys):
    read = {"sha256": "f" * 64, "files": {"hard/test/x.parquet": "other-org/medlama@" + "1" * 40}}
    run = write_results(tmp_path / "hub.json", data_fingerprint={**read, "hub": "other-org/medlama", "revision": "1" * 40})
    args = ["publish", "results", str(run), "--model-repo", "my-lab/bert", "--dataset-id", "my-lab/medlama", "--dry-run"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{run} read its data from the Hub dataset other-org/medlama, not --dataset-id my-lab/medlama" in err
    assert hub.log == []
    assert main([*args[:-3], "--dataset-id", "other-org/medlama", "--dry-run"]) == 0
    assert "read from the Hub dataset other-org/medlama, which is --dataset-id" in capsys.readouterr().out


def test_a_run_of_another_hub_model_is_refused_even_in_a_dry_run(hub, token, tmp_path, capsys):
    identity = {
        "name": "other-org/bert",
        "hub_id": "other-org/bert",
        "revision": "1" * 40,
        **weights_identity(model_safetensors=WEIGHTS),
    }
    path = write_results(tmp_path / "hub.json", model_identity=identity)
    assert publish_results(path, "--dry-run") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path} probed the Hub model other-org/bert, not --model-repo my-lab/bert" in err
    assert "--model-mismatch-ok" in err and hub.log == []
    assert publish_results(path, "--dry-run", "--model-mismatch-ok") == 0
    assert "model:   not checked (--model-mismatch-ok)" in capsys.readouterr().out


def test_a_run_of_the_same_hub_model_says_so_in_the_plan(hub, token, tmp_path, capsys):
    identity = {
        "name": "My-Lab/bert",
        "hub_id": "My-Lab/bert",
        "revision": "1" * 40,
        **weights_identity(model_safetensors=WEIGHTS),
    }
    path = write_results(tmp_path / "hub.json", model_identity=identity)
    assert publish_results(path, "--dry-run") == 0
    out = capsys.readouterr().out
    assert "checked: it was loaded from the Hub id My-Lab/bert, which is --model-repo" in out
    assert "model_info('my-lab/bert', files_metadata=True) lists model.safetensors with the same size and LFS sha256" in out


def test_a_hub_model_that_changed_since_it_was_probed_is_refused_with_both_revisions(hub, token, tmp_path, capsys):
    identity = {
        "name": "my-lab/bert",
        "hub_id": "my-lab/bert",
        "revision": "1" * 40,
        **weights_identity(model_safetensors=WEIGHTS),
    }
    path = write_results(tmp_path / "hub.json", model_identity=identity)
    model_repo(hub, weights={"model.safetensors": OTHER_WEIGHTS})
    assert publish_results(path) == 2
    assert f"the run probed revision 111111111111, the repo is at {HEAD[:12]}" in capsys.readouterr().err


def cached_model(repo_id: str, files: dict[str, bytes]) -> Path:
    """A snapshot of the Hub model `repo_id` in the local Hub cache (the hub fixture points it into tmp_path)."""
    root = Path(constants.HF_HUB_CACHE) / f"models--{repo_id.replace('/', '--')}"
    snapshot = root / "snapshots" / ("5" * 40)
    snapshot.mkdir(parents=True)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text("5" * 40)
    for name, data in {"config.json": b"{}", **files}.items():
        (snapshot / name).write_bytes(data)
    return snapshot


def packaged_identity(name: str = "minilm") -> dict:
    """The model_identity a run of a packaged model records (its weight files are those medprobe.models declares)."""
    from medprobe.digests import combined_digest
    from medprobe.models import PACKAGED

    weights = PACKAGED[name].weights
    return {
        "name": name,
        "path": f"/site-packages/{PACKAGED[name].package}",
        "weights_sha256": combined_digest(weights),
        "weights": weights,
    }


def test_a_packaged_model_is_refused_offline_against_a_cached_repo_holding_other_weights(
    hub, token, tmp_path, capsys, monkeypatch
):
    """Measured before: a run of the packaged minilm planned publishing to any --model-repo under --dry-run; the local
    Hub cache held that repo's weights, and they were never compared."""
    monkeypatch.setenv("MEDPROBE_EMBEDDING_CACHE", str(tmp_path / "cache"))
    cached_model("my-lab/bert", {"model.safetensors": OTHER_WEIGHTS})
    path = write_results(tmp_path / "minilm.json", model_identity=packaged_identity())
    assert publish_results(path, "--dry-run") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: --model-repo my-lab/bert does not hold the weights that were probed" in err
    assert "(model.safetensors: 90,868,376 B, sha256 53aa51172d14 probed; 26 B, sha256" in err
    assert "in the local Hub cache's snapshot of my-lab/bert at 555555555555)" in err and "--model-mismatch-ok" in err
    assert hub.log == []


def test_a_local_model_is_refused_offline_against_the_repo_a_packaged_model_is_a_copy_of(hub, token, tmp_path, capsys):
    """Measured before: a local model was published to sentence-transformers/all-MiniLM-L6-v2 in a dry run without a
    word, though medprobe ships that repo's weights and knows their sha256."""
    path = write_results(tmp_path / "local.json")  # /home/someone/models/bert, WEIGHTS
    args = ["publish", "results", str(path), "--model-repo", "sentence-transformers/all-MiniLM-L6-v2", "--dry-run"]
    assert main([*args, "--dataset-id", "my-lab/medlama"]) == 2
    err = capsys.readouterr().err
    assert "does not hold the weights that were probed (model.safetensors: 26 B, sha256" in err
    assert "90,868,376 B, sha256 53aa51172d14 in sentence-transformers/all-MiniLM-L6-v2 at 1110a243fdf4" in err


def test_what_the_model_check_compared_offline_is_in_the_plan(hub, token, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MEDPROBE_EMBEDDING_CACHE", str(tmp_path / "cache"))
    minilm = write_results(tmp_path / "minilm.json", model_identity=packaged_identity())
    args = ["publish", "results", str(minilm), "--dataset-id", "my-lab/medlama", "--dry-run", "--model-repo"]
    assert main([*args, "sentence-transformers/all-MiniLM-L6-v2"]) == 0
    out = capsys.readouterr().out
    assert "checked offline: model.safetensors equal in sentence-transformers/all-MiniLM-L6-v2 at 1110a243fdf4" in out
    cached_model("my-lab/bert", {"model.safetensors": WEIGHTS})
    assert publish_results(write_results(tmp_path / "local.json"), "--dry-run") == 0
    out = capsys.readouterr().out
    assert "checked offline: model.safetensors equal in the local Hub cache's snapshot of my-lab/bert at 555555555555" in out
    cached_model("my-lab/bin-only", {"pytorch_model.bin": b"a .bin of the model"})
    assert main([*args, "my-lab/bin-only"]) == 0  # the snapshot may lack what the run loaded: a real publish checks
    assert (
        "not checked offline: the local Hub cache's snapshot of my-lab/bin-only at 555555555555 lists no model.safetensors"
        in (capsys.readouterr().out)
    )
    assert main([*args, "my-lab/elsewhere"]) == 0
    assert "not checked offline: my-lab/elsewhere is neither the repo of a packaged model nor in the local Hub cache" in (
        capsys.readouterr().out
    )


@pytest.mark.parametrize("name", ["minilm", "smollm2"])
def test_the_declared_weights_of_a_packaged_model_are_its_files(name, tmp_path, monkeypatch):
    """What medprobe.models.PACKAGED states of the Hub repo is what the installed package holds (and a run records)."""
    from medprobe.models import PACKAGED, packaged_model_path
    from medprobe.provenance import weights_identity

    monkeypatch.setenv("MEDPROBE_EMBEDDING_CACHE", str(tmp_path / "cache"))
    try:
        folder = packaged_model_path(name)
    except FileNotFoundError:
        pytest.skip(f"the packaged model {name} is not installed")
    assert weights_identity(folder)["weights"] == PACKAGED[name].weights


def test_the_dry_run_repeat_line_is_the_command_that_was_run_then_the_hub_form(hub, token, results_file, capsys):
    """Measured before: the dry run's only "repeat" line was the card's, with the Hub dataset and model put in: a
    command that was never run."""
    assert publish_results(results_file, "--dry-run") == 0
    out = capsys.readouterr().out
    assert f"  repeat:  {COMMAND}\n" in out
    hub_form = COMMAND.replace("/home/someone/out/medlama", "my-lab/data").replace("/home/someone/models/bert", "my-lab/bert")
    assert f"(the command that was run); in the card, on the Hub: {hub_form.replace('/home/someone/runs/', '')}" in out


def test_a_run_without_a_weights_hash_is_refused(hub, token, tmp_path, capsys):
    path = write_results(tmp_path / "nohash.json", model_identity={"name": "bert", "note": "not identified: no such model"})
    model_repo(hub)
    assert publish_results(path, "--dry-run") == 2
    err = capsys.readouterr().err
    assert f"{path} records no weights hash of its model (not identified: no such model)" in err and "--model-mismatch-ok" in err
    assert publish_results(path, "--model-mismatch-ok") == 0 and len(published_card(hub).data.eval_results) == 5


@pytest.mark.parametrize(
    "weights, message",
    [
        ({"model.safetensors": OTHER_WEIGHTS}, "does not hold the weights that were probed (model.safetensors: 26 B, sha256"),
        (
            {"pytorch_model.bin": WEIGHTS},
            "the run loaded model.safetensors, which the repo does not have (it has pytorch_model.bin)",
        ),
        ({"config.json": b"{}"}, "cannot check that my-lab/bert holds the model probed: the repo has no weight files"),
        ({"sub/model.safetensors": WEIGHTS}, "the repo has no weight files"),  # weights only in a subfolder: not the model
    ],
    ids=["other_weights", "other_file", "no_weights", "weights_in_a_subfolder"],
)
def test_a_repo_that_does_not_hold_the_probed_weights_is_refused(hub, token, results_file, capsys, weights, message):
    repo = model_repo(hub, weights=weights)
    assert publish_results(results_file) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "--model-mismatch-ok" in err
    assert repo.commits == []  # refused before anything was written
    assert publish_results(results_file, "--model-mismatch-ok") == 0 and len(repo.commits) == 1


def test_the_repo_holding_the_probed_weights_is_published_and_the_check_said(hub, token, results_file, capsys):
    model_repo(hub, weights={"model.safetensors": WEIGHTS, "pytorch_model.bin": b"the same model, as a .bin"})
    assert publish_results(results_file) == 0
    out = capsys.readouterr().out
    assert "model checked: model.safetensors of" in out and "equal in my-lab/bert (size and sha256)" in out
    assert "the repo also holds pytorch_model.bin, which the run did not load" in out
    assert "GET /api/models/my-lab/bert" in hub.log


def test_the_weights_identity_a_run_records_matches_the_hub_s_file_metadata_of_the_same_files(hub, token, tmp_path, monkeypatch):
    """medprobe.provenance hashes a local folder as a run does; the check compares that with the Hub's LFS sha256."""
    from medprobe.provenance import weights_identity

    monkeypatch.setenv("MEDPROBE_EMBEDDING_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    folder.mkdir()
    shards = {"model-00001-of-00002.safetensors": b"first shard", "model-00002-of-00002.safetensors": b"second shard"}
    for name, data in shards.items():
        (folder / name).write_bytes(data)
    path = write_results(
        tmp_path / "r.json", model_identity={"name": str(folder), "path": str(folder), **weights_identity(folder)}
    )
    model_repo(hub, weights=shards)
    assert publish_results(path) == 0
    model_repo(hub, weights={**shards, "model-00002-of-00002.safetensors": b"second shard, retrained"})
    assert publish_results(path) == 2


def test_the_card_says_n_interval_fingerprint_version_and_the_command(hub, token, results_file, capsys):
    model_repo(hub)
    assert publish_results(results_file, "--metric", "acc@1", "--metric", "macro_acc@10") == 0
    text = published_card(hub).text
    assert "Text the owner wrote." in text and text.count("<!-- medprobe results: start") == 1
    intervals = json.loads(results_file.read_text())["intervals"]
    for name, value in (("acc@1", "5.00"), ("macro_acc@10", "24.00")):
        low, high = (100 * intervals[name][bound] for bound in ("low", "high"))
        assert f"| {name} | {value} | {low:.2f}–{high:.2f} | 100 queries |" in text and low < float(value) < high
    assert f"- data: my-lab/data, sha256 `{fingerprint()['sha256'][:12]}` over 1 data file(s)" in text
    assert (
        "measured with medprobe 0.2.0 (commit `aaaaaaaaaaaa`)" in text
        and "percentile bootstrap over queries, 1,000 resamples" in text
    )
    assert (
        "- repeat: `medprobe probe --prober contrastive --task medlama --dataset my-lab/data --config hard --split test "
        "--model my-lab/bert --out hard.json --device cpu --dtype float32`"
    ) in text
    assert "/home/someone" not in str(published_card(hub))  # no local path in the card


def test_the_results_section_replaces_a_run_s_block_and_keeps_the_others(hub, token, tmp_path, capsys):
    model_repo(hub)
    hard = write_results(tmp_path / "hard.json")
    full = write_results(tmp_path / "full.json", at_1=(1, 2), at_10=(4, 6), config="full")  # acc@1 3%, acc@10 10%
    assert publish_results(hard) == 0 and publish_results(full) == 0
    write_results(hard, at_1=(4, 3))  # the hard run again: acc@1 7%
    assert publish_results(hard) == 0
    card = published_card(hub)
    assert card.text.count("<!-- medprobe results: start") == 1 and card.text.count("<!-- medprobe run: ") == 2
    assert "| acc@1 | 7.00 |" in card.text and "| acc@1 | 5.00 |" not in card.text and "| acc@1 | 3.00 |" in card.text
    assert card.text.index("### MedLAMA (hard)") < card.text.index("### MedLAMA (full)")  # the block stayed in its place


def test_results_help_lists_the_overrides(capsys):
    with pytest.raises(SystemExit):
        main(["publish", "results", "--help"])
    out = capsys.readouterr().out
    assert "--allow-subset" in out and "--model-mismatch-ok" in out


NETWORK_FAILURES = {
    "no_route": (
        httpx2.ConnectError("[Errno 113] No route to host"),
        "cannot reach https://huggingface.co (ConnectError: [Errno 113] No route to host) — check the network",
    ),  # noqa: E501
    "dns": (
        httpx2.ConnectError("[Errno -2] Name or service not known"),
        "cannot resolve https://huggingface.co ([Errno -2] Name or service not known) — check the network and DNS",
    ),  # noqa: E501
    "connect_timeout": (
        httpx2.ConnectTimeout("timed out"),
        "https://huggingface.co did not answer in time (ConnectTimeout) — check the network",
    ),
    "read_timeout": (httpx2.ReadTimeout("timed out"), "https://huggingface.co did not answer in time (ReadTimeout)"),
    "http_401": (401, "HTTP 401 Unauthorized (fake hub: status 401) from POST /api/repos/create — the token was refused"),
    "http_403": (403, "HTTP 403 Forbidden (fake hub: status 403) from POST /api/repos/create — the token may not write there"),
    "http_404": (
        404,
        "HTTP 404 Not Found (fake hub: status 404) from POST /api/repos/create — no such repo, or the token cannot see it",
    ),
    "http_500": (
        500,
        "HTTP 500 Internal Server Error (fake hub: status 500) from POST /api/repos/create — the Hub had a server error: try again later",
    ),  # noqa: E501
}


@pytest.mark.parametrize("failure", list(NETWORK_FAILURES), ids=list(NETWORK_FAILURES))
def test_network_failure_is_one_line_with_the_repo_and_what_to_try(hub, token, folder, capsys, caplog, failure):
    caplog.set_level(logging.DEBUG)
    hub.fail_requests_with, expected = NETWORK_FAILURES[failure]
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/medlama"]) == 2
    err = capsys.readouterr().err  # the local checks' progress bars (load_dataset) come first
    errors = [line.split("\r")[-1] for line in err.splitlines() if "medprobe: error:" in line]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert errors[0].startswith(f"medprobe: error: publish to my-lab/medlama failed: {expected}") and err.endswith("\n")
    assert TOKEN not in err and TOKEN not in caplog.text


@pytest.mark.parametrize("failure", ["dns", "read_timeout", "http_500"])
def test_network_failure_of_results_publishing_is_one_line(hub, token, results_file, capsys, failure):
    hub.fail_requests_with, expected = NETWORK_FAILURES[failure]
    assert main(["publish", "results", str(results_file), "--model-repo", "my-lab/bert"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"medprobe: error: publish to my-lab/bert failed: {expected.replace('POST /api/repos/create', 'GET /api/models/my-lab/bert')}"
    )  # noqa: E501
    assert err.count("\n") == 1 and TOKEN not in err


def test_token_is_scrubbed_from_hub_errors():
    with pytest.raises(PublishError) as raised:
        with publish.hub_errors(TOKEN):
            raise OSError(f"401 for https://huggingface.co with Authorization: Bearer {TOKEN}")
    assert TOKEN not in str(raised.value) and "Bearer <token>" in str(raised.value)


def test_token_sources_in_order(monkeypatch):
    monkeypatch.setattr(publish, "get_token", lambda: "hf_stored")
    monkeypatch.setenv("HF_TOKEN", "hf_env")
    assert publish.resolve_token("hf_flag") == ("hf_flag", "--token")
    assert publish.resolve_token(None) == ("hf_env", "HF_TOKEN")
    monkeypatch.delenv("HF_TOKEN")
    assert publish.resolve_token(None) == ("hf_stored", "huggingface_hub login")


def test_publish_help_lists_the_three_kinds(capsys):
    with pytest.raises(SystemExit):
        main(["publish", "--help"])
    out = capsys.readouterr().out
    assert all(kind in out for kind in ("dataset", "metric", "results"))


def test_a_published_run_block_gives_its_validity_facets_with_intervals(tmp_path):
    """issue 39 §6: the model card's block of a run with facets has a validity table (value, 95% interval, clustered
    interval, design effect); a run without facets has none."""
    from medprobe.hub.card_sections import run_block
    from medprobe.records import load_record_file
    from synthetic_runs import MEDLAMA_SETTINGS, medlama_ranks, write_run

    ids, groups, ranks = medlama_ranks(20, 0.5, seed=1)
    control = medlama_ranks(20, 0.2, seed=2)[2]
    settings = {**MEDLAMA_SETTINGS, "control_placeholder": "X"}
    path = write_run(tmp_path / "facets.json", ids, groups, {"rank": ranks, "control_rank": control}, settings=settings)
    record = load_record_file(path)
    block = run_block(record, "MedLAMA hard", "my-lab/medlama", "my-lab/bert", ["acc@10"], None)
    assert "Validity (is it knowledge?" in block and "| facet | metric | value | 95% interval | clustered | deff |" in block
    above = record.intervals["above_bias@10"]
    row = f"| prompt bias | above_bias@10 | {100 * record.metrics['above_bias@10']:.2f} | [{100 * above['low']:.2f}, "
    assert row in block
    assert f"| prompt bias | answerable_from_template@10 | {record.metrics['answerable_from_template@10']:,.0f} | [" in block
    assert "above_bias@1 " not in block  # the facets at the headline's k only
    plain = write_run(tmp_path / "plain.json", ids, groups, {"rank": ranks})
    assert "Validity" not in run_block(load_record_file(plain), "MedLAMA hard", "my-lab/medlama", "my-lab/bert", ["acc@10"], None)
