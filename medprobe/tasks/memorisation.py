"""The memorisation signal of a ranking task (issue 39, section 4): Min-K%++ per item, acc@k by its tertile.

    measured = measure(prober, queries, answers)        # None unless the prober was asked (--memorisation)
    columns(measured)                                   # {"mink_pp": scores}: an outcome column, or {}
    record(scored, measured, k, outcome_fields)         # the metrics, settings and field description
    estimators(settings)                                # each metric recomputed from the outcomes

What it is: per item, Min-K%++ (Zhang et al. 2024; medprobe.lm.mink) of the query with its FIRST gold answer
(the dataset's order: fixed before the model ranks anything, so the score never depends on which answer the
model preferred; one text, one forward pass per item) under the probed model. Then acc@k within the lowest,
middle and highest third of the items by that score, and the high - low difference: does the model answer
better the facts whose sentences look familiar to it?

What it is not: a contamination verdict. Min-K%++ is a membership-inference signal; such signals separate
sets that differ in distribution as well as sets that differ in membership, and blind baselines that never see
the model match them when the two differ in distribution (Das et al. 2024). A high - low gap says that
familiar-looking facts are answered better, not that the benchmark was trained on.

Tertiles: among the m items with a score, the cut values are the ceil(m/3)-th and ceil(2m/3)-th smallest
scores; low is at or below the first, high above the second, mid between (equal scores always share a third;
n not divisible by 3 gives thirds that differ by one). The cut values are recomputed in every bootstrap
resample: the metric is a function of the items, and its interval includes the uncertainty of where the thirds
fall. Items without a score (no token to score) are in no third.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from medprobe import distributed
from medprobe.contracts import fill_mask_slot
from medprobe.stats import Estimator, Sample, estimate

COLUMN = "mink_pp"
TERTILES = ("low", "mid", "high")
MISSING = np.iinfo(np.int32).max  # the rank of an item without a score: above every score, in no third
METHOD = (
    "Min-K%++ (Zhang et al. 2024; the mean of the lowest {k:g}% of its token scores) of each query with its first "
    "gold answer in the slot, under the probed model; acc@k per tertile of it (cut points recomputed in every "
    "bootstrap resample) and high minus low. A membership signal, not a contamination verdict: blind baselines "
    "match membership attacks when the compared sets differ in distribution (Das et al. 2024)"
)


@dataclass
class Measured:
    """What `measure` found, handed from a task's predict to its score."""

    scores: np.ndarray  # per item, in the rows' order; NaN: no token to score
    percent: float  # the k of Min-K%++


def measure(prober: Any, queries: Sequence[str], answers: Sequence[Sequence[str]]) -> Measured | None:
    """Min-K%++ of each query filled with its first gold answer, when the prober was asked for it (its
    `memorisation` attribute, the causal-lm prober's --memorisation); a prober asked that has no
    `memorisation_scores` gets one line saying the facet is left out."""
    if not getattr(prober, "memorisation", False):
        return None
    if not callable(getattr(prober, "memorisation_scores", None)):
        name = getattr(prober, "name", "") or type(prober).__name__
        print(f"note: --memorisation: prober {name} gives no token log-probabilities; the memorisation facet is left out")
        return None
    fill = getattr(prober, "filled", None) or fill_mask_slot  # the prober's own filling, where it has one
    texts = [fill(query, gold[0]) if gold else "" for query, gold in zip(queries, answers)]
    scores = distributed.map_split(lambda share: list(prober.memorisation_scores(share)), texts)
    scores = np.asarray(scores, dtype=np.float64)
    scores[[not gold for gold in answers]] = np.nan
    return Measured(scores, float(getattr(prober, "mink_percent", 20.0)))  # a plugin prober names its own k


def columns(measured: Measured | None) -> dict[str, np.ndarray]:
    """The outcome column of the facet, or none when it was not measured."""
    return {COLUMN: measured.scores} if measured is not None else {}


def metric_names(k: int) -> dict[str, str]:
    """Each metric's name at cutoff k: mink_low_acc@k, mink_mid_acc@k, mink_high_acc@k, mink_high_minus_low@k."""
    return {**{tertile: f"mink_{tertile}_acc@{k}" for tertile in TERTILES}, "high_minus_low": f"mink_high_minus_low@{k}"}


def estimators(settings: dict) -> dict[str, Estimator]:
    """The facet's metrics for every k of the run, when it measured them (`mink_percent` in its settings)."""
    if "mink_percent" not in settings:
        return {}
    found = {}
    for k in settings["k"]:
        for part, name in metric_names(k).items():
            found[name] = Estimator(functools.partial(tertile_metric, k=k, part=part), "query")
    return found


def record(scored: Any, measured: Measured | None, cutoffs: Sequence[int], fields: dict[str, str]) -> None:
    """The facet into a task's `Scored`: its metrics (those with a value: an empty third has none), its settings
    and its outcome column's description. Nothing when it was not measured."""
    if measured is None:
        return
    settings = {"memorisation": METHOD.format(k=measured.percent), "mink_percent": measured.percent}
    scored.settings.update(settings)
    for name, estimator in estimators({**settings, "k": list(cutoffs)}).items():
        value = estimate(scored.outcomes, estimator)
        if np.isfinite(value):
            scored.metrics[name] = value
    scored.counts["queries_with_mink_pp"] = int(np.isfinite(measured.scores).sum())
    fields[COLUMN] = (
        f"Min-K%++ (the lowest {measured.percent:g}% of token scores) of the query with its first gold answer; "
        "null: no token to score"
    )


# --- the estimators ---------------------------------------------------------------------------------


def dense_ranks(values: np.ndarray) -> np.ndarray:
    """The values replaced by their ranks among the distinct values (ties share one), MISSING for NaN, as int32.
    Thirds depend on the order of the scores only, so ranks give the same thirds, and sort several times faster."""
    ranks = np.full(values.shape, MISSING, dtype=np.int32)
    present = ~np.isnan(values)
    ranks[present] = np.unique(values[present], return_inverse=True)[1].reshape(-1)
    return ranks


_SHARED: weakref.WeakKeyDictionary[Sample, dict] = weakref.WeakKeyDictionary()  # per sample: its thirds, shares per k


def thirds(sample: Sample) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, mid, high) masks of shape (resamples, items): each resample's own thirds."""
    # ranks of the items before they are resampled (or of the resampled values themselves, in a paired
    # permutation's swapped columns): ranks of a superset keep the order and the ties
    ranks = sample.map(COLUMN, dense_ranks)
    present = ranks != MISSING
    m = present.sum(axis=1)
    ordered = np.sort(ranks, axis=1)
    rows = np.arange(len(ranks))
    first = ordered[rows, np.maximum((m + 2) // 3 - 1, 0)][:, None]  # the ceil(m/3)-th smallest
    second = ordered[rows, np.maximum((2 * m + 2) // 3 - 1, 0)][:, None]  # the ceil(2m/3)-th smallest
    low, high = ranks <= first, ranks > second
    mid = ~(low | high)
    if not present.all():  # MISSING is above every cut (or is the cut, with no score at all)
        low, mid, high = low & present, mid & present, high & present
    return low, mid, high


def tertile_shares(sample: Sample, k: int) -> dict[str, np.ndarray]:
    """acc@k in each third and high minus low, per resample (NaN for an empty third). Computed once per sample and
    k, the thirds once per sample: the metrics of every k and part read them."""
    shared = _SHARED.setdefault(sample, {})
    if "thirds" not in shared:
        masks = thirds(sample)
        shared["thirds"] = masks, [mask.sum(axis=1) for mask in masks]
    if k not in shared:
        masks, sizes = shared["thirds"]
        hits = sample.map("rank", lambda rank: rank <= k)
        with np.errstate(invalid="ignore", divide="ignore"):
            shares = {part: (hits & mask).sum(axis=1) / size for part, mask, size in zip(TERTILES, masks, sizes)}
        shared[k] = {**shares, "high_minus_low": shares["high"] - shares["low"]}
    return shared[k]


def tertile_metric(sample: Sample, k: int, part: str) -> np.ndarray:
    """acc@k within one third (`part` low, mid or high), or high minus low, per resample."""
    return tertile_shares(sample, k)[part]
