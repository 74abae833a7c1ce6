"""Reading the official MedLAMA release: its files, where they are, and the checks on them.

The release is `prompts.csv` and, per relation, `2021AA/{relation}_1000.csv` (the full rows) and
`2021AA/{relation}_{N}_hard.csv` (the hard rows), at the pinned commit RELEASE_COMMIT: downloaded
through the download manager, or found in the user's `data_dir`. Every reader names the file,
row and column of what it refuses. The hard rows are derived from the full rows (hardness.py).
"""

from __future__ import annotations

import ast
import csv
import socket
from pathlib import Path
from urllib.parse import urlparse

import datasets

RELEASE_COMMIT = "8a314d11c3b8538a7ec522f668b7fbe0394caa9d"
RELEASE_URL = f"https://raw.githubusercontent.com/cambridgeltl/medlama/{RELEASE_COMMIT}/data/medlama"
RELEASE_TREE = f"https://github.com/cambridgeltl/medlama/tree/{RELEASE_COMMIT}/data/medlama"

# The release's rewiring corpora, the raw sentences Contrastive-Probe rewires an encoder on, in its
# data/elicit_corpora/: ten PubMed files of 10,000 sentences each (the paper's figures are the mean over
# these ten) and one Wikipedia file (for general-domain BERT). medprobe.contrastive.corpora reads this
# declaration through the registry (the benchmark's builder module), so that `--rewire-corpus NAME`
# finds, downloads and caches them with no benchmark named in its code.
REWIRING_CORPORA = {
    "release": "MedLAMA release",  # the release in words, for messages
    "commit": RELEASE_COMMIT,  # downloaded at this commit (and cached under it)
    "url": f"https://raw.githubusercontent.com/cambridgeltl/medlama/{RELEASE_COMMIT}/data/elicit_corpora",
    "folder": "elicit_corpora",  # the folder of a release copy that holds them
    "names": tuple(f"pubmed_sents_no_punkt_10k_{i}" for i in range(10)) + ("wiki_sents_no_punkt_10k.txt",),
}

# The 19 relations and the size of each released hard file (the N in {relation}_{N}_hard.csv).
HARD_SIZES = {
    "associated_morphology_of": 158,
    "disease_has_abnormal_cell": 778,
    "disease_has_associated_anatomic_site": 726,
    "disease_has_normal_cell_origin": 812,
    "disease_has_normal_tissue_origin": 842,
    "disease_mapped_to_gene": 984,
    "disease_may_have_associated_disease": 842,
    "disease_may_have_finding": 952,
    "disease_may_have_molecular_abnormality": 989,
    "gene_associated_with_disease": 997,
    "gene_encodes_gene_product": 821,
    "gene_product_encoded_by_gene": 649,
    "gene_product_has_associated_anatomy": 956,
    "gene_product_has_biochemical_function": 491,
    "gene_product_plays_role_in_biological_process": 888,
    "has_physiologic_effect": 983,
    "may_prevent": 861,
    "may_treat": 977,
    "occurs_after": 623,
}
RELATIONS = tuple(HARD_SIZES)
FULL_SIZE = 1000
RELEASE_COLUMNS = (
    "head_cui",
    "head_name",
    "rel",
    "tail_cuis_list",
    "tail_names_list",
    "tail_names",
    "tail_cuis",
    "tail_cuis_len",
    "tail_names_len",
    "avg_match",
    "avg_rouge_l",
)
PROMPT_COLUMNS = ("pid", "human_prompt")
NAME_SEPARATOR = " || "


class MedlamaFormatError(ValueError):
    """A release file does not have the expected layout; the message names file, row and column."""


def read_csv(path: str, required: tuple[str, ...]) -> list[dict[str, str]]:
    """The data rows of a release CSV as dicts; every row must have the header's number of fields.

    A row with fewer or more fields than the header is a truncated file or an unbalanced quote,
    not data: it stops the read, named by its row (data rows count from 1) and its file line.
    """
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle)
            try:
                return _checked_rows(path, reader, required)
            except csv.Error as err:
                raise MedlamaFormatError(_csv_error_message(path, reader.line_num, err)) from err
    except UnicodeDecodeError as err:
        raise MedlamaFormatError(f"{path}: not valid UTF-8 ({err}); the release files are UTF-8") from err


def _checked_rows(path: str, reader, required: tuple[str, ...]) -> list[dict[str, str]]:
    """Header and rows from a `csv.reader` (whose `line_num` the messages quote)."""
    header = next(reader, None)
    if header is None:
        raise MedlamaFormatError(f"{path} is empty; expected a header line with the release columns {', '.join(required)}")
    missing = [c for c in required if c not in header]
    if missing:
        raise MedlamaFormatError(
            f"{path}: missing column(s) {', '.join(missing)}; expected the release "
            f"columns {', '.join(required)} (found {', '.join(header)})"
        )
    rows = []
    for cells in reader:
        if not cells:  # a blank line holds no row (csv.DictReader skipped them too)
            continue
        if len(cells) != len(header):
            raise MedlamaFormatError(
                f"{path}, row {len(rows) + 1} (line {reader.line_num}): {len(cells)} field(s), expected "
                f"{len(header)} as in the header; the file is truncated or a quote is unbalanced"
            )
        rows.append(dict(zip(header, cells)))
    return rows


def _csv_error_message(path: str, line: int, err: csv.Error) -> str:
    if "field larger than field limit" in str(err):
        return (
            f"{path}, line {line}: a cell is longer than the csv module's limit of "
            f"{csv.field_size_limit():,} characters; no release cell is near that long, so the file "
            f"is corrupt or not a MedLAMA release file (often an unclosed quote swallowing later lines)"
        )
    return f"{path}, line {line}: not readable as CSV ({err})"


def _string_list(path: str, row_number: int, column: str, value: str) -> list[str]:
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError) as err:
        raise MedlamaFormatError(
            f"{path}, row {row_number}, column {column}: expected a Python list literal of "
            f"strings such as ['Fever', 'Cough'], got {value[:120]!r} ({err.__class__.__name__})"
        ) from err
    if not isinstance(parsed, list) or not parsed or not all(isinstance(x, str) for x in parsed):
        raise MedlamaFormatError(
            f"{path}, row {row_number}, column {column}: expected a non-empty list of strings, got {value[:120]!r}"
        )
    return parsed


def read_relation_rows(path: str, relation: str, rows_per_relation: int | None = FULL_SIZE) -> list[dict]:
    """Read one full release CSV and return checked rows with the answers de-duplicated in order.

    The file must hold `rows_per_relation` distinct rows (the release's 1,000; 0 or None: any
    number, for regenerated data). Row numbers in errors count data rows from 1 (the header is
    line 1 of the file).
    """
    rows = []
    for row_number, raw in enumerate(read_csv(path, RELEASE_COLUMNS), start=1):
        if raw["rel"] != relation:
            raise MedlamaFormatError(f"{path}, row {row_number}, column rel: expected {relation!r}, got {raw['rel']!r}")
        names_list = _string_list(path, row_number, "tail_names_list", raw["tail_names_list"])
        cuis_list = _string_list(path, row_number, "tail_cuis_list", raw["tail_cuis_list"])
        if len(names_list) != len(cuis_list):
            raise MedlamaFormatError(
                f"{path}, row {row_number}: tail_names_list has {len(names_list)} names but "
                f"tail_cuis_list has {len(cuis_list)} CUIs; expected one CUI per name"
            )
        answers = list(dict.fromkeys(raw["tail_names"].split(NAME_SEPARATOR)))
        answer_cuis = raw["tail_cuis"].split(NAME_SEPARATOR)
        if answers != list(dict.fromkeys(names_list)):
            raise MedlamaFormatError(
                f"{path}, row {row_number}: tail_names {raw['tail_names'][:120]!r} is not the "
                f"de-duplicated tail_names_list {names_list[:5]!r}"
            )
        if len(answer_cuis) != len(answers):
            raise MedlamaFormatError(
                f"{path}, row {row_number}: {len(answers)} answer names but {len(answer_cuis)} "
                f"CUIs in tail_cuis; expected one CUI per name"
            )
        rows.append({"raw": raw, "row_number": row_number, "answers": answers, "answer_cuis": answer_cuis})
    if not rows:
        raise MedlamaFormatError(f"{path} has a header but no data rows; expected {_expected_rows(rows_per_relation)}")
    check_distinct_rows(path, [row["raw"] for row in rows])
    if rows_per_relation and len(rows) != rows_per_relation:
        raise MedlamaFormatError(
            f"{path}: {len(rows):,} rows, expected {_expected_rows(rows_per_relation)}; the file is "
            f"truncated or has rows added. For regenerated data of another size, build with "
            f"--set rows_per_relation=N (0: any number)"
        )
    return rows


def _expected_rows(rows_per_relation: int | None) -> str:
    if not rows_per_relation:
        return "at least one row (rows_per_relation=0: any number)"
    if rows_per_relation == FULL_SIZE:
        return f"{FULL_SIZE:,} (the release's rows per relation)"
    return f"{rows_per_relation:,} (rows_per_relation; the release has {FULL_SIZE:,})"


def check_distinct_rows(path: str, raws: list[dict[str, str]]) -> None:
    """Stop if two rows of one relation file have the same release-column values.

    Whole rows, not head CUIs: 21 head CUIs of the release appear twice with different head
    names, and those rows are distinct queries.
    """
    first_row_of: dict[tuple[str, ...], int] = {}
    duplicates = []
    for row_number, raw in enumerate(raws, start=1):
        key = row_key(raw)
        if key in first_row_of:
            duplicates.append(f"row {row_number} is a duplicate of row {first_row_of[key]} (head_name={raw['head_name']!r})")
        else:
            first_row_of[key] = row_number
    if duplicates:
        shown = "; ".join(duplicates[:5]) + ("; ..." if len(duplicates) > 5 else "")
        raise MedlamaFormatError(
            f"{path}: {len(duplicates)} duplicate row(s) (every row of a relation file must be distinct): {shown}"
        )


def read_prompts(path: str) -> dict[str, str]:
    prompts = {}
    for row_number, row in enumerate(read_csv(path, PROMPT_COLUMNS), start=1):
        template = row["human_prompt"].strip()
        if row["pid"] in HARD_SIZES and ("[X]" not in template or "[Y]" not in template):
            raise MedlamaFormatError(
                f"{path}, row {row_number}: the human_prompt of {row['pid']!r} must contain [X] and [Y], got {template!r}"
            )
        prompts[row["pid"]] = template
    missing = [r for r in RELATIONS if r not in prompts]
    if missing:
        raise MedlamaFormatError(f"{path}: no prompt for relation(s) {', '.join(missing)}")
    return prompts


def read_default_prompts(path: str) -> dict[str, str]:
    """The release's other template of each relation (`default_prompt`), white space normalised
    (variants.normalised_template): the `variants` config asks every item with it too."""
    from .variants import normalised_template

    try:
        rows = read_csv(path, ("pid", "default_prompt"))
    except MedlamaFormatError as err:
        raise MedlamaFormatError(
            f"{err}; the `variants` config asks each query with the release's default prompt too "
            "(build --config full --config hard to leave it out)"
        ) from err
    prompts = {}
    for row_number, row in enumerate(rows, start=1):
        template = normalised_template(row["default_prompt"])
        if row["pid"] in HARD_SIZES and ("[X]" not in template or "[Y]" not in template):
            raise MedlamaFormatError(
                f"{path}, row {row_number}: the default_prompt of {row['pid']!r} must contain [X] and [Y], got {template!r}"
            )
        prompts[row["pid"]] = template
    missing = [r for r in RELATIONS if r not in prompts]
    if missing:
        raise MedlamaFormatError(f"{path}: no default_prompt for relation(s) {', '.join(missing)}")
    return prompts


def row_key(raw: dict[str, str]) -> tuple[str, ...]:
    return tuple(raw[c] for c in RELEASE_COLUMNS)


def local_release_files(data_dir: str, want_hard: bool) -> dict:
    """Map the release files in `data_dir`; name every missing file at once."""
    root = Path(data_dir)
    if not root.exists():
        raise FileNotFoundError(f"{root} does not exist; expected a folder with the MedLAMA release layout of {RELEASE_TREE}")
    if not root.is_dir():
        raise NotADirectoryError(f"{root} is not a folder; expected a folder with the MedLAMA release layout of {RELEASE_TREE}")
    files: dict = {"prompts": str(root / "prompts.csv"), "full": {}, "hard": {}}
    missing = [] if (root / "prompts.csv").is_file() else ["prompts.csv"]
    ambiguous = []
    for relation in RELATIONS:
        full = root / "2021AA" / f"{relation}_{FULL_SIZE}.csv"
        if full.is_file():
            files["full"][relation] = str(full)
        else:
            missing.append(f"2021AA/{full.name}")
        if want_hard:
            hard = sorted((root / "2021AA").glob(f"{relation}_*_hard.csv"))
            if len(hard) == 1:
                files["hard"][relation] = str(hard[0])
            elif hard:
                ambiguous.append(f"{relation}: {' and '.join(str(path) for path in hard)}")
            else:
                missing.append(f"2021AA/{relation}_{HARD_SIZES[relation]}_hard.csv")
    if missing:
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        inside = sorted(p.parent for p in root.glob("*/prompts.csv") if (p.parent / "2021AA").is_dir())
        fix = (
            f"use {inside[0]}, the release folder inside it"
            if inside
            else f"give the folder with prompts.csv and 2021AA/{{relation}}_1000.csv, as in {RELEASE_TREE}"
        )
        raise FileNotFoundError(f"{root} is missing {len(missing)} MedLAMA release file(s): {shown}\n{fix}")
    if ambiguous:
        raise MedlamaFormatError(
            "more than one hard file for a relation, keep exactly one {relation}_{N}_hard.csv each: " + "; ".join(ambiguous)
        )
    return files


def download_release(dl_manager: datasets.DownloadManager, want_hard: bool) -> dict:
    """The release files at the pinned commit, through the download manager (mapped like `local_release_files`)."""
    urls = {
        "prompts": f"{RELEASE_URL}/prompts.csv",
        "full": {r: f"{RELEASE_URL}/2021AA/{r}_{FULL_SIZE}.csv" for r in RELATIONS},
    }
    if want_hard:
        urls["hard"] = {r: f"{RELEASE_URL}/2021AA/{r}_{n}_hard.csv" for r, n in HARD_SIZES.items()}
    try:
        return dl_manager.download(urls)
    except Exception as err:  # offline, proxy, moved files: say what to do instead
        raise ConnectionError(
            f"could not download the MedLAMA release from {RELEASE_URL}: {download_problem(err, RELEASE_URL)}. "
            f"Download {RELEASE_TREE} yourself and pass its folder as data_dir (medprobe build medlama --data-dir DIR)"
        ) from err


def prompts_file(data_dir: str | None, dl_manager: datasets.DownloadManager) -> str:
    """prompts.csv alone, for a build from the user's UMLS release: from `data_dir` (the release
    folder) or downloaded at the pinned commit.

    It is not shipped with medprobe: the release repository carries no licence for it.
    """
    if data_dir:
        path = Path(data_dir) / "prompts.csv"
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} is missing: with --umls-dir, --data-dir names the folder that holds the release's "
                f"prompts.csv ({RELEASE_TREE}); leave --data-dir out to download it"
            )
        return str(path)
    try:
        return dl_manager.download(f"{RELEASE_URL}/prompts.csv")
    except Exception as err:  # offline, proxy, moved file: say what to do instead
        raise ConnectionError(
            f"could not download {RELEASE_URL}/prompts.csv: {download_problem(err, RELEASE_URL)}. Download it "
            f"yourself and pass its folder as --data-dir (the UMLS files still come from --umls-dir)"
        ) from err


def download_problem(err: BaseException, url: str) -> str:
    """Why a download failed, in words. datasets reports an unreachable host as a FileNotFoundError naming
    the URL, which reads as if the file were gone from the release. (Each builder is self-contained, so
    the other builders carry their own copy of this function.)"""
    host = urlparse(url).hostname or url
    if "offline" in f"{type(err).__name__} {err}".lower():
        return "offline mode is on (HF_DATASETS_OFFLINE or HF_HUB_OFFLINE is set)"
    try:
        socket.create_connection((host, 443), timeout=3).close()
    except OSError:
        return f"{host} cannot be reached from here (no network, or a proxy in the way)"
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return f"{host} answered, but not with the file ({lines[0] if lines else type(err).__name__})"
