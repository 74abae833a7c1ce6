"""Per-disease Train_X / validation / Test_X on the synthetic DisKnE build, checked rule by rule."""

import math
import re

import pytest
from datasets import load_dataset

from medprobe.tasks.disknE_splits import DiseaseNotEligible, disease_splits, eligible_diseases
from test_disknE_build import disease_names, mention_pattern


@pytest.fixture(scope="module")
def medical(built_disknE):
    return load_dataset(str(built_disknE), "medical_similar", split="test")


@pytest.fixture(scope="module")
def terminological(built_disknE):
    return load_dataset(str(built_disknE), "terminological_random", split="test")


def expected_test_rows(rows, cui, category):
    """The rows whose target is X (in the category), first of each (premise, hypothesis)."""
    seen, kept = set(), []
    for index, row in enumerate(rows):
        key = (row["premise"], row["hypothesis"])
        if row["target_cui"] == cui and category in (None, row["category"]) and key not in seen:
            seen.add(key)
            kept.append(index)
    return kept


def check_disease(ds, rows, names, cui, category):
    splits = disease_splits(ds, cui, category, seed=7)
    assert splits.test == expected_test_rows(rows, cui, category)
    assert splits.test_positives == sum(rows[i]["label"] for i in splits.test) >= 2
    pattern = mention_pattern(names[cui])
    mentioning = {premise for premise in {r["premise"] for r in rows} if pattern.search(premise)}
    training = splits.train + splits.validation
    assert not set(splits.train) & set(splits.validation)
    for index in training:
        row = rows[index]
        assert cui not in (row["target_cui"], row["disease_cui"])
        assert row["premise"] not in mentioning, (cui, row["premise"])
    # nothing else is dropped: every other row is in training once per (premise, hypothesis)
    allowed = {
        (r["premise"], r["hypothesis"])
        for r in rows
        if cui not in (r["target_cui"], r["disease_cui"]) and r["premise"] not in mentioning
    }
    assert sorted(allowed) == sorted((rows[i]["premise"], rows[i]["hypothesis"]) for i in training)
    assert len(splits.validation) == math.ceil(0.1 * len(training))
    return splits


def test_every_eligible_disease_follows_the_rules(medical, terminological, synthetic_disknE):
    for ds, category in ((medical, None), (medical, "tests_diseases"), (terminological, None)):
        rows, names = ds.to_list(), disease_names(ds, synthetic_disknE)
        eligible, skipped = eligible_diseases(ds, category)
        assert len(eligible) >= 5
        removed_by_mention = 0
        for cui in eligible:
            removed_by_mention += check_disease(ds, rows, names, cui, category).removed["premise_mentions_x"]
        assert removed_by_mention > 0, "some premises mention a target disease: the mention rule must have work"


def test_at_least_two_positive_test_rows(medical):
    eligible, skipped = eligible_diseases(medical, "symptoms_diseases")
    targets = {cui for cui, listed in zip(medical["target_cui"], medical["in_target_list"]) if listed}
    assert set(eligible) | set(skipped) == targets and not set(eligible) & set(skipped)
    for cui in eligible:
        assert disease_splits(medical, cui, "symptoms_diseases").test_positives >= 2
    for cui, reason in list(skipped.items())[:10]:
        assert "fewer than 2" in reason
        with pytest.raises(DiseaseNotEligible, match="at least 2 are needed"):
            disease_splits(medical, cui, "symptoms_diseases")
    with pytest.raises(DiseaseNotEligible, match="target disease of no row"):
        disease_splits(medical, "C9999999")


def test_splits_are_seeded(medical):
    cui = eligible_diseases(medical)[0][0]
    first, again, other = (disease_splits(medical, cui, seed=s) for s in (3, 3, 4))
    assert (first.train, first.validation, first.test) == (again.train, again.validation, again.test)
    assert first.validation != other.validation and sorted(first.train + first.validation) == sorted(
        other.train + other.validation
    )
    rows = first.train + first.validation + first.test
    assert len(set(rows)) == len(rows) and set(rows) <= set(range(medical.num_rows))  # three disjoint row selections


def test_hypothesis_only_option_drops_training_rows_that_contain_a_test_hypothesis(medical):
    cui = eligible_diseases(medical)[0][0]
    splits = disease_splits(medical, cui, exclude_test_hypotheses=True)
    hypotheses = list(medical["hypothesis"])
    test_names = {hypotheses[i] for i in splits.test}
    assert splits.removed["hypothesis_contains_a_test_hypothesis"] > 0
    assert not any(hypotheses[i] == name for i in splits.train + splits.validation for name in test_names)


def test_category_errors(medical, terminological):
    with pytest.raises(ValueError, match="has no categories"):
        eligible_diseases(terminological, "tests_diseases")
    with pytest.raises(ValueError, match="unknown category 'labs'"):
        disease_splits(medical, "C0020538", "labs")
    with pytest.raises(ValueError, match="not a DisKnE dataset"):
        eligible_diseases(medical.remove_columns("mentioned_cuis"))


def tiny_disknE(target_cuis: list[str], disease_cuis: list[str]):
    """A hand-made DisKnE dataset (fields as the build writes them), no release data needed."""
    import datasets

    rows = len(target_cuis)
    return datasets.Dataset.from_dict(
        {
            "premise": [f"premise {n}" for n in range(rows)],
            "hypothesis": [f"disease {n}" for n in range(rows)],
            "full_hypothesis": [f"has disease {n}" for n in range(rows)],
            "label": [n % 2 for n in range(rows)],
            "category": ["tests_diseases"] * rows,
            "target_cui": target_cuis,
            "target_name": ["a disease"] * rows,
            "disease_cui": disease_cuis,
            "mentioned_cuis": [[] for _ in range(rows)],
            "in_target_list": [True] * rows,
        }
    )


@pytest.mark.parametrize(
    "column, value, said",
    [
        ("target_cui", "C0000001\u200b", "the metric counts it as 'C0000001'"),
        ("disease_cui", "C0000001 ", "the metric counts it as 'C0000001'"),
        ("target_cui", "\u200b", "it names no disease"),
    ],
)
def test_a_dataset_whose_disease_ids_the_metric_would_count_otherwise_is_refused_naming_the_row(column, value, said):
    """Measured before (issue 37): "C0000001\u200b" was a target of its own, which disease_f1 now counts as C0000001."""
    ids = {"target_cui": ["C0000001"] * 4, "disease_cui": ["C0000001"] * 4}
    ids[column][2] = value
    with pytest.raises(
        ValueError, match=re.escape(f"the dataset's row 2: {column} is {value!r}; expected a disease id")
    ) as found:
        eligible_diseases(tiny_disknE(ids["target_cui"], ids["disease_cui"]))
    assert said in str(found.value) and "medprobe build disknE" in str(found.value)


def test_diseases_asked_for_are_read_as_the_ids_of_the_rows():
    """`--diseases "C0000001\u200b"` (a CUI pasted from a web page) is the disease C0000001; an invisible one is refused."""
    from medprobe.tasks.disknE import choose_diseases

    assert choose_diseases(["C0000001", "C0000002"], {}, None, ["\ufeffC0000002 "]) == ["C0000002"]
    with pytest.raises(ValueError, match=re.escape("--diseases: '\\u200b' names no disease")):
        choose_diseases(["C0000001"], {}, None, ["\u200b"])
