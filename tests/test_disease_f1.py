"""disease_f1 through evaluate.load, against values worked out by hand (no scikit-learn)."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medprobe.resources import metric_path


@pytest.fixture(scope="module")
def disease_f1():
    import evaluate

    return evaluate.load(metric_path("disease_f1"))


def test_hand_computed_f1_macro_and_weighted(disease_f1):
    # A: TP 2, FP 1, FN 1 -> P 2/3, R 2/3, F1 4/6; B: TP 0, FP 1, FN 1 -> 0; C: TP 3, FP 0, FN 0 -> 1
    result = disease_f1.compute(
        predictions=[1, 1, 0, 1, 0, 1, 0, 0, 1, 1, 1],
        references=[1, 1, 1, 0, 0, 0, 1, 0, 1, 1, 1],
        diseases=["A", "A", "A", "A", "A", "B", "B", "B", "C", "C", "C"],
    )
    assert result["per_disease"]["A"] == {
        "f1": pytest.approx(2 / 3),
        "precision": pytest.approx(2 / 3),
        "recall": pytest.approx(2 / 3),
        "positives": 3,
        "rows": 5,
    }
    assert result["per_disease"]["B"]["f1"] == 0.0 and result["per_disease"]["B"]["positives"] == 1
    assert result["per_disease"]["C"] == {"f1": 1.0, "precision": 1.0, "recall": 1.0, "positives": 3, "rows": 3}
    assert result["macro_f1"] == pytest.approx((2 / 3 + 0 + 1) / 3)
    # weights are the positive rows: 3, 1, 3
    assert result["weighted_f1"] == pytest.approx((2 / 3 * 3 + 0 * 1 + 1 * 3) / 7)


def test_negatives_only_count_through_false_positives(disease_f1):
    # true negatives change nothing; a false positive lowers precision
    base = disease_f1.compute(predictions=[1, 0], references=[1, 1], diseases=["X", "X"])
    more_tn = disease_f1.compute(predictions=[1, 0, 0, 0], references=[1, 1, 0, 0], diseases=["X"] * 4)
    one_fp = disease_f1.compute(predictions=[1, 0, 1], references=[1, 1, 0], diseases=["X"] * 3)
    assert base["macro_f1"] == more_tn["macro_f1"] == pytest.approx(2 / 3)  # 2*1 / (2*1 + 0 + 1)
    assert one_fp["macro_f1"] == pytest.approx(0.5)  # 2 / (2 + 1 + 1)


def test_released_code_option(disease_f1):
    # the released code scores the gold positives only: all found -> 1, else recall / (1 + recall)
    result = disease_f1.compute(
        predictions=[1, 1, 1, 0, 1, 1, 0, 0, 0, 1],
        references=[1, 1, 0, 1, 1, 1, 0, 1, 1, 0],
        diseases=["A", "A", "A", "B", "B", "B", "B", "C", "C", "C"],
        average="released_code",
    )
    per = result["per_disease"]
    assert per["A"]["released_code_f1"] == 1.0  # both positives found; the false positive is ignored
    assert per["B"]["released_code_f1"] == pytest.approx((2 / 3) / (1 + 2 / 3))  # recall 2/3 -> 0.4
    assert per["C"]["released_code_f1"] == 0.0  # recall 0
    assert result["released_code_f1"] == pytest.approx((1 + 0.4 + 0) / 3)
    assert "macro_f1" not in result


def test_bad_input(disease_f1):
    with pytest.raises(ValueError, match="diseases is required"):
        disease_f1.compute(predictions=[1], references=[1])
    with pytest.raises(ValueError, match="one disease per row"):
        disease_f1.compute(predictions=[1, 0], references=[1, 0], diseases=["A"])
    with pytest.raises(ValueError, match=r"predictions\[1\] is 2"):
        disease_f1.compute(predictions=[1, 2], references=[1, 0], diseases=["A", "A"])
    with pytest.raises(ValueError, match="average must be one of"):
        disease_f1.compute(predictions=[1], references=[1], diseases=["A"], average="micro")


def test_an_empty_disease_id_is_refused_like_an_empty_group_of_acc_at_k(disease_f1):
    with pytest.raises(ValueError, match=r"diseases\[1\] is ''; expected a non-empty str"):
        disease_f1.compute(predictions=[1, 0], references=[1, 0], diseases=["A", ""])
    with pytest.raises(ValueError, match=r"diseases\[0\] is ''"):
        disease_f1.add(prediction=1, reference=1, diseases="")


@pytest.mark.parametrize("blank", [" ", "\t", "  \n"])
def test_a_whitespace_only_disease_id_is_refused_naming_the_row(disease_f1, blank):
    """Measured before: diseases=["A", " "] was scored, " " counted as a disease of its own (macro over A and " ")."""
    with pytest.raises(ValueError, match=re.escape(f"diseases[1] is {blank!r}; expected a non-empty str")) as found:
        disease_f1.compute(predictions=[1, 0], references=[1, 0], diseases=["A", blank])
    assert "not blank" in str(found.value) and len(str(found.value).splitlines()) == 1
    with pytest.raises(ValueError, match=r"diseases\[0\] is "):
        disease_f1.add(prediction=1, reference=1, diseases=blank)


@pytest.mark.parametrize("invisible", ["\u200b", "\ufeff", " \u200b\u00a0", "\u2060\n"])
def test_an_id_of_only_invisible_characters_is_refused_naming_the_row(disease_f1, invisible):
    """Measured before (issue 37): "\u200b" (a zero-width space) was scored as a disease of its own."""
    with pytest.raises(ValueError, match=re.escape(f"diseases[1] is {invisible!r}; expected a non-empty str")) as found:
        disease_f1.compute(predictions=[1, 0], references=[1, 0], diseases=["A", invisible])
    assert "invisible format characters" in str(found.value) and len(str(found.value).splitlines()) == 1


def test_ids_that_print_alike_are_one_disease(disease_f1):
    """Measured before (issue 37): "a " and "a" were two diseases (macro over two, each with half the rows)."""
    decomposed, composed = "cafe\u0301", "caf\u00e9"
    spellings = ["a", "a ", "\u200ba", " a\u00a0", decomposed, composed, "b  c", "b\tc"]
    result = disease_f1.compute(predictions=[1, 0, 1, 1, 1, 1, 1, 0], references=[1, 1, 1, 0, 1, 1, 1, 1], diseases=spellings)
    assert list(result["per_disease"]) == ["a", "b c", composed]  # keyed by the normalised id
    assert result["per_disease"]["a"] == {"f1": 2 / 3, "precision": 2 / 3, "recall": 2 / 3, "positives": 3, "rows": 4}
    assert result["per_disease"][composed]["rows"] == 2 and result["per_disease"]["b c"]["rows"] == 2
    cased = disease_f1.compute(predictions=[1, 1], references=[1, 1], diseases=["C0011849", "c0011849"])
    assert len(cased["per_disease"]) == 2  # case is part of an id


rows = st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1), st.sampled_from("ABCD")), min_size=1, max_size=40)


@settings(max_examples=40, deadline=None)
@given(rows)
def test_properties(disease_f1, examples):
    predictions, references, diseases = map(list, zip(*examples))
    result = disease_f1.compute(predictions=predictions, references=references, diseases=diseases)
    assert 0 <= result["macro_f1"] <= 1 and 0 <= result["weighted_f1"] <= 1
    for disease, scores in result["per_disease"].items():
        tp = sum(p == r == 1 for p, r, d in examples if d == disease)
        # F1 is the harmonic mean of precision and recall whenever both are defined and non-zero
        if tp:
            p, r = scores["precision"], scores["recall"]
            assert scores["f1"] == pytest.approx(2 * p * r / (p + r))
        else:
            assert scores["f1"] == 0.0
    # perfect predictions score 1 for every disease that has a positive row
    perfect = disease_f1.compute(predictions=references, references=references, diseases=diseases)
    assert all(s["f1"] == 1.0 for s in perfect["per_disease"].values() if s["positives"])
    if all(s["positives"] for s in perfect["per_disease"].values()):
        assert perfect["macro_f1"] == perfect["weighted_f1"] == 1.0
