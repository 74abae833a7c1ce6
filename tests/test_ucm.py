"""The ucm evaluate module on hand-computed cases (its examples: test_metric_common)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def ucm():
    import evaluate

    from medprobe.resources import metric_path

    return evaluate.load(metric_path("ucm"))


def test_figure1_rank_change_example_is_understand_with_the_documented_rank_changes(ucm):
    # target 2 -> 1, added nasal stuffiness 20 -> 2, correct postnasal drip 6 -> 3,
    # incorrect sick feeling 3 -> 10 and heartburn 5 -> 6
    result = ucm.compute(
        target_rank_before=[2],
        target_rank_after=[1],
        added_is_correct=[True],
        added_rank_changes=[2 - 20],
        correct_rank_changes=[[3 - 6]],
        incorrect_rank_changes=[[10 - 3, 6 - 5]],
    )
    assert (result["understand"], result["confuse"], result["misunderstand"]) == (1.0, 0.0, 0.0)
    assert result["rank_change"]["correct_added"] == {
        "RC-Ot": -1.0,
        "RC-Oa": -18.0,
        "RC-Ocor": -3.0,
        "RC-Oincor": 4.0,
        "steps": 1,
    }


def test_hand_computed_shares_groups_and_exclusion(ucm):
    # group a: correct steps RC -2 (U), 0 (C), +1 (M), +3 (M); one incorrect step RC -5 (excluded)
    # group b: correct steps RC -1 (U); incorrect step RC +2 (excluded)
    result = ucm.compute(
        target_rank_before=[4, 4, 4, 4, 9, 3, 3],
        target_rank_after=[2, 4, 5, 7, 4, 2, 5],
        added_is_correct=[True, True, True, True, False, True, False],
        groups=["a", "a", "a", "a", "a", "b", "b"],
    )
    assert result["steps"] == 5 and result["excluded_steps"] == 2
    assert (result["understand"], result["confuse"], result["misunderstand"]) == (2 / 5, 1 / 5, 2 / 5)
    assert result["per_group"]["a"] == {
        "understand": 0.25,
        "confuse": 0.25,
        "misunderstand": 0.5,
        "steps": 4,
        "excluded_steps": 1,
    }
    assert result["per_group"]["b"] == {"understand": 1.0, "confuse": 0.0, "misunderstand": 0.0, "steps": 1, "excluded_steps": 1}
    assert result["macro_understand"] == pytest.approx((0.25 + 1.0) / 2)
    # the excluded steps' own rank changes: -5 and +2
    assert result["rank_change"]["incorrect_added"] == {"RC-Ot": -1.5, "steps": 2}
    assert result["rank_change"]["correct_added"]["RC-Ot"] == pytest.approx((-2 + 0 + 1 + 3 - 1) / 5)


def test_an_incorrect_added_object_never_counts_whatever_the_target_does(ucm):
    only_incorrect = ucm.compute(
        target_rank_before=[5, 5], target_rank_after=[1, 9], added_is_correct=[False, False], groups=["a", "b"]
    )
    assert only_incorrect["understand"] is None and only_incorrect["steps"] == 0 and only_incorrect["excluded_steps"] == 2
    assert only_incorrect["per_group"]["a"]["understand"] is None and only_incorrect["macro_understand"] is None
    with_one_correct = ucm.compute(
        target_rank_before=[5, 5, 5], target_rank_after=[1, 9, 5], added_is_correct=[False, False, True]
    )
    assert (with_one_correct["understand"], with_one_correct["confuse"], with_one_correct["misunderstand"]) == (0.0, 1.0, 0.0)


def test_object_rank_changes_average_over_objects_then_steps(ucm):
    result = ucm.compute(
        target_rank_before=[3, 3, 3],
        target_rank_after=[3, 3, 3],
        added_is_correct=[True, True, False],
        added_rank_changes=[-4, -2, 6],
        correct_rank_changes=[[-1, -3], [], [5]],  # step 2 has no correct object in context
        incorrect_rank_changes=[[2], [4, 4, 4, 0], []],
    )
    correct = result["rank_change"]["correct_added"]
    assert correct["RC-Oa"] == -3.0 and correct["RC-Ocor"] == -2.0 and correct["RC-Oincor"] == 2.5
    incorrect = result["rank_change"]["incorrect_added"]
    assert incorrect == {"RC-Ot": 0.0, "RC-Oa": 6.0, "RC-Ocor": 5.0, "RC-Oincor": None, "steps": 1}


def test_top_k_accuracy_without_and_with_context(ucm):
    result = ucm.compute(
        target_rank_before=[2],
        target_rank_after=[1],
        added_is_correct=[True],
        ranks_without_context=[1, 4, 12, 30],
        ranks_with_context=[1, 1, 8, 11],
        k=[1, 10],
    )
    assert result["acc@1_without_context"] == 0.25 and result["acc@10_without_context"] == 0.5
    assert result["acc@1_with_context"] == 0.5 and result["acc@10_with_context"] == 0.75


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 50), st.integers(1, 50), st.booleans(), st.sampled_from("xyz")), min_size=1, max_size=30)
)
def test_shares_sum_to_one_and_count_every_step(ucm, steps):
    before, after, correct, groups = map(list, zip(*steps))
    result = ucm.compute(target_rank_before=before, target_rank_after=after, added_is_correct=correct, groups=groups)
    assert result["steps"] + result["excluded_steps"] == len(steps)
    for values in [result, *result["per_group"].values()]:
        if values["steps"]:
            assert math.isclose(values["understand"] + values["confuse"] + values["misunderstand"], 1.0)
            kept = [a - b for b, a, c, g in steps if c and (values is result or g == _group_of(result, values))]
            assert values["understand"] == pytest.approx(sum(rc < 0 for rc in kept) / len(kept))
        else:
            assert values["understand"] is None


def _group_of(result, values):
    return next(g for g, v in result["per_group"].items() if v is values)


def test_bad_input_is_a_clear_error(ucm):
    with pytest.raises(ValueError, match="no steps to score"):
        ucm.compute(target_rank_before=[], target_rank_after=[], added_is_correct=[])
    with pytest.raises(ValueError, match="groups has 1 entries but there are 2 steps"):
        ucm.compute(target_rank_before=[1, 2], target_rank_after=[1, 2], added_is_correct=[True, True], groups=["a"])
    with pytest.raises(ValueError, match=r"target_rank_before\[0\] is 0; expected a rank, a positive int with 1 = best"):
        ucm.compute(target_rank_before=[0], target_rank_after=[1], added_is_correct=[True])
    with pytest.raises(ValueError, match="k must be a positive int"):
        ucm.compute(target_rank_before=[1], target_rank_after=[1], added_is_correct=[True], ranks_with_context=[1], k=0)
