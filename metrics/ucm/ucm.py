# Copyright 2026 The medprobe developers.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""UCM: Understand / Confuse / Misunderstand shares from rank changes under growing context."""

import datasets
import evaluate
import numpy as np

_DESCRIPTION = """\
UCM (Yao et al., AMIA 2023) measures how a language model's ranking of the answer of a cloze
query changes when context is added one segment at a time. A step adds one segment holding one
entity, the added object O_a; the rank change of an object is RC = rank_after - rank_before
(negative = the object moved up). Only steps whose added object is correct (it satisfies the
queried relation) count: such a step is Understand when the target O_t moved up (RC(O_t) < 0),
Confuse when its rank did not change (RC = 0) and Misunderstand when it moved down (RC > 0).
The shares of the three are UCM_k over one group (a relation) and UCM_m over everything.
Steps whose added object is incorrect are left out of the shares; their rank changes are
reported separately. The mean rank changes of the target (RC-Ot), the added object (RC-Oa)
and the correct (RC-Ocor) and incorrect (RC-Oincor) objects already in the context are given
for both kinds of step, and top-k accuracy without and with context when ranks are given.
"""

_KWARGS_DESCRIPTION = """
Args:
    target_rank_before (`list` of `int`): per step, the target's rank (1 = best) before the segment was added.
    target_rank_after (`list` of `int`): per step, the target's rank after the segment was added.
    added_is_correct (`list` of `bool`): per step, whether the added object is correct (in O_cor).
    groups (`list` of `str`, optional): a group per step, e.g. the relation (a non-empty str). Adds
        `per_group` (UCM_k) and the `macro_*` shares (the mean over groups).
    added_rank_changes (`list` of `int`, optional): per step, RC of the added object.
    correct_rank_changes (`list` of `list` of `int`, optional): per step, RC of each correct object
        already in the context (other than the target and the added object); may be empty.
    incorrect_rank_changes (`list` of `list` of `int`, optional): the same for incorrect objects.
    ranks_without_context (`list` of `int`, optional): per query, the best rank of a gold answer
        for the prompt alone.
    ranks_with_context (`list` of `int`, optional): per query, the same with the context.
    k (`int` or `list` of `int`, optional): cut-offs for the top-k accuracies, positive Python or
        numpy integers. Defaults to `[1, 10]`.

    Everything given per step (the three required lists, `groups` and the rank-change lists) is
    an input feature, so evaluate's distributed mode (`num_process`, `process_id`) gathers it
    across processes; an optional one is given for all the steps of a computation or for none.
    `ranks_without_context` and `ranks_with_context` are per query, not per step, so evaluate
    cannot gather them: with `num_process > 1` they are refused rather than scored on one
    process's queries.

    Inputs are checked as given, before evaluate casts them: ranks must be positive ints and rank
    changes ints (Python or numpy; a float such as 2.0 or 2.9, a bool or a string is refused), and
    `added_is_correct` must hold real bools (Python or numpy; "False", 0 and 1 are refused). A bad
    value is a ValueError naming the argument and the step.

Returns:
    `understand`, `confuse`, `misunderstand` (`float` or `None`): shares of the steps with a correct
        added object (UCM_m); they sum to 1; `None` when there is no such step.
    `steps` (`int`): steps with a correct added object; `excluded_steps` (`int`): the other steps.
    `macro_understand`, `macro_confuse`, `macro_misunderstand` (`float`, with `groups`): means over
        the groups that have steps.
    `per_group` (`dict`, with `groups`): `{group: {"understand", "confuse", "misunderstand", "steps",
        "excluded_steps"}}` (UCM_k).
    `rank_change` (`dict`): `{"correct_added": {...}, "incorrect_added": {...}}`, each with `RC-Ot`
        (and `RC-Oa`, `RC-Ocor`, `RC-Oincor` when given) as means over steps, and `steps`. RC-Ocor
        and RC-Oincor first average over the objects of a step, then over the steps that have any.
        A mean over no step is `None`.
    `acc@{k}_without_context`, `acc@{k}_with_context` (`float`, when the ranks are given).

Examples:

    The paper's worked example: adding a segment with a correct object moves the target from rank
    2 to 1, the added object from 20 to 2, a correct object from 6 to 3 and two incorrect objects
    from 3 to 10 and 5 to 6:

    >>> from medprobe.resources import metric_path  # the folder, in a checkout or an installed wheel
    >>> ucm = evaluate.load(metric_path("ucm"))  # or the Hub id of the Space
    >>> result = ucm.compute(
    ...     target_rank_before=[2], target_rank_after=[1], added_is_correct=[True],
    ...     added_rank_changes=[2 - 20], correct_rank_changes=[[3 - 6]],
    ...     incorrect_rank_changes=[[10 - 3, 6 - 5]],
    ... )
    >>> result["understand"], result["confuse"], result["misunderstand"]
    (1.0, 0.0, 0.0)
    >>> result["rank_change"]["correct_added"]
    {'RC-Ot': -1.0, 'RC-Oa': -18.0, 'RC-Ocor': -3.0, 'RC-Oincor': 4.0, 'steps': 1}

    Steps that add an incorrect object are excluded from the shares:

    >>> result = ucm.compute(
    ...     target_rank_before=[5, 5, 5, 5], target_rank_after=[3, 5, 9, 1],
    ...     added_is_correct=[True, True, True, False], groups=["a", "a", "b", "b"],
    ... )
    >>> result["understand"], result["steps"], result["excluded_steps"]
    (0.3333333333333333, 3, 1)
    >>> result["per_group"]["b"]
    {'understand': 0.0, 'confuse': 0.0, 'misunderstand': 1.0, 'steps': 1, 'excluded_steps': 1}

    A string is not a bool (bool("False") is True):

    >>> ucm.compute(target_rank_before=[2], target_rank_after=[1], added_is_correct=["False"])
    Traceback (most recent call last):
    ...
    ValueError: added_is_correct[0] is 'False'; expected a bool (True when the added object is correct)
"""

_CITATION = """\
@inproceedings{yao-etal-2023-context,
    title = "Context Variance Evaluation of Pretrained Language Models for Prompt-based Biomedical Knowledge Probing",
    author = "Yao, Zonghai and Cao, Yi and Yang, Zhichao and Yu, Hong",
    booktitle = "AMIA Joint Summits on Translational Science Proceedings",
    year = "2023",
    pages = "592--601",
}
"""

_SHARES = ("understand", "confuse", "misunderstand")
_REQUIRED = ("target_rank_before", "target_rank_after", "added_is_correct")
_OPTIONAL = ("groups", "added_rank_changes", "correct_rank_changes", "incorrect_rank_changes")
# What a step added without `groups` stores in the groups column. Not None: evaluate refuses a
# None in the first row of a string column. Not a valid group either: groups must be non-empty.
_NO_GROUP = ""


def _shown(value):
    """A value for a one-line error message: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(value):
    """A Python or numpy integer; a bool is not one (True is no rank)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _column(name, values, what="step"):
    """A per-step (or per-query) input as a plain list (from a list, tuple, numpy array, tensor or datasets Column)."""
    if isinstance(values, (str, bytes, dict)):
        raise ValueError(f"{name} is {_shown(values)}; expected a list with one entry per {what}")
    if hasattr(values, "tolist"):  # numpy arrays and tensors give Python values, so 2.9 stays a float
        values = values.tolist()
    try:
        return list(values)
    except TypeError:
        raise ValueError(f"{name} is {_shown(values)}; expected a list with one entry per {what}") from None


def _check_ranks(name, ranks):
    for index, rank in enumerate(ranks):
        if not _is_int(rank) or rank < 1:
            raise ValueError(f"{name}[{index}] is {_shown(rank)}; expected a rank, a positive int with 1 = best")


def _check_rank_changes(name, changes):
    for index, change in enumerate(changes):
        if not _is_int(change):
            raise ValueError(f"{name}[{index}] is {_shown(change)}; expected an int (rank after - rank before)")


def _check_rank_change_lists(name, rows):
    for index, row in enumerate(rows):
        if isinstance(row, np.ndarray):
            row = row.tolist()
        if not isinstance(row, (list, tuple)):
            raise ValueError(f"{name}[{index}] is {_shown(row)}; expected a list of int (one per object, may be empty)")
        _check_rank_changes(f"{name}[{index}]", row)


def _check_bools(name, values):
    for index, value in enumerate(values):
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{name}[{index}] is {_shown(value)}; expected a bool (True when the added object is correct)")


def _check_groups(name, groups):
    for index, group in enumerate(groups):
        if not isinstance(group, str) or group == _NO_GROUP:
            raise ValueError(
                f"{name}[{index}] is {_shown(group)}; expected a non-empty str (the step's group, e.g. its relation)"
            )


_CHECKS = {
    "target_rank_before": _check_ranks,
    "target_rank_after": _check_ranks,
    "added_is_correct": _check_bools,
    "groups": _check_groups,
    "added_rank_changes": _check_rank_changes,
    "correct_rank_changes": _check_rank_change_lists,
    "incorrect_rank_changes": _check_rank_change_lists,
}


def _checked_batch(inputs):
    """The per-step inputs of `add_batch` as plain lists, checked before evaluate casts them to its features."""
    missing = [name for name in _REQUIRED if inputs.get(name) is None]
    if missing:
        raise ValueError(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} required: give one value per step")
    batch = {name: _column(name, inputs[name]) for name in (*_REQUIRED, *_OPTIONAL) if inputs.get(name) is not None}
    steps = len(batch["target_rank_before"])
    for name, values in batch.items():
        if len(values) != steps:
            raise ValueError(f"{name} has {len(values)} entries but there are {steps} steps; give one per step")
        _CHECKS[name](name, values)
    batch["added_is_correct"] = [bool(value) for value in batch["added_is_correct"]]  # numpy bools as Python bools
    batch.setdefault("groups", [_NO_GROUP] * steps)
    for name in _OPTIONAL:  # an absent list is a column of nulls, so that every batch has the same columns
        batch.setdefault(name, [None] * steps)
    return batch


def _cutoffs(k):
    """The sorted distinct cut-offs as Python ints; numpy integers are welcome, bools and floats are not."""
    values = k.tolist() if isinstance(k, np.ndarray) else k
    values = [values] if _is_int(values) else values
    if not isinstance(values, (list, tuple)) or not values or not all(_is_int(c) and c >= 1 for c in values):
        raise ValueError(f"k must be a positive int or a non-empty list of them, got {_shown(k)}")
    return sorted({int(c) for c in values})


def _checked_query_ranks(name, ranks, num_process):
    """A per-query rank list (not an input feature), or None when not given."""
    if ranks is None:
        return None
    if num_process > 1:
        raise ValueError(
            f"{name} is per query, not per step, so evaluate cannot gather it across processes; "
            "give it only with num_process=1 (e.g. on the main process, with all queries)"
        )
    ranks = _column(name, ranks, "query")
    if not ranks:
        raise ValueError(f"{name} is empty: give one rank per query")
    _check_ranks(name, ranks)
    return ranks


def _stored(name, values, absent):
    """An optional column as stored, or None when no step was given it."""
    missing = [index for index, value in enumerate(values) if value == absent or value is None]
    if len(missing) == len(values):
        return None
    if missing:
        raise ValueError(
            f"{name} was given for some steps but not for {len(missing)} of them (the first: step {missing[0]}); "
            "give it for every step or for none"
        )
    return values


def _shares(target_changes, correct_added):
    kept = target_changes[correct_added]
    result = {"understand": None, "confuse": None, "misunderstand": None}
    if kept.size:
        understand = int((kept < 0).sum())
        confuse = int((kept == 0).sum())
        misunderstand = kept.size - understand - confuse
        result = {
            "understand": understand / kept.size,
            "confuse": confuse / kept.size,
            "misunderstand": misunderstand / kept.size,
        }
    return {**result, "steps": int(kept.size), "excluded_steps": int(target_changes.size - kept.size)}


def _mean(values):
    return float(np.mean(values)) if len(values) else None


def _rank_changes(target_changes, selected, added_changes, correct_changes, incorrect_changes):
    """Mean rank changes over the selected steps."""
    summary = {"RC-Ot": _mean(target_changes[selected])}
    if added_changes is not None:
        summary["RC-Oa"] = _mean(np.asarray(added_changes)[selected])
    for name, per_step in (("RC-Ocor", correct_changes), ("RC-Oincor", incorrect_changes)):
        if per_step is not None:
            # average over the objects of a step first, so that a step with many objects counts once
            step_means = [np.mean(changes) for changes, keep in zip(per_step, selected) if keep and len(changes)]
            summary[name] = _mean(step_means)
    summary["steps"] = int(selected.sum())
    return summary


def _accuracy(ranks, cutoff):
    return float((np.asarray(ranks) <= cutoff).mean())


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class UCM(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "target_rank_before": datasets.Value("int64"),
                    "target_rank_after": datasets.Value("int64"),
                    "added_is_correct": datasets.Value("bool"),
                    "groups": datasets.Value("string"),
                    "added_rank_changes": datasets.Value("int64"),
                    "correct_rank_changes": datasets.Sequence(datasets.Value("int64")),
                    "incorrect_rank_changes": datasets.Sequence(datasets.Value("int64")),
                }
            ),
            reference_urls=["https://arxiv.org/abs/2211.10265"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Score the steps given here and those added before."""
        # the per-query ranks and k are not stored by evaluate: check them before the steps are
        for name in ("ranks_without_context", "ranks_with_context"):
            kwargs[name] = _checked_query_ranks(name, kwargs.get(name), self.num_process)
        _cutoffs(kwargs.get("k", 1))
        return super().compute(predictions=predictions, references=references, **kwargs)

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add steps (the per-step inputs below), checked before evaluate casts them."""
        inputs = {name: kwargs.pop(name, None) for name in (*_REQUIRED, *_OPTIONAL)}
        super().add_batch(predictions=predictions, references=references, **_checked_batch(inputs), **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one step: its per-step inputs below, each a single value."""
        values = {name: kwargs.pop(name, None) for name in (*_REQUIRED, *_OPTIONAL)}
        inputs = {name: None if value is None else [value] for name, value in values.items()}
        step = {name: column[0] for name, column in _checked_batch(inputs).items()}
        super().add(prediction=prediction, reference=reference, **step, **kwargs)

    def _compute(
        self,
        target_rank_before,
        target_rank_after,
        added_is_correct,
        groups,
        added_rank_changes,
        correct_rank_changes,
        incorrect_rank_changes,
        ranks_without_context=None,
        ranks_with_context=None,
        k=(1, 10),
    ):
        if not target_rank_before:
            raise ValueError("no steps to score: give the target's rank before and after each added segment")
        cutoffs = _cutoffs(k)
        groups = _stored("groups", groups, _NO_GROUP)
        added_rank_changes = _stored("added_rank_changes", added_rank_changes, None)
        correct_rank_changes = _stored("correct_rank_changes", correct_rank_changes, None)
        incorrect_rank_changes = _stored("incorrect_rank_changes", incorrect_rank_changes, None)
        correct_added = np.asarray(added_is_correct, dtype=bool)
        target_changes = np.asarray(target_rank_after) - np.asarray(target_rank_before)

        result = _shares(target_changes, correct_added)
        result["rank_change"] = {
            kind: _rank_changes(target_changes, selected, added_rank_changes, correct_rank_changes, incorrect_rank_changes)
            for kind, selected in (("correct_added", correct_added), ("incorrect_added", ~correct_added))
        }
        if groups is not None:
            labels = np.asarray(groups)
            per_group = {
                group: _shares(target_changes[labels == group], correct_added[labels == group]) for group in sorted(set(groups))
            }
            scored = [values for values in per_group.values() if values["steps"]]
            for share in _SHARES:
                result[f"macro_{share}"] = _mean([values[share] for values in scored])
            result["per_group"] = per_group
        for name, ranks in (("without_context", ranks_without_context), ("with_context", ranks_with_context)):
            if ranks is not None:
                for cutoff in cutoffs:
                    result[f"acc@{cutoff}_{name}"] = _accuracy(ranks, cutoff)
        return result
