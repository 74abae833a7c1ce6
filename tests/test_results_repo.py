"""`medprobe publish results --results-repo`: runs into a results dataset on a fake Hub (tests/hub_mock.py), read back by
`load_dataset` and by `medprobe compare hub:...` (the same numbers as the local files, offline once cached), and what
it refuses before anything is sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from huggingface_hub import constants, set_client_factory
from huggingface_hub.utils import _http

from hub_mock import FakeHub, serving
from medprobe.cli import main
from medprobe.hub.published import load_published, outcomes_from_parquet
from medprobe.official_data import OFFICIAL_DATA
from medprobe.provenance import dataset_fingerprint, files_digest
from medprobe.records import load_run
from synthetic_runs import write_medlama_run

TOKEN = "hf_ResultsRepoTokenNeverPrinted0123456"
SAMPLE = Path(__file__).resolve().parents[1] / "medprobe" / "demo_data" / "medlama_sample"
HARD = {name: sha for name, sha in OFFICIAL_DATA["medlama"].files.items() if name.startswith("hard/")}


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """A fake Hub that every huggingface_hub request goes to, and an empty Hub cache."""
    with serving(monkeypatch, tmp_path, TOKEN) as fake:
        yield fake


def identity(weights: str) -> dict:
    return {
        "name": "minilm",
        "weights_sha256": weights * 64,
        "weights": {"model.safetensors": {"size": 1, "sha256": weights * 64}},
    }


def official_run(path: Path, hit_share: float, seed: int, weights: str = "a", **options) -> Path:
    """A made-up MedLAMA hard run whose record names the official hard file (so its data is 'official')."""
    fingerprint = {"sha256": files_digest(HARD), "files": HARD}
    return write_medlama_run(path, hit_share, seed, model_identity=identity(weights), data_fingerprint=fingerprint, **options)


def rewrite(path: Path, **fields) -> Path:
    """Replace record fields no number depends on (the outcomes file stays the one the record hashes)."""
    record = json.loads(path.read_text())
    record.update(fields)
    path.write_text(json.dumps(record, indent=2))
    return path


@pytest.fixture
def runs(tmp_path) -> tuple[Path, Path]:
    first = official_run(tmp_path / "runs" / "first.json", 0.6, seed=1, weights="a", model="minilm")
    second = official_run(tmp_path / "runs" / "second.json", 0.3, seed=2, weights="b", model="/models/tiny-random")
    return first, second


def publish(*args: str) -> int:
    return main(["publish", "results", *map(str, args)])


def local_copy(hub: FakeHub, repo_id: str, folder: Path) -> Path:
    for path, content in hub.repos[("dataset", repo_id)].files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(content)
    return folder


def test_a_dry_run_prints_every_file_and_hub_call_and_sends_nothing(runs, hub, capsys):
    assert publish(runs[0], "--results-repo", "me/results", "--dry-run") == 0
    plan = capsys.readouterr().out
    assert "me/results (dataset)" in plan and "minilm/medlama/hard/contrastive/results.json" in plan
    assert "minilm/medlama/hard/contrastive/outcomes.parquet" in plan and "medprobe_runs.json" in plan and "README.md" in plan
    assert "load_dataset('me/results', 'medlama_hard', split='minilm')" in plan
    assert "data: official data, verified (MedLAMA 2021AA" in plan
    assert "predictions: not uploaded (the outcomes hold ids, item digests, groups and ranks: no licensed text)" in plan
    for call in ("create_repo(repo_id='me/results', repo_type='dataset'", "dataset_info(", "create_commit("):
        assert call in plan
    assert "dry run: nothing was sent" in plan and hub.log == [] and TOKEN not in plan


def test_runs_land_in_one_commit_and_load_dataset_reads_a_split_per_model(runs, hub, tmp_path, capsys):
    import datasets

    assert publish(runs[0], "--results-repo", "me/results") == 0
    assert publish(runs[1], "--results-repo", "me/results") == 0
    repo = hub.repos[("dataset", "me/results")]
    assert [len(commit["files"]) for commit in repo.commits] == [4, 4]  # results, outcomes, index, card: one commit each
    assert repo.commits[1]["parent"] is not None
    assert repo.files["minilm/medlama/hard/contrastive/results.json"] == runs[0].read_bytes()  # the record as written
    index = json.loads(repo.files["medprobe_runs.json"])
    assert sorted(index["runs"]) == ["minilm/medlama/hard/contrastive", "tiny_random/medlama/hard/contrastive"]
    card = repo.files["README.md"].decode()
    meta = yaml.safe_load(card.split("---\n", 2)[1])
    assert meta["configs"] == [
        {
            "config_name": "medlama_hard",
            "data_files": [
                {"split": "minilm", "path": "minilm/medlama/hard/*/outcomes.parquet"},
                {"split": "tiny_random", "path": "tiny_random/medlama/hard/*/outcomes.parquet"},
            ],
            "default": True,
        }
    ]
    copy = local_copy(hub, "me/results", tmp_path / "copy")
    loaded = datasets.load_dataset(str(copy), "medlama_hard")
    assert sorted(loaded) == ["minilm", "tiny_random"]
    first = load_run(runs[0])
    rows = loaded["minilm"]
    assert rows["id"] == list(first.outcomes.ids) and rows["item"] == list(first.outcomes.contents)
    assert set(rows["prober"]) == {"contrastive"} and rows.column_names == ["id", "item", "group", "rank", "prober"]
    assert "| minilm | medlama_hard | contrastive | acc@10 |" in card


def test_a_published_run_reads_back_through_the_records_loader_and_an_edited_parquet_is_refused(runs, hub, tmp_path):
    import pyarrow.parquet as pq

    assert publish(runs[0], "--results-repo", "me/results") == 0
    folder = local_copy(hub, "me/results", tmp_path / "copy") / "minilm" / "medlama" / "hard" / "contrastive"
    back = load_published(folder)
    assert back.record.metrics == load_run(runs[0]).record.metrics and back.path == folder / "results.json"
    assert main(["compare", str(runs[1]), str(runs[0]), "--out", str(tmp_path / "local")]) == 0
    assert main(["compare", str(runs[1]), str(folder), "--out", str(tmp_path / "copied")]) == 0  # the local copy's folder
    local, copied = (json.loads((tmp_path / name / "compare.json").read_text())["comparisons"][0] for name in ("local", "copied"))
    assert copied["run"] == "minilm (copy)" and copied["differences"] == local["differences"]
    outcomes, prober = outcomes_from_parquet((folder / "outcomes.parquet").read_bytes(), "x")
    table = pq.read_table(folder / "outcomes.parquet")
    ranks = table.column("rank").to_pylist()
    ranks[0] = 1.0 if ranks[0] != 1.0 else 2.0  # one rank changed
    pq.write_table(table.set_column(table.column_names.index("rank"), "rank", [ranks]), folder / "outcomes.parquet")
    assert main(["compare", str(runs[0]), str(folder)]) == 2


def test_compare_against_a_published_run_gives_the_numbers_of_the_local_files_and_works_offline_once_cached(
    runs, hub, tmp_path, monkeypatch, capsys
):
    assert publish(runs[1], "--results-repo", "me/results") == 0
    spec = "hub:me/results/tiny_random/medlama/hard/contrastive"
    assert main(["compare", str(runs[0]), str(runs[1]), "--out", str(tmp_path / "local")]) == 0
    assert main(["compare", str(runs[0]), spec, "--out", str(tmp_path / "hub")]) == 0
    local = json.loads((tmp_path / "local" / "compare.json").read_text())["comparisons"][0]
    remote = json.loads((tmp_path / "hub" / "compare.json").read_text())["comparisons"][0]
    assert remote["run"] == "tiny_random@me/results"
    assert remote["differences"] == local["differences"] and remote["groups"] == local["groups"]
    set_client_factory(_http.default_client_factory)  # no Hub any more: the cache answers
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert main(["compare", str(runs[0]), spec, "--out", str(tmp_path / "offline"), "--overwrite"]) == 0
    again = json.loads((tmp_path / "offline" / "compare.json").read_text())["comparisons"][0]
    assert again["differences"] == local["differences"]
    capsys.readouterr()
    assert main(["compare", str(runs[0]), "hub:me/results/nobody/medlama/hard/contrastive"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "not in the local Hub cache, and the Hub cannot be reached" in error


def refused(capsys, *args) -> str:
    capsys.readouterr()
    assert publish(*args) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1, error
    return error


def test_a_sample_a_subset_an_unidentified_model_and_open_predictions_are_refused_before_any_request(runs, hub, tmp_path, capsys):
    sample = write_medlama_run(tmp_path / "sample.json", 0.5, seed=1, model_identity=identity("c"))
    rewrite(sample, data_fingerprint=dataset_fingerprint(str(SAMPLE), [("hard", "test")]))
    assert "probed the sample of medlama shipped with medprobe" in refused(capsys, sample, "--results-repo", "me/results")
    subset = official_run(tmp_path / "subset.json", 0.5, seed=1, subset_options={"per_relation": 5})
    assert "probed a subset (first 5 queries per relation)" in refused(capsys, subset, "--results-repo", "me/results")
    anonymous = rewrite(
        write_medlama_run(tmp_path / "anon.json", 0.5, seed=1), data_fingerprint={"sha256": "d" * 64, "files": HARD}
    )
    assert "records no weights hash of its model" in refused(capsys, anonymous, "--results-repo", "me/results")
    predictions = runs[0].with_name("first.predictions.jsonl")
    predictions.write_text('{"id": "may_treat-0000", "predictions": ["aspirin"]}\n')
    error = refused(capsys, runs[0], "--results-repo", "me/results", "--predictions")
    assert "hold licensed text (umls: e.g. UMLS names); they go only into a gated repo: pass --gated" in error
    assert "needs --model-repo ORG/MODEL (a model card), --results-repo ORG/NAME" in refused(capsys, runs[0])
    other_model = official_run(tmp_path / "hubmodel.json", 0.5, seed=2)
    record = json.loads(other_model.read_text())
    other_model.write_text(json.dumps({**record, "model_identity": {**record["model_identity"], "hub_id": "someone/bert"}}))
    error = refused(capsys, other_model, "--results-repo", "me/results", "--model-repo", "me/my-bert", "--dry-run")
    assert "probed the Hub model someone/bert, not --model-repo me/my-bert" in error
    assert "--model-name 'tiny random'" in refused(capsys, runs[0], "--results-repo", "me/results", "--model-name", "tiny random")
    assert hub.log == []


def test_predictions_go_into_a_gated_repo_gated_before_the_upload(runs, hub, tmp_path, capsys):
    record = json.loads(runs[0].read_text())
    predictions = runs[0].with_name("first.predictions.jsonl")
    predictions.write_text('{"id": "may_treat-0000", "predictions": ["aspirin"]}\n')
    from medprobe.digests import sha256_file

    rewrite(runs[0], files={**record["files"], "first.predictions.jsonl": sha256_file(predictions)})
    assert publish(runs[0], "--results-repo", "me/results", "--predictions", "--gated") == 0
    repo = hub.repos[("dataset", "me/results")]
    assert repo.files["minilm/medlama/hard/contrastive/first.predictions.jsonl"] == predictions.read_bytes()
    assert repo.commits[0]["gated"] == "manual" and repo.commits[0]["private"] is True  # gated before the data landed
    assert repo.gated == "manual" and repo.private is False  # then opened, gated
    assert "extra_gated_prompt" in repo.files["README.md"].decode()
    assert "predictions: " in capsys.readouterr().out


def test_another_model_under_the_same_name_is_refused_and_a_rerun_replaces(runs, hub, tmp_path, capsys):
    assert publish(runs[0], "--results-repo", "me/results") == 0
    other = official_run(tmp_path / "other.json", 0.4, seed=5, weights="e", model="minilm")
    error = refused(capsys, other, "--results-repo", "me/results")
    assert "already holds a run of another model or other settings at minilm/medlama/hard/contrastive (weights_sha256" in error
    assert "--model-name" in error
    rerun = official_run(tmp_path / "rerun.json", 0.7, seed=6, weights="a", model="minilm")
    assert publish(rerun, "--results-repo", "me/results") == 0
    assert "replaces minilm/medlama/hard/contrastive" in capsys.readouterr().out
    assert publish(other, "--results-repo", "me/results", "--model-name", "minilm_2") == 0
