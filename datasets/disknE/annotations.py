"""The public annotation files: the pinned release, the variants and their target diseases, and
reading and checking one file (row numbers count data rows from 1).
"""

from __future__ import annotations

import csv
import re
import socket
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlparse

import datasets

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


def normalised(text: str) -> str:
    """A disease id or name as it is kept: without format characters (Unicode category Cf: zero-width spaces and
    joiners, the byte-order mark), NFC, without white space at the ends and with each inner run of it one space, so
    that what prints alike is one disease ("C0018802\u200b" is C0018802). The disease_f1 metric normalises the ids
    it is given the same way (each Hub folder carries its own copy)."""
    visible = "".join(character for character in text if unicodedata.category(character) != "Cf")
    return " ".join(unicodedata.normalize("NFC", visible).split())


def cui_of(path: str, row: int, column: str, value: str | None) -> str:
    """The CUI of one annotation cell, normalised; an empty or malformed one is a DisknEInputError naming the row."""
    cui = normalised(value or "")
    if not cui:
        raise DisknEInputError(
            f"{path}, row {row}, column {column}: {value!r} is empty once white space and invisible format characters "
            "are removed; expected a UMLS CUI such as C0018802"
        )
    if not CUI_PATTERN.fullmatch(cui):
        raise DisknEInputError(f"{path}, row {row}, column {column}: expected a UMLS CUI such as C0018802, got {value!r}")
    return cui


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


class DisknEInputError(ValueError):
    """An input file is malformed; the message names the file and row and says what was expected."""


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
            cui, original_cui = (cui_of(path, row_number, column, raw[column]) for column in ("CUI", "original_cui"))
            if positive and cui != original_cui:
                raise DisknEInputError(
                    f"{path}, row {row_number}: a positive row's CUI {cui} differs from its original_cui {original_cui}"
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
                    cui=cui,
                    original_cui=original_cui,
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
                    cuis.add(cui_of(path, row_number, column, raw.get(column)))
    return cuis


def download_annotation_file(dl_manager: datasets.DownloadManager, variant: str) -> str:
    url = f"{ANNOTATION_URL}/{annotation_file_name(variant)}"
    try:
        return dl_manager.download(url)
    except Exception as err:  # offline, proxy, moved files: say what to do instead
        raise ConnectionError(
            f"could not download the DisKnE annotation file {url}: {download_problem(err, url)}. "
            f"Download it from {ANNOTATION_TREE} and put it in the data_dir"
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
