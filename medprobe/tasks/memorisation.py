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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from medprobe import distributed
from medprobe.contracts import fill_mask_slot
from medprobe.counted import Counts, CountSample
from medprobe.stats import Estimator, Sample, estimate
from medprobe.validity import once_per_columns

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
    """The facet's metrics for every k of the run, when it measured them (`mink_percent` in its settings). Each
    also reads a resample's item counts (`weighted`), so the bootstrap of the validity facets computes it in one
    pass over the counts and gives it an interval clustered by subject (medprobe.validity)."""
    if "mink_percent" not in settings:
        return {}
    found = {}
    for k in settings["k"]:
        for part, name in metric_names(k).items():
            found[name] = Estimator(
                functools.partial(tertile_metric, k=k, part=part),
                "query",
                weighted=functools.partial(counted_tertile_metric, k=k, part=part),
                facet="memorisation",
            )
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
    if isinstance(sample, CountSample):  # a bootstrap that counts its items: the thirds from running counts
        return counted_tertile_metric(sample.counts(), sample.outcomes.columns, k, part)
    return tertile_shares(sample, k)[part]


# --- the same from item counts (a bootstrap by counts, a clustered one: medprobe.counted) -------------------------

SEGMENT = 256  # scored items summed at once: a resample's running counts are kept per segment, not per item


class ScoreOrder(NamedTuple):
    """The items with a score in ascending order of it; per sorted position, the last position of its block of equal
    scores (a third always takes a block whole)."""

    order: np.ndarray
    last: np.ndarray


def score_order(scores: np.ndarray) -> ScoreOrder:
    present = np.flatnonzero(~np.isnan(scores))
    order = present[np.argsort(scores[present], kind="stable")]
    ordered = scores[order]
    ends = np.flatnonzero(np.r_[ordered[1:] != ordered[:-1], True]) if len(order) else np.zeros(0, dtype=np.intp)
    return ScoreOrder(order, np.repeat(ends, np.diff(np.r_[-1, ends])))


class Prefix:
    """Running sums of each resample's counts (optionally weighted per item) in score order, at any position: the
    segments' sums once (one pass), then one segment's items where a position falls inside it."""

    def __init__(self, ordered: np.ndarray, weights: np.ndarray | None = None):
        self.ordered, self.weights = ordered, weights
        rows, items = ordered.shape
        whole = items // SEGMENT
        blocks = ordered[:, : whole * SEGMENT].reshape(rows, whole, SEGMENT)  # a view: no copy
        # in the counts' own type: a segment's sum of whole numbers is exact there (medprobe.counted: float32 while
        # exact), the running sums over segments in float64
        if weights is None:
            sums = blocks.sum(axis=2)
        else:
            sums = np.einsum("rgs,gs->rg", blocks, weights[: whole * SEGMENT].reshape(whole, SEGMENT))
        tail = ordered[:, whole * SEGMENT :] if weights is None else ordered[:, whole * SEGMENT :] * weights[whole * SEGMENT :]
        self.through = np.cumsum(np.c_[sums, tail.sum(axis=1)].astype(np.float64), axis=1)  # (rows, segments + 1)
        self.total = self.through[:, -1]

    def window(self, segment: np.ndarray) -> np.ndarray:
        """(rows, SEGMENT): each row's items of its `segment` (0 past the last item), weighted."""
        columns = segment[:, None] * SEGMENT + np.arange(SEGMENT)
        inside = columns < self.ordered.shape[1]
        columns = np.minimum(columns, self.ordered.shape[1] - 1)
        values = np.take_along_axis(self.ordered, columns, axis=1).astype(np.float64)
        if self.weights is not None:
            values *= self.weights[columns]
        return np.where(inside, values, 0.0)

    def before(self, segment: np.ndarray) -> np.ndarray:
        rows = np.arange(len(segment))
        return np.where(segment > 0, self.through[rows, np.maximum(segment - 1, 0)], 0.0)

    def at(self, position: np.ndarray) -> np.ndarray:
        """Each row's sum over its first `position` items in score order."""
        segment, inside = position // SEGMENT, position % SEGMENT
        partial = np.where(np.arange(SEGMENT) < inside[:, None], self.window(segment), 0.0).sum(axis=1)
        return self.before(segment) + partial

    def reaching(self, target: np.ndarray) -> np.ndarray:
        """Each row's first position whose running sum (through it) reaches `target` (counts: weights None)."""
        segment = np.minimum((self.through < target[:, None]).sum(axis=1), self.through.shape[1] - 1)
        running = self.before(segment)[:, None] + np.cumsum(self.window(segment), axis=1)
        return np.minimum(segment * SEGMENT + (running < target[:, None]).sum(axis=1), self.ordered.shape[1] - 1)


_ORDER = once_per_columns(lambda columns: score_order(np.asarray(columns[COLUMN], dtype=np.float64)))
_COUNTED: weakref.WeakKeyDictionary[Counts, dict] = weakref.WeakKeyDictionary()  # per resamples' counts: as _SHARED


def counted_tertile_metric(counts: Counts, columns: Mapping[str, np.ndarray], k: int, part: str) -> np.ndarray:
    """`tertile_metric` from each resample's item counts, exactly (whole-number sums, then the same divisions).

    With the scored items in ascending order, the ceil(m/3)-th smallest score of a resample of m scored items is
    at the first position whose running count reaches ceil(m/3): low is every item up to the end of that position's
    block of equal scores; likewise high is every item after the block of the position that reaches ceil(2m/3). The
    hits of each third are the same running sums weighted by hit@k (`Prefix`): no resample's scores are sorted."""
    shared = _COUNTED.setdefault(counts, {})
    if "bounds" not in shared:
        found = _ORDER(columns)
        if not len(found.order):  # no item has a score: every third is empty
            shared["bounds"] = None
        else:
            ordered = counts.take(found.order)
            prefix = Prefix(ordered)
            m = prefix.total
            # the ceil(m/3)-th and ceil(2m/3)-th smallest, each block taken whole
            bounds = [found.last[prefix.reaching(target)] + 1 for target in ((m + 2) // 3, (2 * m + 2) // 3)]
            shared.update(bounds=bounds, ordered=ordered, order=found.order)
            shared["sizes"] = thirds_of(prefix, bounds)
    if k not in shared:
        if shared["bounds"] is None:
            empty = np.full(len(counts), np.nan)
            shared[k] = dict.fromkeys((*TERTILES, "high_minus_low"), empty)
        else:
            hit = (np.asarray(columns["rank"], dtype=np.float64)[shared["order"]] <= k).astype(shared["ordered"].dtype)
            with np.errstate(invalid="ignore", divide="ignore"):
                shares = {
                    tertile: hits / size
                    for tertile, hits, size in zip(
                        TERTILES, thirds_of(Prefix(shared["ordered"], hit), shared["bounds"]), shared["sizes"]
                    )
                }
            shared[k] = {**shares, "high_minus_low": shares["high"] - shares["low"]}
    return shared[k][part]


def thirds_of(prefix: Prefix, bounds: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, mid, high) sums: the items before the first bound, between the two, from the second on."""
    low, upto = prefix.at(bounds[0]), prefix.at(bounds[1])
    return low, upto - low, prefix.total - upto
