"""Bad input to the DisKnE build: every error names the file (and row) and says what to do.

A hand-written annotation file of three pairs keeps these builds small; no shared data needed.
"""

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from datasets import load_dataset

from medprobe.building.build import build
from medprobe.cli import main
from medprobe.resources import load_builder_module
from synthetic_disknE import GROUND_TRUTH, NLI_FILES, write_data_dir

COLUMNS = ["pair_id", "CUI", "label", "category", "original_cui", "start_index", "end_index"]
ROWS = [
    ["pair-1", "C0000001", "entailment", "symptoms_diseases", "C0000001", "10", "17"],
    ["pair-1,ng", "C0000002", "non-entailment", "symptoms_diseases", "C0000001", "", ""],
    ["pair-2", "C0000002", "entailment", "tests_diseases", "C0000002", "0", "5"],
    ["pair-2,ng", "C0000003", "non-entailment", "tests_diseases", "C0000002", "", ""],
    ["pair-3", "C0000003", "entailment", "tests_diseases", "C0000003", "4", "20"],
    ["pair-3,ng", "C0000001", "non-entailment", "tests_diseases", "C0000003", "", ""],
]
ANNOTATION = "DisknE_medical_similar_annotation.csv"


def write_annotation(path, rows=ROWS):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(rows)
    return path


def data_dir(tmp_path, rows=ROWS, **options):
    """A complete data_dir for the three-pair annotation file."""
    root = tmp_path / "data"
    annotation = write_annotation(root / "annotation_files" / ANNOTATION, rows)
    write_data_dir(root, [annotation], link_annotations=False, **options)
    return root


def build_medical_similar(tmp_path, root, **params):
    return build("disknE", tmp_path / "hub", data_dir=str(root), configs=["medical_similar"], params=params)


def test_a_good_small_build(tmp_path):
    report = build_medical_similar(tmp_path, data_dir(tmp_path))
    assert report.rows == {"medical_similar": {"test": 6}}
    ds = load_dataset(str(tmp_path / "hub"), "medical_similar", split="test")
    assert ds["label"] == [1, 0, 1, 0, 1, 0] and ds["pair_id"][1] == "pair-1"


def test_missing_files_are_listed_together_with_where_to_get_them(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code = main(
        ["build", "disknE", "--data-dir", str(tmp_path / "empty"), "--out", str(tmp_path / "hub"), "--config", "medical_similar"]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("medprobe: error:") and "Traceback" not in err
    for name in [*NLI_FILES.values(), GROUND_TRUTH, "umls_names.tsv or MRCONSO.RRF"]:
        assert name in err
    assert "lacks 6 of them" in err and "nothing of MedNLI is bundled or downloaded" in err
    assert "https://physionet.org/content/mednli/1.0.0/" in err and "https://physionet.org/content/mednli-bionlp19/1.0.1/" in err
    assert "nlm.nih.gov" in err and "medprobe umls-names" in err and "Expected layout" in err and "DATA_DIR/" in err


def test_no_data_dir_at_all(tmp_path):
    with pytest.raises(FileNotFoundError, match="No data_dir was given"):
        build("disknE", tmp_path / "hub", configs=["medical_similar"])


def test_misnamed_file_gets_a_rename_hint(tmp_path):
    root = data_dir(tmp_path)
    (root / "mednli" / "mli_train_v1.jsonl").rename(root / "mednli" / "MLI_train_v1.json")
    with pytest.raises(FileNotFoundError) as caught:
        build_medical_similar(tmp_path, root)
    message = str(caught.value)
    assert "lacks 1 of them" in message
    assert "MLI_train_v1.json: rename it to mli_train_v1.jsonl" in message


def test_missing_pairs_are_counted_reported_and_fail_past_the_limit(tmp_path):
    root = data_dir(tmp_path, drop_pairs=1)  # pair-1 is absent from the MedNLI files
    report = build_medical_similar(tmp_path, root)
    assert report.rows["medical_similar"]["test"] == 4
    assert "4 of the 4,133 annotation rows" in (tmp_path / "hub" / "README.md").read_text()
    with pytest.raises(
        ValueError,
        match=r"DisknE_medical_similar_annotation.csv: 1 pair id\(s\) are in no MedNLI .* pair-1 \(row 1\).*max_missing_pairs",
    ):
        build_medical_similar(tmp_path, root, max_missing_pairs=0)


def test_offsets_outside_the_hypothesis(tmp_path):
    root = data_dir(tmp_path)
    rows = [list(r) for r in ROWS]
    rows[4][6] = "500"
    write_annotation(root / "annotation_files" / ANNOTATION, rows)
    with pytest.raises(
        ValueError, match=r"annotation.csv, row 5 \(pair pair-3\): offsets 4..500 do not fall inside the hypothesis"
    ):
        build_medical_similar(tmp_path, root)


def test_unknown_cui_in_umls(tmp_path):
    root = data_dir(tmp_path)
    mrconso = root / "META" / "MRCONSO.RRF"
    mrconso.write_text("".join(line for line in mrconso.read_text().splitlines(True) if not line.startswith("C0000003")))
    with pytest.raises(ValueError, match=r"annotation.csv: 1 CUI\(s\) have no English name in .*MRCONSO.RRF: C0000003 \(row 4\)"):
        build_medical_similar(tmp_path, root)


@pytest.mark.parametrize(
    ("row", "column", "value", "message"),
    [
        (2, 2, "contradiction", r"row 2, column label: expected entailment or non-entailment"),
        (3, 1, "0018802", r"row 3, column CUI: expected a UMLS CUI"),
        (3, 1, "\u200b", r"row 3, column CUI: '\\u200b' is empty once white space and invisible format characters"),
        (4, 4, " \u00a0", r"row 4, column original_cui: ' \\xa0' is empty once white space"),
        (1, 3, "signs", r"row 1, column category: expected one of symptoms_diseases"),
        (1, 5, "x", r"row 1, column start_index: expected a character offset"),
        (1, 0, "pair-1,ng", r"row 1: pair_id 'pair-1,ng' and label entailment disagree"),
    ],
)
def test_malformed_annotation_rows(tmp_path, row, column, value, message):
    root = data_dir(tmp_path)
    rows = [list(r) for r in ROWS]
    rows[row - 1][column] = value
    write_annotation(root / "annotation_files" / ANNOTATION, rows)
    with pytest.raises(ValueError, match=message):
        build_medical_similar(tmp_path, root)


def test_cuis_and_umls_names_are_normalised_as_disease_f1_normalises_ids(tmp_path):
    """Measured before (issue 37): "C0000002\u200b" (a zero-width space, as a copy from a web page leaves) was refused
    as no CUI, and a name with one was a disease name of its own; now both are the disease that prints alike."""
    root = data_dir(tmp_path)
    rows = [list(r) for r in ROWS]
    rows[1][1] = "C0000002\u200b "  # pair-1's negative names C0000002
    rows[2][1], rows[2][4] = "\ufeffC0000002", "C0000002\u00a0"
    write_annotation(root / "annotation_files" / ANNOTATION, rows)
    mrconso = root / "META" / "MRCONSO.RRF"
    mrconso.write_text(
        mrconso.read_text(encoding="utf-8").replace("|Ibuxxcz weyys Disease|", "| Ibuxxcz\u200b  weyys\tDisease |")
    )
    build_medical_similar(tmp_path, root)
    ds = load_dataset(str(tmp_path / "hub"), "medical_similar", split="test")
    assert ds["disease_cui"][1:3] == ["C0000002", "C0000002"] and ds["target_cui"][2] == "C0000002"
    assert ds["hypothesis"][1] == "ibuxxcz weyys disease"  # the negative's name: the SNOMED CT term, normalised


@pytest.mark.parametrize("name", ["\u200b", "  ", "\u2060\u00a0"])
def test_a_umls_name_empty_once_normalised_is_refused_naming_the_line(tmp_path, name):
    root = data_dir(tmp_path)
    mrconso = root / "META" / "MRCONSO.RRF"
    lines = mrconso.read_text(encoding="utf-8").splitlines(True)
    number = next(n for n, line in enumerate(lines, start=1) if "|Ibuxxcz weyys Disease|" in line)
    mrconso.write_text("".join(lines).replace("|Ibuxxcz weyys Disease|", f"|{name}|"), encoding="utf-8")
    message = f"MRCONSO.RRF, line {number}: the name of C0000002 is {name!r}, empty once white space and invisible"
    with pytest.raises(ValueError, match=re.escape(message)):
        build_medical_similar(tmp_path, root)


def test_malformed_jsonl_and_tsv(tmp_path):
    root = data_dir(tmp_path)
    with open(root / "mednli" / "mli_dev_v1.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"sentence1": "x", "pairID": "p9"}) + "\n")
    with pytest.raises(ValueError, match=r"mli_dev_v1.jsonl, line \d+: missing key\(s\) sentence2"):
        build_medical_similar(tmp_path, root)
    (root / "mednli" / "mli_dev_v1.jsonl").write_text("{not json\n")
    with pytest.raises(ValueError, match=r"mli_dev_v1.jsonl, line 1: not a JSON object"):
        build_medical_similar(tmp_path, root)

    root = data_dir(tmp_path / "tsv")
    (root / "umls_names.tsv").write_text("CUI\tNAME\nC0000001\tfoo\n")
    with pytest.raises(ValueError, match=r"umls_names.tsv, line 1: expected the header CUI SAB TTY"):
        build_medical_similar(tmp_path, root)


def test_two_copies_of_a_file_are_an_error(tmp_path):
    root = data_dir(tmp_path)
    (root / "copy").mkdir()
    shutil.copy(root / "mednli" / "mli_test_v1.jsonl", root / "copy" / "mli_test_v1.jsonl")
    with pytest.raises(ValueError, match="several files with the same name"):
        build_medical_similar(tmp_path, root)


def test_annotation_files_are_downloaded_at_the_pinned_commit_when_absent(tmp_path, capsys):
    # offline here: the download is attempted at the pinned URL and fails with what to do instead
    root = tmp_path / "data"
    annotation = write_annotation(tmp_path / "elsewhere" / ANNOTATION)
    write_data_dir(root, [annotation], link_annotations=False)
    with pytest.raises(
        ConnectionError, match=r"raw.githubusercontent.com/israa-alghanmi/DisKnE/11bbdb97b0c4.*put it in the data_dir"
    ):
        build_medical_similar(tmp_path, root)
    code = main(["umls-names", str(root / "META" / "MRCONSO.RRF"), "--out", str(tmp_path / "names.tsv")])
    assert code == 2 and "--cuis-from" in capsys.readouterr().err


def test_umls_names_errors(tmp_path, capsys):
    assert main(["umls-names", str(tmp_path / "MRCONSO.RRF"), "--cuis-from", str(tmp_path)]) == 2
    assert "META/MRCONSO.RRF" in capsys.readouterr().err
    (tmp_path / "MRCONSO.RRF").write_text("C0000001|ENG|P\n")
    assert main(["umls-names", str(tmp_path / "MRCONSO.RRF"), "--cuis-from", str(tmp_path / "none.csv")]) == 2
    assert f"--cuis-from {tmp_path / 'none.csv'} does not exist" in capsys.readouterr().err
    annotation = write_annotation(tmp_path / "ann" / ANNOTATION)
    assert main(["umls-names", str(tmp_path / "MRCONSO.RRF"), "--cuis-from", str(annotation), "--no-progress"]) == 2
    assert "MRCONSO.RRF, line 1: expected 18 '|'-separated MRCONSO fields" in capsys.readouterr().err


def test_umls_names_out_that_is_a_folder_fails_before_mrconso_is_read(tmp_path, capsys, monkeypatch):
    (tmp_path / "MRCONSO.RRF").write_text("C0000001|ENG|P\n")
    annotation = write_annotation(tmp_path / "ann" / ANNOTATION)
    disknE = load_builder_module("disknE")
    monkeypatch.setattr(disknE, "read_mrconso", lambda *a, **k: pytest.fail("MRCONSO.RRF was read"))
    (tmp_path / "out").mkdir()
    code = main(["umls-names", str(tmp_path / "MRCONSO.RRF"), "--cuis-from", str(annotation), "--out", str(tmp_path / "out")])
    assert code == 2 and "--out" in capsys.readouterr().err


def test_umls_names_failed_write_keeps_the_previous_tsv(tmp_path, monkeypatch, capsys):
    (tmp_path / "MRCONSO.RRF").write_text("C0000001|ENG|P\n")
    annotation = write_annotation(tmp_path / "ann" / ANNOTATION)
    disknE = load_builder_module("disknE")
    monkeypatch.setattr(disknE, "read_mrconso", lambda *a, **k: {})

    def half_written(names, path):
        Path(path).write_text("CUI\tSAB\n")  # then the disk fills up
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(disknE, "write_names_tsv", half_written)
    out = tmp_path / "names.tsv"
    out.write_text("the previous extraction\n")
    assert main(["umls-names", str(tmp_path / "MRCONSO.RRF"), "--cuis-from", str(annotation), "--out", str(out)]) == 2
    assert f"cannot write the output {out}: no space left on the device" in capsys.readouterr().err  # one line, not a traceback
    assert out.read_text() == "the previous extraction\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".names")] == []
