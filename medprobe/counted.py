"""The bootstrap by item counts: metrics computed from how often each item is in each resample.

A bootstrap resample is a multiset of items. medprobe.stats gathers every outcome column by the resample's index
matrix, one metric at a time; for many metrics of one run (a ranking run's validity facets) it is cheaper to count
each resample's items once (`Counts`: (resamples, items)) and read every metric from those counts:

- a mean-type metric (`mean_estimator`: the mean, or sum, of a per-item value) is a ratio of two sums, and the sums
  of ALL of them come from one matrix product of the counts with a table of the items' values (`MeanTable`); 0/1
  and other small whole values go through float32, where such sums are exact in any order, the rest through float64;
- any other metric (`counts_estimator`: AURC, ECE) reads the counts through `Counts` (a dot product, the counts of
  some items in some order, the resamples' sizes).

A clustered resample draws clusters, each bringing all its items: its `Counts` holds the clusters' counts and each
item's cluster, and sums over items are sums over clusters of the items' per-cluster totals (no (resamples, items)
matrix is made unless a metric needs the items in order). On the same draws every estimator gives the numbers
`compute` gives through medprobe.stats' gathering path (exactly for 0/1 means, to float rounding otherwise), so the
intervals are those the recorded seed defines.
"""
# numpy only; imports nothing of medprobe but medprobe.stats (tests/test_import_layers.py: foundation)

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from medprobe.stats import Estimator, Outcomes, Sample

EXACT_COUNTS = 2**24  # below it, float32 sums of whole numbers are exact in any order
ROW_BLOCK = 2**23  # counts computed at once (elements) where a sample's index is not a bootstrap's

Values = Callable[[Mapping[str, np.ndarray]], np.ndarray]


class Counts:
    """How often each item is in each resample, (resamples, items): item counts, or cluster counts (resamples,
    clusters) with each item's cluster (`of_item`). `cache` keeps what a clustered bootstrap aggregates once."""

    def __init__(
        self, matrix: np.ndarray, of_item: np.ndarray | None = None, cache: dict | None = None, items: int | None = None
    ):
        self.matrix = matrix  # float32 (exact) or float64
        self.as_float64: np.ndarray | None = None  # made once, for every float64 table
        self.totals: np.ndarray | None = None
        self.of_item = of_item
        self.cache = cache if cache is not None else {}
        self.items = len(of_item) if of_item is not None else (items if items is not None else matrix.shape[1])

    @classmethod
    def ones(cls, items: int) -> Counts:
        return cls(np.ones((1, items), dtype=np.float32 if items < EXACT_COUNTS else np.float64))

    @classmethod
    def of_index(cls, index: np.ndarray, items: int) -> Counts:
        """The counts of each row of a (resamples, draws) index matrix of items."""
        return cls(count_rows(index, items))

    def __len__(self) -> int:
        return len(self.matrix)

    def take(self, items: np.ndarray) -> np.ndarray:
        """(resamples, len(items)): the counts of `items`, in that order."""
        return np.take(self.matrix, items if self.of_item is None else self.of_item[items], axis=1)  # 5x [:, items]

    def total(self) -> np.ndarray:
        """How many items each resample holds."""
        if self.totals is None:
            # item counts sum to the items drawn; cluster counts weigh each cluster by its size
            sizes = None if self.of_item is None else self.cluster_sizes()
            self.totals = self.matrix.sum(axis=1, dtype=np.float64) if sizes is None else self.matrix.astype(np.float64) @ sizes
        return self.totals

    def cluster_sizes(self) -> np.ndarray:
        assert self.of_item is not None
        if "sizes" not in self.cache:  # the clusters' sizes do not change from one chunk to the next
            self.cache["sizes"] = np.bincount(self.of_item, minlength=int(self.matrix.shape[1])).astype(np.float64)
        return self.cache["sizes"]

    def dot(self, table: np.ndarray) -> np.ndarray:
        """(resamples, columns) float64: each column of `table` (items, columns) summed over each resample's items.
        A float32 table must hold whole numbers whose sums stay exact (`exact_in_float32`)."""
        if self.of_item is not None:  # over clusters: each cluster's items summed once, kept for the next chunk
            key = id(table)
            if key not in self.cache:
                clusters = int(self.matrix.shape[1])
                summed = np.stack([np.bincount(self.of_item, weights=column, minlength=clusters) for column in table.T], axis=1)
                self.cache[key] = (table, summed.astype(table.dtype))  # the table is kept so its id stays its own
            table = self.cache[key][1]
        counts = self.matrix
        if table.dtype != counts.dtype:
            if table.dtype == np.float64:
                if self.as_float64 is None:
                    self.as_float64 = self.matrix.astype(np.float64)
                counts = self.as_float64
            else:
                table = table.astype(counts.dtype)
        return (counts @ table).astype(np.float64, copy=False)


def count_rows(index: np.ndarray, items: int) -> np.ndarray:
    """(rows, items): how often each item is in each row of `index` (float32 while exact, else float64)."""
    counts = np.empty((len(index), items), dtype=np.float32 if items < EXACT_COUNTS else np.float64)
    for row, drawn in enumerate(index):
        counts[row] = np.bincount(drawn, minlength=items)
    return counts


def exact_in_float32(column: np.ndarray, most: int) -> bool:
    """Whole numbers whose count-weighted sums stay below 2**24 however the items are drawn (`most`: the largest
    number of items a resample can hold) sum exactly in float32, in any order."""
    return bool(np.all(column == np.round(column))) and most * float(np.abs(column).max(initial=0.0)) < EXACT_COUNTS


def largest_resample(outcomes: Outcomes) -> int:
    """The most items a resample can hold: all of them, or, drawing clusters, the largest cluster every time."""
    if not outcomes.clusters:
        return len(outcomes)
    sizes = np.unique(np.array(outcomes.clusters, dtype=str), return_counts=True)[1]
    return len(sizes) * int(sizes.max())


class MeanTable:
    """Every mean-type estimator's per-item values as columns of one table, so that one matrix product of a
    resample's counts gives all their sums: per estimator, Sum c_i x_i and Sum c_i d_i (d_i: 1 where the item
    counts), per group when the metric is a macro mean. Without `macro` it leaves macro means out: a stratified
    resample keeps each group's size, and gathering their 0/1 values costs less than counting its items."""

    def __init__(self, outcomes: Outcomes, estimators: Mapping[str, Estimator], macro: bool = True):
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
            key = table_key(estimator)
            if estimator.mean_of is None or key in self.where or (estimator.stratified and not macro):
                continue
            values = np.asarray(estimator.mean_of(outcomes.columns), dtype=np.float64)
            counted = np.isfinite(values)
            x, d = np.where(counted, values, 0.0), counted.astype(np.float64)
            if estimator.stratified:
                self.where[key] = ([place(x * g) for g in groups], [place(d * g) for g in groups])
            else:
                self.where[key] = ([place(x)], [place(d)])
        most = largest_resample(outcomes)
        self.binary = [i for i, c in enumerate(columns) if exact_in_float32(c, most)]
        self.real = [i for i in range(len(columns)) if i not in set(self.binary)]
        self.tables = (
            np.stack([columns[i] for i in self.binary], axis=1).astype(np.float32) if self.binary else None,
            np.stack([columns[i] for i in self.real], axis=1) if self.real else None,
        )
        self.width = len(columns)

    def __contains__(self, key: Any) -> bool:
        return key in self.where

    def sums(self, counts: Counts) -> np.ndarray:
        """(resamples, columns): each column's sum over each resample's items, counted."""
        sums = np.empty((len(counts), self.width))
        for positions, table in zip((self.binary, self.real), self.tables):
            if table is not None:
                sums[:, positions] = counts.dot(table)
        return sums

    @staticmethod
    def value(sums: np.ndarray, where: tuple[list[int], list[int]], key: Any) -> np.ndarray:
        numerators, denominators = where
        if key[2]:  # a count: the sum itself
            return sums[:, numerators].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):  # a group no cluster of a resample holds: NaN
            if not key[1]:
                return sums[:, numerators[0]] / sums[:, denominators[0]]
            # C order: the mean over groups sums in the order medprobe.stats' group means always did
            return np.ascontiguousarray(sums[:, numerators] / sums[:, denominators]).mean(axis=1)


class CountSample(Sample):
    """A Sample that also counts how often each item is in each resample (once, for every estimator) and holds
    the shared sums of the mean-type estimators (`MeanTable`). A clustered resample has counts and no index: only
    estimators with `mean_of` or `weighted` can read it."""

    def __init__(self, outcomes: Outcomes, index: np.ndarray | None, means: MeanTable | None, counts: Counts | None = None):
        super().__init__(outcomes, index)
        self.means = means
        self._counts = counts
        self._sums: np.ndarray | None = None

    def __getitem__(self, name: str) -> np.ndarray:
        if self.index is None and self._counts is not None:
            raise TypeError("a clustered resample is read through counts (mean_of, weighted), not item columns")
        return super().__getitem__(name)

    def counts(self) -> Counts:
        if self._counts is None:
            items = len(self.outcomes)
            self._counts = Counts.of_index(self.index, items) if self.index is not None else Counts.ones(items)
        return self._counts

    def mean(self, key: Any) -> np.ndarray:
        assert self.means is not None
        if self._sums is None:
            self._sums = self.means.sums(self.counts())
        return MeanTable.value(self._sums, self.means.where[key], key)


# --- estimators computed either way -------------------------------------------------------------------------


def mean_estimator(
    values: Values,
    unit: str,
    *,
    stratified: bool = False,
    facet: str = "",
    scale: str = "",
    count: Callable[[Outcomes], int] | None = None,
) -> Estimator:
    """The metric that is the mean of `values(columns)` over the items where it is finite (stratified: the mean
    over groups of each group's mean); with scale "count", their sum. `values` must be elementwise (it is computed
    on the items, then resampled): one value per item, from any of its columns (a 2-D one too). `count`: the
    interval's n when not every item counts (`Estimator.count`)."""
    compute = functools.partial(mean_compute, values=values, stratified=stratified, summed=scale == "count")
    return Estimator(compute, unit, stratified, count=count, mean_of=values, facet=facet, scale=scale)


def table_key(estimator: Estimator) -> tuple[Any, bool, bool]:
    return estimator.mean_of, estimator.stratified, estimator.scale == "count"


def mean_compute(sample: Sample, values: Values, stratified: bool, summed: bool = False) -> np.ndarray:
    key = (values, stratified, summed)
    if isinstance(sample, CountSample) and sample.means is not None and key in sample.means:
        return sample.mean(key)
    # elementwise: computed on the items, then gathered (a 0/1 value as a bool: 1/8 the bytes); columns given per
    # resample (a paired permutation's swaps, Every Eval Ever's one item per row) are read as given
    if sample.index is not None and not sample.given:
        on_items = np.asarray(values(sample.outcomes.columns))
        found = (on_items if on_items.dtype == bool else on_items.astype(np.float64))[sample.index]
    else:  # the items once ((1, items) columns), or a paired permutation's swapped columns
        found = np.atleast_2d(np.asarray(values(sample)))
    if found.dtype == bool:  # no value is missing; sums of 0/1 are exact either way
        if summed:
            return found.sum(axis=1, dtype=np.float64)
        if stratified:  # medprobe.stats' group means, as acc@k's always were
            return sample.group_mean(found).mean(axis=1)
        return found.mean(axis=1)
    else:
        found = found.astype(np.float64, copy=False)
        counted = np.isfinite(found)
        kept = np.where(counted, found, 0.0)
    if summed:
        return kept.sum(axis=1, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        if not stratified:
            return kept.sum(axis=1, dtype=np.float64) / counted.sum(axis=1)
        return (sample.group_sum(kept) / sample.group_sum(counted)).mean(axis=1)


Weighted = Callable[[Counts, Mapping[str, np.ndarray]], np.ndarray]


def counts_estimator(function: Weighted, unit: str, *, facet: str = "", scale: str = "") -> Estimator:
    """The metric `function(counts, columns)` of a resample's `Counts` and the outcome columns."""
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
        return np.array([function(Counts.ones(items), RowColumns(sample, row))[0] for row in range(rows)])
    if sample.index is None:
        return function(Counts.ones(items), sample.outcomes.columns)
    step = max(1, ROW_BLOCK // max(items, 1))  # bounded memory, whatever the index's shape
    parts = [
        function(Counts.of_index(sample.index[s : s + step], items), sample.outcomes.columns)
        for s in range(0, len(sample.index), step)
    ]
    return np.concatenate(parts)
