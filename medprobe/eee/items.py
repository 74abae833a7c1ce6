"""Each item's own score under a run's metric, for the instance-level records of Every Eval Ever.

The schema wants one instance record per item and aggregate result, each with the item's score. A medprobe
metric is an estimator over many items (medprobe.stats.Estimator), so an item's score is the metric on that
item alone: the estimator run on a "resample" of one item per row, every item at once. That is the item's
contribution only when the metric is the mean of those scores over its items (micro), or the mean over groups of
each group's mean (macro, resampled within groups): acc@k, MST's accuracy, context accuracy. A ratio of sums
(the UCM shares over steps) or an F1 is not; for those the instance scores would not add up to the aggregate, so
`item_scores` gives None and the export writes no instance records for that metric and says so. An item whose
one-item value is undefined (NaN: a context-variance instance without ranked rows) is left out of both sides of
the check, as the metric leaves it out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from medprobe.stats import Estimator, Outcomes, Sample


@dataclass(frozen=True)
class ItemScores:
    """A metric's score of each item (NaN: undefined for that item alone), in the order of the outcomes' ids."""

    metric: str
    values: np.ndarray

    def defined(self) -> int:
        return int(np.isfinite(self.values).sum())


def one_item_values(outcomes: Outcomes, estimator: Estimator) -> np.ndarray:
    """The metric on each item alone: a Sample whose rows are the items, each a one-item resample of one group."""
    first = Outcomes(
        ids=outcomes.ids[:1],
        groups=outcomes.groups[:1],
        columns={name: column[:1] for name, column in outcomes.columns.items()},
        starts=np.zeros(1, dtype=np.int64),
        group_names=outcomes.groups[:1],
    )
    rows = {name: column[:, None, ...] for name, column in outcomes.columns.items()}  # (items, 1, ...)
    index = np.zeros((len(outcomes), 1), dtype=np.intp)  # not None: `rows` are the resamples as they are
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.asarray(estimator.compute(Sample(first, index, rows)), dtype=np.float64)
    return values.reshape(len(outcomes))


def mean_of(values: np.ndarray, outcomes: Outcomes, stratified: bool) -> float:
    """The mean of the defined per-item values: over items, or over groups of each group's mean (macro)."""
    if not stratified:
        finite = values[np.isfinite(values)]
        return float(finite.mean()) if len(finite) else math.nan
    means = []
    for start, size in zip(outcomes.starts.tolist(), outcomes.sizes().tolist()):
        block = values[start : start + size]
        block = block[np.isfinite(block)]
        if len(block):
            means.append(float(block.mean()))
    return float(np.mean(means)) if means else math.nan


def item_scores(outcomes: Outcomes, name: str, estimator: Estimator, aggregate: float) -> ItemScores | None:
    """Each item's score under the metric, when those scores average to the metric's `aggregate` (within
    floating-point error); None when they do not (the metric is not a mean of per-item scores)."""
    values = one_item_values(outcomes, estimator)
    if not np.isfinite(values).any():
        return None
    recomputed = mean_of(values, outcomes, estimator.stratified)
    if not math.isclose(recomputed, aggregate, rel_tol=1e-9, abs_tol=1e-12):
        return None
    return ItemScores(name, values)
