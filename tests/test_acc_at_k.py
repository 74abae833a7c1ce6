"""acc_at_k through evaluate.load: hand-computed cases and properties (its examples: test_metric_common)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


def test_hand_computed_micro_macro_and_per_group(acc_at_k):
    predictions = [["a", "b", "c"], ["x"], ["b", "a"], ["q", "r"]]
    references = [["c"], ["x", "y"], ["z"], ["r"]]
    groups = ["R1", "R1", "R2", "R2"]
    # ranks of the first hit: 3, 1, none, 2
    result = acc_at_k.compute(predictions=predictions, references=references, groups=groups, k=[1, 2, 3])
    assert result["acc@1"] == 0.25 and result["acc@2"] == 0.5 and result["acc@3"] == 0.75
    assert result["per_group"] == {
        "R1": {"acc@1": 0.5, "acc@2": 0.5, "acc@3": 1.0, "queries": 2},
        "R2": {"acc@1": 0.0, "acc@2": 0.5, "acc@3": 0.5, "queries": 2},
    }
    assert result["macro_acc@3"] == 0.75


def test_macro_differs_from_micro_for_unequal_groups(acc_at_k):
    result = acc_at_k.compute(
        predictions=[["a"], ["a"], ["a"], ["b"]], references=[["a"], ["a"], ["a"], ["a"]], groups=["big"] * 3 + ["small"], k=1
    )
    assert result["acc@1"] == 0.75 and result["macro_acc@1"] == 0.5


def test_squad_normalisation_and_exact_default(acc_at_k):
    predictions, references = [["The Insulin,"]], [["insulin"]]
    assert acc_at_k.compute(predictions=predictions, references=references, k=1) == {"acc@1": 0.0}
    assert acc_at_k.compute(predictions=predictions, references=references, k=1, normalize="squad") == {"acc@1": 1.0}


def test_squad_drops_the_article_like_word_a(acc_at_k):
    # documented on the card: "vitamin A" and "vitamin" are one answer under squad, two under exact
    result = acc_at_k.compute(predictions=[["Vitamin A"]], references=[["vitamin"]], k=1, normalize="squad")
    assert result == {"acc@1": 1.0}
    assert acc_at_k.compute(predictions=[["vitamin A"]], references=[["vitamin"]], k=1) == {"acc@1": 0.0}


def test_dedupe_merges_repeats_before_the_cut_keeping_the_first(acc_at_k):
    predictions, references = [["aspirin", "Aspirin", "aspirin", "heparin"]], [["heparin"]]
    assert acc_at_k.compute(predictions=predictions, references=references, k=2, normalize="squad") == {"acc@2": 0.0}
    assert acc_at_k.compute(predictions=predictions, references=references, k=2, normalize="squad", dedupe=True) == {"acc@2": 1.0}
    # under exact comparison only identical strings merge: "Aspirin" still takes rank 2
    assert acc_at_k.compute(predictions=predictions, references=references, k=2, dedupe=True) == {"acc@2": 0.0}
    assert acc_at_k.compute(predictions=predictions, references=references, k=3, dedupe=True) == {"acc@3": 1.0}


def test_dedupe_off_by_default_scores_as_given(acc_at_k):
    predictions, references = [["a", "a", "b"], ["c", "d"]], [["b"], ["d"]]
    plain = acc_at_k.compute(predictions=predictions, references=references, k=[1, 2])
    assert plain == acc_at_k.compute(predictions=predictions, references=references, k=[1, 2], dedupe=False)
    assert plain == {"acc@1": 0.0, "acc@2": 0.5}


def test_default_cutoffs_are_1_and_10(acc_at_k):
    ranked = [str(i) for i in range(12)]
    result = acc_at_k.compute(predictions=[ranked], references=[["9"]])
    assert result == {"acc@1": 0.0, "acc@10": 1.0}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"k": 0}, "positive int"),
        ({"k": []}, "positive int"),
        ({"normalize": "lower"}, "normalize must be one of"),
        ({"groups": ["a"]}, "one group per query"),
        ({"dedupe": "False"}, "dedupe must be True or False"),
        ({"dedupe": 1}, "dedupe must be True or False"),
    ],
)
def test_bad_arguments_are_refused(acc_at_k, kwargs, message):
    with pytest.raises(ValueError, match=message):
        acc_at_k.compute(predictions=[["a"], ["b"]], references=[["a"], ["b"]], **kwargs)


def test_empty_gold_list_names_the_row(acc_at_k):
    with pytest.raises(ValueError, match=r"references\[1\] is empty"):
        acc_at_k.compute(predictions=[["a"], ["b"]], references=[["a"], []])


names = st.sampled_from(["a", "b", "c", "d", "e", "f"])
queries = st.lists(st.tuples(st.lists(names, max_size=6), st.lists(names, min_size=1, max_size=3)), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(queries, st.lists(st.integers(1, 8), min_size=1, max_size=4, unique=True))
def test_values_in_unit_interval_and_non_decreasing_in_k(acc_at_k, data, cutoffs):
    predictions, references = [p for p, _ in data], [r for _, r in data]
    result = acc_at_k.compute(predictions=predictions, references=references, k=cutoffs)
    values = [result[f"acc@{c}"] for c in sorted(cutoffs)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert values == sorted(values)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(1, 6), st.data())
def test_macro_equals_micro_when_groups_have_equal_size(acc_at_k, n_groups, size, data):
    rows = data.draw(
        st.lists(
            st.tuples(st.lists(names, max_size=4), st.lists(names, min_size=1, max_size=2)),
            min_size=n_groups * size,
            max_size=n_groups * size,
        )
    )  # noqa: E501
    groups = [f"g{i // size}" for i in range(n_groups * size)]
    result = acc_at_k.compute(predictions=[p for p, _ in rows], references=[r for _, r in rows], groups=groups, k=[1, 3])
    for c in (1, 3):
        assert result[f"macro_acc@{c}"] == pytest.approx(result[f"acc@{c}"])


@settings(max_examples=60, deadline=None)
@given(queries, st.integers(1, 8))
def test_dedupe_never_lowers_acc_and_equals_scoring_the_distinct_list(acc_at_k, data, cutoff):
    # merging repeats only moves later names up; the result is that of the list without repeats
    predictions, references = [p for p, _ in data], [r for _, r in data]
    plain = acc_at_k.compute(predictions=predictions, references=references, k=cutoff)[f"acc@{cutoff}"]
    merged = acc_at_k.compute(predictions=predictions, references=references, k=cutoff, dedupe=True)[f"acc@{cutoff}"]
    distinct = [list(dict.fromkeys(p)) for p in predictions]
    assert merged >= plain
    assert merged == acc_at_k.compute(predictions=distinct, references=references, k=cutoff)[f"acc@{cutoff}"]
