"""The statistics of a board: each run's value per group, and each pair's paired difference with its tests.

    run = scored(outcomes, estimator)                   # with per-item scores when the metric is their mean
    found = pair_difference(upper, lower, estimator)    # difference, 95% interval, p, exact McNemar p, MDE
    groups, p_holm = rank_groups([0.001, 0.4, 0.02])   # Holm across a board's adjacent pairs: groups [1, 2, 2, 3]

A metric that is the mean over items of a per-item score (micro acc@k: a query's hit, 0 or 1) is
computed here from those scores: the paired bootstrap of its difference resamples the items'
differences (for scores of 0 and 1, by drawing the counts of the three kinds of item — run better,
reference better, same — which is the same distribution as drawing the items, in a thousandth of the
time), and the paired permutation test flips the sign of each item's difference (what swapping its two
outcomes does; for differences of -1, 0 and 1, drawn as a binomial count of the flipped ones). For 0/1
scores the exact McNemar test is given beside it: the two-sided binomial test of the discordant items,
exact where the permutation test is a Monte-Carlo estimate of it, and the one that decides tie groups. Any other metric
(macro averages, F1, shares of steps) goes through medprobe.stats.paired and medprobe.stats.intervals,
as `medprobe compare` does. Whether a metric is such a mean is checked on the numbers, not assumed: the
per-item scores must give the metric on the items and on a resample of them.

The minimum detectable difference is that of a two-sided paired test at level 0.05 with 80% power on the
common items: (z_0.975 + z_0.8) times the standard error of the difference — for a mean, the standard
deviation of the items' differences over sqrt(n) (at least that of one discordant item, so that two runs
that agree everywhere are not said to detect any difference); otherwise the standard error read from the
bootstrap interval's width.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from medprobe.stats import RESAMPLES, SEED, Estimator, Outcomes, Sample, estimate, holm, intervals, paired, percentile_interval

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


def item_scores(outcomes: Outcomes, estimator: Estimator) -> np.ndarray | None:
    """Each item's score when the metric is the plain mean of them (checked on the items and on one resample), else None."""
    if estimator.stratified or not len(outcomes):
        return None
    try:
        values = np.asarray(estimator.compute(Sample(outcomes, np.arange(len(outcomes))[:, None])), dtype=np.float64)
    except (ValueError, IndexError, TypeError):
        return None
    if values.shape != (len(outcomes),) or not np.isfinite(values).all():
        return None
    index = np.random.default_rng(SEED).integers(0, len(outcomes), size=(1, len(outcomes)))
    resampled = float(np.asarray(estimator.compute(Sample(outcomes, index)))[0])
    whole = math.isclose(values.mean(), estimate(outcomes, estimator), abs_tol=1e-12)
    if not (whole and math.isclose(values[index[0]].mean(), resampled, abs_tol=1e-12)):
        return None
    return values


def scored(outcomes: Outcomes, estimator: Estimator) -> Scored:
    scores = item_scores(outcomes, estimator)
    return Scored(outcomes, scores, scores is not None and is_binary(scores))


def is_binary(values: np.ndarray) -> bool:
    return bool(np.isin(values, (0.0, 1.0)).all())


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


def log_binomial_tail(successes: int, trials: int) -> float:
    """log P(X <= successes) for X ~ Binomial(trials, 1/2), summed in log space (exact for any size)."""
    terms = [math.lgamma(trials + 1) - math.lgamma(k + 1) - math.lgamma(trials - k + 1) for k in range(successes + 1)]
    top = max(terms)
    return top + math.log(sum(math.exp(term - top) for term in terms)) - trials * math.log(2)


def mcnemar_exact(better: int, worse: int) -> float:
    """Two-sided exact McNemar p of `better` items the run gets and the reference misses against `worse` the other way:
    twice the smaller binomial tail of the discordant items at 1/2, at most 1 (1 when there are none)."""
    discordant = better + worse
    if discordant == 0:
        return 1.0
    return min(1.0, 2 * math.exp(log_binomial_tail(min(better, worse), discordant)))


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


def minimum_detectable(standard_error: float) -> float:
    return (Z_LEVEL + Z_POWER) * standard_error


@dataclass
class Difference:
    """`upper - lower` on their common items: the difference, its 95% paired-bootstrap interval, the paired permutation
    p, the exact McNemar p (0/1 scores only), the discordant counts and the minimum detectable difference."""

    upper: float
    lower: float
    difference: float
    low: float | None
    high: float | None
    p_value: float | None
    mcnemar_p: float | None
    better: int | None  # items the upper run gets right and the lower one wrong (0/1 scores)
    worse: int | None
    n: int
    mde: float | None
    method: str

    def test_p(self) -> float | None:
        """The p a tie group is decided by: the exact McNemar p where there is one, else the permutation p."""
        return self.mcnemar_p if self.mcnemar_p is not None else self.p_value


def pair_difference(
    upper: Scored, lower: Scored, estimator: Estimator, resamples: int = RESAMPLES, seed: int = SEED, permutation: bool = True
) -> Difference:
    """The paired difference `upper - lower` of one metric; both hold the same items in the same order. `permutation`
    False leaves out the permutation p where the exact McNemar p is given (a pair's per-group rows: McNemar decides)."""
    x, y = upper.scores, lower.scores
    if x is None or y is None or not len(x):
        return generic_difference(upper.outcomes, lower.outcomes, estimator, resamples, seed)
    n = len(x)
    d = x - y
    rng = np.random.default_rng(seed)
    binary = upper.binary and lower.binary
    better = worse = None
    if binary:
        better, worse = int(np.sum(d > 0)), int(np.sum(d < 0))
        counts = rng.multinomial(n, [better / n, worse / n, (n - better - worse) / n], size=resamples)
        draws = (counts[:, 0] - counts[:, 1]) / n
    else:
        draws = d[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    low, high = percentile_interval(draws, LEVEL)
    spread = max(float(np.var(d, ddof=1)) if n > 1 else 0.0, 1.0 / n)  # at least one discordant item's worth
    value_upper, value_lower = estimate(upper.outcomes, estimator), estimate(lower.outcomes, estimator)  # as compare has them
    return Difference(
        upper=value_upper,
        lower=value_lower,
        difference=value_upper - value_lower,
        low=low,
        high=high,
        p_value=sign_flip_p(d, resamples, rng) if permutation or not binary else None,
        mcnemar_p=mcnemar_exact(better, worse) if better is not None and worse is not None else None,
        better=better,
        worse=worse,
        n=n,
        mde=minimum_detectable(math.sqrt(spread / n)),
        method="paired bootstrap of the items' differences"
        + (" (drawn as counts of discordant items)" if binary else "")
        + "; p from flipping each item's difference (paired permutation)"
        + ("; exact McNemar p on the discordant items" if binary else ""),
    )


def generic_difference(upper: Outcomes, lower: Outcomes, estimator: Estimator, resamples: int, seed: int) -> Difference:
    """A metric that is not a mean of item scores: medprobe.stats.paired, as `medprobe compare` computes it."""
    found = paired(upper, lower, {"m": estimator}, resamples=resamples, seed=seed)["m"]
    width = None if found["low"] is None or found["high"] is None else found["high"] - found["low"]
    return Difference(
        upper=found["a"],
        lower=found["b"],
        difference=found["difference"],
        low=found["low"],
        high=found["high"],
        p_value=found["p_value"],
        mcnemar_p=None,
        better=None,
        worse=None,
        n=found["n"],
        mde=None if width is None else minimum_detectable(width / (2 * Z_LEVEL)),
        method=found["method"],
    )


# --- a board ---------------------------------------------------------------------------------------------


def rank_groups(p_values: Sequence[float | None], alpha: float = ALPHA) -> tuple[list[int], list[float | None]]:
    """(the rank group of each of len(p_values) + 1 rows in order, the Holm-adjusted p of each adjacent pair).

    Row i and row i + 1 share a group unless their pair's Holm-adjusted p (over the board's adjacent pairs) is below
    `alpha`; a pair without a p (no value) does not separate them."""
    tested = {index: p for index, p in enumerate(p_values) if p is not None}
    adjusted = holm({str(index): p for index, p in tested.items()})
    p_holm = [adjusted.get(str(index)) for index in range(len(p_values))]
    groups = [1]
    for p in p_holm:
        groups.append(groups[-1] + (1 if p is not None and p < alpha else 0))
    return groups, p_holm
