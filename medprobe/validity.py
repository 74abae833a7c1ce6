"""Is a score knowledge? The math of the validity facets, from per-item outcomes (numpy only).

Every facet is a metric of a run's per-item outcomes, so it gets what every metric gets (medprobe.stats): an
`Estimator`, a 95% interval, re-verification by the record loader, paired differences in `compare`. This module
holds what the facets need beyond that:

- estimators written once for both ways of computing them: `mean_estimator(values)` (the mean of a per-item value:
  acc@k, control acc@k, the knowledge above the prompt bias, Brier) and `counts_estimator(function)` (a metric of
  how often each item is in a resample: AURC, ECE);
- `intervals`: medprobe.stats' percentile bootstrap, faster for those estimators (each resample's item counts are
  counted once, and every mean-type metric's sums come from ONE matrix product of those counts with a table of the
  items' values: the same draws, hence the intervals the recorded seed defines), and, where the outcomes record
  each item's cluster (a query's subject), the clustered interval beside each item-level one;
- selective answering (`aurc`, `aurc_oracle`; random = the error rate) and calibration (`ece` with equal-mass
  bins; Brier is a mean).

Definitions (REFERENCE.md, "Validity facets"):
- AURC: items sorted by confidence (the top-1 margin), highest first; risk(i) = the errors among the i most
  confident / i; AURC = the mean of risk(i) over i = 1..n. Items of equal confidence are one block whose errors are
  spread evenly over its positions (the expected AURC over every order of the tied items: no order is preferred);
  an item without confidence (NaN) is less confident than any other. Oracle: every correct item first,
  (e - (n - e)(H_n - H_{n-e})) / n for e errors (H = harmonic numbers). Random: e / n.
- ECE with B equal-mass bins: items sorted by confidence, laid end to end as unit masses, cut at b n / B
  (b = 1..B-1), so every bin holds exactly n / B items (an item, or a block of tied items, that a cut crosses
  counts in both bins by its share); ECE = sum over bins of (n_b / n) |acc_b - conf_b| = sum |K_b - Q_b| / n with
  K_b, Q_b the bin's correct items and confidence mass. Items without a probability (NaN) do not count.
- Clustered intervals (Miller 2024, "Adding Error Bars to Evals"): resample clusters, each drawn cluster bringing
  all its items; `clusters` = how many there are; design effect = variance under clustering / variance under
  independence: for a mean, exactly Sum_c (Sum_{i in c} r_i)^2 / Sum_i r_i^2 with r_i the items' residuals (within
  their group for a macro mean), 1 when no cluster holds two items; for AURC and ECE, the ratio of the two
  bootstraps' variances. The clusters are drawn from their own stream (seed, 1): the item-level draws, hence every
  item-level interval, are those a run without clusters gets.
"""
# numpy only; imports nothing of medprobe but medprobe.stats (tests/test_import_layers.py: foundation)

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from medprobe.stats import (
    CHUNK,
    LEVEL,
    RESAMPLES,
    SEED,
    Estimator,
    Outcomes,
    Sample,
    percentile_interval,
    plural,
)
from medprobe.stats import intervals as item_intervals

CLUSTER_STREAM = 1  # clusters are drawn from default_rng([seed, CLUSTER_STREAM])
EXACT_COUNTS = 2**24  # below it, float32 sums of 0/1 values weighted by counts are exact integers
ROW_BLOCK = 2**23  # elements of a counts matrix computed at once where a sample's index is not a bootstrap's

Values = Callable[[Mapping[str, np.ndarray]], np.ndarray]
Weighted = Callable[[np.ndarray, Mapping[str, np.ndarray]], np.ndarray]


# --- how often each item is in each resample ----------------------------------------------------------------


def counts_of(index: np.ndarray, items: int) -> np.ndarray:
    """(resamples, items): how often each item is in each row of `index` (float32 while exact, else float64)."""
    counts = np.empty((len(index), items), dtype=np.float32 if items < EXACT_COUNTS else np.float64)
    for row, drawn in enumerate(index):
        counts[row] = np.bincount(drawn, minlength=items)
    return counts


class MeanTable:
    """Every mean-type estimator's per-item values as columns of one table, so that one matrix product of a
    resample's counts gives all their sums: per estimator, Sum c_i x_i and Sum c_i d_i (d_i: the item counts), per
    group when the metric is a macro mean. 0/1 columns go through float32 (exact), the rest through float64.
    Without `macro` it leaves macro means out: a stratified resample keeps each group's size, and gathering their
    0/1 values costs less than counting its items (which nothing else of that resample needs)."""

    def __init__(self, outcomes: Outcomes, estimators: Mapping[str, Estimator], macro: bool = True):
        self.outcomes = outcomes
        columns: list[np.ndarray] = []
        seen: dict[bytes, int] = {}

        def place(column: np.ndarray) -> int:
            key = column.tobytes()
            if key not in seen:
                seen[key] = len(columns)
                columns.append(column)
            return seen[key]

        groups = [np.zeros(len(outcomes)) for _ in outcomes.group_names]
        for group, (start, size) in enumerate(zip(outcomes.starts.tolist(), outcomes.sizes().tolist())):
            groups[group][start : start + size] = 1.0
        self.where: dict[Any, tuple[list[int], list[int]]] = {}
        for estimator in estimators.values():
            if estimator.mean_of is None or (estimator.mean_of, estimator.stratified) in self.where:
                continue
            if estimator.stratified and not macro:
                continue
            values = np.asarray(estimator.mean_of(outcomes.columns), dtype=np.float64)
            counted = np.isfinite(values)
            x, d = np.where(counted, values, 0.0), counted.astype(np.float64)
            if estimator.stratified:
                self.where[estimator.mean_of, True] = ([place(x * g) for g in groups], [place(d * g) for g in groups])
            else:
                self.where[estimator.mean_of, False] = ([place(x)], [place(d)])
        exact = len(outcomes) < EXACT_COUNTS
        self.binary = [i for i, c in enumerate(columns) if exact and bool(np.isin(c, (0.0, 1.0)).all())]
        self.real = [i for i in range(len(columns)) if i not in set(self.binary)]
        self.tables = (
            np.stack([columns[i] for i in self.binary], axis=1).astype(np.float32) if self.binary else None,
            np.stack([columns[i] for i in self.real], axis=1) if self.real else None,
        )
        self.width = len(columns)

    def __contains__(self, key: Any) -> bool:
        return key in self.where

    def sums(self, counts: np.ndarray) -> np.ndarray:
        """(resamples, columns): each column's sum over each resample's items, counted."""
        sums = np.empty((len(counts), self.width))
        binary, real = self.tables
        if binary is not None:
            sums[:, self.binary] = (counts.astype(np.float32, copy=False) @ binary).astype(np.float64)
        if real is not None:
            sums[:, self.real] = counts.astype(np.float64, copy=False) @ real
        return sums

    def value(self, sums: np.ndarray, key: Any) -> np.ndarray:
        numerators, denominators = self.where[key]
        if not key[1]:
            return sums[:, numerators[0]] / sums[:, denominators[0]]
        with np.errstate(invalid="ignore", divide="ignore"):  # a group no cluster of a resample holds: NaN
            # C order: the mean over groups then sums in the order medprobe.stats' group means always did
            return np.ascontiguousarray(sums[:, numerators] / sums[:, denominators]).mean(axis=1)


class CountSample(Sample):
    """A Sample that also counts how often each item is in each resample (once, for every estimator) and holds
    the shared sums of the mean-type estimators (`MeanTable`). A clustered resample has counts and no index: only
    estimators with `mean_of` or `weighted` can read it."""

    def __init__(self, outcomes: Outcomes, index: np.ndarray | None, means: MeanTable | None, counts: np.ndarray | None = None):
        super().__init__(outcomes, index)
        self.means = means
        self._counts = counts
        self._sums: np.ndarray | None = None

    def __getitem__(self, name: str) -> np.ndarray:
        if self.index is None and self._counts is not None:
            raise TypeError("a clustered resample is read through counts (mean_of, weighted), not item columns")
        return super().__getitem__(name)

    def counts(self) -> np.ndarray:
        if self._counts is None:
            self._counts = counts_of(self.index, len(self.outcomes)) if self.index is not None else ones(len(self.outcomes))
        return self._counts

    def mean(self, key: Any) -> np.ndarray:
        assert self.means is not None
        if self._sums is None:
            self._sums = self.means.sums(self.counts())
        return self.means.value(self._sums, key)


def ones(items: int) -> np.ndarray:
    return np.ones((1, items), dtype=np.float32 if items < EXACT_COUNTS else np.float64)


# --- estimators computed either way -------------------------------------------------------------------------


def mean_estimator(values: Values, unit: str, *, stratified: bool = False, facet: str = "", scale: str = "") -> Estimator:
    """The metric that is the mean of `values(columns)` over the items where it is finite (stratified: the mean
    over groups of each group's mean). `values` must be elementwise (it is computed on the items, then resampled)."""
    compute = functools.partial(mean_compute, values=values, stratified=stratified)
    return Estimator(compute, unit, stratified, mean_of=values, facet=facet, scale=scale)


def mean_compute(sample: Sample, values: Values, stratified: bool) -> np.ndarray:
    if isinstance(sample, CountSample) and sample.means is not None and (values, stratified) in sample.means:
        return sample.mean((values, stratified))
    if sample.index is not None:  # elementwise: computed on the items, then gathered
        found = np.asarray(values(sample.outcomes.columns), dtype=np.float64)[sample.index]
    else:  # the items once ((1, items) columns), or a paired permutation's swapped columns
        found = np.atleast_2d(np.asarray(values(sample), dtype=np.float64))
    counted = np.isfinite(found)
    kept = np.where(counted, found, 0.0)
    if not stratified:
        with np.errstate(invalid="ignore", divide="ignore"):
            return kept.sum(axis=1) / counted.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sample.group_sum(kept) / sample.group_sum(counted)).mean(axis=1)


def counts_estimator(function: Weighted, unit: str, *, facet: str = "", scale: str = "") -> Estimator:
    """The metric `function(counts, columns)` of a (resamples, items) matrix of item multiplicities."""
    return Estimator(functools.partial(counts_compute, function=function), unit, weighted=function, facet=facet, scale=scale)


class RowColumns(Mapping):
    """One resample's columns of a Sample whose columns are given per resample (a paired permutation)."""

    def __init__(self, sample: Sample, row: int):
        self.sample, self.row = sample, row

    def __getitem__(self, name: str) -> np.ndarray:
        return self.sample[name][self.row]

    def __iter__(self) -> Iterator[str]:
        return iter(self.sample.outcomes.columns)

    def __len__(self) -> int:
        return len(self.sample.outcomes.columns)


def counts_compute(sample: Sample, function: Weighted) -> np.ndarray:
    items = len(sample.outcomes)
    if isinstance(sample, CountSample):
        return function(sample.counts(), sample.outcomes.columns)
    if sample.given:  # every item once, each resample with its own columns
        rows = len(next(iter(sample._columns.values())))
        return np.array([function(ones(items), RowColumns(sample, row))[0] for row in range(rows)])
    if sample.index is None:
        return function(ones(items), sample.outcomes.columns)
    step = max(1, ROW_BLOCK // max(items, 1))  # bounded memory, whatever the index's shape
    return np.concatenate(
        [
            function(counts_of(sample.index[s : s + step], items), sample.outcomes.columns)
            for s in range(0, len(sample.index), step)
        ]
    )


# --- selective answering and calibration ----------------------------------------------------------------------


def blocks(values: np.ndarray, descending: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The items in order of `values` (NaN last), where each run of equal values starts, and the sorted values."""
    key = np.where(np.isnan(values), -np.inf if descending else np.inf, values)
    order = np.argsort(-key if descending else key, kind="stable")
    ordered = key[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(ordered) else np.zeros(0, dtype=np.intp)
    return order, starts, ordered


def block_sums(ordered: np.ndarray, starts: np.ndarray) -> np.ndarray:
    return ordered if len(starts) == ordered.shape[1] else np.add.reduceat(ordered, starts, axis=1)


@functools.lru_cache(maxsize=4)
def harmonics(largest: int) -> tuple[np.ndarray, np.ndarray]:
    """H[m] = 1 + 1/2 + ... + 1/m and G[m] = H[0] + ... + H[m-1], for m = 0..largest."""
    h = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, largest + 1))])
    return h, np.concatenate([[0.0], np.cumsum(h)])[: largest + 1]


def aurc(counts: np.ndarray, confidence: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """The area under the risk-coverage curve of each resample (rows of `counts`); see the module's definition.

    With a block of tied items at positions P0+1..P1 holding E of their errors, position t's expected errors add
    E/(P1-P0) to every risk(i >= t): the block adds E H_n - E (G[P1] - G[P0]) / (P1 - P0) to n AURC."""
    order, starts, _ = blocks(np.asarray(confidence, dtype=np.float64), descending=True)
    c = counts[:, order].astype(np.float64)
    weights = block_sums(c, starts)
    errors = block_sums(c * (1.0 - np.asarray(correct, dtype=np.float64)[order]), starts)
    end = np.cumsum(weights, axis=1)
    n = end[:, -1]
    h, g = harmonics(int(n.max()))
    last, first = end.astype(np.intp), (end - weights).astype(np.intp)
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.where(weights > 0, errors * (g[last] - g[first]) / weights, 0.0)
        return (h[n.astype(np.intp)] * errors.sum(axis=1) - spread.sum(axis=1)) / n


def aurc_oracle(counts: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """AURC when every correct item comes first: (e - (n - e)(H_n - H_{n-e})) / n."""
    n = counts.sum(axis=1, dtype=np.float64)
    e = counts.astype(np.float64) @ (1.0 - np.asarray(correct, dtype=np.float64))
    h, _ = harmonics(int(n.max()))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (e - (n - e) * (h[n.astype(np.intp)] - h[(n - e).astype(np.intp)])) / n


def ece(counts: np.ndarray, confidence: np.ndarray, correct: np.ndarray, bins: int) -> np.ndarray:
    """The expected calibration error over `bins` equal-mass bins of each resample; see the module's definition."""
    confidence = np.asarray(confidence, dtype=np.float64)
    counted = np.isfinite(confidence)
    order, starts, ordered = blocks(confidence, descending=False)
    c = counts[:, order].astype(np.float64) * counted[order]
    weights = block_sums(c, starts)
    hits = block_sums(c * np.asarray(correct, dtype=np.float64)[order], starts)
    level = np.where(np.isfinite(ordered[starts]), ordered[starts], 0.0)  # each block's confidence
    mass, correct_mass, confidence_mass = np.cumsum(weights, axis=1), np.cumsum(hits, axis=1), np.cumsum(weights * level, axis=1)
    n = mass[:, -1]
    rows, width = mass.shape
    cuts = n[:, None] * (np.arange(bins + 1) / bins)  # (rows, bins + 1) positions
    span = float(n.max()) + 1.0  # rows laid end to end: one sorted array, one search
    offset = (np.arange(rows) * span)[:, None]
    found = np.searchsorted((mass + offset).ravel(), (cuts + offset).ravel(), side="right").reshape(rows, bins + 1)
    block = np.minimum(found - (np.arange(rows) * width)[:, None], width - 1)
    at = functools.partial(np.take_along_axis, indices=block, axis=1)
    behind = at(mass) - cuts  # the part of each cut's block beyond the cut
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(weights > 0, hits / np.where(weights > 0, weights, 1.0), 0.0)
        k = at(correct_mass) - behind * at(rate)
        q = at(confidence_mass) - behind * level[block]
        return np.abs(np.diff(k, axis=1) - np.diff(q, axis=1)).sum(axis=1) / n


# --- intervals, clustered ---------------------------------------------------------------------------------------


def counted(estimator: Estimator) -> bool:
    """Computed from item counts (so: fast bootstrap, and a clustered interval)."""
    return estimator.mean_of is not None or estimator.weighted is not None


def intervals(
    outcomes: Outcomes,
    estimators: Mapping[str, Estimator],
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
) -> dict[str, dict]:
    """medprobe.stats.intervals with the same draws, faster for count-based estimators; where the outcomes record
    clusters, each count-based metric's entry also holds `clustered`: {low, high, clusters, design_effect, method}
    (and, for a task's own micro means such as acc@k, `by_group`: each group's design effect)."""
    table = MeanTable(outcomes, estimators, macro=False)
    distributions: dict[str, np.ndarray] = {}
    found = item_intervals(
        outcomes,
        estimators,
        resamples,
        seed,
        level,
        sample_of=lambda o, index: CountSample(o, index, table),
        distributions=distributions,
    )
    chosen = {name: estimator for name, estimator in estimators.items() if counted(estimator)}
    if not outcomes.clusters or not chosen:
        return found
    of_item, clusters = cluster_index(outcomes)
    clustered = cluster_distribution(outcomes, chosen, MeanTable(outcomes, chosen), resamples, seed, of_item, clusters)
    for name, estimator in chosen.items():
        low, high = percentile_interval(clustered[name], level)
        if estimator.mean_of is not None:
            values = np.asarray(estimator.mean_of(outcomes.columns), dtype=np.float64)
            spans = group_spans(outcomes) if estimator.stratified else [(0, len(outcomes))]
            effect, how = mean_design_effect(values, spans, of_item, clusters), "Sum_c (Sum_i r_i)^2 / Sum_i r_i^2"
        else:
            effect, how = variance_ratio(clustered[name], distributions[name]), "the ratio of the two bootstraps' variances"
        entry = {
            "low": low,
            "high": high,
            "clusters": clusters,
            "design_effect": effect,
            "method": f"percentile bootstrap over {clusters:,} clusters (every item of a drawn cluster taken together; "
            f"draws from seed ({seed}, {CLUSTER_STREAM})); design effect = variance under clustering / under "
            f"independence: {how}; the headline interval (low, high) is the item-level one over {plural(estimator.unit)}",
        }
        if estimator.mean_of is not None and not estimator.stratified and not estimator.facet:
            entry["by_group"] = {
                group: mean_design_effect(values, [span], of_item, clusters)
                for group, span in zip(outcomes.group_names, group_spans(outcomes))
            }
        found[name]["clustered"] = entry
    return found


def group_spans(outcomes: Outcomes) -> list[tuple[int, int]]:
    return list(zip(outcomes.starts.tolist(), outcomes.sizes().tolist()))


def cluster_index(outcomes: Outcomes) -> tuple[np.ndarray, int]:
    """Each item's cluster as an index into the sorted cluster names (an order that depends on no item order)."""
    names, inverse = np.unique(np.array(outcomes.clusters, dtype=str), return_inverse=True)
    return inverse.astype(np.intp), len(names)


def cluster_distribution(
    outcomes: Outcomes,
    estimators: Mapping[str, Estimator],
    table: MeanTable,
    resamples: int,
    seed: int,
    of_item: np.ndarray,
    clusters: int,
) -> dict[str, np.ndarray]:
    """Each metric over `resamples` cluster resamples (clusters drawn uniformly with replacement, a chunk at a
    time, from default_rng([seed, CLUSTER_STREAM]))."""
    rng = np.random.default_rng([seed, CLUSTER_STREAM])
    values: dict[str, list[np.ndarray]] = {name: [] for name in estimators}
    for done in range(0, resamples, CHUNK):
        drawn = rng.integers(0, clusters, size=(min(CHUNK, resamples - done), clusters), dtype=np.uint32)
        sample = CountSample(outcomes, None, table, counts_of(drawn, clusters)[:, of_item])
        for name, estimator in estimators.items():
            values[name].append(np.asarray(estimator.compute(sample), dtype=np.float64))
    return {name: np.concatenate(parts) for name, parts in values.items()}


def mean_design_effect(values: np.ndarray, spans: list[tuple[int, int]], of_item: np.ndarray, clusters: int) -> float | None:
    """Variance of a mean (over `spans`: one, or each group's for a macro mean) under clustering / under
    independence, exactly: Sum_c (Sum_{i in c} r_i)^2 / Sum_i r_i^2 with r_i = (x_i - its span's mean) / (the span's
    counted items x spans). None: the values do not vary."""
    residuals = np.zeros(len(values))
    where = np.zeros(len(values), dtype=bool)
    for start, size in spans:
        part = slice(start, start + size)
        kept = np.isfinite(values[part])
        if kept.any():
            residuals[part] = np.where(kept, values[part] - values[part][kept].mean(), 0.0) / (kept.sum() * len(spans))
            where[part] = True
    independent = float(np.sum(residuals**2))
    if independent <= 0:
        return None
    return float(np.sum(np.bincount(of_item[where], weights=residuals[where], minlength=clusters) ** 2) / independent)


def variance_ratio(clustered: np.ndarray, items: np.ndarray) -> float | None:
    """The design effect of a metric that is no mean: the clustered bootstrap's variance over the item-level one's."""
    a, b = clustered[np.isfinite(clustered)], items[np.isfinite(items)]
    # a metric that does not vary (e.g. AURC when every item is wrong) has no ratio: its variances are rounding noise
    if len(a) < 2 or len(b) < 2 or np.ptp(b) <= 1e-12 * max(1.0, float(np.abs(b).max())):
        return None
    return float(np.var(a) / np.var(b))
