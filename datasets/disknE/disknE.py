"""DisKnE: Disease Knowledge Evaluation, built from the user's MedNLI, MEDIQA-NLI and UMLS files.

Alghanmi, Espinosa-Anke, Schockaert, "Probing Pre-Trained Language Models for Disease
Knowledge", Findings of ACL 2021. Annotation files: github.com/israa-alghanmi/DisKnE.

Each row pairs a MedNLI premise with a disease name (the canonical hypothesis): positives
take the disease span of an entailed MedNLI hypothesis, negatives replace it with a similar
(or random) disease whose name is the SNOMED CT preferred term from UMLS. Four configs, one
per variant: `medical_similar` (default), `medical_random` (rows carry a `category`),
`terminological_similar`, `terminological_random`. One split, `test`: per-disease training
and test sets are derived from these rows (`medprobe.tasks.disknE_splits`).

The text is credentialed (MedNLI and MEDIQA-NLI from PhysioNet, names from the UMLS
Metathesaurus), so nothing is bundled or downloaded for it: `data_dir` must hold the user's
files (any folder depth, found by name). Only the public annotation files are downloaded
from the official repository at a pinned commit, unless they are in `data_dir` too.

Self-contained (the datasets library and the standard library), loaded by path by
`medprobe build disknE`; `medprobe umls-names` uses the UMLS readers and writer below.
"""

from __future__ import annotations

import csv
import difflib
import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import datasets
from datasets.utils import tqdm

logger = datasets.utils.logging.get_logger(__name__)

ANNOTATION_COMMIT = "11bbdb97b0c40b2406a1111b363346f1fa34ca1e"
ANNOTATION_URL = f"https://raw.githubusercontent.com/israa-alghanmi/DisKnE/{ANNOTATION_COMMIT}/annotation_files"
ANNOTATION_TREE = f"https://github.com/israa-alghanmi/DisKnE/tree/{ANNOTATION_COMMIT}/annotation_files"
VARIANTS = ("medical_similar", "medical_random", "terminological_similar", "terminological_random")
# Rows of each annotation file at the pinned commit (the built configs have as many).
ANNOTATION_ROWS = {"medical_similar": 4133, "medical_random": 4143, "terminological_similar": 2639, "terminological_random": 2629}
CATEGORIES = ("symptoms_diseases", "treatments_diseases", "tests_diseases", "procedure_diseases")
LABELS = ("non-entailment", "entailment")
NEGATIVE_SUFFIX = ",ng"
CUI_PATTERN = re.compile(r"C\d{7}")


def annotation_file_name(variant: str) -> str:
    return f"DisknE_{variant}_annotation.csv"


# The target diseases of the paper's experiments (the released evaluation code's lists). Only a
# target with at least 2 positive test rows is evaluated; rows of other diseases still train.
MEDICAL_TARGETS = tuple(
    """
C0010054 C0018802 C0948089 C0038454 C0020538 C0018799 C0027051 C0018801 C0042029 C0024115
C0023890 C0022661 C0020456 C0032285 C0027765 C0002871 C1145670 C0035078 C0034063 C0876973
C0024117 C0003507 C0018790 C0242966 C0155626 C0149871 C0035204 C0023895 C0022660 C0020473
C0017168 C0746731 C1561643 C0403447 C0275518 C0085096 C0041912 C0034065 C0022658 C0022116
C0018939 C0011334 C0008350 C0008311 C0007785 C0004364 C0003962 C0017178 C1410927 C1260873
C0878544 C0856747 C0746883 C0745136 C0742078 C0729552 C0585105 C0546817 C0458219 C0340643
C0340288 C0340285 C0272285 C0264733 C0264714 C0264490 C0263854 C0239946 C0206062 C0162871
C0162429 C0155668 C0151740 C0085605 C0085581 C0042373 C0041952 C0040997 C0040583 C0040558
C0037278 C0037199 C0032227 C0031350 C0031039 C0030469 C0030305 C0028754 C0027868 C0025517
C0023212 C0023211 C0022638 C0021390 C0020676 C0020443 C0020305 C0020258 C0019372 C0019064
C0017160 C0015544 C0014868 C0014335 C0014179 C0012569 C0011880 C0011860 C0011854 C0011175
C0011168 C0009319 C0008325 C0007286 C0007282 C0007193 C0007177 C0004623 C0004610 C0003869
C0003504 C0002965 C0002940 C0001175 C0004153
""".split()
)
TERMINOLOGICAL_TARGETS = tuple(
    """
C0001339 C0002871 C0002940 C0002965 C0003486 C0003504 C0003507 C0003864 C0004096 C0004364
C0004763 C0007194 C0007273 C0007282 C0007766 C0007787 C0008325 C0008350 C0009450 C0010054
C0010709 C0011168 C0011849 C0011854 C0011860 C0011880 C0012813 C0012819 C0013182 C0014009
C0014118 C0014544 C0015230 C0017152 C0017168 C0018099 C0018790 C0018799 C0018801 C0018802
C0019196 C0019348 C0020456 C0020538 C0020542 C0020676 C0021843 C0022104 C0022660 C0022661
C0023890 C0023895 C0024115 C0024117 C0024131 C0025517 C0026267 C0026269 C0027051 C0027765
C0030283 C0030305 C0030312 C0032227 C0032285 C0032290 C0032326 C0032371 C0034063 C0034155
C0035021 C0035078 C0035439 C0037199 C0037315 C0038449 C0038454 C0038833 C0040583 C0042029
C0042345 C0085615 C0149721 C0149801 C0149871 C0149931 C0150055 C0151517 C0152020 C0152025
C0155626 C0155909 C0162316 C0162871 C0235325 C0235329 C0235480 C0236073 C0242231 C0262655
C0333559 C0398623 C0403447 C0442874 C0457949 C0494475 C0520679 C0558382 C0565599 C0587044
C0679247 C0694549 C0742758 C0876973 C0949083 C1561643
""".split()
)


def variant_targets(variant: str) -> tuple[str, ...]:
    return MEDICAL_TARGETS if variant.startswith("medical") else TERMINOLOGICAL_TARGETS


# --- the user's credentialed files ----------------------------------------------------------------

MEDNLI_URL = "https://physionet.org/content/mednli/1.0.0/"
MEDIQA_NLI_URL = "https://physionet.org/content/mednli-bionlp19/1.0.1/"
UMLS_URL = "https://www.nlm.nih.gov/research/umls/licensedcontent/umlsknowledgesources.html"
# source name (the `source` field) -> file name, as distributed
NLI_FILES = {
    "mednli_train": "mli_train_v1.jsonl",
    "mednli_dev": "mli_dev_v1.jsonl",
    "mednli_test": "mli_test_v1.jsonl",
    "mediqa_nli_test": "mednli_bionlp19_shared_task.jsonl",
}
MEDIQA_GROUND_TRUTH = "mednli_bionlp19_shared_task_ground_truth.csv"
UMLS_NAMES_TSV = "umls_names.tsv"
MRCONSO = "MRCONSO.RRF"
WHERE_TO_GET = {
    **{name: f"MedNLI 1.0.0, credentialed PhysioNet access: {MEDNLI_URL}" for name in list(NLI_FILES.values())[:3]},
    NLI_FILES["mediqa_nli_test"]: f"MEDIQA-NLI 1.0.1 (MedNLI BioNLP 2019 shared task), PhysioNet: {MEDIQA_NLI_URL}",
    MEDIQA_GROUND_TRUTH: f"MEDIQA-NLI 1.0.1, PhysioNet: {MEDIQA_NLI_URL}",
    f"{UMLS_NAMES_TSV} or {MRCONSO}": (
        f"UMLS Metathesaurus (licence from the U.S. National Library of Medicine, {UMLS_URL}; the paper used "
        f"2020AA): META/{MRCONSO}, or the small {UMLS_NAMES_TSV} that "
        f"`medprobe umls-names META/{MRCONSO} --out {UMLS_NAMES_TSV}` extracts from it"
    ),
}
DATA_DIR_LAYOUT = f"""\
DATA_DIR/                 (files are found by name at any depth below DATA_DIR)
  {NLI_FILES["mednli_train"]}
  {NLI_FILES["mednli_dev"]}
  {NLI_FILES["mednli_test"]}
  {NLI_FILES["mediqa_nli_test"]}
  {MEDIQA_GROUND_TRUTH}
  {UMLS_NAMES_TSV}           (or {MRCONSO}; the TSV is read when both are there)
  DisknE_<variant>_annotation.csv   (optional: downloaded from {ANNOTATION_TREE} otherwise)"""


class DisknEInputError(ValueError):
    """An input file is malformed; the message names the file and row and says what was expected."""


class MissingSourceFilesError(FileNotFoundError):
    """Credentialed files are missing; the message lists all of them, where to get them and the layout."""


def index_files(root: Path) -> dict[str, list[Path]]:
    """Every file below `root` by name (sorted walk, so the result is deterministic).

    Linked folders are followed (a data_dir of links to the PhysioNet downloads is natural), each
    real folder once.
    """
    found: dict[str, list[Path]] = defaultdict(list)
    seen: set[str] = set()
    for folder, subfolders, files in os.walk(root, followlinks=True):
        seen.add(os.path.realpath(folder))
        subfolders[:] = sorted(d for d in subfolders if os.path.realpath(os.path.join(folder, d)) not in seen)
        for name in sorted(files):
            found[name].append(Path(folder) / name)
    return found


def misnamed_hint(expected: str, found: dict[str, list[Path]]) -> str:
    """' (found X: rename it to EXPECTED)' when a file with a close name (ignoring case) is there."""
    expected_names = {*NLI_FILES.values(), MEDIQA_GROUND_TRUTH, UMLS_NAMES_TSV, MRCONSO}
    lowered = {name.lower(): name for name in found if name not in expected_names}
    close = [lowered[n] for n in difflib.get_close_matches(expected.lower(), list(lowered), n=2, cutoff=0.8)]
    if not close:
        return ""
    where = ", ".join(str(found[n][0]) for n in close)
    return f" (found {where}: rename it to {expected} if it is that file)"


def locate_source_files(data_dir: str | None) -> dict[str, Path]:
    """The user's MedNLI, MEDIQA-NLI and UMLS files below `data_dir`; one error lists all missing ones."""
    root = Path(data_dir).expanduser() if data_dir else None
    found = index_files(root) if root is not None and root.is_dir() else {}
    files: dict[str, Path] = {}
    missing: list[str] = []
    duplicates: list[str] = []

    def take(key: str, name: str) -> bool:
        paths = found.get(name, [])
        if len(paths) > 1:
            duplicates.append(f"{name}: {', '.join(map(str, paths))}")
        if paths:
            files[key] = paths[0]
        return bool(paths)

    for key, name in {**NLI_FILES, "mediqa_ground_truth": MEDIQA_GROUND_TRUTH}.items():
        if not take(key, name):
            missing.append(f"  {name}{misnamed_hint(name, found)}\n      from {WHERE_TO_GET[name]}")
    if not take("umls", UMLS_NAMES_TSV) and not take("umls", MRCONSO):
        key = f"{UMLS_NAMES_TSV} or {MRCONSO}"
        hint = misnamed_hint(UMLS_NAMES_TSV, found) or misnamed_hint(MRCONSO, found)
        missing.append(f"  {key}{hint}\n      from {WHERE_TO_GET[key]}")
    if missing:
        if root is None:
            problem = "no data_dir was given"
        elif not root.is_dir():
            problem = f"data_dir {root} is not a folder"
        else:
            problem = f"{root} lacks {len(missing)} of them"
        raise MissingSourceFilesError(
            "DisKnE is built from credentialed files that only you can obtain; nothing of MedNLI is "
            f"bundled or downloaded by medprobe. {problem[0].upper() + problem[1:]}:\n"
            + "\n".join(missing)
            + f"\nExpected layout (medprobe build disknE --data-dir DATA_DIR ...):\n{DATA_DIR_LAYOUT}"
        )
    if duplicates:
        raise DisknEInputError(f"{root} holds several files with the same name; keep one of each:\n  " + "\n  ".join(duplicates))
    return files


# --- annotation files -------------------------------------------------------------------------------

ANNOTATION_COLUMNS = ("pair_id", "CUI", "label", "original_cui", "start_index", "end_index")


@dataclass(frozen=True)
class AnnotationRow:
    row: int  # data row number from 1 (the header is line 1 of the file, so row N is line N + 1)
    pair_id: str  # the MedNLI pairID, without the ",ng" of negatives
    label: int
    cui: str  # the disease in this row's hypothesis
    original_cui: str  # the disease of the original (positive) hypothesis: the target X
    category: str | None
    start: int | None  # inclusive character offsets of the disease in the hypothesis (positives)
    end: int | None


def _offset(path: str, row: int, column: str, value: str, positive: bool) -> int | None:
    if not positive:
        if value.strip():
            raise DisknEInputError(f"{path}, row {row}: a negative row has no offsets, got {column}={value!r}")
        return None
    try:
        return int(float(value))  # a file saved again by pandas writes offsets as floats ("12.0")
    except ValueError:
        raise DisknEInputError(f"{path}, row {row}, column {column}: expected a character offset, got {value!r}") from None


def read_annotation_file(path: str, variant: str) -> list[AnnotationRow]:
    """Read and check one annotation CSV; row numbers count data rows from 1."""
    medical = variant.startswith("medical")
    required = ANNOTATION_COLUMNS + (("category",) if medical else ())
    rows = []
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        absent = [c for c in required if c not in (reader.fieldnames or [])]
        if absent:
            raise DisknEInputError(f"{path}: missing column(s) {', '.join(absent)}; expected {', '.join(required)}")
        for row_number, raw in enumerate(reader, start=1):
            if raw["label"] not in LABELS:
                raise DisknEInputError(
                    f"{path}, row {row_number}, column label: expected entailment or non-entailment, got {raw['label']!r}"
                )
            positive = raw["label"] == "entailment"
            if raw["pair_id"].endswith(NEGATIVE_SUFFIX) == positive:
                raise DisknEInputError(
                    f"{path}, row {row_number}: pair_id {raw['pair_id']!r} and label {raw['label']} disagree "
                    f"(negative rows, and only they, end in {NEGATIVE_SUFFIX!r})"
                )
            for column in ("CUI", "original_cui"):
                if not CUI_PATTERN.fullmatch(raw[column]):
                    raise DisknEInputError(
                        f"{path}, row {row_number}, column {column}: expected a UMLS CUI such as C0018802, got {raw[column]!r}"
                    )
            if positive and raw["CUI"] != raw["original_cui"]:
                raise DisknEInputError(
                    f"{path}, row {row_number}: a positive row's CUI {raw['CUI']} differs from its "
                    f"original_cui {raw['original_cui']}"
                )
            category = raw.get("category") or None
            if medical and category not in CATEGORIES:
                raise DisknEInputError(
                    f"{path}, row {row_number}, column category: expected one of {', '.join(CATEGORIES)}, got {category!r}"
                )
            rows.append(
                AnnotationRow(
                    row=row_number,
                    pair_id=raw["pair_id"].removesuffix(NEGATIVE_SUFFIX),
                    label=LABELS.index(raw["label"]),
                    cui=raw["CUI"],
                    original_cui=raw["original_cui"],
                    category=category if medical else None,
                    start=_offset(path, row_number, "start_index", raw["start_index"], positive),
                    end=_offset(path, row_number, "end_index", raw["end_index"], positive),
                )
            )
    return rows


def annotation_cuis(paths: list[str]) -> set[str]:
    """Every CUI (CUI and original_cui columns) of the given annotation CSVs."""
    cuis: set[str] = set()
    for path in paths:
        with open(path, encoding="utf-8", newline="") as handle:
            for row_number, raw in enumerate(csv.DictReader(handle), start=1):
                for column in ("CUI", "original_cui"):
                    if column not in raw or not CUI_PATTERN.fullmatch(raw[column] or ""):
                        raise DisknEInputError(
                            f"{path}, row {row_number}: expected a UMLS CUI in column {column}, got {raw.get(column)!r}"
                        )
                    cuis.add(raw[column])
    return cuis


# --- MedNLI and MEDIQA-NLI ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NliPair:
    premise: str
    hypothesis: str
    gold_label: str | None
    source: str
    where: str  # "file, line N" for error messages


def read_nli_pairs(files: dict[str, Path]) -> dict[str, NliPair]:
    """All pairs of the MedNLI and MEDIQA-NLI JSONL files by pairID; MEDIQA labels from the ground truth."""
    truth = read_ground_truth(files["mediqa_ground_truth"])
    pairs: dict[str, NliPair] = {}
    for source in NLI_FILES:
        path = files[source]
        with open(path, encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                where = f"{path}, line {line_number}"
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as err:
                    raise DisknEInputError(f"{where}: not a JSON object ({err.msg}); expected one MedNLI pair per line") from None
                absent = [k for k in ("pairID", "sentence1", "sentence2") if not isinstance(record, dict) or k not in record]
                if absent:
                    raise DisknEInputError(
                        f"{where}: missing key(s) {', '.join(absent)}; expected MedNLI's pairID, sentence1, sentence2, gold_label"
                    )
                pair_id = str(record["pairID"])
                label = truth.get(pair_id) if source == "mediqa_nli_test" else record.get("gold_label")
                pair = NliPair(record["sentence1"], record["sentence2"], label or record.get("gold_label"), source, where)
                previous = pairs.setdefault(pair_id, pair)
                if previous is not pair and (previous.premise, previous.hypothesis) != (pair.premise, pair.hypothesis):
                    raise DisknEInputError(f"pairID {pair_id} has different texts in {previous.where} and {where}")
    return pairs


def read_ground_truth(path: Path) -> dict[str, str]:
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        if not {"pair_id", "label"} <= set(reader.fieldnames or []):
            raise DisknEInputError(f"{path}: expected the columns pair_id,label, found {', '.join(reader.fieldnames or [])}")
        return {row["pair_id"]: row["label"] for row in reader}


# --- UMLS names ---------------------------------------------------------------------------------------

# MRCONSO.RRF columns (UMLS reference manual, section 3.3.4): the ones kept, by position.
MRCONSO_FIELDS = {"CUI": 0, "LAT": 1, "TS": 2, "STT": 4, "ISPREF": 6, "SCUI": 9, "SAB": 11, "TTY": 12, "STR": 14, "SUPPRESS": 16}
MRCONSO_FIELD_COUNT = 18
TSV_COLUMNS = ("CUI", "SAB", "TTY", "SCUI", "PREFERRED", "SUPPRESS", "STR")


@dataclass(frozen=True, order=True)
class UmlsName:
    cui: str
    sab: str  # source vocabulary, e.g. SNOMEDCT_US
    tty: str  # term type in the source, e.g. PT (preferred term), SY (synonym)
    scui: str  # the source's concept id (a SNOMED CT concept id for SNOMEDCT_US)
    preferred: bool  # the concept's UMLS preferred English name (TS=P, STT=PF, ISPREF=Y)
    suppress: str  # MRCONSO SUPPRESS: N = not suppressible; O, E, Y = obsolete or suppressible
    name: str


def read_mrconso(path: str | Path, cuis: set[str], progress: bool = True) -> dict[str, list[UmlsName]]:
    """The English names of `cuis` from MRCONSO.RRF, streamed (the file is several GB)."""
    wanted = {cui.encode() for cui in cuis}
    names: dict[str, list[UmlsName]] = defaultdict(list)
    size = os.path.getsize(path)
    with (
        open(path, "rb") as handle,
        tqdm(total=size, unit="B", unit_scale=True, desc=f"reading {Path(path).name}", disable=not progress) as bar,
    ):
        pending = 0
        for line_number, raw in enumerate(handle, start=1):
            pending += len(raw)
            if pending > 1 << 24:
                bar.update(pending)
                pending = 0
            if raw[: raw.find(b"|")] not in wanted:
                continue
            fields = raw.decode("utf-8").rstrip("\r\n").split("|")
            if len(fields) < MRCONSO_FIELD_COUNT:
                raise DisknEInputError(
                    f"{path}, line {line_number}: expected {MRCONSO_FIELD_COUNT} '|'-separated MRCONSO fields, got {len(fields)}"
                )
            f = {key: fields[i] for key, i in MRCONSO_FIELDS.items()}
            if f["LAT"] != "ENG":
                continue
            preferred = f["TS"] == "P" and f["STT"] == "PF" and f["ISPREF"] == "Y"
            names[f["CUI"]].append(UmlsName(f["CUI"], f["SAB"], f["TTY"], f["SCUI"], preferred, f["SUPPRESS"], f["STR"]))
        bar.update(pending)
    return {cui: sorted(found) for cui, found in names.items()}


def read_names_tsv(path: str | Path, cuis: set[str] | None = None) -> dict[str, list[UmlsName]]:
    """The TSV written by `write_names_tsv` (`medprobe umls-names`)."""
    names: dict[str, list[UmlsName]] = defaultdict(list)
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().rstrip("\r\n").split("\t")
        if tuple(header) != TSV_COLUMNS:
            raise DisknEInputError(
                f"{path}, line 1: expected the header {' '.join(TSV_COLUMNS)} (tab-separated, as written by "
                f"`medprobe umls-names`), got {' '.join(header)!r}"
            )
        for line_number, line in enumerate(handle, start=2):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != len(TSV_COLUMNS) or not CUI_PATTERN.fullmatch(fields[0]) or fields[4] not in ("Y", "N"):
                raise DisknEInputError(
                    f"{path}, line {line_number}: expected {len(TSV_COLUMNS)} tab-separated fields "
                    f"{', '.join(TSV_COLUMNS)}, got {line.strip()[:120]!r}"
                )
            cui, sab, tty, scui, preferred, suppress, name = fields
            if cuis is None or cui in cuis:
                names[cui].append(UmlsName(cui, sab, tty, scui, preferred == "Y", suppress, name))
    return {cui: sorted(found) for cui, found in names.items()}


def write_names_tsv(names: dict[str, list[UmlsName]], path: str | Path) -> int:
    """Write the names as a TSV (sorted, so the same names give the same bytes); returns the rows written."""
    rows = sorted(n for found in names.values() for n in found)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write("\t".join(TSV_COLUMNS) + "\n")
        for n in rows:
            name = " ".join(n.name.split())  # no tab or newline can reach the TSV
            handle.write("\t".join((n.cui, n.sab, n.tty, n.scui, "Y" if n.preferred else "N", n.suppress, name)) + "\n")
    return len(rows)


def _scui_order(scui: str) -> tuple[int, str]:
    return (int(scui), scui) if scui.isdigit() else (1 << 62, scui)


def display_name(names: list[UmlsName]) -> tuple[str, bool]:
    """(lower-cased name of a concept, whether it is its SNOMED CT preferred term).

    The current (not suppressed) SNOMED CT US preferred term (TTY PT; the lowest SNOMED id when
    the concept maps to several), as the paper's negatives used; a concept without one falls back
    to its UMLS preferred English name.
    """
    snomed = [n for n in names if n.sab == "SNOMEDCT_US" and n.tty == "PT" and n.suppress == "N"]
    if snomed:
        best = min(snomed, key=lambda n: (_scui_order(n.scui), n.name))
        return best.name.lower(), True
    preferred = sorted(n.name for n in names if n.preferred) or sorted(n.name for n in names)
    return preferred[0].lower(), False


# --- mentions of diseases in premises ------------------------------------------------------------------

_TOKEN = re.compile(r"\w+|[^\w\s]")


def name_tokens(text: str) -> tuple[str, ...]:
    """Lower-cased words and single punctuation marks: names match as whole words, in any case."""
    return tuple(_TOKEN.findall(text.lower()))


class MentionIndex:
    """Finds which concepts a text mentions by any of their names, as whole words, ignoring case."""

    def __init__(self, names_by_cui: dict[str, set[str]]):
        self.cuis_by_tokens: dict[tuple[str, ...], set[str]] = defaultdict(set)
        for cui, names in names_by_cui.items():
            for name in names:
                tokens = name_tokens(name)
                if tokens:
                    self.cuis_by_tokens[tokens].add(cui)
        self.longest = max(map(len, self.cuis_by_tokens), default=0)

    def mentioned(self, text: str) -> list[str]:
        tokens = name_tokens(text)
        found: set[str] = set()
        for start in range(len(tokens)):
            for end in range(start + 1, min(start + self.longest, len(tokens)) + 1):
                found.update(self.cuis_by_tokens.get(tokens[start:end], ()))
        return sorted(found)


# --- the builder ----------------------------------------------------------------------------------------

FEATURES = datasets.Features(
    {
        "annotation_row": datasets.Value("int32"),
        "pair_id": datasets.Value("string"),
        "premise": datasets.Value("string"),
        "hypothesis": datasets.Value("string"),
        "full_hypothesis": datasets.Value("string"),
        "label": datasets.ClassLabel(names=list(LABELS)),
        "category": datasets.Value("string"),
        "target_cui": datasets.Value("string"),
        "target_name": datasets.Value("string"),
        "disease_cui": datasets.Value("string"),
        "mentioned_cuis": datasets.List(datasets.Value("string")),
        "in_target_list": datasets.Value("bool"),
        "source": datasets.Value("string"),
        "source_label": datasets.Value("string"),
    }
)

FIELD_DESCRIPTIONS = {
    "annotation_row": "the row of the annotation file (data rows counted from 1): a unique row id",
    "pair_id": "the MedNLI / MEDIQA-NLI pairID the premise comes from (without the `,ng` of negatives)",
    "premise": "MedNLI `sentence1` of the pair",
    "hypothesis": (
        "the canonical hypothesis: the disease name, lower-cased (positive: the span of the MedNLI hypothesis; "
        "negative: the SNOMED CT preferred term of `disease_cui`)"
    ),
    "full_hypothesis": "the MedNLI hypothesis sentence; a negative's has the disease span replaced by the negative name",
    "label": "1 = entailment (the premise supports the disease), 0 = non-entailment",
    "category": (
        "medical variants: symptoms_diseases, treatments_diseases, tests_diseases or procedure_diseases; "
        "empty for terminological ones"
    ),
    "target_cui": "the disease X this row tests (the annotation's `original_cui`); Test_X holds the rows whose target_cui is X",
    "target_name": "SNOMED CT preferred term of `target_cui`, lower-cased",
    "disease_cui": "the disease named by `hypothesis` (the annotation's `CUI`; equals target_cui on positives)",
    "mentioned_cuis": (
        "the diseases of this variant that the premise mentions by a UMLS synonym or a dataset spelling "
        "(whole words, any case): Train_X drops rows that mention X"
    ),
    "in_target_list": "whether `target_cui` is one of the variant's target diseases (the paper's list, see below)",
    "source": "the file of the pair: mednli_train, mednli_dev, mednli_test or mediqa_nli_test",
    "source_label": "the pair's NLI gold label (MEDIQA-NLI: from its ground-truth file)",
}


@dataclass
class DisknEConfig(datasets.BuilderConfig):
    """A DisKnE variant.

    synonym_sources: UMLS sources whose English names count as synonyms when finding the
        diseases a premise mentions ("all" for every source). The paper used SNOMED CT and ICD-10.
    max_missing_pairs: how many annotated pair ids may be absent from the MedNLI / MEDIQA-NLI
        files (their rows are skipped and reported) before the build stops.
    """

    synonym_sources: str = "SNOMEDCT_US,ICD10"
    max_missing_pairs: int = 5


_DESCRIPTION = (
    "DisKnE probes the disease knowledge of pre-trained language models: does a clinical premise "
    "from MedNLI entail a given disease? Negatives swap the disease for a similar or random one; "
    "per-disease training and test sets keep the tested disease out of training."
)

_VARIANT_DESCRIPTIONS = {
    "medical_similar": "medical knowledge (symptoms, treatments, tests, procedures); negatives are the most similar diseases",
    "medical_random": "medical knowledge; negatives are random diseases from the same list",
    "terminological_similar": "terminological knowledge (the premise names the disease differently); similar negatives",
    "terminological_random": "terminological knowledge; random negatives",
}


_VERSION = datasets.Version("1.0.0")


class Diskne(datasets.GeneratorBasedBuilder):
    """DisKnE built from the user's MedNLI, MEDIQA-NLI and UMLS files and the public annotation files."""

    VERSION = _VERSION
    BUILDER_CONFIG_CLASS = DisknEConfig
    BUILDER_CONFIGS = [DisknEConfig(name=v, version=_VERSION, description=_VARIANT_DESCRIPTIONS[v]) for v in VARIANTS]
    DEFAULT_CONFIG_NAME = "medical_similar"

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=FEATURES,
            homepage="https://github.com/israa-alghanmi/DisKnE",
            license="PhysioNet Credentialed Health Data License (MedNLI text) and UMLS Metathesaurus License (names)",
        )

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        sources = locate_source_files(self.config.data_dir)
        annotations = local_annotation_files(self.config.data_dir)
        if self.config.name not in annotations:
            annotations[self.config.name] = download_annotation_file(dl_manager, self.config.name)
        return [
            datasets.SplitGenerator(
                name=datasets.Split.TEST,
                gen_kwargs={
                    "sources": sources,
                    "annotation_path": str(annotations[self.config.name]),
                    "all_annotations": annotations,
                },
            )
        ]

    def _generate_examples(self, sources: dict[str, Path], annotation_path: str, all_annotations: dict[str, str]):
        variant = self.config.name
        rows = read_annotation_file(annotation_path, variant)
        pairs = read_nli_pairs(sources)
        rows = drop_missing_pairs(rows, pairs, annotation_path, self.config.max_missing_pairs)
        # Read UMLS once for every annotation file at hand, so the other configs of a build reuse it.
        names = umls_names(sources["umls"], annotation_cuis([str(p) for p in all_annotations.values()]))
        check_known_cuis(rows, names, annotation_path, sources["umls"])
        display = {cui: display_name(found) for cui, found in names.items()}
        fallback = sorted({cui for r in rows for cui in (r.cui, r.original_cui) if not display[cui][1]})
        if fallback:
            logger.warning(
                f"{len(fallback)} CUI(s) have no SNOMED CT preferred term in {sources['umls']}; "
                f"their UMLS preferred name is used: {', '.join(fallback)}"
            )
        positives = positive_spans(rows, pairs, annotation_path)
        mentions = MentionIndex(synonyms(rows, names, display, positives, pairs, self.config.synonym_sources))
        targets = set(variant_targets(variant))
        for r in rows:
            pair = pairs[r.pair_id]
            start, end = positives[(r.pair_id, r.original_cui)]
            disease = pair.hypothesis[start : end + 1].lower() if r.label else display[r.cui][0]
            yield (
                r.row,
                {
                    "annotation_row": r.row,
                    "pair_id": r.pair_id,
                    "premise": pair.premise,
                    "hypothesis": disease,
                    "full_hypothesis": pair.hypothesis
                    if r.label
                    else pair.hypothesis[:start] + disease + pair.hypothesis[end + 1 :],
                    "label": r.label,
                    "category": r.category,
                    "target_cui": r.original_cui,
                    "target_name": display[r.original_cui][0],
                    "disease_cui": r.cui,
                    "mentioned_cuis": mentions.mentioned(pair.premise),
                    "in_target_list": r.original_cui in targets,
                    "source": pair.source,
                    "source_label": pair.gold_label,
                },
            )


def local_annotation_files(data_dir: str | None) -> dict[str, str]:
    if not data_dir or not Path(data_dir).is_dir():
        return {}
    found = index_files(Path(data_dir))
    return {v: str(found[annotation_file_name(v)][0]) for v in VARIANTS if annotation_file_name(v) in found}


def download_annotation_file(dl_manager: datasets.DownloadManager, variant: str) -> str:
    url = f"{ANNOTATION_URL}/{annotation_file_name(variant)}"
    try:
        return dl_manager.download(url)
    except Exception as err:  # offline, proxy, moved files: say what to do instead
        raise ConnectionError(
            f"could not download the DisKnE annotation file {url} ({err.__class__.__name__}: {err}). "
            f"Download it from {ANNOTATION_TREE} and put it in the data_dir."
        ) from err


_UMLS_CACHE: dict[tuple, dict[str, list[UmlsName]]] = {}


def umls_names(path: Path, cuis: set[str]) -> dict[str, list[UmlsName]]:
    """Names of `cuis` from the TSV or MRCONSO.RRF, remembered for the other configs of a build."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns, frozenset(cuis))
    if key not in _UMLS_CACHE:
        _UMLS_CACHE.clear()
        _UMLS_CACHE[key] = read_names_tsv(path, cuis) if path.name == UMLS_NAMES_TSV else read_mrconso(path, cuis)
    return _UMLS_CACHE[key]


def drop_missing_pairs(rows: list[AnnotationRow], pairs: dict[str, NliPair], path: str, limit: int) -> list[AnnotationRow]:
    """Skip the rows whose pair is not in the user's files: reported, and an error past `limit` pairs."""
    absent = [r for r in rows if r.pair_id not in pairs]
    if not absent:
        return rows
    absent_ids = sorted({r.pair_id for r in absent})
    first = "; ".join(f"{r.pair_id} (row {r.row})" for r in absent[:5])
    message = f"{path}: {len(absent_ids)} pair id(s) are in no MedNLI / MEDIQA-NLI file ({len(absent)} rows), first: {first}"
    if len(absent_ids) > limit:
        raise DisknEInputError(
            f"{message}. More than {limit} missing pairs means the files are not MedNLI 1.0.0 and MEDIQA-NLI 1.0.1 "
            f"as distributed ({MEDNLI_URL}, {MEDIQA_NLI_URL}); raise the limit with --set max_missing_pairs=N."
        )
    logger.warning(f"{message}. These rows are skipped.")
    return [r for r in rows if r.pair_id in pairs]


def check_known_cuis(rows: list[AnnotationRow], names: dict[str, list[UmlsName]], path: str, umls: Path) -> None:
    unknown: dict[str, int] = {}
    for r in rows:
        for cui in (r.cui, r.original_cui):
            if cui not in names:
                unknown.setdefault(cui, r.row)
    if unknown:
        listed = ", ".join(f"{cui} (row {row})" for cui, row in list(unknown.items())[:20])
        raise DisknEInputError(
            f"{path}: {len(unknown)} CUI(s) have no English name in {umls}: {listed}. Use a UMLS release that "
            f"has them (the paper used 2020AA), or re-extract {UMLS_NAMES_TSV} for these annotation files."
        )


def positive_spans(rows: list[AnnotationRow], pairs: dict[str, NliPair], path: str) -> dict[tuple[str, str], tuple[int, int]]:
    """(pair id, disease CUI) -> the disease's stripped, inclusive offsets in the hypothesis, from the positive rows."""
    spans: dict[tuple[str, str], tuple[int, int]] = {}
    for r in rows:
        if not r.label:
            continue
        hypothesis = pairs[r.pair_id].hypothesis
        if not 0 <= r.start <= r.end < len(hypothesis):
            raise DisknEInputError(
                f"{path}, row {r.row} (pair {r.pair_id}): offsets {r.start}..{r.end} do not fall inside the hypothesis "
                f"({len(hypothesis)} characters in {pairs[r.pair_id].where}); is this the MedNLI 1.0.0 text?"
            )
        span = hypothesis[r.start : r.end + 1]
        if not span.strip():
            raise DisknEInputError(f"{path}, row {r.row} (pair {r.pair_id}): offsets {r.start}..{r.end} select only white space")
        start = r.start + len(span) - len(span.lstrip())
        spans.setdefault((r.pair_id, r.cui), (start, start + len(span.strip()) - 1))
    # A few negatives of the release name an original_cui that their pair has no positive row for
    # (terminological files: 2 pairs, 20 rows); their disease span is the pair's only one.
    borrowed: list[AnnotationRow] = []
    for r in rows:
        if r.label or (r.pair_id, r.original_cui) in spans:
            continue
        pair_spans = {span for (pair_id, _), span in spans.items() if pair_id == r.pair_id}
        if len(pair_spans) != 1:
            raise DisknEInputError(
                f"{path}, row {r.row}: negative of pair {r.pair_id} has no positive row for {r.original_cui}, and the pair "
                f"has {len(pair_spans)} disease spans, so full_hypothesis cannot say which one to replace"
            )
        spans[(r.pair_id, r.original_cui)] = pair_spans.pop()
        borrowed.append(r)
    if borrowed:
        logger.info(
            f"{path}: {len(borrowed)} negative row(s) name an original_cui without a positive row in their pair "
            f"({', '.join(sorted({r.pair_id for r in borrowed}))}); their full_hypothesis replaces the pair's disease span"
        )
    return spans


def synonyms(
    rows: list[AnnotationRow],
    names: dict[str, list[UmlsName]],
    display: dict[str, tuple[str, bool]],
    spans: dict[tuple[str, str], tuple[int, int]],
    pairs: dict[str, NliPair],
    sources: str,
) -> dict[str, set[str]]:
    """Every spelling of every disease of the variant: UMLS names of the chosen sources, the
    name used for negatives, and the spellings found in the annotated hypotheses."""
    chosen = None if sources.strip().lower() == "all" else {s.strip() for s in sources.split(",") if s.strip()}
    spellings: dict[str, set[str]] = defaultdict(set)
    for cui in {c for r in rows for c in (r.cui, r.original_cui)}:
        spellings[cui].add(display[cui][0])
        spellings[cui].update(n.name for n in names[cui] if chosen is None or n.sab in chosen)
    for r in rows:
        if r.label:
            start, end = spans[(r.pair_id, r.cui)]
            spellings[r.cui].add(pairs[r.pair_id].hypothesis[start : end + 1])
    return spellings


# --- card text -------------------------------------------------------------------------------------


def card_context(built: dict[str, datasets.DatasetDict], params: dict | None = None) -> dict[str, str]:
    """Benchmark-specific parts of the dataset card (hub_cards/disknE.md)."""
    sizes = []
    for config, dataset_dict in built.items():
        rows = dataset_dict["test"].num_rows
        skipped = ANNOTATION_ROWS[config] - rows
        note = f" ({skipped:,} skipped: their pairs were not in the MedNLI files)" if skipped > 0 else ""
        sizes.append(f"`{config}`: {rows:,} of the {ANNOTATION_ROWS[config]:,} annotation rows{note}")
    return {
        "annotation_commit": ANNOTATION_COMMIT,
        "annotation_tree": ANNOTATION_TREE,
        "build_sizes": "; ".join(sizes),
        "data_dir_layout": DATA_DIR_LAYOUT,
        "medical_targets_table": targets_table(MEDICAL_TARGETS, built, "medical"),
        "terminological_targets_table": targets_table(TERMINOLOGICAL_TARGETS, built, "terminological"),
    }


def targets_table(targets: tuple[str, ...], built: dict[str, datasets.DatasetDict], family: str) -> str:
    """One line per target disease: name and positive rows (per category for medical variants)."""
    config = next((c for c in built if c.startswith(family)), None)
    names: dict[str, str] = {}
    positives: dict[tuple[str, str | None], int] = defaultdict(int)
    if config:
        ds = built[config]["test"]
        for cui, name, label, category in zip(ds["target_cui"], ds["target_name"], ds["label"], ds["category"]):
            names[cui] = name
            positives[(cui, category)] += label
    columns = list(CATEGORIES) if family == "medical" else [None]
    header = "| CUI | name (from your UMLS) | " + " | ".join(f"positives: {c}" if c else "positive rows" for c in columns) + " |"
    lines = [header, "|" + "---|" * (2 + len(columns))]
    for cui in sorted(targets):
        counts = " | ".join(str(positives[(cui, c)]) if config else "" for c in columns)
        lines.append(f"| {cui} | {names.get(cui, '')} | {counts} |")
    return "\n".join(lines)
