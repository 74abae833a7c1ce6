"""Is a score knowledge? The math of the validity facets, from per-item outcomes (numpy only).

Every facet is a metric of a run's per-item outcomes, so it gets what every metric gets (medprobe.stats): an
`Estimator`, a 95% interval, re-verification by the record loader, paired differences in `compare`. This module
holds what the facets need beyond that:

- `intervals`: medprobe.stats' percentile bootstrap on the same draws, computed from each resample's item counts
  (medprobe.counted: every mean-type metric's sums from one matrix product), and, where the outcomes record each
  item's cluster (a query's subject), the clustered interval beside each item-level one;
- selective answering (`aurc`, `aurc_oracle`; random = the error rate) and calibration (`ece` with equal-mass
  bins; Brier is a mean).

Definitions (REFERENCE.md, "Validity facets"):
- AURC: items sorted by confidence (the top-1 margin), highest first; risk(i) = the errors among the i most
  confident / i; AURC = the mean of risk(i) over i = 1..n. Items of equal confidence are one block whose errors are
  spread evenly over its positions (the expected AURC over every order of the tied items: no order is preferred);
  an item without confidence (NaN) is less confident than any other. Oracle: every correct item first,
  (e - (n - e)(H_n - H_{n-e})) / n for e errors (H = harmonic numbers). Random: e / n.
- ECE with B equal-mass bins: items sorted by confidence, laid end to end as unit masses, cut at b n / B
  (b = 1..B-1), so every bin holds exactly n / B items (a block of tied items that a cut crosses counts in both
  bins by its share, each of its items alike); ECE = sum over bins of (n_b / n) |acc_b - conf_b| = sum |K_b - Q_b|
  / n with K_b, Q_b the bin's correct items and confidence mass. Items without a probability (NaN) do not count.
  The bins are the items' (their share of each bin is fixed by the items' own order): a resample keeps each drawn
  item in its bins, as a calibration plot's bins stay put, so ECE is a sum of |linear| terms of the counts.
- Clustered intervals (Miller 2024, "Adding Error Bars to Evals"): resample clusters, each drawn cluster bringing
  all its items; `clusters` = how many there are; design effect = variance under clustering / variance under
  independence: for a mean, exactly Sum_c (Sum_{i in c} r_i)^2 / Sum_i r_i^2 with r_i the items' residuals (within
  their group for a macro mean), 1 when no cluster holds two items; for AURC and ECE, the ratio of the two
  bootstraps' variances. The clusters are drawn from their own stream (seed, 1): the item-level draws, hence every
  item-level interval, are those a run without clusters gets.
"""
# numpy only; imports nothing of medprobe but medprobe.stats and medprobe.counted (tests/test_import_layers.py)

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np

from medprobe.counted import Counts, CountSample, MeanTable, count_rows
from medprobe.stats import CHUNK, LEVEL, RESAMPLES, SEED, Estimator, Outcomes, percentile_interval, plural
from medprobe.stats import intervals as item_intervals

CLUSTER_STREAM = 1  # clusters are drawn from default_rng([seed, CLUSTER_STREAM])


# --- selective answering and calibration ----------------------------------------------------------------------


def blocks(values: np.ndarray, descending: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The items in order of `values` (NaN last), and per sorted position the first and the last position of its
    block of equal values."""
    key = np.where(np.isnan(values), -np.inf if descending else np.inf, values)
    order = np.argsort(-key if descending else key, kind="stable")
    ordered = key[order]
    new = np.r_[True, ordered[1:] != ordered[:-1]] if len(ordered) else np.zeros(0, dtype=bool)
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], len(ordered)] - 1
    block = np.cumsum(new) - 1
    return order, starts[block], ends[block]


@functools.lru_cache(maxsize=4)
def harmonics(largest: int) -> tuple[np.ndarray, np.ndarray]:
    """H[m] = 1 + 1/2 + ... + 1/m and G[m] = H[0] + ... + H[m-1], for m = 0..largest."""
    h = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, largest + 1))])
    return h, np.concatenate([[0.0], np.cumsum(h)])[: largest + 1]


class AurcPlan(NamedTuple):
    """What AURC needs of the items, whatever the resample: their order by confidence, each one's block of ties,
    which items carry the sum (the correct ones, or the wrong ones: the fewer)."""

    order: np.ndarray
    first: np.ndarray  # per sorted position: where its block of equal confidence starts
    last: np.ndarray  # and ends
    chosen: np.ndarray  # sorted positions of the items that carry the sum
    by_correct: bool


def aurc_plan(confidence: np.ndarray, correct: np.ndarray) -> AurcPlan:
    order, first, last = blocks(np.asarray(confidence, dtype=np.float64), descending=True)
    good = np.asarray(correct, dtype=bool)[order]
    by_correct = 2 * int(good.sum()) <= len(good)
    return AurcPlan(order, first, last, np.flatnonzero(good if by_correct else ~good), by_correct)


def aurc(counts: Counts, confidence: np.ndarray, correct: np.ndarray, plan: AurcPlan | None = None) -> np.ndarray:
    """The area under the risk-coverage curve of each resample; see the module's definition (`plan`: the items'
    `aurc_plan`, made once for many resamples).

    n AURC = Sum_i E_i / i: an error at position t adds 1/i to every i >= t, H_n - H_{t-1} in all; a block of tied
    items at positions P0+1..P1 spreads its errors evenly: it adds E_b H_n - E_b (G[P1] - G[P0]) / (P1 - P0). Of
    every item only the running count in confidence order is needed (one pass); the rest is computed on the smaller
    of the correct and the wrong items (Sum_i E_i / i = n - Sum_i K_i / i for K_i the correct ones)."""
    plan = plan or aurc_plan(confidence, correct)
    chosen = plan.chosen
    start, end, total = running_counts(counts.take(plan.order), plan.first[chosen], plan.last[chosen] + 1)
    own = counts.take(plan.order[chosen]).astype(np.float64)
    h, g = harmonics(int(total.max()) if len(total) else 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.where(end > start, own * (g[end.astype(np.intp)] - g[start.astype(np.intp)]) / (end - start), 0.0)
        summed = h[total.astype(np.intp)] * own.sum(axis=1) - spread.sum(axis=1)  # Sum_i K_i / i, or Sum_i E_i / i
        return ((total - summed) if plan.by_correct else summed) / total


def running_counts(ordered: np.ndarray, *at: np.ndarray) -> tuple[np.ndarray, ...]:
    """The running counts of each row of `ordered` before each position of each `at` (0..items), and each row's total,
    as float64 (whole numbers: exact). Few positions: the sums of the segments between them, then their running sums
    (a pass that touches every count once, three times faster than a running sum over every position)."""
    items = ordered.shape[1]
    cuts = np.unique(np.concatenate([[0], *at]))
    cuts = cuts[cuts < items]
    if 8 * len(cuts) < items:
        running = np.cumsum(np.add.reduceat(ordered, cuts, axis=1), axis=1).astype(np.float64)
        ends = [np.searchsorted(cuts, positions) - 1 for positions in at]  # the segment that ends before each position
    else:
        running, ends = np.cumsum(ordered, axis=1).astype(np.float64), [positions - 1 for positions in at]
    found = []
    for where in ends:
        values = np.take(running, np.maximum(where, 0), axis=1)
        values[:, where < 0] = 0.0
        found.append(values)
    return (*found, running[:, -1])


def wrong_items(correct: np.ndarray) -> np.ndarray:
    """(items, 1) float32: 1 for each wrong item (the column `aurc_oracle` sums)."""
    return (~np.asarray(correct, dtype=bool)).astype(np.float32)[:, None]


def aurc_oracle(counts: Counts, correct: np.ndarray, wrong: np.ndarray | None = None) -> np.ndarray:
    """AURC when every correct item comes first: (e - (n - e)(H_n - H_{n-e})) / n (`wrong`: `wrong_items`)."""
    n, e = counts.total(), counts.dot(wrong_items(correct) if wrong is None else wrong)[:, 0]
    h, _ = harmonics(int(n.max()))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (e - (n - e) * (h[n.astype(np.intp)] - h[(n - e).astype(np.intp)])) / n


def calibration_table(confidence: np.ndarray, correct: np.ndarray, bins: int) -> np.ndarray:
    """(items, bins + 1): each item's share of each equal-mass bin times (correct - confidence), so that a
    resample's K_b - Q_b is its counts' dot product with column b; the last column: 1 where the item has a
    probability (items without one: 0 everywhere)."""
    confidence = np.asarray(confidence, dtype=np.float64)
    counted = np.flatnonzero(np.isfinite(confidence))
    table = np.zeros((len(confidence), bins + 1))
    table[counted, bins] = 1.0
    order, first, last = blocks(confidence[counted], descending=False)
    n = len(order)
    if not n:
        return table
    # a block of tied items spans positions [first, last + 1): each of its items holds 1/size of its overlap with a bin
    low, high = first.astype(np.float64), last.astype(np.float64) + 1.0
    cuts = n * np.arange(bins + 1) / bins
    overlap = np.clip(np.minimum(high[:, None], cuts[None, 1:]) - np.maximum(low[:, None], cuts[None, :-1]), 0.0, None)
    signed = np.asarray(correct, dtype=np.float64)[counted[order]] - confidence[counted[order]]
    table[counted[order], :bins] = overlap / (high - low)[:, None] * signed[:, None]
    return table


def ece(counts: Counts, confidence: np.ndarray, correct: np.ndarray, bins: int, table: np.ndarray | None = None) -> np.ndarray:
    """The expected calibration error over `bins` equal-mass bins; see the module's definition (`table`: the items'
    `calibration_table`, made once for many resamples)."""
    sums = counts.dot(calibration_table(confidence, correct, bins) if table is None else table)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.abs(sums[:, :bins]).sum(axis=1) / sums[:, bins]


def once_per_columns(build: Callable[[Mapping[str, np.ndarray]], Any]) -> Callable[[Mapping[str, np.ndarray]], Any]:
    """`build(columns)`, kept while the same outcome columns come back (every chunk of one bootstrap reads the same
    mapping): a facet's item-level preparation (an order, a table) is made once, and a table keeps its identity,
    which a clustered bootstrap's per-cluster sums are kept by."""
    kept: list = []

    def get(columns: Mapping[str, np.ndarray]) -> Any:
        if not kept or kept[0] is not columns:
            kept[:] = [columns, build(columns)]
        return kept[1]

    return get


# --- intervals, clustered ---------------------------------------------------------------------------------------


def counted(estimator: Estimator) -> bool:
    """Computed from item counts (so: a clustered interval)."""
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
    chosen = {name: estimator for name, estimator in estimators.items() if counted(estimator)} if outcomes.clusters else {}
    of_item, clusters = cluster_index(outcomes) if chosen else (np.zeros(0, dtype=np.intp), 0)
    # the clustered bootstrap runs beside the item-level one (numpy lets go of the GIL in its loops): their draws
    # are from separate streams, so neither changes the other's numbers
    with ThreadPoolExecutor(max_workers=1) as beside:
        pending = (
            beside.submit(cluster_distribution, outcomes, chosen, MeanTable(outcomes, chosen), resamples, seed, of_item, clusters)
            if chosen
            else None
        )
        found = item_intervals(
            outcomes,
            estimators,
            resamples,
            seed,
            level,
            sample_of=lambda o, index: CountSample(o, index, table),
            distributions=distributions,
        )
        clustered = pending.result() if pending is not None else {}
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
    cache: dict = {}  # the tables summed per cluster, once for every chunk
    values: dict[str, list[np.ndarray]] = {name: [] for name in estimators}
    for done in range(0, resamples, CHUNK):
        drawn = rng.integers(0, clusters, size=(min(CHUNK, resamples - done), clusters), dtype=np.uint32)
        sample = CountSample(outcomes, None, table, Counts(count_rows(drawn, clusters), of_item, cache))
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
