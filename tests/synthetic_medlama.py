"""A MedLAMA-format release with made-up rows, written by tests (no UMLS content).

Every relation gets the same three rows: two hard ones (answers share no word with the head)
and one easy one (the answer contains the head name), so the hard rule has work to do. The
files keep the release's names ({relation}_1000.csv) but hold 3 rows, so every build of this
release passes BUILD_PARAMS (or CLI_PARAMS on the command line) to relax the 1,000-row check.
"""

from __future__ import annotations

import csv
from pathlib import Path

from medprobe.resources import load_builder_module

COLUMNS = [
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
]

# (head_cui, head_name, [(tail_cui, tail_name), ...] with repeats as in the release lists, hard?)
ROWS = [
    ("C9000001", "Alphazine", [("C9000101", "Betaitis"), ("C9000101", "Betaitis"), ("C9000102", "Gammaosis")], True),
    ("C9000002", "Deltoma", [("C9000103", "Deltoma of skin")], False),
    ("C9000003", "Waldenström epsilon", [("C9000104", "Zetapathy")], True),
]

BUILD_PARAMS = {"rows_per_relation": len(ROWS)}
CLI_PARAMS = ["--set", f"rows_per_relation={len(ROWS)}"]


def release_row(relation: str, head_cui: str, head_name: str, tails: list[tuple[str, str]]) -> dict:
    names = list(dict.fromkeys(name for _, name in tails))
    cui_of = {name: cui for cui, name in tails}
    return {
        "head_cui": head_cui,
        "head_name": head_name,
        "rel": relation,
        "tail_cuis_list": repr([cui for cui, _ in tails]),
        "tail_names_list": repr([name for _, name in tails]),
        "tail_names": " || ".join(names),
        "tail_cuis": " || ".join(cui_of[n] for n in names),
        "tail_cuis_len": len(names),
        "tail_names_len": len(names),
        "avg_match": 0.0,
        "avg_rouge_l": 0.0,
    }


def write_csv(path: Path, rows: list[dict], columns: list[str] = COLUMNS) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def write_release(root: Path) -> Path:
    """Write prompts.csv and 2021AA/{relation}_1000.csv + _{N}_hard.csv for all 19 relations."""
    relations = load_builder_module("medlama").RELATIONS
    (root / "2021AA").mkdir(parents=True, exist_ok=True)
    with open(root / "prompts.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["pid", "default_prompt", "human_prompt"])
        for relation in relations:
            writer.writerow([relation, f"[X] {relation} [Y] .", f"[X] is related to [Y] by {relation} ."])
    for relation in relations:
        rows = [release_row(relation, cui, name, tails) for cui, name, tails, _ in ROWS]
        hard = [row for row, spec in zip(rows, ROWS) if spec[3]]
        write_csv(root / "2021AA" / f"{relation}_1000.csv", rows)
        write_csv(root / "2021AA" / f"{relation}_{len(hard)}_hard.csv", hard)
    return root
