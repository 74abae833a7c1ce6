"""The statistics of a board: each run's value per group, and a pair's paired difference with its test.

    run = scored(outcomes, estimator)                   # with per-item scores when the metric is their mean
    found = pair_difference(upper, lower, estimator)    # difference, 95% interval, p and its test, detectable difference

A metric that is the mean over items of a per-item score (micro acc@k: a query's hit, 0 or 1) is
computed here from those scores: the paired bootstrap of its difference resamples the items'
differences (for scores of 0 and 1, by drawing the counts of the three kinds of item — run better,
reference better, same — which is the same distribution as drawing the items, in a thousandth of the
time). One question gets one test, on every surface (this board, its pair pages, `medprobe compare`): for 0/1
scores the exact McNemar test of the discordant items (medprobe.mcnemar); for a mean of other scores the paired
permutation test, flipping the sign of each item's difference; any other metric (macro averages, F1, shares of
steps) goes through medprobe.stats.paired, as `medprobe compare` does. Whether a metric is such a mean is checked
on the numbers, not assumed: the per-item scores must give the metric on the items and on a resample of them.

The smallest detectable difference is that of the test used, at two-sided level 0.05 with 80% power: for 0/1
scores the exact McNemar test's, given the pair's number of discordant items (medprobe.mcnemar; none where fewer
than 6 of them make any difference undetectable); for a permutation test (z_0.975 + z_0.8) times the standard
deviation of its null distribution (the differences' signs flipped), a normal approximation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from medprobe.mcnemar import PERMUTATION, detectable_difference, exact_test, is_binary, item_scores
from medprobe.stats import RESAMPLES, SEED, Estimator, Outcomes, estimate, intervals, paired, percentile_interval

ALPHA = 0.05
LEVEL = 0.95
Z_LEVEL = 1.959963984540054  # z of 0.975
Z_POWER = 0.8416212335729143  # z of 0.8: 80% power


@dataclass(frozen=True)
class Scored:
    """A run's outcomes on a board's items and, when the metric is the mean of per-item scores, those scores."""

    outcomes: Outcomes
    scores: np.ndarray | None
    binary: bool = False  # every score is 0 or 1

    def group(self, name: str) -> Scored:
        """The same for one group's items (a block of rows: the scores are sliced, not recomputed)."""
        index = self.outcomes.group_names.index(name)
        start = int(self.outcomes.starts[index])
        stop = start + int(self.outcomes.sizes()[index])
        return Scored(self.outcomes.group(name), None if self.scores is None else self.scores[start:stop], self.binary)


def scored(outcomes: Outcomes, estimator: Estimator) -> Scored:
    scores = item_scores(outcomes, estimator)
    return Scored(outcomes, scores, scores is not None and is_binary(scores))


def mean_interval(values: np.ndarray, resamples: int, seed: int, binary: bool) -> tuple[float | None, float | None]:
    """The percentile bootstrap interval of the mean of `values` (for 0/1 values, by binomial draws of the hits)."""
    rng = np.random.default_rng(seed)
    n = len(values)
    if binary:
        draws = rng.binomial(n, values.mean(), size=resamples) / n
    else:
        draws = values[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    return percentile_interval(draws, LEVEL)


def value_interval(run: Scored, estimator: Estimator, resamples: int = RESAMPLES, seed: int = SEED) -> dict:
    """{"value", "low", "high", "n"} of a metric on a run's items (e.g. one group's)."""
    if run.scores is not None and len(run.scores):
        low, high = mean_interval(run.scores, resamples, seed, run.binary)
        return {"value": float(run.scores.mean()), "low": low, "high": high, "n": len(run.scores)}
    found = intervals(run.outcomes, {"m": estimator}, resamples=resamples, seed=seed)["m"]
    return {"value": estimate(run.outcomes, estimator), "low": found["low"], "high": found["high"], "n": len(run.outcomes)}


# --- a pair -----------------------------------------------------------------------------------------------


def sign_flip_p(differences: np.ndarray, resamples: int, rng: np.random.Generator) -> float:
    """Paired permutation p of a mean difference: each item's difference flips sign with probability 1/2. For
    differences of -1, 0 and 1 the sum of the flipped ones is 2 Binomial(m, 1/2) - m over the m nonzero ones: drawn so."""
    moved = differences[differences != 0]
    observed = abs(differences.mean())
    if not len(moved):
        return 1.0
    if np.isin(moved, (-1.0, 1.0)).all():
        null = (2 * rng.binomial(len(moved), 0.5, size=resamples) - len(moved)) / len(differences)
    else:
        signs = rng.random((resamples, len(moved))) < 0.5
        null = np.where(signs, -moved, moved).sum(axis=1) / len(differences)
    return (int(np.sum(np.abs(null) >= observed - 1e-12)) + 1) / (resamples + 1)


DETECTABLE_EXACT = (
    "for the exact McNemar test given the pair's number of discordant items (its power conditional on that number, "
    "exact); none where that number is below 6, which can never give p < 0.05"
)
DETECTABLE_PERMUTATION = (
    "for the paired permutation test: (z 0.975 + z 0.8) times the spread of its null distribution (each item's "
    "difference with its sign flipped), a normal approximation"
)


def minimum_detectable(null_spread: float) -> float | None:
    """The difference a permutation test with this null standard deviation finds with 80% power (None: it is 0, the
    runs agree on every item and no difference is detectable)."""
    return (Z_LEVEL + Z_POWER) * null_spread if null_spread > 0 else None


def permutation_p(upper: Scored, lower: Scored, estimator: Estimator, resamples: int, seed: int) -> float | None:
    """The paired permutation p of `upper - lower`, drawn from `seed` alone: a pair's page and its board's test of
    all pairs give the same p."""
    if upper.scores is not None and lower.scores is not None and len(upper.scores):
        return sign_flip_p(upper.scores - lower.scores, resamples, np.random.default_rng(seed))
    return paired(upper.outcomes, lower.outcomes, {"m": estimator}, resamples=resamples, seed=seed)["m"]["p_value"]


@dataclass
class Difference:
    """`upper - lower` on their common items: the difference, its 95% paired-bootstrap interval, the p of the one test
    of the question (`test`: exact McNemar for 0/1 scores, with the discordant counts, else paired permutation) and the
    smallest difference that test detects (None: none at this n, e.g. fewer than 6 discordant items)."""

    upper: float
    lower: float
    difference: float
    low: float | None
    high: float | None
    p_value: float | None
    test: str
    better: int | None  # items the upper run gets right and the lower one wrong (0/1 scores)
    worse: int | None
    n: int
    mde: float | None
    mde_method: str
    method: str


def pair_difference(
    upper: Scored, lower: Scored, estimator: Estimator, resamples: int = RESAMPLES, seed: int = SEED
) -> Difference:
    """The paired difference `upper - lower` of one metric; both hold the same items in the same order."""
    x, y = upper.scores, lower.scores
    if x is None or y is None or not len(x):
        return generic_difference(upper.outcomes, lower.outcomes, estimator, resamples, seed)
    n = len(x)
    d = x - y
    rng = np.random.default_rng(seed)
    binary = upper.binary and lower.binary
    if binary:
        tested = exact_test(x, y)
        better, worse = tested["better"], tested["worse"]
        counts = rng.multinomial(n, [better / n, worse / n, (n - better - worse) / n], size=resamples)
        draws = (counts[:, 0] - counts[:, 1]) / n
        mde = detectable_difference(better, worse, n)
    else:
        tested = {"p_value": permutation_p(upper, lower, estimator, resamples, seed), "test": PERMUTATION}
        better = worse = None
        draws = d[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
        mde = minimum_detectable(math.sqrt(float(np.sum(d * d))) / n)  # the sign-flip null's spread
    low, high = percentile_interval(draws, LEVEL)
    value_upper, value_lower = estimate(upper.outcomes, estimator), estimate(lower.outcomes, estimator)  # as compare has them
    return Difference(
        upper=value_upper,
        lower=value_lower,
        difference=value_upper - value_lower,
        low=low,
        high=high,
        p_value=tested["p_value"],
        test=tested["test"],
        better=better,
        worse=worse,
        n=n,
        mde=mde,
        mde_method=DETECTABLE_EXACT if binary else DETECTABLE_PERMUTATION,
        method="paired bootstrap of the items' differences"
        + (" (drawn as counts of discordant items); exact McNemar p on the discordant items" if binary else "")
        + ("" if binary else "; p from flipping each item's difference (paired permutation)"),
    )


def generic_difference(upper: Outcomes, lower: Outcomes, estimator: Estimator, resamples: int, seed: int) -> Difference:
    """A metric that is not a mean of item scores: medprobe.stats.paired, as `medprobe compare` computes it."""
    found = paired(upper, lower, {"m": estimator}, resamples=resamples, seed=seed)["m"]
    return Difference(
        upper=found["a"],
        lower=found["b"],
        difference=found["difference"],
        low=found["low"],
        high=found["high"],
        p_value=found["p_value"],
        test=PERMUTATION,
        better=None,
        worse=None,
        n=found["n"],
        mde=None if found["null_spread"] is None else minimum_detectable(found["null_spread"]),
        mde_method=DETECTABLE_PERMUTATION,
        method=found["method"],
    )
