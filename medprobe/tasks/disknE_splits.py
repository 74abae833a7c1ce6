"""Per-disease DisKnE splits: Train_X / validation / Test_X for a target disease X.

The rules of the paper (REFERENCE.md, section 2), on the rows of a built DisKnE config:
- Test_X: the rows whose `target_cui` is X (in one category, when one is asked), duplicates on
  (premise, hypothesis) dropped;
- Train_X: every other row, after removing each row whose `target_cui` or `disease_cui` is X or
  whose premise mentions X (`X in mentioned_cuis`, which the build computed from the UMLS
  synonyms and dataset spellings of X as whole words, ignoring case); duplicates dropped; a
  seeded 10 % is held out for validation;
- X is evaluated only with at least 2 positive rows in Test_X.

Training rows come from every category, as in the released code; only Test_X is restricted.
Everything is derived from the rows themselves, so the same dataset and seed give the same
splits.
"""

from __future__ import annotations

import math
import random
import re
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from medprobe.contracts import UserError

if TYPE_CHECKING:  # datasets is imported where used (the CLI imports this module for --help)
    import datasets

DISKNE_FIELDS = (
    "premise",
    "hypothesis",
    "full_hypothesis",
    "label",
    "category",
    "target_cui",
    "target_name",
    "disease_cui",
    "mentioned_cuis",
    "in_target_list",
)
MIN_POSITIVE_TEST_ROWS = 2
VALIDATION_FRACTION = 0.1
SPLIT_SEED = 42


class DiseaseNotEligible(ValueError):
    """The disease has fewer positive test rows than the rule asks for (or none at all)."""


@dataclass
class DiseaseSplits:
    """Row positions (in the dataset the splits were made from) of Train_X, validation and Test_X."""

    cui: str
    name: str
    category: str | None
    train: list[int]
    validation: list[int]
    test: list[int]
    test_positives: int
    removed: dict[str, int] = field(default_factory=dict)  # why rows left the training pool, by reason


def check_disknE_fields(ds: datasets.Dataset, what: str, fields: tuple[str, ...] = DISKNE_FIELDS) -> None:
    absent = [f for f in fields if f not in ds.column_names]
    if absent:
        raise UserError(
            f"{what} is not a DisKnE dataset: it lacks the field(s) {', '.join(absent)} (built by `medprobe build disknE`)"
        )


def normalised_id(text: str) -> str:
    """A disease id as the disease_f1 metric counts it (metrics/disease_f1, which keeps its own copy: a Hub Space
    imports nothing of medprobe): without format characters (Unicode category Cf), NFC, white space trimmed and
    each inner run of it one space."""
    visible = "".join(character for character in text if unicodedata.category(character) != "Cf")
    return " ".join(unicodedata.normalize("NFC", visible).split())


def check_disease_ids(columns: dict[str, list], names: tuple[str, ...] = ("target_cui", "disease_cui")) -> None:
    """Every disease id of the rows as the metric will count it: the build writes them so, and a dataset made or
    edited otherwise would have the metric merge ("C0011849 " and "C0011849") what the splits keep apart. The
    first id that is empty or not normalised is a UserError naming its row."""
    for name in names:
        for row, value in enumerate(columns[name]):
            found = normalised_id(value) if isinstance(value, str) else ""
            if found != value:
                fix = f"the metric counts it as {found!r}" if found else "it names no disease"
                raise UserError(
                    f"the dataset's row {row}: {name} is {value!r}; expected a disease id without invisible format "
                    f"characters or stray white space ({fix}); rebuild it with `medprobe build disknE`"
                )


def _check_category(ds: datasets.Dataset, category: str | None) -> None:
    if category is None:
        return
    present = sorted({c for c in ds["category"] if c})
    if not present:
        raise UserError(
            f"category {category!r} asked for, but this DisKnE config has no categories (terminological variants have none)"
        )
    if category not in present:
        raise UserError(f"unknown category {category!r}; this config has {', '.join(present)}")


def _first_of_each(rows: list[int], keys: list[tuple[str, str]]) -> tuple[list[int], int]:
    """Keep the first row of each (premise, hypothesis); also return how many were dropped."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for row in rows:
        if keys[row] not in seen:
            seen.add(keys[row])
            kept.append(row)
    return kept, len(rows) - len(kept)


def disease_splits(
    ds: datasets.Dataset,
    cui: str,
    category: str | None = None,
    *,
    seed: int = SPLIT_SEED,
    validation_fraction: float = VALIDATION_FRACTION,
    min_positive_test_rows: int = MIN_POSITIVE_TEST_ROWS,
    exclude_test_hypotheses: bool = False,
) -> DiseaseSplits:
    """Train_X / validation / Test_X for target disease `cui` (see the module docstring).

    `exclude_test_hypotheses` (for the hypothesis-only baseline, as the released code did): also
    drop training rows whose hypothesis contains a Test_X hypothesis as whole words, so that a
    model that sees only disease names cannot look them up.
    Raises DiseaseNotEligible when Test_X has fewer than `min_positive_test_rows` positives.
    """
    check_disknE_fields(ds, "the dataset")
    _check_category(ds, category)
    columns = ds.select_columns(
        ["premise", "hypothesis", "label", "category", "target_cui", "target_name", "disease_cui", "mentioned_cuis"]
    ).to_dict()
    keys = list(zip(columns["premise"], columns["hypothesis"]))
    rows = range(ds.num_rows)
    targets = [r for r in rows if columns["target_cui"][r] == cui]
    if not targets:
        raise DiseaseNotEligible(f"{cui} is the target disease of no row")
    name = columns["target_name"][targets[0]]
    test, _ = _first_of_each([r for r in targets if category is None or columns["category"][r] == category], keys)
    test_positives = sum(columns["label"][r] for r in test)
    if test_positives < min_positive_test_rows:
        where = f" in {category}" if category else ""
        raise DiseaseNotEligible(
            f"{cui} ({name}) has {test_positives} positive test row(s){where}; at least {min_positive_test_rows} are needed"
        )

    removed = {"target_or_disease_is_x": 0, "premise_mentions_x": 0}
    pool = []
    for r in rows:
        if cui in (columns["target_cui"][r], columns["disease_cui"][r]):
            removed["target_or_disease_is_x"] += 1
        elif cui in columns["mentioned_cuis"][r]:
            removed["premise_mentions_x"] += 1
        else:
            pool.append(r)
    if exclude_test_hypotheses:
        test_names = re.compile("|".join(rf"(?<!\w){re.escape(columns['hypothesis'][r])}(?!\w)" for r in test))
        kept = [r for r in pool if not test_names.search(columns["hypothesis"][r])]
        removed["hypothesis_contains_a_test_hypothesis"] = len(pool) - len(kept)
        pool = kept
    pool, removed["duplicates"] = _first_of_each(pool, keys)
    random.Random(seed).shuffle(pool)
    held_out = math.ceil(validation_fraction * len(pool))
    return DiseaseSplits(
        cui=cui,
        name=name,
        category=category,
        train=pool[held_out:],
        validation=pool[:held_out],
        test=test,
        test_positives=test_positives,
        removed=removed,
    )


def eligible_diseases(
    ds: datasets.Dataset,
    category: str | None = None,
    *,
    only_target_list: bool = True,
    min_positive_test_rows: int = MIN_POSITIVE_TEST_ROWS,
) -> tuple[list[str], dict[str, str]]:
    """(target CUIs with enough positive test rows, sorted; {skipped CUI: why}).

    The candidates are the variant's target list (`in_target_list`), or every `target_cui` of the
    dataset with `only_target_list=False`.
    """
    check_disknE_fields(ds, "the dataset")
    _check_category(ds, category)
    columns = ds.select_columns(
        ["premise", "hypothesis", "label", "category", "target_cui", "disease_cui", "in_target_list"]
    ).to_dict()
    check_disease_ids(columns)
    positives: dict[str, set[tuple[str, str]]] = {}
    names = ("premise", "hypothesis", "label", "category", "target_cui", "in_target_list")
    for premise, hypothesis, label, row_category, cui, listed in zip(*(columns[n] for n in names)):
        if only_target_list and not listed:
            continue
        found = positives.setdefault(cui, set())
        if label == 1 and (category is None or row_category == category):
            found.add((premise, hypothesis))  # Test_X drops duplicates, so count distinct pairs
    eligible = sorted(cui for cui, pairs in positives.items() if len(pairs) >= min_positive_test_rows)
    skipped = {
        cui: f"{len(pairs)} positive test row(s){f' in {category}' if category else ''}, fewer than {min_positive_test_rows}"
        for cui, pairs in sorted(positives.items())
        if len(pairs) < min_positive_test_rows
    }
    return eligible, skipped
