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
"""Per-disease F1 of the positive class, with macro and weighted averages (DisKnE)."""

import unicodedata

import datasets
import evaluate
import numpy as np

_DESCRIPTION = """\
DisKnE tests a model separately on each target disease: every row is a (premise, disease) pair
labelled 1 (entailed) or 0, and belongs to one disease. This metric computes, per disease, the
F1 of the positive class, F1 = 2 TP / (2 TP + FP + FN), and averages it over diseases in two
ways: the macro average (every disease counts the same) and the weighted average, where each
disease weighs as many as its positive rows (TP + FN), so that diseases with more evidence count
more.

The released DisKnE evaluation code computed something else: it kept only the gold-positive rows
and took sklearn's macro F1 over the labels seen there. That number is 1 when every positive is
predicted positive and recall / (1 + recall) otherwise, and it ignores false positives. It is
available, clearly named, as `average="released_code"`, for comparing with numbers produced by
that code; it is not DisKnE's metric as the paper defines it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `int`): predicted labels, 0 or 1, one per row.
    references (`list` of `int`): gold labels, 0 or 1, one per row.
    diseases (`list` of `str`, required): the disease (e.g. target CUI) each row belongs to, a non-empty str.
        Ids are compared normalised: invisible format characters (Unicode category Cf, such as
        the zero-width space) removed, NFC, white space at the ends removed and inside runs of
        it made one space, so "a ", "a\u200b" and "a" are one disease, reported as "a". An id
        empty once normalised ("", " ", "\u200b") is a ValueError naming the row. It is an
        input feature like `predictions`, so evaluate's distributed mode (`num_process`,
        `process_id`) gathers it with them.
    average (`str`, optional):
        - `"standard"` (default): F1 of the positive class per disease, `macro_f1` and
          `weighted_f1` (weights = positive rows per disease).
        - `"released_code"`: the released DisKnE code's per-disease score (see the description)
          and its mean over diseases, under keys that say so.
    zero_division (`float`, optional): the value of precision, recall or F1 when its
        denominator is 0 (e.g. a disease with no positive row and no positive prediction).
        Defaults to 0.0, as scikit-learn does.

    Labels are checked as given, before evaluate casts them to integers: a label must be the int
    0 or 1 (Python or numpy). A float (a probability such as 0.9, or 1.0), a bool or a string is
    a ValueError naming the argument and the row; threshold probabilities yourself.

Returns:
    With `average="standard"`:
    `macro_f1` (`float`): mean of the per-disease F1, in [0, 1].
    `weighted_f1` (`float`): per-disease F1 weighted by each disease's positive rows.
    `per_disease` (`dict`): `{disease: {"f1", "precision", "recall", "positives", "rows"}}`.
    With `average="released_code"`:
    `released_code_f1` (`float`): the mean over diseases of the released code's score.
    `per_disease` (`dict`): `{disease: {"released_code_f1", "positives", "rows"}}`.

Examples:

    Disease A: 2 positives, one found, one false alarm (F1 = 2 / (2 + 1 + 1) = 0.5); disease B:
    all right (F1 = 1). Macro = 0.75; weighted = (0.5 * 2 + 1.0 * 1) / 3:

    >>> from medprobe.resources import metric_path  # the folder, in a checkout or an installed wheel
    >>> disease_f1 = evaluate.load(metric_path("disease_f1"))  # or the Hub id of the Space
    >>> result = disease_f1.compute(
    ...     predictions=[1, 0, 1, 0, 1, 0],
    ...     references=[1, 1, 0, 0, 1, 0],
    ...     diseases=["A", "A", "A", "A", "B", "B"],
    ... )
    >>> result["macro_f1"], round(result["weighted_f1"], 4)
    (0.75, 0.6667)
    >>> result["per_disease"]["A"]
    {'f1': 0.5, 'precision': 0.5, 'recall': 0.5, 'positives': 2, 'rows': 4}

    The released code's score on the same predictions: A finds half its positives, so
    0.5 / 1.5 = 1/3; B finds all of them, so 1; the mean is 2/3:

    >>> released = disease_f1.compute(
    ...     predictions=[1, 0, 1, 0, 1, 0],
    ...     references=[1, 1, 0, 0, 1, 0],
    ...     diseases=["A", "A", "A", "A", "B", "B"],
    ...     average="released_code",
    ... )
    >>> round(released["released_code_f1"], 4)
    0.6667

    Probabilities are not labels:

    >>> disease_f1.compute(predictions=[0.9, 0.1], references=[1, 0], diseases=["A", "A"])
    Traceback (most recent call last):
    ...
    ValueError: predictions[0] is 0.9; expected the int 0 or 1 (1 = the premise entails the disease)
"""

_CITATION = """\
@inproceedings{alghanmi-etal-2021-probing,
    title = "Probing Pre-Trained Language Models for Disease Knowledge",
    author = "Alghanmi, Israa and Espinosa Anke, Luis and Schockaert, Steven",
    booktitle = "Findings of the Association for Computational Linguistics: ACL-IJCNLP 2021",
    year = "2021",
    pages = "3023--3033",
}
"""

_AVERAGES = ("standard", "released_code")


def _ratio(numerator, denominator, zero_division):
    return numerator / denominator if denominator else zero_division


def _counts(predictions, references):
    """(TP, FP, FN) of the positive class."""
    tp = sum(1 for p, r in zip(predictions, references) if p == 1 and r == 1)
    fp = sum(1 for p, r in zip(predictions, references) if p == 1 and r == 0)
    fn = sum(1 for p, r in zip(predictions, references) if p == 0 and r == 1)
    return tp, fp, fn


def _standard_scores(predictions, references, zero_division):
    tp, fp, fn = _counts(predictions, references)
    return {
        "f1": _ratio(2 * tp, 2 * tp + fp + fn, zero_division),
        "precision": _ratio(tp, tp + fp, zero_division),
        "recall": _ratio(tp, tp + fn, zero_division),
    }


def _released_code_score(predictions, references, zero_division):
    """sklearn's macro F1 over the gold-positive rows only (what the released code computed).

    On those rows every gold label is 1, so: all predicted 1 -> the only label seen is 1 and F1 = 1;
    otherwise label 0 scores F1 = 0 and label 1 scores 2r / (1 + r) with r the recall, and the
    macro average of the two is r / (1 + r).
    """
    found = [p for p, r in zip(predictions, references) if r == 1]
    if not found:
        return zero_division
    if all(p == 1 for p in found):
        return 1.0
    recall = sum(found) / len(found)
    return recall / (1 + recall)


def _shown(value):
    """A value for a one-line error message: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _column(name, values):
    """A per-row input as a plain list (from a list, tuple, numpy array, tensor or datasets Column)."""
    if isinstance(values, (str, bytes, dict)):
        raise ValueError(f"{name} is {_shown(values)}; expected a list with one entry per row")
    if hasattr(values, "tolist"):  # numpy arrays and tensors give Python values, so 0.9 stays a float
        values = values.tolist()
    try:
        return list(values)
    except TypeError:
        raise ValueError(f"{name} is {_shown(values)}; expected a list with one entry per row") from None


def _is_label(value):
    """The int 0 or 1 (Python or numpy); not a bool, not a float such as 1.0."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value in (0, 1)


def _checked_labels(name, values, rows):
    labels = _column(name, values)
    if rows is not None and len(labels) != rows:
        raise ValueError(f"{name} has {len(labels)} entries but there are {rows} predictions; give one label per row")
    for index, value in enumerate(labels):
        if not _is_label(value):
            raise ValueError(f"{name}[{index}] is {_shown(value)}; expected the int 0 or 1 (1 = the premise entails the disease)")
    return [int(value) for value in labels]


def _checked_batch(predictions, references, diseases):
    """The inputs of `add_batch` as plain lists, checked before evaluate casts them to its features."""
    if predictions is None or references is None:
        raise ValueError("predictions and references are required: a 0/1 label per row")
    predictions = _checked_labels("predictions", predictions, None)
    references = _checked_labels("references", references, len(predictions))
    if diseases is None:
        raise ValueError("diseases is required: give the disease (e.g. the target CUI) of every row")
    diseases = _column("diseases", diseases)
    if len(diseases) != len(predictions):
        raise ValueError(
            f"diseases has {len(diseases)} entries but there are {len(predictions)} predictions; give one disease per row"
        )
    ids = []
    for index, disease in enumerate(diseases):
        found = _disease_id(disease) if isinstance(disease, str) else ""
        if not found:  # '', ' ' or '\u200b' would be a disease of its own, named by nothing
            raise ValueError(
                f"diseases[{index}] is {_shown(disease)}; expected a non-empty str, not blank once white space and "
                "invisible format characters are removed (the disease of the row, e.g. its CUI)"
            )
        ids.append(found)
    return {"predictions": predictions, "references": references, "diseases": ids}


def _disease_id(text):
    """The id a disease is counted under: without format characters (Unicode category Cf: zero-width spaces and
    joiners, the byte-order mark), NFC (one code point sequence for one spelling), without white space at the ends
    and with each inner run of it one space. Ids that print alike are one disease; "" when nothing is left."""
    visible = "".join(character for character in text if unicodedata.category(character) != "Cf")
    return " ".join(unicodedata.normalize("NFC", visible).split())


def _check_options(average, zero_division):
    if not isinstance(average, str) or average not in _AVERAGES:
        raise ValueError(f"average must be one of {', '.join(_AVERAGES)}, got {_shown(average)}")
    if not isinstance(zero_division, (int, float, np.integer, np.floating)) or isinstance(zero_division, bool):
        raise ValueError(f"zero_division must be a number, got {_shown(zero_division)}")


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class DiseaseF1(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Value("int32"),
                    "references": datasets.Value("int32"),
                    "diseases": datasets.Value("string"),
                }
            ),
            reference_urls=["https://aclanthology.org/2021.findings-acl.266", "https://github.com/israa-alghanmi/DisKnE"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Score the rows given here and those added before."""
        _check_options(kwargs.get("average", "standard"), kwargs.get("zero_division", 0.0))  # before the inputs are stored
        if (predictions is not None or references is not None) and "diseases" not in kwargs:
            kwargs["diseases"] = None  # so that add_batch says what is missing
        return super().compute(predictions=predictions, references=references, **kwargs)

    def add_batch(self, *, predictions=None, references=None, diseases=None, **kwargs):
        """Add rows (0/1 predictions and references, and their diseases), checked before evaluate casts them."""
        super().add_batch(**_checked_batch(predictions, references, diseases), **kwargs)

    def add(self, *, prediction=None, reference=None, diseases=None, **kwargs):
        """Add one row: its 0/1 prediction and reference and its disease (a str)."""
        batch = _checked_batch([prediction], [reference], None if diseases is None else [diseases])
        super().add(prediction=batch["predictions"][0], reference=batch["references"][0], diseases=batch["diseases"][0], **kwargs)

    def _compute(self, predictions, references, diseases, average="standard", zero_division=0.0):
        _check_options(average, zero_division)
        zero_division = float(zero_division)  # a plain float in the results, whatever number was given
        if not predictions:
            raise ValueError("no predictions to score")
        rows = {}
        for disease, prediction, reference in zip(diseases, predictions, references):
            found = rows.setdefault(disease, ([], []))
            found[0].append(prediction)
            found[1].append(reference)

        per_disease = {}
        for disease, (preds, refs) in sorted(rows.items()):
            scores = (
                _standard_scores(preds, refs, zero_division)
                if average == "standard"
                else {"released_code_f1": _released_code_score(preds, refs, zero_division)}
            )
            per_disease[disease] = {**scores, "positives": sum(refs), "rows": len(refs)}

        key = "f1" if average == "standard" else "released_code_f1"
        values = [scores[key] for scores in per_disease.values()]
        if average == "released_code":
            return {"released_code_f1": sum(values) / len(values), "per_disease": per_disease}
        positives = sum(scores["positives"] for scores in per_disease.values())
        weighted = sum(scores["f1"] * scores["positives"] for scores in per_disease.values())
        return {
            "macro_f1": sum(values) / len(values),
            "weighted_f1": weighted / positives if positives else zero_division,
            "per_disease": per_disease,
        }
