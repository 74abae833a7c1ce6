"""The official builds' fingerprints in the registry (medprobe.official_data) are what `medprobe build` writes, and a
record says "official data, verified" or names how its data differ (medprobe.hub.official)."""

from __future__ import annotations

from pathlib import Path

import pytest

from medprobe.building.build import build
from medprobe.digests import sha256_file
from medprobe.hub.official import data_status
from medprobe.official_data import OFFICIAL_DATA
from medprobe.provenance import dataset_fingerprint
from medprobe.records.record import RunRecord
from medprobe.registry import registry

SAMPLE = Path(__file__).resolve().parents[1] / "medprobe" / "demo_data" / "medlama_sample"


def files_of(folder: Path) -> dict[str, str]:
    return {f"{p.parent.name}/{p.name.split('-', 1)[0]}/{p.name}": sha256_file(p) for p in sorted(folder.glob("*/*.parquet"))}


@pytest.mark.parametrize("benchmark", ["mst", "context_variance"])
def test_a_fresh_build_of_a_generated_benchmark_gives_the_registered_files(benchmark, tmp_path):
    build(benchmark, tmp_path / benchmark)
    assert files_of(tmp_path / benchmark) == OFFICIAL_DATA[benchmark].files


def test_a_build_of_the_medlama_release_gives_the_registered_files(built_medlama):
    assert files_of(built_medlama) == OFFICIAL_DATA["medlama"].files


def test_every_benchmark_with_a_seeded_or_released_build_names_its_official_data():
    named = {entry.benchmark: entry.official_data for entry in registry().tasks.values()}
    assert named["medlama"] is OFFICIAL_DATA["medlama"] and named["mst"] is OFFICIAL_DATA["mst"]
    assert named["context_variance"] is OFFICIAL_DATA["context_variance"] and named["disknE"] is None  # licensed inputs


def record(files: dict[str, str], **fingerprint) -> RunRecord:
    digest = fingerprint.pop("sha256", "f" * 64)
    return RunRecord(
        "medlama",
        "d",
        "hard",
        "test",
        "contrastive",
        "m",
        None,
        task="medlama",
        data_fingerprint={"sha256": digest, "files": files, **fingerprint},
    )


def test_a_run_on_the_official_files_is_official_and_one_other_file_is_named():
    official = {name: sha for name, sha in OFFICIAL_DATA["medlama"].files.items() if name.startswith("hard/")}
    status = data_status(record(official))
    assert status.official and status.text.startswith("official data, verified (MedLAMA 2021AA")
    (name,) = official
    edited = data_status(record({name: "0" * 64}))
    assert edited.kind == "other" and f"{name} has sha256 000000000000, the official file 53e4913acbc0" in edited.text
    other = data_status(record({"hard/test/test-00000-of-00001-aaaa.parquet": "a" * 64}))
    assert (
        "hard/test/test-00000-of-00001-aaaa.parquet is not an official file (official hard/test: test-00000-of-00001-53e4"
        in other.text
    )


def test_a_sample_a_hub_read_and_an_old_record_are_told_apart():
    sample = dataset_fingerprint(str(SAMPLE), [("hard", "test")])
    assert data_status(record(sample["files"], sha256=sample["sha256"])).kind == "sample"
    hub = data_status(record({"hard/test/x.parquet": "me/medlama@abc"}, hub="me/medlama", revision="abc"))
    assert hub.kind == "hub" and "read from the Hub dataset me/medlama" in hub.text
    old = RunRecord("medlama", "d", "hard", "test", "contrastive", "m", None, task="medlama")
    assert data_status(old).kind == "unknown" and data_status(old).fingerprint is None
