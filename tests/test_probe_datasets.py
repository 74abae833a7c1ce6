"""A --dataset that does not load is one line naming the path, what is wrong and what to do.

The broken folders are the real ways a folder goes wrong: the raw release folder passed instead
of a built one, a card whose dataset_info no longer matches the files (stale), a config whose
files are gone, a truncated Parquet file, and a folder holding a loading script.
"""

import shutil
from pathlib import Path

import pytest
import yaml

from medprobe.cli import main
from medprobe.loading import load_probe_dataset


@pytest.fixture
def folder(synthetic_medlama_hub, tmp_path) -> Path:
    """A copy under a name of its own: datasets caches a local folder by its name, card and file
    names (not the files' bytes), so a copy named like a folder loaded before would load from that
    cache, broken files or not."""
    return Path(shutil.copytree(synthetic_medlama_hub, tmp_path / f"hub-{tmp_path.name}"))


def load_error(dataset, config="full", split="test") -> str:
    with pytest.raises(ValueError) as raised:
        load_probe_dataset(str(dataset), config, split)
    message = str(raised.value)
    assert "\n" not in message, message
    return message


def set_card_rows(folder: Path, config: str, rows: int) -> None:
    text = (folder / "README.md").read_text(encoding="utf-8")
    _, header, body = text.split("---\n", 2)
    meta = yaml.safe_load(header)
    [info] = [info for info in meta["dataset_info"] if info["config_name"] == config]
    info["splits"][0]["num_examples"] = rows
    (folder / "README.md").write_text(f"---\n{yaml.safe_dump(meta, sort_keys=False)}---\n{body}", encoding="utf-8")


def test_raw_release_folder_says_build_it_first(medlama_release_dir):
    for config in ("hard", None):  # with a config: "not found"; without: a CSV cast error deep in datasets
        message = load_error(medlama_release_dir, config)
        assert f"--dataset {medlama_release_dir} has no README.md card" in message
        assert "prompts.csv" in message and f"medprobe build <benchmark> --data-dir {medlama_release_dir} --out DIR" in message


def test_stale_card_names_both_row_counts_and_the_rebuild(folder):
    set_card_rows(folder, "full", 50)
    message = load_error(folder)
    assert f"--dataset {folder} does not load (config 'full', split 'test')" in message
    assert "its README.md card says full/test has 50 rows but its Parquet files hold 57" in message
    assert f"Rebuild it: medprobe build medlama [--data-dir RELEASE] --out {folder}" in message


def test_config_whose_files_are_gone(folder):
    shutil.rmtree(folder / "hard")
    message = load_error(folder, "hard")
    assert "the card names data files for hard/test but none exist" in message and "Rebuild it" in message


def test_truncated_parquet_file_is_named(folder):
    [parquet] = sorted((folder / "full").glob("*.parquet"))
    data = parquet.read_bytes()
    parquet.write_bytes(data[: len(data) // 2])
    message = load_error(folder)
    assert f"{parquet} is not a readable Parquet file (truncated or corrupt" in message and "Rebuild it" in message


def test_folder_with_a_dataset_script(folder):
    (folder / f"{folder.name}.py").write_text("# a loading script\n")
    message = load_error(folder)
    assert f"{folder / (folder.name + '.py')} is a dataset script, which datasets >= 4 no longer runs" in message
    assert "medprobe build <benchmark> --out DIR" in message


def test_unknown_config_keeps_the_list_of_configs(folder):
    message = load_error(folder, "medium")
    assert "BuilderConfig 'medium' not found. Available: ['full', 'hard', 'variants']" in message and "Rebuild" not in message


def test_cli_prints_the_stale_card_as_one_line_before_any_model_loads(folder, capsys, monkeypatch):
    from medprobe.registry import ProberEntry

    # the command checks the model's name first (a fraction of a second); loading it comes after the data
    monkeypatch.setattr(ProberEntry, "create", lambda *a, **k: pytest.fail("the model was loaded"))
    set_card_rows(folder, "hard", 1)
    assert (
        main(
            [
                "probe",
                "--dataset",
                str(folder),
                "--config",
                "hard",
                "--prober",
                "contrastive",
                "--model",
                "minilm",
                "--out",
                str(folder.parent / "r.json"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err  # datasets' progress bars come first
    assert "Traceback" not in err and err.endswith("\n") and err.count("medprobe: error:") == 1
    last = err.strip().splitlines()[-1].split("\r")[-1]
    assert last.startswith("medprobe: error: --dataset") and "card says hard/test has 1 rows" in last
