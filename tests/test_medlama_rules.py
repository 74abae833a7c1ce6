"""The hardness scores on hand-worked cases, and the builder on a synthetic release (runs anywhere)."""

import shutil

import pytest
from datasets import load_dataset

from built_folder import data_file
from medprobe.building.build import build
from medprobe.cli import main
from medprobe.resources import load_builder_module
from synthetic_medlama import BUILD_PARAMS, CLI_PARAMS, COLUMNS, ROWS, release_row, write_csv, write_release

medlama = load_builder_module("medlama")


def test_avg_match_counts_names_inside_the_head_with_the_release_padding():
    # split on "||": "Eye " (trailing space) is not inside "Eyelid Carcinoma", " Eyelid" is
    assert medlama.hardness.avg_match("Stage IIA Eyelid Carcinoma", "Eye || Eyelid") == 0.5
    # a padded name cannot match at the end of the head name
    assert medlama.hardness.avg_match("Verrucous Carcinoma of the Penis", "Penis || Skin") == 0.0
    assert medlama.hardness.avg_match("Fever", "Fever") == 1.0


def test_avg_rouge_l_uses_lowercased_distinct_words():
    # head has 7 distinct words ("of" and "the" twice), name 2, LCS 1: F = 2/9; averaged with 0
    value = medlama.hardness.avg_rouge_l(
        "Malignant Neoplasm of the Lower Third of the Esophagus", "Malignant Cell || Neoplastic Cell"
    )
    assert value == pytest.approx(1 / 9, abs=1e-7)
    # exactly 0.1 in exact arithmetic falls just below it, as in the release, and is hard
    value = medlama.hardness.avg_rouge_l(
        "Lymphoid neoplasm", "Other malignant neoplasm of lymphoid and histiocytic tissue || Lymphoreticular tumor"
    )
    assert value < 0.1 and value == pytest.approx(0.1, abs=1e-7)


def test_synthetic_release_builds_every_config(tmp_path):
    release = write_release(tmp_path / "release")
    report = build("medlama", tmp_path / "hub", data_dir=str(release), params=BUILD_PARAMS)
    assert report.rows == {"full": {"test": 19 * 3}, "hard": {"test": 19 * 2}, "variants": {"test": 19 * 3}}
    hard = load_dataset(str(tmp_path / "hub"), "hard", split="test")
    row = hard[0]
    assert row["answers"] == ["Betaitis", "Gammaosis"] and row["answer_cuis"] == ["C9000101", "C9000102"]
    assert "Waldenström epsilon" in hard["head_name"]


@pytest.fixture
def release(tmp_path):
    return write_release(tmp_path / "release")


def build_error(release, tmp_path, configs=None, params=BUILD_PARAMS) -> str:
    with pytest.raises((ValueError, OSError)) as err:
        build("medlama", tmp_path / "hub", data_dir=str(release), configs=configs, params=params)
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
    build("medlama", tmp_path / "hub", data_dir=str(release), configs=["hard"], params=BUILD_PARAMS)
    stale = tmp_path / "hub" / "hard" / "test-00001-of-00002.parquet"
    shutil.copy(data_file(tmp_path / "hub", "hard"), stale)
    build("medlama", tmp_path / "hub", data_dir=str(release), configs=["hard"], params=BUILD_PARAMS)
    assert not stale.exists()
    assert load_dataset(str(tmp_path / "hub"), split="test").num_rows == 19 * 2


# --- the release's invariants: 1,000 distinct rows per relation, one hard file each ----------------


def relation_rows(relation: str) -> list[dict]:
    return [release_row(relation, cui, name, tails) for cui, name, tails, _ in ROWS]


def hard_file(release, relation: str):
    return next((release / "2021AA").glob(f"{relation}_*_hard.csv"))


def test_default_build_insists_on_the_release_1000_rows_per_relation(release, tmp_path):
    # the synthetic files hold 3 rows under the release's names: without rows_per_relation=3
    # they are a truncated release
    message = build_error(release, tmp_path, ["full"], params=None)
    assert "associated_morphology_of_1000.csv: 3 rows, expected 1,000" in message
    assert "--set rows_per_relation=N" in message


@pytest.mark.parametrize("config", ["full", "hard"])
def test_duplicated_full_row_names_file_and_both_rows(release, tmp_path, config):
    path = release / "2021AA" / "may_treat_1000.csv"
    rows = relation_rows("may_treat")
    write_csv(path, [rows[0], rows[1], rows[0]])  # the same count, one row twice
    message = build_error(release, tmp_path, [config])
    assert f"{path}: 1 duplicate row(s)" in message and "row 3 is a duplicate of row 1" in message


def test_appended_duplicate_row_stops_the_build_before_the_count(release, tmp_path):
    path = release / "2021AA" / "may_treat_1000.csv"
    rows = relation_rows("may_treat")
    write_csv(path, rows + [rows[1]])
    message = build_error(release, tmp_path, ["full"])
    assert "may_treat_1000.csv" in message and "row 4 is a duplicate of row 2" in message


def test_rows_with_the_same_head_cui_but_another_head_name_are_distinct(release, tmp_path):
    # the real release has 21 head CUIs twice with different head names: not duplicates
    path = release / "2021AA" / "may_treat_1000.csv"
    rows = relation_rows("may_treat")
    rows[2] = release_row("may_treat", ROWS[0][0], "Alphazine hydrochloride", ROWS[2][2])
    write_csv(path, rows)
    report = build("medlama", tmp_path / "hub", data_dir=str(release), configs=["full"], params=BUILD_PARAMS)
    assert report.rows["full"]["test"] == 19 * 3


def test_file_with_a_missing_row_names_file_and_counts(release, tmp_path):
    path = release / "2021AA" / "occurs_after_1000.csv"
    write_csv(path, relation_rows("occurs_after")[:2])
    message = build_error(release, tmp_path, ["full"])
    assert f"{path}: 2 rows, expected 3" in message


def test_file_cut_mid_row_names_file_row_and_line(release, tmp_path):
    path = release / "2021AA" / "occurs_after_1000.csv"
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: text.rindex(",0.0,0.0")], encoding="utf-8")  # the last row loses two fields
    message = build_error(release, tmp_path, ["full"])
    assert f"{path}, row 3 (line 4): 9 field(s), expected 11" in message and "truncated" in message


def test_any_count_with_rows_per_relation_0_still_refuses_duplicates(release, tmp_path):
    rows = relation_rows("may_treat")
    write_csv(release / "2021AA" / "may_treat_1000.csv", rows[:2])
    report = build("medlama", tmp_path / "hub", data_dir=str(release), configs=["full"], params={"rows_per_relation": 0})
    assert report.rows["full"]["test"] == 19 * 3 - 1
    write_csv(release / "2021AA" / "may_treat_1000.csv", rows + rows[:1])
    message = build_error(release, tmp_path, ["full"], params={"rows_per_relation": 0})
    assert "row 4 is a duplicate of row 1" in message


@pytest.mark.parametrize("value", [-1, "many", True, 2.5])
def test_rows_per_relation_must_be_a_whole_number(release, tmp_path, value):
    message = build_error(release, tmp_path, ["full"], params={"rows_per_relation": value})
    assert "rows_per_relation must be a whole number >= 0" in message and repr(value) in message


def test_unknown_parameter_is_named(release, tmp_path):
    message = build_error(release, tmp_path, ["full"], params={"rows_per_relations": 3})
    assert "unknown parameter(s) rows_per_relations" in message and "known: rows_per_relation" in message


def test_duplicated_hard_row_says_duplicate_not_absent(release, tmp_path):
    path = hard_file(release, "may_treat")
    hard_rows = [row for row, spec in zip(relation_rows("may_treat"), ROWS) if spec[3]]
    write_csv(path, hard_rows + hard_rows[:1])
    message = build_error(release, tmp_path, ["hard"])
    assert f"{path}: 1 duplicate row(s)" in message and "row 3 is a duplicate of row 1" in message
    assert "absent" not in message


def test_two_hard_files_for_one_relation_are_both_named(release, tmp_path):
    first = hard_file(release, "may_treat")
    second = release / "2021AA" / "may_treat_977_hard.csv"
    shutil.copy(first, second)
    message = build_error(release, tmp_path, ["hard"])
    assert "more than one hard file" in message and str(first) in message and str(second) in message
    assert "missing" not in message


@pytest.mark.parametrize("config", ["full", "hard"])
def test_header_only_full_file_is_blamed(release, tmp_path, config):
    path = release / "2021AA" / "may_treat_1000.csv"
    write_csv(path, [])
    message = build_error(release, tmp_path, [config])
    assert message.startswith(f"{path} has a header but no data rows")


def test_empty_full_file_is_blamed(release, tmp_path):
    path = release / "2021AA" / "may_treat_1000.csv"
    path.write_bytes(b"")
    message = build_error(release, tmp_path, ["full"])
    assert message.startswith(f"{path} is empty")


def test_missing_data_dir_says_it_does_not_exist(tmp_path):
    message = build_error(tmp_path / "nowhere", tmp_path, ["full"])
    assert message.startswith(f"--data-dir {tmp_path / 'nowhere'} does not exist") and "_1000.csv" not in message


def test_data_dir_that_is_a_file_says_so(release, tmp_path):
    message = build_error(release / "prompts.csv", tmp_path, ["full"])
    assert message.startswith(f"{release / 'prompts.csv'} is not a folder")


def test_cell_over_the_csv_field_limit_names_file_and_line(release, tmp_path):
    import csv

    path = release / "2021AA" / "may_prevent_1000.csv"
    rows = relation_rows("may_prevent")
    rows[1]["head_name"] = "x" * (csv.field_size_limit() + 1)
    write_csv(path, rows)
    message = build_error(release, tmp_path, ["full"])
    assert f"{path}, line 3: a cell is longer than the csv module's limit" in message


def break_duplicate_row(release):
    rows = relation_rows("may_treat")
    write_csv(release / "2021AA" / "may_treat_1000.csv", rows + rows[:1])


def break_two_hard_files(release):
    shutil.copy(hard_file(release, "may_treat"), release / "2021AA" / "may_treat_977_hard.csv")


def break_header_only(release):
    write_csv(release / "2021AA" / "may_treat_1000.csv", [])


def break_huge_cell(release):
    import csv

    rows = relation_rows("may_treat")
    rows[0]["head_name"] = "x" * (csv.field_size_limit() + 1)
    write_csv(release / "2021AA" / "may_treat_1000.csv", rows)


def break_cut_row(release):
    path = release / "2021AA" / "may_treat_1000.csv"
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: text.rindex(",0.0,0.0")], encoding="utf-8")


@pytest.mark.parametrize(
    "breakage, words",
    [
        (break_duplicate_row, "row 4 is a duplicate of row 1"),
        (break_two_hard_files, "more than one hard file"),
        (break_header_only, "has a header but no data rows"),
        (break_huge_cell, "longer than the csv module's limit"),
        (break_cut_row, "9 field(s), expected 11"),
    ],
)
def test_cli_prints_each_release_error_as_one_line(release, tmp_path, capsys, breakage, words):
    breakage(release)
    code = main(["build", "medlama", "--data-dir", str(release), "--out", str(tmp_path / "hub"), "--config", "hard", *CLI_PARAMS])
    err = capsys.readouterr().err  # progress bars of datasets come first
    assert code == 2 and "medprobe: error: " in err and "Traceback" not in err
    message = err[err.index("medprobe: error: ") :]
    assert words in message and message.count("\n") == 1 and message.endswith("\n")


def test_card_states_a_relaxed_row_check(release, tmp_path):
    build("medlama", tmp_path / "hub", data_dir=str(release), configs=["full"], params=BUILD_PARAMS)
    card = (tmp_path / "hub" / "README.md").read_text(encoding="utf-8")
    assert "relaxed with `rows_per_relation=3`: every full file held exactly 3 distinct rows" in card
    assert "not the official MedLAMA release" in card and "--set rows_per_relation=3" in card


def test_row_check_notes():
    assert medlama.card.row_check_note(1000).startswith("every full release file held exactly 1,000 distinct rows")
    assert "any number of distinct rows" in medlama.card.row_check_note(0)
