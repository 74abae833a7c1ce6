"""Conformance of every shipped metric: it loads, its documented examples run, bad input is a
one-line ValueError, and evaluation split over two processes gives the single-process result."""

import doctest
import multiprocessing
import re
import uuid
from pathlib import Path

import numpy as np
import pytest

from medprobe.resources import available, metric_path

# Per metric: rows with every per-example input (groups, diseases, per-step lists), the compute
# options, and the values they score. The groups are laid out so that interleaved shards (process
# p gets rows p, p + 2, ...) split every group across both processes, unevenly.
CASES = {
    "acc_at_k": {
        "rows": {
            "predictions": [["a", "b"], ["x"], ["c"], ["b", "a"], ["q", "r"], ["a"], ["z", "y"], ["y"], ["c", "a"]],
            "references": [["b"], ["x", "y"], ["z"], ["a"], ["r"], ["a"], ["y"], ["w"], ["a"]],
            "groups": ["R1", "R1", "R2", "R1", "R2", "R2", "R3", "R1", "R3"],
        },
        "options": {"k": [1, 2]},
    },
    "disease_f1": {
        "rows": {
            "predictions": [1, 0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0],
            "references": [1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1, 1],
            "diseases": ["A", "B", "A", "C", "B", "A", "B", "C", "A", "B", "C", "C"],
        },
        "options": {},
    },
    "ucm": {
        "rows": {
            "target_rank_before": [4, 4, 9, 3, 3, 5, 2, 7, 6, 1],
            "target_rank_after": [2, 4, 4, 2, 5, 9, 1, 7, 3, 2],
            "added_is_correct": [True, True, False, True, False, True, True, False, True, True],
            "groups": ["a", "b", "a", "a", "b", "b", "a", "c", "c", "a"],
            "added_rank_changes": [-3, 0, 5, -1, 2, 4, -6, 0, -2, 1],
            "correct_rank_changes": [[-1, -3], [], [5], [2], [], [0, 1], [-4], [], [3, 3], [1]],
            "incorrect_rank_changes": [[2], [4, 4, 0], [], [1], [-2], [], [6], [3], [], [0]],
        },
        "options": {"k": [1, 3]},
    },
}

# Per metric: inputs evaluate's feature cast would turn into something else (floats into ints,
# strings into bools) and the start of the one-line error that refuses them.
BAD_INPUTS = {
    "acc_at_k": [
        ({"references": ["b", ["a"]]}, r"references\[0\] is 'b'; expected a list of str"),
        ({"predictions": [["a", 1], ["b"]]}, r"predictions\[0\]\[1\] is 1; expected a str"),
        ({"groups": ["R1", 2]}, r"groups\[1\] is 2; expected a non-empty str"),
        ({"k": 1.0}, r"k must be a positive int"),
        ({"k": True}, r"k must be a positive int"),
    ],
    "disease_f1": [
        ({"predictions": [0.9, 0.1]}, r"predictions\[0\] is 0.9; expected the int 0 or 1"),
        ({"predictions": [1.0, 0]}, r"predictions\[0\] is 1.0; expected the int 0 or 1"),
        ({"references": [1, True]}, r"references\[1\] is True; expected the int 0 or 1"),
        ({"references": ["1", 0]}, r"references\[0\] is '1'; expected the int 0 or 1"),
        ({"diseases": ["A", 7]}, r"diseases\[1\] is 7; expected a non-empty str"),
        ({"diseases": ["A", ""]}, r"diseases\[1\] is ''; expected a non-empty str"),
        ({"diseases": ["A", " "]}, r"diseases\[1\] is ' '; expected a non-empty str, not blank"),
    ],
    "ucm": [
        ({"target_rank_before": [2.9, 3]}, r"target_rank_before\[0\] is 2.9; expected a rank"),
        ({"target_rank_after": [1, 2.0]}, r"target_rank_after\[1\] is 2.0; expected a rank"),
        ({"added_is_correct": ["False", True]}, r"added_is_correct\[0\] is 'False'; expected a bool"),
        ({"added_is_correct": [0, 1]}, r"added_is_correct\[0\] is 0; expected a bool"),
        ({"added_rank_changes": [1, 0.5]}, r"added_rank_changes\[1\] is 0.5; expected an int"),
        ({"correct_rank_changes": [[1], [2.5]]}, r"correct_rank_changes\[1\]\[0\] is 2.5; expected an int"),
        ({"groups": ["a", None]}, r"groups\[1\] is None; expected a non-empty str"),
    ],
}
# A valid two-row call that BAD_INPUTS changes one argument of.
GOOD_PAIRS = {
    "acc_at_k": {"predictions": [["a"], ["b"]], "references": [["a"], ["c"]], "groups": ["R1", "R2"]},
    "disease_f1": {"predictions": [1, 0], "references": [1, 1], "diseases": ["A", "A"]},
    "ucm": {"target_rank_before": [2, 3], "target_rank_after": [1, 3], "added_is_correct": [True, False], "groups": ["a", "b"]},
}


@pytest.fixture(scope="module")
def metrics():
    import evaluate

    return {name: evaluate.load(metric_path(name)) for name in available("metrics")}


def test_every_shipped_metric_has_a_conformance_case():
    assert set(available("metrics")) == set(CASES) == set(BAD_INPUTS) == set(GOOD_PAIRS)


def _run_examples(text, name, monkeypatch, cwd):
    """(tried, failed) of the doctest examples in `text`, run from `cwd`."""
    import evaluate

    # not the checkout root: the examples must find the module the way an installed wheel does
    monkeypatch.chdir(cwd)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    test = doctest.DocTestParser().get_doctest(text, {"evaluate": evaluate}, name, None, 0)
    runner.run(test)
    return runner.tries, runner.failures


@pytest.mark.parametrize("name", available("metrics"))
def test_examples_load_the_module_through_metric_path_and_the_module_stays_self_contained(name, metrics):
    # a relative "metrics/<name>" only works from the checkout root; the module itself must not
    # need medprobe (it is uploaded alone to a Space), only its examples mention it
    source = (Path(metric_path(name)) / f"{name}.py").read_text(encoding="utf-8")
    card = (Path(metric_path(name)) / "README.md").read_text(encoding="utf-8")
    for text in (metrics[name].inputs_description, card):
        assert f'evaluate.load(metric_path("{name}"))' in text
        assert f'evaluate.load("metrics/{name}"' not in text
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith((">>>", "...")))
    assert not re.search(r"^\s*(import|from)\s+(probers|medprobe)", code, re.MULTILINE)


@pytest.mark.parametrize("name", available("metrics"))
def test_card_names_the_gradio_version_and_has_further_references(name):
    card = (Path(metric_path(name)) / "README.md").read_text(encoding="utf-8")
    space_yaml = card.split("---")[1]
    # the gradio the shared app (hub_cards/metric_app.py) was checked with; one version for every Space
    assert re.search(r"^sdk: gradio\nsdk_version: 6\.31\.0$", space_yaml, re.MULTILINE)
    references = card.split("## Further References", 1)
    assert len(references) == 2 and "](https://" in references[1]


@pytest.mark.parametrize("name", available("metrics"))
def test_docstring_examples_run(name, metrics, monkeypatch, tmp_path):
    tried, failed = _run_examples(metrics[name].inputs_description, name, monkeypatch, tmp_path)
    assert tried >= 4 and failed == 0, f"{failed} of {tried} examples of {name} failed"


@pytest.mark.parametrize("name", available("metrics"))
def test_card_examples_run(name, monkeypatch, tmp_path):
    card = (Path(metric_path(name)) / "README.md").read_text(encoding="utf-8")
    # the Python blocks of the card, one after another, share their names as a reader's session would
    blocks = "\n\n".join(re.findall(r"```python\n(.*?)```", card, re.DOTALL))
    tried, failed = _run_examples(blocks, f"{name} card", monkeypatch, tmp_path)
    assert tried >= 2 and failed == 0, f"{failed} of {tried} examples of the {name} card failed"


@pytest.mark.parametrize(
    "name, change, message", [(name, change, message) for name, cases in BAD_INPUTS.items() for change, message in cases]
)
def test_bad_input_is_refused_before_the_cast_with_a_one_line_error(name, change, message, metrics):
    with pytest.raises(ValueError, match=message) as refused:
        metrics[name].compute(**{**GOOD_PAIRS[name], **change})
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("name", available("metrics"))
def test_numpy_inputs_score_like_lists(name, metrics):
    rows = CASES[name]["rows"]
    as_arrays = {key: np.asarray(values) if not isinstance(values[0], list) else values for key, values in rows.items()}
    options = {key: np.asarray(value) for key, value in CASES[name]["options"].items()}
    assert metrics[name].compute(**as_arrays, **options) == metrics[name].compute(**rows, **CASES[name]["options"])


@pytest.mark.parametrize("name", available("metrics"))
def test_adding_one_row_at_a_time_scores_like_one_call(name, metrics):
    rows, options = CASES[name]["rows"], CASES[name]["options"]
    singular = {"predictions": "prediction", "references": "reference"}  # evaluate's names in add()
    metric = metrics[name]
    for index in range(len(next(iter(rows.values())))):
        metric.add(**{singular.get(key, key): values[index] for key, values in rows.items()})
    assert metric.compute(**options) == metrics[name].compute(**rows, **options)


def _shard(rows, process_id, num_process):
    """Rows process_id, process_id + num_process, ... (DistributedSampler's and accelerate's split)."""
    return {key: values[process_id::num_process] for key, values in rows.items()}


def _compute_in_process(job):
    """One process of a distributed evaluation: its own shard, the shared experiment id."""
    metric_class, num_process, process_id, rows, options, experiment_id, cache_dir, add_in_batches = job
    metric = metric_class(
        num_process=num_process, process_id=process_id, experiment_id=experiment_id, cache_dir=cache_dir, timeout=60
    )
    shard = _shard(rows, process_id, num_process)
    if not add_in_batches:
        return metric.compute(**shard, **options)
    for start in range(0, len(next(iter(shard.values()))), 2):
        metric.add_batch(**{key: values[start : start + 2] for key, values in shard.items()})
    return metric.compute(**options)


def _distributed(metric, rows, options, cache_dir, add_in_batches=False, num_process=2):
    experiment_id = f"test-{uuid.uuid4().hex}"  # shared by the processes of this evaluation only
    jobs = [
        (type(metric), num_process, p, rows, options, experiment_id, str(cache_dir), add_in_batches) for p in range(num_process)
    ]
    # fork: the children share the loaded metric class, as evaluate's own distributed tests do
    with multiprocessing.get_context("fork").Pool(num_process) as pool:
        return pool.map_async(_compute_in_process, jobs).get(timeout=120)


@pytest.mark.parametrize("add_in_batches", [False, True], ids=["compute", "add_batch"])
@pytest.mark.parametrize("name", available("metrics"))
def test_two_process_interleaved_evaluation_equals_single_process(name, add_in_batches, metrics, tmp_path):
    rows, options = CASES[name]["rows"], CASES[name]["options"]
    single = metrics[name].compute(**rows, **options)
    main, other = _distributed(metrics[name], rows, options, tmp_path, add_in_batches)
    assert other is None
    assert main == single
    assert set(main).intersection({"per_group", "per_disease"})  # the per-example groups were scored


def test_distributed_groups_give_the_single_process_per_group_values(metrics, tmp_path):
    # hand-checked: R1 holds rows 0, 1, 3, 7 -> hits at 2, 1, 2, none: acc@1 1/4, acc@2 3/4
    main, _ = _distributed(metrics["acc_at_k"], CASES["acc_at_k"]["rows"], {"k": [1, 2]}, tmp_path)
    assert main["per_group"]["R1"] == {"acc@1": 0.25, "acc@2": 0.75, "queries": 4}


def test_distributed_dedupe_gives_the_single_process_values(metrics, tmp_path):
    # dedupe is a compute() option, not a per-query input: every process passes it, process 0 applies it
    rows = {
        "predictions": [["A.", "a", "b"], ["x", "X", "y"], ["c", "d"], ["The Q", "q", "r"], ["e", "E", "e", "f"]],
        "references": [["b"], ["y"], ["d"], ["r"], ["f"]],
        "groups": ["R1", "R2", "R1", "R2", "R1"],
    }
    options = {"k": [2], "normalize": "squad", "dedupe": True}
    single = metrics["acc_at_k"].compute(**rows, **options)
    assert single["acc@2"] == 1.0  # every gold answer is second once repeats are merged
    assert metrics["acc_at_k"].compute(**rows, k=[2], normalize="squad")["acc@2"] == 0.2  # only "c", "d"
    main, other = _distributed(metrics["acc_at_k"], rows, options, tmp_path)
    assert (main, other) == (single, None)


def test_plain_call_without_optional_features_still_works(metrics):
    assert metrics["acc_at_k"].compute(predictions=[["a"], ["b"]], references=[["a"], ["a"]], k=1) == {"acc@1": 0.5}
    plain = metrics["ucm"].compute(target_rank_before=[3, 3], target_rank_after=[1, 4], added_is_correct=[True, True])
    assert "per_group" not in plain and set(plain["rank_change"]["correct_added"]) == {"RC-Ot", "steps"}
    # an optional input given as None is the same as one left out
    metrics["ucm"].add(target_rank_before=3, target_rank_after=1, added_is_correct=True, groups=None)
    metrics["acc_at_k"].add(prediction=["a"], reference=["a"], groups=None)
    assert "per_group" not in metrics["ucm"].compute() and metrics["acc_at_k"].compute(k=1) == {"acc@1": 1.0}


def test_optional_feature_given_for_some_rows_only_is_refused(metrics):
    acc_at_k = metrics["acc_at_k"]
    acc_at_k.add_batch(predictions=[["a"]], references=[["a"]], groups=["R1"])
    with pytest.raises(ValueError, match="groups were given for some queries but not for 1 of them"):
        acc_at_k.compute(predictions=[["b"]], references=[["a"]])
    ucm = metrics["ucm"]
    ucm.add_batch(target_rank_before=[2], target_rank_after=[1], added_is_correct=[True], added_rank_changes=[-1])
    with pytest.raises(ValueError, match="added_rank_changes was given for some steps but not for 1 of them"):
        ucm.compute(target_rank_before=[2], target_rank_after=[1], added_is_correct=[True])


def test_numpy_integer_cutoffs_are_accepted_like_ints(metrics):
    acc_at_k, ucm = metrics["acc_at_k"], metrics["ucm"]
    assert acc_at_k.compute(predictions=[["a"]], references=[["a"]], k=np.int64(1)) == {"acc@1": 1.0}
    assert acc_at_k.compute(predictions=[["b", "a"]], references=[["a"]], k=[np.int32(1), 2]) == {"acc@1": 0.0, "acc@2": 1.0}
    result = ucm.compute(
        target_rank_before=[2], target_rank_after=[1], added_is_correct=[True], ranks_with_context=[1], k=np.int64(1)
    )
    assert result["acc@1_with_context"] == 1.0


def test_per_query_ranks_are_refused_in_distributed_mode(metrics, tmp_path):
    # they are not per step, so evaluate would score only process 0's queries
    ucm = type(metrics["ucm"])(num_process=2, process_id=0, experiment_id=f"test-{uuid.uuid4().hex}", cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match="ranks_with_context is per query, not per step"):
        ucm.compute(target_rank_before=[2], target_rank_after=[1], added_is_correct=[True], ranks_with_context=[1])
