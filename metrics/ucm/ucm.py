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

import numpy as np

import datasets
import evaluate

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
    groups (`list` of `str`, optional): a group per step, e.g. the relation. Adds `per_group`
        (UCM_k) and the `macro_*` shares (the mean over groups).
    added_rank_changes (`list` of `int`, optional): per step, RC of the added object.
    correct_rank_changes (`list` of `list` of `int`, optional): per step, RC of each correct object
        already in the context (other than the target and the added object); may be empty.
    incorrect_rank_changes (`list` of `list` of `int`, optional): the same for incorrect objects.
    ranks_without_context (`list` of `int`, optional): per query, the best rank of a gold answer
        for the prompt alone.
    ranks_with_context (`list` of `int`, optional): per query, the same with the context.
    k (`int` or `list` of `int`, optional): cut-offs for the top-k accuracies. Defaults to `[1, 10]`.

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

    >>> ucm = evaluate.load("metrics/ucm")
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


def _check_length(name, values, expected):
    if values is not None and len(values) != expected:
        raise ValueError(f"{name} has {len(values)} entries but there are {expected} steps; give one per step")


def _check_ranks(name, ranks):
    ranks = np.asarray(ranks)
    if ranks.size and (ranks.dtype.kind not in "iu" or ranks.min() < 1):
        raise ValueError(f"{name} must hold ranks, positive integers with 1 = best; got {ranks[:5].tolist()}...")
    return ranks


def _shares(target_changes, correct_added):
    kept = target_changes[correct_added]
    result = {"understand": None, "confuse": None, "misunderstand": None}
    if kept.size:
        understand = int((kept < 0).sum())
        confuse = int((kept == 0).sum())
        misunderstand = kept.size - understand - confuse
        result = {"understand": understand / kept.size, "confuse": confuse / kept.size, "misunderstand": misunderstand / kept.size}
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
                }
            ),
            reference_urls=["https://arxiv.org/abs/2211.10265"],
        )

    def _compute(
        self,
        target_rank_before,
        target_rank_after,
        added_is_correct,
        groups=None,
        added_rank_changes=None,
        correct_rank_changes=None,
        incorrect_rank_changes=None,
        ranks_without_context=None,
        ranks_with_context=None,
        k=(1, 10),
    ):
        steps = len(target_rank_before)
        if steps == 0:
            raise ValueError("no steps to score: give the target's rank before and after each added segment")
        for name, values in (
            ("groups", groups),
            ("added_rank_changes", added_rank_changes),
            ("correct_rank_changes", correct_rank_changes),
            ("incorrect_rank_changes", incorrect_rank_changes),
        ):
            _check_length(name, values, steps)
        before = _check_ranks("target_rank_before", target_rank_before)
        after = _check_ranks("target_rank_after", target_rank_after)
        correct_added = np.asarray(added_is_correct, dtype=bool)
        target_changes = after - before

        result = _shares(target_changes, correct_added)
        result["rank_change"] = {
            kind: _rank_changes(target_changes, selected, added_rank_changes, correct_rank_changes, incorrect_rank_changes)
            for kind, selected in (("correct_added", correct_added), ("incorrect_added", ~correct_added))
        }
        if groups is not None:
            labels = np.asarray([str(g) for g in groups])
            per_group = {
                group: _shares(target_changes[labels == group], correct_added[labels == group]) for group in sorted(set(labels.tolist()))
            }
            scored = [values for values in per_group.values() if values["steps"]]
            for share in _SHARES:
                result[f"macro_{share}"] = _mean([values[share] for values in scored])
            result["per_group"] = per_group
        if ranks_without_context is not None or ranks_with_context is not None:
            cutoffs = [k] if isinstance(k, int) else sorted(set(k))
            if not cutoffs or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in cutoffs):
                raise ValueError(f"k must be a positive int or a non-empty list of them, got {k!r}")
            for name, ranks in (("without_context", ranks_without_context), ("with_context", ranks_with_context)):
                if ranks is None:
                    continue
                if not len(ranks):
                    raise ValueError(f"ranks_{name} is empty: give one rank per query")
                ranks = _check_ranks(f"ranks_{name}", ranks)
                for cutoff in cutoffs:
                    result[f"acc@{cutoff}_{name}"] = _accuracy(ranks, cutoff)
        return result
