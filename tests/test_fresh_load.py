"""A rebuilt folder loads what it holds: after any rebuild, `load_dataset(OUT, config)` in a new
Python process returns exactly the rows of the Parquet files on disk, for every builder.

datasets keys its cache of a local folder on the card's `configs:` (the data-file paths as written)
and `dataset_info:` (features, row counts, byte sizes), not on the files' contents. A rebuild with
the same row counts and byte sizes but other content used to load the previous build's rows from
the cache, silently (and so did `medprobe probe`, which loads through `load_dataset`). Each test
builds, loads once (warming the cache), rebuilds the same folder with a same-size change of its
source, checks that the card's `dataset_info:` did not change (the case that went wrong), and loads
again in a fresh process with the same HF_DATASETS_CACHE, both as a Hub user does and as
`medprobe probe` does.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

import medprobe.building.build as build_module
from medprobe.building.build import build, card_meta
from medprobe.resources import dataset_folder, load_builder_module
from synthetic_medlama import BUILD_PARAMS, write_release

PROBERS_HOME = Path(build_module.__file__).resolve().parents[1]  # a checkout, or the installed wheel in CI
SMALL_MST = {"train_size": 12, "validation_size": 6, "test_size": 12}

# Run in a fresh interpreter: every split of CONFIG as load_dataset and as `medprobe probe` load it.
LOADER = """
import json, sys
import datasets
from medprobe.loading import load_probe_dataset
out, config, dump = sys.argv[1:4]
loaded = datasets.load_dataset(out, config)
rows = {
    "load_dataset": {split: ds.to_list() for split, ds in loaded.items()},
    "probe": {split: load_probe_dataset(out, config, split).to_list() for split in loaded},
}
with open(dump, "w", encoding="utf-8") as handle:
    json.dump(rows, handle)
"""


def load_in_fresh_process(out: Path, config: str, cache: Path) -> dict[str, dict[str, list[dict]]]:
    dump = cache.parent / f"loaded-{config}.json"
    env = {
        **os.environ,
        "HF_DATASETS_CACHE": str(cache),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(PROBERS_HOME), os.environ.get("PYTHONPATH")])),
    }
    result = subprocess.run([sys.executable, "-c", LOADER, str(out), config, str(dump)], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(dump.read_text(encoding="utf-8"))


def rows_on_disk(out: Path, config: str) -> dict[str, list[dict]]:
    """The rows of the Parquet files that the card's `configs:` names for each split, read with pyarrow."""
    entry = next(c for c in card_meta(out / "README.md")["configs"] if c["config_name"] == config)
    rows = {}
    for data_files in entry["data_files"]:
        paths = sorted(out.glob(data_files["path"]))  # an exact path, or a pattern such as full/test-*
        assert paths, f"nothing on disk matches {data_files['path']}"
        rows[data_files["split"]] = [row for path in paths for row in pq.read_table(path).to_pylist()]
    return json.loads(json.dumps(rows))  # the JSON round trip the loader's rows took


def dataset_info(out: Path) -> list:
    return card_meta(out / "README.md")["dataset_info"]


def assert_rebuild_loads_fresh_rows(out: Path, configs: list[str], cache: Path, rebuild) -> None:
    """Load `configs` (warming the cache), call `rebuild()`, then load them again in a new process."""
    before = {config: rows_on_disk(out, config) for config in configs}
    for config in configs:
        assert load_in_fresh_process(out, config, cache)["load_dataset"] == before[config]
    info = dataset_info(out)
    rebuild()
    assert dataset_info(out) == info, "not a same-size rebuild: the card's dataset_info changed"
    after = {config: rows_on_disk(out, config) for config in configs}
    assert after != before, "the rebuild did not change any row: nothing to test"
    for config in configs:
        assert {split: len(rows) for split, rows in after[config].items()} == {s: len(r) for s, r in before[config].items()}
        loaded = load_in_fresh_process(out, config, cache)
        assert loaded["load_dataset"] == after[config], f"{config}: load_dataset returned rows that are not on disk"
        assert loaded["probe"] == after[config], f"{config}: medprobe probe's loader returned rows that are not on disk"


def replace_once(path: Path, old: str, new: str) -> None:
    """Replace the first `old` in a text file by `new`, which has the same length (a same-size edit)."""
    assert len(old.encode()) == len(new.encode()) and old != new
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} is not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_medlama_rebuild_with_a_corrected_row_loads_the_new_rows(tmp_path):
    release = write_release(tmp_path / "release")
    out, cache = tmp_path / "out", tmp_path / "cache" / "datasets"
    build("medlama", out, data_dir=str(release), params=BUILD_PARAMS)

    def correct_one_head_name() -> None:
        # the same correction in the full file and in the hard file of one relation, as a release fix would
        relation = load_builder_module("medlama").RELATIONS[0]
        for path in sorted((release / "2021AA").glob(f"{relation}_*.csv")):
            replace_once(path, "Alphazine", "Alphazone")
        build("medlama", out, data_dir=str(release), params=BUILD_PARAMS)

    assert_rebuild_loads_fresh_rows(out, ["full", "hard"], cache, correct_one_head_name)


def test_disknE_rebuild_with_a_corrected_premise_loads_the_new_rows(synthetic_disknE, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(synthetic_disknE.data_dir, data, symlinks=True)  # the annotation files stay links
    out, cache = tmp_path / "out", tmp_path / "cache" / "datasets"
    config = "terminological_random"
    build("disknE", out, data_dir=str(data), configs=[config])

    def correct_one_premise() -> None:
        # the premise of this variant's first pair gets a capital letter: same length, same mentions
        pair_id = rows_on_disk(out, config)["test"][0]["pair_id"].removesuffix(",ng")
        for path in sorted([*(data / "mednli").glob("*.jsonl"), *(data / "mediqa_nli").glob("*.jsonl")]):
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            for index, line in enumerate(lines):
                record = json.loads(line)
                if record["pairID"] == pair_id:
                    record["sentence1"] = record["sentence1"].replace(" evaluation.", " Evaluation.", 1)
                    lines[index] = json.dumps(record) + "\n"
                    path.write_text("".join(lines), encoding="utf-8")
                    build("disknE", out, data_dir=str(data), configs=[config])
                    return
        raise AssertionError(f"no MedNLI or MEDIQA-NLI record for pair {pair_id}")

    assert_rebuild_loads_fresh_rows(out, [config], cache, correct_one_premise)


def test_mst_rebuild_by_a_generator_with_a_corrected_table_loads_the_new_rows(tmp_path, monkeypatch):
    # MST's rows are a function of its parameters and of the generator's tables. The same-size change
    # here is the one a medprobe upgrade makes: a corrected analyte name (same length) in the
    # reference-range table, built with the same parameters and the same builder version.
    out, cache = tmp_path / "out", tmp_path / "cache" / "datasets"
    config = "reference_range"
    build("mst", out, configs=[config], params=SMALL_MST)
    mst = load_builder_module("mst")

    def rebuild_with_a_corrected_table() -> None:
        table = tuple(
            dataclasses.replace(analyte, name=analyte.name.replace("serum ", "Serum ", 1))
            for analyte in mst.measures.REFERENCE_RANGES
        )
        monkeypatch.setattr(mst.generator, "REFERENCE_RANGES", table)  # the table the row generator draws from
        build("mst", out, configs=[config], params=SMALL_MST)

    assert_rebuild_loads_fresh_rows(out, [config], cache, rebuild_with_a_corrected_table)


def test_context_variance_rebuild_with_a_corrected_note_loads_the_new_rows(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(dataset_folder("context_variance") / "sample", data)
    out, cache = tmp_path / "out", tmp_path / "cache" / "datasets"
    config = "real-target"
    params = {"licence": "open"}
    build("context_variance", out, data_dir=str(data), configs=[config], params=params)

    def correct_one_note() -> None:
        # a word inside S1 of the nasal-polyp note (between "sick feeling" and the target), same length
        replace_once(data / "corpus" / "notes" / "ent_clinic_nasal_polyp.txt", "since the\nweekend", "since the\nWeekend")
        build("context_variance", out, data_dir=str(data), configs=[config], params=params)

    assert_rebuild_loads_fresh_rows(out, [config], cache, correct_one_note)
