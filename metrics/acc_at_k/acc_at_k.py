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
"""acc@k for ranked predictions against sets of gold answers (LAMA-style knowledge probing)."""

import re
import string

import datasets
import evaluate
import numpy as np

_DESCRIPTION = """\
acc@k is the share of queries for which at least one of the top-k ranked predictions equals a
gold answer. It is the metric of LAMA-style knowledge probing benchmarks such as MedLAMA and
BioLAMA, where a query has several gold answers (synonyms, several true objects) and a prober
returns a ranked list of names. With `groups` (e.g. the relation of each query) the metric
also returns the macro average over groups and a per-group table; the micro average weighs
every query equally, the macro average every group.

`groups` is an input feature like `predictions` and `references`, so evaluate's distributed
mode (`num_process`, `process_id`) gathers it with them: every process adds its own queries
and their groups, and process 0 scores all of them.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `list` of `str`): for each query, the predicted answers, best first.
        Only the first k count for acc@k; a list shorter than k counts as it is.
    references (`list` of `list` of `str`): for each query, the gold answers (at least one).
    groups (`list` of `str`, optional): a group per query, e.g. its relation (a non-empty str).
        When given, the result also holds `macro_acc@{k}` and `per_group`. Give it for all the
        queries of a computation or for none.
    k (`int` or `list` of `int`, optional): the cut-offs, positive Python or numpy integers.
        Defaults to `[1, 10]`.
    normalize (`str`, optional): how strings are compared.
        - `"exact"` (default): exact string equality, as MedLAMA scores.
        - `"squad"`: lower case, remove punctuation and the articles a/an/the, collapse white
          space, as BioLAMA scores. The article rule drops every stand-alone word "a", so
          "vitamin A" compares equal to "vitamin" (and "hepatitis A" to "hepatitis").
    dedupe (`bool`, optional): merge predictions that are equal after `normalize` before cutting
        at k, keeping the best-ranked one, as BioLAMA's decoder does (`remove_duplicate_preds_probs`),
        so a duplicate does not push a later prediction out of the top k. Defaults to `False`: the
        predictions are scored as given, as MedLAMA scores.

    Inputs are checked as given, before evaluate stores them: a prediction, gold answer or group
    that is not a str, a row that is not a list, or a `k` that is not a positive integer (a bool
    or a float such as 1.0 included) is a ValueError naming the argument and the row.

Returns:
    `acc@{k}` (`float`): micro average over queries, in [0, 1], for every k.
    `macro_acc@{k}` (`float`): mean of the per-group acc@k (only with `groups`).
    `per_group` (`dict`): `{group: {"acc@{k}": float, ..., "queries": int}}` (only with `groups`).

Examples:

    Two queries, the first answered at rank 2, the second not at all:

    >>> from medprobe.resources import metric_path  # the folder, in a checkout or an installed wheel
    >>> acc_at_k = evaluate.load(metric_path("acc_at_k"))  # or the Hub id of the Space
    >>> acc_at_k.compute(
    ...     predictions=[["aspirin", "ibuprofen"], ["fever"]],
    ...     references=[["ibuprofen"], ["cough", "dyspnea"]],
    ...     k=[1, 2],
    ... )
    {'acc@1': 0.0, 'acc@2': 0.5}

    Groups give the macro average and a per-group table (k defaults to 1 and 10):

    >>> result = acc_at_k.compute(
    ...     predictions=[["Insulin"], ["metformin"], ["INSULIN"]],
    ...     references=[["insulin"], ["metformin"], ["insulin"]],
    ...     groups=["may_treat", "may_treat", "may_prevent"],
    ...     normalize="squad",
    ... )
    >>> result["acc@1"], result["macro_acc@1"]
    (1.0, 1.0)
    >>> result["per_group"]["may_prevent"]
    {'acc@1': 1.0, 'acc@10': 1.0, 'queries': 1}

    With `dedupe=True`, names equal after normalisation count once, as BioLAMA counts them: here
    "Insulin" and "insulin." take one rank, so "metformin" moves into the top 2:

    >>> acc_at_k.compute(
    ...     predictions=[["Insulin", "insulin.", "metformin"]],
    ...     references=[["metformin"]],
    ...     k=2,
    ...     normalize="squad",
    ... )
    {'acc@2': 0.0}
    >>> acc_at_k.compute(
    ...     predictions=[["Insulin", "insulin.", "metformin"]],
    ...     references=[["metformin"]],
    ...     k=2,
    ...     normalize="squad",
    ...     dedupe=True,
    ... )
    {'acc@2': 1.0}

    Exact comparison (the default) keeps case:

    >>> acc_at_k.compute(predictions=[["Insulin"]], references=[["insulin"]], k=1)
    {'acc@1': 0.0}

    A gold answer given as a bare string instead of a list is refused, not split into letters:

    >>> acc_at_k.compute(predictions=[["Insulin"]], references=["insulin"])
    Traceback (most recent call last):
    ...
    ValueError: references[0] is 'insulin'; expected a list of str (the gold answers of the query)
"""

_CITATION = """\
@inproceedings{petroni-etal-2019-language,
    title = "Language Models as Knowledge Bases?",
    author = "Petroni, Fabio and Rockt{\\"a}schel, Tim and Riedel, Sebastian and Lewis, Patrick and Bakhtin, Anton and Wu, Yuxiang and Miller, Alexander",
    booktitle = "Proceedings of EMNLP-IJCNLP 2019",
    year = "2019",
    pages = "2463--2473",
}
@inproceedings{meng-etal-2022-rewire,
    title = "Rewire-then-Probe: A Contrastive Recipe for Probing Biomedical Knowledge of Pre-trained Language Models",
    author = "Meng, Zaiqiao and Liu, Fangyu and Shareghi, Ehsan and Su, Yixuan and Collins, Charlotte and Collier, Nigel",
    booktitle = "Proceedings of ACL 2022",
    year = "2022",
    pages = "4798--4810",
}
"""  # noqa: E501 - BibTeX entries keep one field a line

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
# What a query added without `groups` stores in the groups column. Not None: evaluate refuses a
# None in the first row of a string column. Not a valid group either: groups must be non-empty.
_NO_GROUP = ""


def squad_normalize(text):
    """Lower case, drop punctuation and articles, collapse white space (SQuAD / BioLAMA)."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _identity(text):
    return text


_NORMALIZERS = {"exact": _identity, "squad": squad_normalize}


def _shown(value):
    """A value for a one-line error message: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(value):
    """A Python or numpy integer; a bool is not one (True is no cut-off)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _column(name, values):
    """A per-query input as a plain list (from a list, tuple, numpy array, tensor or datasets Column)."""
    if isinstance(values, (str, bytes, dict)):
        raise ValueError(f"{name} is {_shown(values)}; expected a list with one entry per query")
    if hasattr(values, "tolist"):  # numpy arrays and tensors give Python values, so 1.0 stays a float
        values = values.tolist()
    try:
        return list(values)
    except TypeError:
        raise ValueError(f"{name} is {_shown(values)}; expected a list with one entry per query") from None


_ONLY_STR = frozenset({str})


def _string_lists(name, rows, what):
    """Each row as a list of str, or a ValueError naming the first bad row or item."""
    checked = []
    for index, row in enumerate(rows):
        if isinstance(row, np.ndarray):
            row = row.tolist()
        if not isinstance(row, (list, tuple)):
            raise ValueError(f"{name}[{index}] is {_shown(row)}; expected a list of str ({what})")
        if not _ONLY_STR.issuperset(map(type, row)):  # one pass in C; a row with anything else is looked at item by item
            for position, item in enumerate(row):
                if not isinstance(item, str):
                    raise ValueError(f"{name}[{index}][{position}] is {_shown(item)}; expected a str ({what})")
        checked.append(list(row))
    return checked


def _check_length(name, values, expected, what):
    if len(values) != expected:
        raise ValueError(f"{name} has {len(values)} entries but there are {expected} predictions; give {what}")


def _checked_batch(predictions, references, groups):
    """The inputs of `add_batch` as plain lists, checked before evaluate casts them to its features."""
    if predictions is None or references is None:
        raise ValueError("predictions and references are required: a ranked list and a list of gold answers per query")
    predictions = _string_lists("predictions", _column("predictions", predictions), "the ranked answers of the query")
    references = _string_lists("references", _column("references", references), "the gold answers of the query")
    _check_length("references", references, len(predictions), "one list of gold answers per query")
    for index, gold in enumerate(references):
        if not gold:
            raise ValueError(f"references[{index}] is empty: every query needs at least one gold answer")
    if groups is None:
        return {"predictions": predictions, "references": references, "groups": [_NO_GROUP] * len(predictions)}
    groups = _column("groups", groups)
    _check_length("groups", groups, len(predictions), "one group per query")
    for index, group in enumerate(groups):
        if not isinstance(group, str) or group == _NO_GROUP:
            raise ValueError(
                f"groups[{index}] is {_shown(group)}; expected a non-empty str (the query's group, e.g. its relation)"
            )
    return {"predictions": predictions, "references": references, "groups": groups}


def _cutoffs(k):
    """The sorted distinct cut-offs as Python ints; numpy integers are welcome, bools and floats are not."""
    values = k.tolist() if isinstance(k, np.ndarray) else k
    values = [values] if _is_int(values) else values
    if not isinstance(values, (list, tuple)) or not values or not all(_is_int(c) and c >= 1 for c in values):
        raise ValueError(f"k must be a positive int or a non-empty list of them, got {_shown(k)}")
    return sorted({int(c) for c in values})


def _check_options(k, normalize, dedupe):
    """The cut-offs, once `k`, `normalize` and `dedupe` are known to be valid."""
    if not isinstance(normalize, str) or normalize not in _NORMALIZERS:
        raise ValueError(f"normalize must be one of {sorted(_NORMALIZERS)}, got {_shown(normalize)}")
    if not isinstance(dedupe, (bool, np.bool_)):  # a str such as "False" would be truthy
        raise ValueError(f"dedupe must be True or False, got {_shown(dedupe)}")
    return _cutoffs(k)


def _stored_groups(groups):
    """The groups column as stored, or None when no query was given one."""
    missing = [index for index, group in enumerate(groups) if group == _NO_GROUP]
    if len(missing) == len(groups):
        return None
    if missing:
        raise ValueError(
            f"groups were given for some queries but not for {len(missing)} of them (the first: query {missing[0]}); "
            "give a group for every query or for none"
        )
    return groups


def _deduplicated(normalized):
    """The normalised predictions with later repeats removed (BioLAMA's remove_duplicate_preds_probs)."""
    return list(dict.fromkeys(normalized))


def _first_hit_ranks(predictions, references, normalize, dedupe=False):
    """1-based rank of the first correct prediction per query (0 when none is correct)."""
    ranks = []
    for ranked, gold in zip(predictions, references):
        gold = {normalize(g) for g in gold}
        normalized = [normalize(p) for p in ranked]
        if dedupe:
            normalized = _deduplicated(normalized)
        ranks.append(next((rank for rank, p in enumerate(normalized, 1) if p in gold), 0))
    return ranks


def _accuracy(ranks, cutoff):
    return sum(1 for r in ranks if 0 < r <= cutoff) / len(ranks) if ranks else 0.0


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class AccAtK(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Sequence(datasets.Value("string")),
                    "references": datasets.Sequence(datasets.Value("string")),
                    "groups": datasets.Value("string"),
                }
            ),
            reference_urls=["https://github.com/cambridgeltl/medlama", "https://github.com/dmis-lab/BioLAMA"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Score the queries given here and those added before; `groups` may be left out."""
        _check_options(
            kwargs.get("k", 1), kwargs.get("normalize", "exact"), kwargs.get("dedupe", False)
        )  # before the inputs are stored
        if (predictions is not None or references is not None) and "groups" not in kwargs:
            kwargs["groups"] = None  # evaluate requires every feature; add_batch stores "no group"
        return super().compute(predictions=predictions, references=references, **kwargs)

    def add_batch(self, *, predictions=None, references=None, groups=None, **kwargs):
        """Add queries (ranked predictions, gold answers, optionally groups), checked before evaluate casts them."""
        super().add_batch(**_checked_batch(predictions, references, groups), **kwargs)

    def add(self, *, prediction=None, reference=None, groups=None, **kwargs):
        """Add one query: its ranked predictions, its gold answers and optionally its group (a str)."""
        batch = _checked_batch([prediction], [reference], None if groups is None else [groups])
        super().add(prediction=batch["predictions"][0], reference=batch["references"][0], groups=batch["groups"][0], **kwargs)

    def _compute(self, predictions, references, groups, k=(1, 10), normalize="exact", dedupe=False):
        cutoffs = _check_options(k, normalize, dedupe)
        if not predictions:
            raise ValueError("no predictions to score: give one ranked list per query")
        groups = _stored_groups(groups)
        ranks = _first_hit_ranks(predictions, references, _NORMALIZERS[normalize], bool(dedupe))
        result = {f"acc@{c}": _accuracy(ranks, c) for c in cutoffs}
        if groups is None:
            return result
        by_group = {}
        for group, rank in zip(groups, ranks):
            by_group.setdefault(group, []).append(rank)
        per_group = {
            group: {**{f"acc@{c}": _accuracy(group_ranks, c) for c in cutoffs}, "queries": len(group_ranks)}
            for group, group_ranks in sorted(by_group.items())
        }
        for c in cutoffs:
            result[f"macro_acc@{c}"] = sum(g[f"acc@{c}"] for g in per_group.values()) / len(per_group)
        result["per_group"] = per_group
        return result
