"""The hardness scores on hand-worked cases, and the builder on a synthetic release (runs anywhere)."""

import shutil

import pytest
from datasets import load_dataset

from probers.build import build
from probers.resources import load_builder_module
from synthetic_medlama import COLUMNS, ROWS, release_row, write_csv, write_release

medlama = load_builder_module("medlama")


def test_avg_match_counts_names_inside_the_head_with_the_release_padding():
    # split on "||": "Eye " (trailing space) is not inside "Eyelid Carcinoma", " Eyelid" is
    assert medlama.avg_match("Stage IIA Eyelid Carcinoma", "Eye || Eyelid") == 0.5
    # a padded name cannot match at the end of the head name
    assert medlama.avg_match("Verrucous Carcinoma of the Penis", "Penis || Skin") == 0.0
    assert medlama.avg_match("Fever", "Fever") == 1.0


def test_avg_rouge_l_uses_lowercased_distinct_words():
    # head has 7 distinct words ("of" and "the" twice), name 2, LCS 1: F = 2/9; averaged with 0
    value = medlama.avg_rouge_l("Malignant Neoplasm of the Lower Third of the Esophagus", "Malignant Cell || Neoplastic Cell")
    assert value == pytest.approx(1 / 9, abs=1e-7)
    # exactly 0.1 in exact arithmetic falls just below it, as in the release, and is hard
    value = medlama.avg_rouge_l("Lymphoid neoplasm", "Other malignant neoplasm of lymphoid and histiocytic tissue || Lymphoreticular tumor")
    assert value < 0.1 and value == pytest.approx(0.1, abs=1e-7)


def test_synthetic_release_builds_both_configs(tmp_path):
    release = write_release(tmp_path / "release")
    report = build("medlama", tmp_path / "hub", data_dir=str(release))
    assert report.rows == {"full": {"test": 19 * 3}, "hard": {"test": 19 * 2}}
    hard = load_dataset(str(tmp_path / "hub"), "hard", split="test")
    row = hard[0]
    assert row["answers"] == ["Betaitis", "Gammaosis"] and row["answer_cuis"] == ["C9000101", "C9000102"]
    assert "Waldenström epsilon" in hard["head_name"]


@pytest.fixture
def release(tmp_path):
    return write_release(tmp_path / "release")


def build_error(release, tmp_path, configs=None) -> str:
    with pytest.raises((ValueError, FileNotFoundError)) as err:
        build("medlama", tmp_path / "hub", data_dir=str(release), configs=configs)
    return str(err.value)


def test_missing_relation_files_are_all_named(release, tmp_path):
    (release / "2021AA" / "may_treat_1000.csv").unlink()
    (release / "prompts.csv").unlink()
    message = build_error(release, tmp_path, ["full"])
    assert "may_treat_1000.csv" in message and "prompts.csv" in message and "2 MedLAMA release file(s)" in message


def test_missing_column_names_file_and_column(release, tmp_path):
    path = release / "2021AA" / "occurs_after_1000.csv"
    rows = [release_row("occurs_after", cui, name, tails) for cui, name, tails, _ in ROWS]
    write_csv(path, rows, [c for c in COLUMNS if c != "tail_cuis"])
    message = build_error(release, tmp_path, ["full"])
    assert "occurs_after_1000.csv" in message and "tail_cuis" in message


def test_malformed_list_literal_names_file_row_and_column(release, tmp_path):
    path = release / "2021AA" / "may_prevent_1000.csv"
    rows = [release_row("may_prevent", cui, name, tails) for cui, name, tails, _ in ROWS]
    rows[1]["tail_names_list"] = "['Deltoma of skin'"
    write_csv(path, rows)
    message = build_error(release, tmp_path, ["full"])
    assert "may_prevent_1000.csv, row 2, column tail_names_list" in message and "list literal" in message


def test_hard_row_absent_from_full_file_stops_the_build(release, tmp_path):
    hard_path = next((release / "2021AA").glob("may_treat_*_hard.csv"))
    rows = [release_row("may_treat", cui, name, tails) for cui, name, tails, hard in ROWS if hard]
    rows.append(release_row("may_treat", "C9999999", "Not in full", [("C9999998", "Nowhere")]))
    write_csv(hard_path, rows)
    message = build_error(release, tmp_path, ["hard"])
    assert hard_path.name in message and "absent from" in message and "C9999999" in message


def test_rule_disagreeing_with_the_hard_file_lists_the_rows(release, tmp_path):
    hard_path = next((release / "2021AA").glob("may_treat_*_hard.csv"))
    rows = [release_row("may_treat", cui, name, tails) for cui, name, tails, hard in ROWS if hard]
    write_csv(hard_path, rows[:1])  # drop a row the rule selects
    message = build_error(release, tmp_path, ["hard"])
    assert "selected by the rule, not in the hard file" in message and "Waldenström epsilon" in message


def test_unknown_config_is_refused_with_the_known_ones(release, tmp_path):
    message = build_error(release, tmp_path, ["easy"])
    assert "easy" in message and "full" in message and "hard" in message


def test_rebuilding_a_config_removes_stale_files(release, tmp_path):
    build("medlama", tmp_path / "hub", data_dir=str(release), configs=["hard"])
    stale = tmp_path / "hub" / "hard" / "test-00001-of-00002.parquet"
    shutil.copy(tmp_path / "hub" / "hard" / "test-00000-of-00001.parquet", stale)
    build("medlama", tmp_path / "hub", data_dir=str(release), configs=["hard"])
    assert not stale.exists()
    assert load_dataset(str(tmp_path / "hub"), split="test").num_rows == 19 * 2
