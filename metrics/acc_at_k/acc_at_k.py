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

_DESCRIPTION = """\
acc@k is the share of queries for which at least one of the top-k ranked predictions equals a
gold answer. It is the metric of LAMA-style knowledge probing benchmarks such as MedLAMA and
BioLAMA, where a query has several gold answers (synonyms, several true objects) and a prober
returns a ranked list of names. With `groups` (e.g. the relation of each query) the metric
also returns the macro average over groups and a per-group table; the micro average weighs
every query equally, the macro average every group.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `list` of `str`): for each query, the predicted answers, best first.
        Only the first k count for acc@k; a list shorter than k counts as it is.
    references (`list` of `list` of `str`): for each query, the gold answers (at least one).
    groups (`list` of `str`, optional): a group per query, e.g. its relation. When given, the
        result also holds `macro_acc@{k}` and `per_group`.
    k (`int` or `list` of `int`, optional): the cut-offs. Defaults to `[1, 10]`.
    normalize (`str`, optional): how strings are compared.
        - `"exact"` (default): exact string equality, as MedLAMA scores.
        - `"squad"`: lower case, remove punctuation and the articles a/an/the, collapse white
          space, as BioLAMA scores.

Returns:
    `acc@{k}` (`float`): micro average over queries, in [0, 1], for every k.
    `macro_acc@{k}` (`float`): mean of the per-group acc@k (only with `groups`).
    `per_group` (`dict`): `{group: {"acc@{k}": float, ..., "queries": int}}` (only with `groups`).

Examples:

    Two queries, the first answered at rank 2, the second not at all:

    >>> acc_at_k = evaluate.load("metrics/acc_at_k")
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

    Exact comparison (the default) keeps case:

    >>> acc_at_k.compute(predictions=[["Insulin"]], references=[["insulin"]], k=1)
    {'acc@1': 0.0}
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
"""

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def squad_normalize(text):
    """Lower case, drop punctuation and articles, collapse white space (SQuAD / BioLAMA)."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _identity(text):
    return text


_NORMALIZERS = {"exact": _identity, "squad": squad_normalize}


def _cutoffs(k):
    cutoffs = [k] if isinstance(k, int) else list(k)
    if not cutoffs or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in cutoffs):
        raise ValueError(f"k must be a positive int or a non-empty list of them, got {k!r}")
    return sorted(set(cutoffs))


def _first_hit_ranks(predictions, references, normalize):
    """1-based rank of the first correct prediction per query (0 when none is correct)."""
    ranks = []
    for index, (ranked, gold) in enumerate(zip(predictions, references)):
        if not gold:
            raise ValueError(f"references[{index}] is empty: every query needs at least one gold answer")
        gold = {normalize(g) for g in gold}
        ranks.append(next((rank for rank, p in enumerate(ranked, 1) if normalize(p) in gold), 0))
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
                }
            ),
            reference_urls=["https://github.com/cambridgeltl/medlama", "https://github.com/dmis-lab/BioLAMA"],
        )

    def _compute(self, predictions, references, groups=None, k=(1, 10), normalize="exact"):
        if normalize not in _NORMALIZERS:
            raise ValueError(f"normalize must be one of {sorted(_NORMALIZERS)}, got {normalize!r}")
        cutoffs = _cutoffs(k)
        if not predictions:
            raise ValueError("no predictions to score: give one ranked list per query")
        ranks = _first_hit_ranks(predictions, references, _NORMALIZERS[normalize])
        result = {f"acc@{c}": _accuracy(ranks, c) for c in cutoffs}
        if groups is None:
            return result
        if len(groups) != len(ranks):
            raise ValueError(f"groups has {len(groups)} entries but there are {len(ranks)} predictions; give one group per query")
        by_group = {}
        for group, rank in zip(groups, ranks):
            by_group.setdefault(str(group), []).append(rank)
        per_group = {
            group: {**{f"acc@{c}": _accuracy(group_ranks, c) for c in cutoffs}, "queries": len(group_ranks)}
            for group, group_ranks in sorted(by_group.items())
        }
        for c in cutoffs:
            result[f"macro_acc@{c}"] = sum(g[f"acc@{c}"] for g in per_group.values()) / len(per_group) if per_group else 0.0
        result["per_group"] = per_group
        return result
