"""Uncertainty for every reported number: bootstrap intervals, paired comparisons, chance levels.

A task hands its per-item outcomes to this module as an `Outcomes` table (one row per item: a
MedLAMA query, a context-variance instance, a DisKnE test pair, an MST test item) together with
one `Estimator` per headline metric: a function that recomputes the metric from the outcome
columns of many resamples at once. On the items as they are, an estimator gives exactly the
number the task's evaluate metric reported (the run checks this), so an interval is always the
interval of the number beside it.

    outcomes = Outcomes.build(ids, groups, {"rank": ranks})
    estimators = {"acc@10": Estimator(lambda s: (s["rank"] <= 10).mean(axis=-1), "query")}
    intervals(outcomes, estimators, resamples=1000, seed=0)["acc@10"]   # {"low", "high", "n", ...}
    paired(outcomes_a, outcomes_b, estimators)["acc@10"]                # difference, its interval, p

Methods (all seeded, deterministic and vectorised: one index matrix per resampling scheme, every
metric read from it):
- percentile bootstrap over items; a metric that averages over groups (macro scores) resamples
  within each group, so every resample keeps the groups and their sizes (stratified);
- paired comparisons resample the same items for both runs (the difference's interval) and test
  "no difference" by a paired permutation: each item's two outcomes are swapped with probability
  1/2 (for any metric, linear or not: macro averages and F1 included);
- Holm's step-down correction for a family of p-values (per-group differences, a board's pairs).
"""
# Nothing here imports torch, datasets or evaluate (numpy only), nor any other module of medprobe.

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

LEVEL = 0.95
RESAMPLES = 1000
SEED = 0
CHUNK = 250  # resamples drawn at once: bounds the index matrix to CHUNK x items
# An outcome column whose name starts so holds one value per variant of an item (a ranking task's `variant_ranks`:
# the query asked other ways, medprobe.tasks.variants), never one per seed, whatever its width.
VARIANT_COLUMN_PREFIX = "variant_"


@dataclass(frozen=True)
class Outcomes:
    """Per-item outcomes of a run, items ordered by group (the order stratified resampling needs).

    `columns` hold one array per outcome, first axis = item: e.g. `rank` (n,) for a ranking task,
    `predictions` (n, seeds) for a task trained with several seeds. Missing values are NaN.
    `contents` holds each item's content digest (`item_digest` of what was asked: a query's text and
    gold answers, an instance's fields), so that two runs pair an item only when its id and its
    content agree; empty when the run did not record them. `clusters` holds each item's cluster (items
    that are not independent: a query's subject), which a clustered interval resamples whole
    (medprobe.validity); empty when the run did not record them.
    """

    ids: tuple[str, ...]
    groups: tuple[str, ...]
    columns: Mapping[str, np.ndarray]
    starts: np.ndarray = field(repr=False)  # index of the first item of each group
    group_names: tuple[str, ...] = ()
    contents: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        ids: Sequence[str],
        groups: Sequence[str],
        columns: Mapping[str, Sequence],
        contents: Sequence[str] | None = None,
        clusters: Sequence[str] | None = None,
    ) -> Outcomes:
        """Outcomes of items given in any order; they are sorted by group (first appearance), stably."""
        ids, groups = [str(i) for i in ids], [str(g) for g in groups]
        if len(set(ids)) != len(ids):
            repeated = next(i for i in ids if ids.count(i) > 1)
            raise ValueError(f"item ids must be unique; {repeated!r} appears more than once")
        arrays = {name: np.asarray(values, dtype=np.float64) for name, values in columns.items()}
        for name, array in arrays.items():
            if len(array) != len(ids):
                raise ValueError(f"outcome column {name!r} has {len(array)} rows for {len(ids)} items")
        if contents is not None and len(contents) != len(ids):
            raise ValueError(f"{len(contents)} item contents for {len(ids)} items")
        if clusters is not None and len(clusters) != len(ids):
            raise ValueError(f"{len(clusters)} item clusters for {len(ids)} items")
        order_of = {group: index for index, group in enumerate(dict.fromkeys(groups))}
        order = sorted(range(len(ids)), key=lambda i: order_of[groups[i]])
        sorted_groups = [groups[i] for i in order]
        names = tuple(order_of)
        starts = np.array([sorted_groups.index(name) for name in names], dtype=np.int64)
        return cls(
            ids=tuple(ids[i] for i in order),
            groups=tuple(sorted_groups),
            columns={name: array[order] for name, array in arrays.items()},
            starts=starts,
            group_names=names,
            contents=tuple(str(contents[i]) for i in order) if contents is not None else (),
            clusters=tuple(str(clusters[i]) for i in order) if clusters is not None else (),
        )

    def __len__(self) -> int:
        return len(self.ids)

    def select(self, ids: Sequence[str]) -> Outcomes:
        """The outcomes of `ids` only (each must be present), regrouped."""
        where = {item: index for index, item in enumerate(self.ids)}
        missing = [item for item in ids if item not in where]
        if missing:
            raise KeyError(f"{len(missing)} item id(s) are not in these outcomes, e.g. {missing[0]!r}")
        rows = [where[item] for item in ids]
        return Outcomes.build(
            [self.ids[r] for r in rows],
            [self.groups[r] for r in rows],
            {name: array[rows] for name, array in self.columns.items()},
            [self.contents[r] for r in rows] if self.contents else None,
            [self.clusters[r] for r in rows] if self.clusters else None,
        )

    def group(self, name: str) -> Outcomes:
        """The outcomes of one group's items (a block of rows: no reordering)."""
        index = self.group_names.index(name)
        start, stop = int(self.starts[index]), int(self.starts[index]) + int(self.sizes()[index])
        return Outcomes(
            ids=self.ids[start:stop],
            groups=self.groups[start:stop],
            columns={column: array[start:stop] for column, array in self.columns.items()},
            starts=np.zeros(1, dtype=np.int64),
            group_names=(name,),
            contents=self.contents[start:stop],
            clusters=self.clusters[start:stop],
        )

    def sizes(self) -> np.ndarray:
        return np.diff(np.append(self.starts, len(self.ids)))


ITEM_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str, separators=(",", ":"))  # made once: 25% faster


def item_digest(*parts: object) -> str:
    """The content digest of one item: the first 16 hex digits of the sha256 of its parts as compact JSON
    (e.g. a query's relation, text and gold answers: `["may_treat","Aspirin may treat [Y] .",["pain"]]`), so that
    anyone can recompute it from the dataset. Equal digests: the same question."""
    return hashlib.sha256(ITEM_JSON.encode(parts).encode("utf-8")).hexdigest()[:16]


class Sample:
    """Outcome columns under many resamples at once: `sample[name]` has shape (resamples, items, ...).

    Items keep their group blocks when the resample is stratified (or the identity), so
    `group_sum`/`group_mean` give (resamples, groups) arrays for macro averages.
    """

    def __init__(self, outcomes: Outcomes, index: np.ndarray | None, columns: Mapping[str, np.ndarray] | None = None):
        self.outcomes = outcomes
        self.index = index  # (resamples, items) rows of `outcomes`, or None: every item once
        self._columns = dict(columns or {})
        self.given = bool(columns)  # columns given per resample (a paired permutation's swapped outcomes)

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._columns:
            column = self.outcomes.columns[name]
            self._columns[name] = column[None, ...] if self.index is None else column[self.index]
        return self._columns[name]

    def map(self, name: str, elementwise: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """`elementwise(sample[name])` (e.g. `rank <= k`) for every resample."""
        # computed on the items before they are resampled when it can be: gathering a bool moves an eighth of the
        # bytes of gathering a float64, and the numbers are the same either way, as the function is elementwise
        if self.index is None or name in self._columns:
            return elementwise(self[name])
        return elementwise(self.outcomes.columns[name])[self.index]

    def map_items(self, names: Sequence[str], function: Callable[..., np.ndarray]) -> np.ndarray:
        """`function(*columns)` for every resample, where `function` gives one value per item from several columns
        (e.g. a hit under the query and under every variant of it): computed on the items before they are
        resampled when it can be, as `map` does, and on the columns as given otherwise (a paired test's swaps)."""
        if self.index is None or any(name in self._columns for name in names):
            return function(*(self[name] for name in names))
        return function(*(self.outcomes.columns[name] for name in names))[self.index]

    def group_sum(self, values: np.ndarray) -> np.ndarray:
        """Per-group sums over the item axis (axis 1): (resamples, groups, ...). Whole numbers (hits) are summed
        group by group over contiguous slices, four times faster than reduceat along axis 1 and exact either way;
        floats as they always were (reduceat's order of summation)."""
        if values.dtype.kind not in "biu":
            return np.add.reduceat(values, self.outcomes.starts, axis=1)
        spans = zip(self.outcomes.starts.tolist(), self.outcomes.sizes().tolist())
        return np.stack([values[:, start : start + size].sum(axis=1) for start, size in spans], axis=1)

    def group_mean(self, values: np.ndarray) -> np.ndarray:
        shape = (1, -1) + (1,) * (values.ndim - 2)
        return self.group_sum(values) / self.outcomes.sizes().reshape(shape)


@dataclass(frozen=True)
class Estimator:
    """How to recompute one metric from a `Sample`: `compute(sample) -> (resamples,)`.

    `unit` names what an item is (query, instance, test pair, item); `stratified` says that the
    metric averages over groups, so resampling keeps the groups (macro scores). `count` gives the number of
    items a metric is a share of when that is not every item (e.g. consistency: the items that have a variant),
    the interval's n; None: all of them.

    Optional, for metrics medprobe.validity can compute from how often each item is in each resample (its fast
    bootstrap shares one pass among them, and its clustered intervals need them; `compute` gives the same numbers):
    `mean_of(columns)` gives each item's value, elementwise over the outcome columns (NaN: the item does not count),
    when the metric is their mean (or, stratified, the mean of the groups' means); `weighted(counts, columns)` gives
    the metric from a (resamples, items) matrix of multiplicities. `facet` names the validity facet a metric measures
    ("" for a task's own metrics) and `scale` how it reads ("" a share shown in %, "count", "score"): both are written
    beside its interval, for every reader.
    """

    compute: Callable[[Sample], np.ndarray]
    unit: str
    stratified: bool = False
    count: Callable[[Outcomes], int] | None = None
    mean_of: Callable[[Mapping[str, np.ndarray]], np.ndarray] | None = None
    weighted: Callable[[np.ndarray, Mapping[str, np.ndarray]], np.ndarray] | None = None
    facet: str = ""
    scale: str = ""


def plural(unit: str) -> str:
    """query -> queries, test pair -> test pairs."""
    return unit[:-1] + "ies" if unit.endswith("y") else unit + "s"


def resample_index(outcomes: Outcomes, resamples: int, rng: np.random.Generator, stratified: bool) -> np.ndarray:
    """(resamples, items) row indices: uniform over all items, or within each group's block.

    Drawn as uint32 and widened: for a range below 2**32 numpy's generator gives the same numbers (and
    leaves the same state) whether the output is int64 or uint32, and filling uint32 is several times
    faster (docs/scaling.md); the intervals are those the int64 draws always gave."""
    n = len(outcomes)
    draw_type = np.uint32 if n < 2**32 else np.int64
    if not stratified:
        return rng.integers(0, n, size=(resamples, n), dtype=draw_type).astype(np.intp)
    blocks = [
        rng.integers(start, start + size, size=(resamples, size), dtype=draw_type)
        for start, size in zip(outcomes.starts.tolist(), outcomes.sizes().tolist())
    ]
    return np.concatenate(blocks, axis=1).astype(np.intp)


def estimate(outcomes: Outcomes, estimator: Estimator) -> float:
    """The metric on the items as they are."""
    return float(estimator.compute(Sample(outcomes, None))[0])


_SHARED_DRAWS: dict | None = None  # inside `shared_draws()`: each bootstrap plan's index matrices, kept for the next run


@contextmanager
def shared_draws() -> Iterator[None]:
    """Inside it, bootstraps of one shape (items, group sizes, resamples, seed) draw their index matrices once and
    reuse them: they are the same rows for every run of one data set (the draws depend on nothing else), so a reader
    re-verifying many such runs (the leaderboard) skips drawing them again. The numbers do not change; the matrices
    (resamples x items indices per scheme) stay in memory until the block ends."""
    global _SHARED_DRAWS
    previous, _SHARED_DRAWS = _SHARED_DRAWS, {}
    try:
        yield
    finally:
        _SHARED_DRAWS = previous


def bootstrap_distribution(
    outcomes: Outcomes,
    estimators: Mapping[str, Estimator],
    resamples: int = RESAMPLES,
    seed: int = SEED,
    sample_of: Callable[[Outcomes, np.ndarray], Sample] = Sample,
) -> dict[str, np.ndarray]:
    """Each metric over `resamples` bootstrap resamples of the items (one index matrix per scheme and chunk).

    The index matrices are drawn one ahead, in a thread, in the order they always are: drawing
    (numpy's generator lets go of the GIL) overlaps computing the metrics on the previous one, and the
    draws, hence the intervals, do not change. Inside `shared_draws()` they are drawn once per shape.
    `sample_of(outcomes, index)` makes each resample's Sample (medprobe.validity's shares work among metrics)."""
    rng = np.random.default_rng(seed)
    # both schemes drawn every chunk: the draws do not depend on which metrics exist
    plan = [(min(CHUNK, resamples - done), stratified) for done in range(0, resamples, CHUNK) for stratified in (False, True)]
    values: dict[str, list[np.ndarray]] = {name: [] for name in estimators}
    key = (len(outcomes), outcomes.sizes().tobytes(), resamples, seed)
    kept = _SHARED_DRAWS.get(key) if _SHARED_DRAWS is not None else None
    keep = _SHARED_DRAWS is not None and kept is None
    drawn: list[np.ndarray] = []  # kept for the next run inside shared_draws() only: otherwise each is freed after use

    def draw(step: int) -> np.ndarray:
        if kept is not None:
            return kept[step]
        size, stratified = plan[step]
        return resample_index(outcomes, size, rng, stratified)

    with ThreadPoolExecutor(max_workers=1) as drawer:  # one worker: the draws stay in order
        pending = drawer.submit(draw, 0) if plan else None
        for step, (_, stratified) in enumerate(plan):
            index = pending.result()
            if keep:
                drawn.append(index)
            if step + 1 < len(plan):
                pending = drawer.submit(draw, step + 1)
            sample = sample_of(outcomes, index)
            for name, estimator in estimators.items():
                if estimator.stratified == stratified:
                    values[name].append(np.asarray(estimator.compute(sample), dtype=np.float64))
    if keep:
        _SHARED_DRAWS[key] = drawn
    return {name: np.concatenate(parts) for name, parts in values.items()}


def percentile_interval(distribution: np.ndarray, level: float = LEVEL) -> tuple[float | None, float | None]:
    """The central `level` share of the finite resampled values (None, None when there are none: JSON has no NaN)."""
    tail = (1 - level) / 2
    finite = distribution[np.isfinite(distribution)]
    if not len(finite):
        return None, None
    low, high = np.quantile(finite, [tail, 1 - tail])
    return float(low), float(high)


def intervals(
    outcomes: Outcomes,
    estimators: Mapping[str, Estimator],
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
    sample_of: Callable[[Outcomes, np.ndarray], Sample] = Sample,
    distributions: dict[str, np.ndarray] | None = None,
) -> dict[str, dict]:
    """`{metric: {"low", "high", "level", "n", "method", ...}}`: percentile bootstrap intervals, in the
    metric's own units (a share stays a share); `facet` and `scale` where the estimator names them. A dict given
    as `distributions` receives each metric's resampled values."""
    found = bootstrap_distribution(outcomes, estimators, resamples, seed, sample_of)
    if distributions is not None:
        distributions.update(found)
    distributions = found
    result = {}
    for name, estimator in estimators.items():
        low, high = percentile_interval(distributions[name], level)
        entry = {
            "low": low,
            "high": high,
            "level": level,
            "n": len(outcomes) if estimator.count is None else estimator.count(outcomes),
            "method": f"percentile bootstrap over {plural(estimator.unit)}"
            + (f", resampled within each of {len(outcomes.starts)} groups" if estimator.stratified else ""),
            "resamples": resamples,
            "seed": seed,
            "unit": estimator.unit,
        }
        if estimator.stratified:
            entry["groups"] = len(outcomes.starts)
        entry.update({key: value for key, value in (("facet", estimator.facet), ("scale", estimator.scale)) if value})
        result[name] = entry
    return result


# --- paired comparisons ----------------------------------------------------------------------------


def aligned(a: Outcomes, b: Outcomes) -> tuple[Outcomes, Outcomes]:
    """`b` in the item order of `a`; both must hold the same items (same ids) with the same groups."""
    if set(a.ids) != set(b.ids):
        raise ValueError(
            f"the runs hold different items ({len(set(a.ids) - set(b.ids))} only in the first, "
            f"{len(set(b.ids) - set(a.ids))} only in the second)"
        )
    b = b.select(a.ids)
    if b.groups != a.groups:
        differ = next(i for i, (x, y) in enumerate(zip(a.groups, b.groups)) if x != y)
        raise ValueError(
            f"item {a.ids[differ]!r} is in group {a.groups[differ]!r} in one run and {b.groups[differ]!r} in the other"
        )
    return a, b


def swapped(a: Outcomes, b: Outcomes, swap: np.ndarray) -> tuple[Sample, Sample]:
    """Samples of (resamples, items) where each item's outcomes of a and b are exchanged where `swap` is True."""
    first, second = {}, {}
    for name in a.columns.keys() & b.columns.keys():
        x, y = a.columns[name][None, ...], b.columns[name][None, ...]
        mask = swap.reshape(swap.shape + (1,) * (x.ndim - 2))
        first[name], second[name] = np.where(mask, y, x), np.where(mask, x, y)
    return Sample(a, None, first), Sample(a, None, second)


def paired(
    a: Outcomes,
    b: Outcomes,
    estimators: Mapping[str, Estimator],
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
) -> dict[str, dict]:
    """Per metric: both values, their difference a - b with a paired-bootstrap interval, and the
    two-sided p-value of a paired permutation test (items' outcomes swapped between the runs), with the
    standard deviation of its null distribution (`null_spread`)."""
    a, b = aligned(a, b)
    rng = np.random.default_rng(seed)
    diffs: dict[str, list[np.ndarray]] = {name: [] for name in estimators}
    permuted: dict[str, list[np.ndarray]] = {name: [] for name in estimators}
    done = 0
    while done < resamples:
        size = min(CHUNK, resamples - done)
        for stratified in (False, True):
            index = resample_index(a, size, rng, stratified)
            sample_a, sample_b = Sample(a, index), Sample(b, index)
            for name, estimator in estimators.items():
                if estimator.stratified == stratified:
                    diffs[name].append(estimator.compute(sample_a) - estimator.compute(sample_b))
        swap = rng.random((size, len(a))) < 0.5
        first, second = swapped(a, b, swap)
        for name, estimator in estimators.items():
            permuted[name].append(estimator.compute(first) - estimator.compute(second))
        done += size
    result = {}
    for name, estimator in estimators.items():
        value_a, value_b = estimate(a, estimator), estimate(b, estimator)
        observed = value_a - value_b
        low, high = percentile_interval(np.concatenate(diffs[name]), level)
        null = np.concatenate(permuted[name])
        null = null[np.isfinite(null)]
        extreme = int(np.sum(np.abs(null) >= abs(observed) - 1e-12))
        p_value = (extreme + 1) / (len(null) + 1) if math.isfinite(observed) and len(null) else None
        result[name] = {
            "a": value_a,
            "b": value_b,
            "difference": observed,
            "low": low,
            "high": high,
            "level": level,
            "n": len(a),
            "p_value": p_value,
            "null_spread": float(np.std(null)) if len(null) else None,  # what a difference must beat: its detectable size
            "method": f"paired percentile bootstrap over {plural(estimator.unit)}"
            + (", within groups" if estimator.stratified else "")
            + "; p from a paired permutation test (outcomes swapped per item)",
            "resamples": resamples,
            "seed": seed,
        }
    return result


def holm_array(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values of each family along the last axis: one family, or many at once (the
    pairs of many simulated boards)."""
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p, axis=-1, kind="stable")
    factors = np.arange(p.shape[-1], 0, -1, dtype=np.float64)
    stepped = np.maximum.accumulate(np.minimum(1.0, factors * np.take_along_axis(p, order, axis=-1)), axis=-1)
    adjusted = np.empty_like(stepped)
    np.put_along_axis(adjusted, order, stepped, axis=-1)
    return adjusted


def holm(p_values: Mapping[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values (family-wise error), in the order given."""
    names = list(p_values)
    adjusted = holm_array(np.array([p_values[name] for name in names], dtype=np.float64)) if names else ()
    return {name: float(value) for name, value in zip(names, adjusted)}


# --- chance levels ---------------------------------------------------------------------------------


def hit_chance(candidates: np.ndarray, golds: np.ndarray, k: int) -> np.ndarray:
    """P(at least one of `golds` names is in the top k of a uniformly random order of `candidates` names),
    per query: 1 - C(c - g, k) / C(c, k), computed as a product so that large spaces stay exact in floats."""
    candidates = np.asarray(candidates, dtype=np.float64)
    golds = np.asarray(golds, dtype=np.float64)
    miss = np.ones_like(candidates)
    for i in range(k):
        miss *= np.clip((candidates - golds - i) / np.maximum(candidates - i, 1), 0, 1)
    return np.where(golds > 0, 1 - miss, 0.0)


def rank_change_chance(candidates: np.ndarray) -> dict[str, np.ndarray]:
    """Understand / Confuse / Misunderstand probabilities of one step under two independent uniformly
    random rankings of `candidates` names: the target's rank moves up with probability (c - 1) / 2c,
    stays with 1 / c, moves down with (c - 1) / 2c."""
    c = np.asarray(candidates, dtype=np.float64)
    return {"understand": (c - 1) / (2 * c), "confuse": 1 / c, "misunderstand": (c - 1) / (2 * c)}


def always_positive_f1(positives: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """F1 of the positive class of a classifier that says positive for every row: precision is the
    share of positives p, recall 1, so F1 = 2p / (1 + p)."""
    p = np.asarray(positives, dtype=np.float64) / np.maximum(np.asarray(rows, dtype=np.float64), 1)
    return 2 * p / (1 + p)
