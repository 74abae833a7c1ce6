"""The user's credentialed files: where to get them, finding them by name below `data_dir` (one
error lists every missing file), and reading the MedNLI and MEDIQA-NLI pairs.
"""

from __future__ import annotations

import csv
import difflib
import json
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from .annotations import ANNOTATION_TREE, VARIANTS, DisknEInputError, annotation_file_name
from .umls import MRCONSO, UMLS_NAMES_TSV

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


def local_annotation_files(data_dir: str | None) -> dict[str, str]:
    if not data_dir or not Path(data_dir).is_dir():
        return {}
    found = index_files(Path(data_dir))
    return {v: str(found[annotation_file_name(v)][0]) for v in VARIANTS if annotation_file_name(v) in found}


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
