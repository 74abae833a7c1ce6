"""The exact McNemar test, in one place: the test of two runs' 0/1 outcomes on the same items that `medprobe compare`,
the leaderboard's boards, pair pages and per-group rows all use, its power, and the smallest difference it detects.

    mcnemar_p(7, 2)                          # 0.180: two-sided, exact, from the discordant counts
    mcnemar_p(np.array([7, 40]), np.array([2, 0]))   # any shape at once (a board's 4,950 pairs)
    detectable_difference(12, 3, 1000)       # the difference detected with 80% power given 15 discordant items
    discordant_counts(hits)                  # hits: runs x items of 0/1; [i, j] = items run i gets and run j misses
    zero_one_scores(outcomes, estimator)     # each item's 0/1 score when the metric is their mean, else None

Two runs that both score every item 0 or 1 differ only on the discordant items: `better` that the first gets and
the second misses, `worse` the other way. Under "no difference" each discordant item goes either way with
probability 1/2, so the test is the two-sided binomial test of `better` among the m = better + worse discordant
items: twice the smaller tail, at most 1. It is exact where a paired permutation test is a Monte-Carlo estimate of
it, and it has no floor (1,000 permutations cannot give a p below 1/1,001).

The smallest detectable difference is conditional on the number of discordant items m, which a paired 0/1
comparison observes: with B ~ Binomial(m, q) items going the first run's way, the test rejects at level 0.05 when
B is at most k* or at least m - k* (k* the largest count whose two-sided p is below 0.05); its power at q is that
probability, exactly. The detectable difference is the expected difference m (2 q* - 1) / n at the q* where the
power is 0.80. Fewer than 6 discordant items can never give p < 0.05 (two-sided: 2 / 2**5 = 0.0625), so then
nothing is detectable, and that is what is said, not a number.

Counts go up to any size: the binomial tails are summed in log space from exact log-factorials (math.lgamma).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from medprobe.stats import SEED, Estimator, Outcomes, Sample, estimate

ALPHA = 0.05
POWER = 0.8
EXACT = "exact McNemar"  # the names every surface prints beside a p: this test for 0/1 scores,
PERMUTATION = "paired permutation"  # medprobe.stats.paired's (or a sign flip's) for any other metric
LOG_HALF = math.log(0.5)


_LOG_FACTORIALS = np.zeros(1)  # log(i!) for i = 0..len - 1, grown on demand and kept (a board asks for the same ones)


def log_factorials(largest: int) -> np.ndarray:
    """log(i!) for i = 0..at least largest (exact to float precision, at any size)."""
    global _LOG_FACTORIALS
    if len(_LOG_FACTORIALS) <= largest:
        size = max(largest + 1, 2 * len(_LOG_FACTORIALS))
        _LOG_FACTORIALS = np.array([math.lgamma(i + 1.0) for i in range(size)])
    return _LOG_FACTORIALS


def window(m: np.ndarray) -> np.ndarray:
    """How many binomial terms next to the largest ones hold every bit of a tail of Binomial(m, q): the log of the
    terms falls at least 2 d (d - 1) / m at d terms from the largest (log-concavity), so past 6 sqrt(m) + 2 of them
    the rest weigh less than exp(-72) of it, below float precision."""
    return np.ceil(6 * np.sqrt(np.asarray(m, dtype=np.float64))).astype(np.int64) + 2


def log_sums(first: np.ndarray, last: np.ndarray, log_term) -> np.ndarray:
    """log of the sum over i = first..last of exp(log_term(segment, i)), for many segments at once (one flat array
    of terms, summed per segment after subtracting its largest)."""
    lengths = last - first + 1
    segment = np.repeat(np.arange(len(first)), lengths)
    i = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths) + np.repeat(first, lengths)
    terms = log_term(segment, i)
    starts = np.cumsum(lengths) - lengths
    top = np.maximum.reduceat(terms, starts)
    return top + np.log(np.add.reduceat(np.exp(terms - top[segment]), starts))


def log_lower_tails(m: np.ndarray, k: np.ndarray) -> np.ndarray:
    """log P(X <= k) for X ~ Binomial(m, 1/2), elementwise for 0 <= k <= m/2: the terms from k down, where they
    matter (the largest is the one at k)."""
    logs = log_factorials(int(m.max()))
    first = np.maximum(0, k - window(m))
    return log_sums(first, k, lambda s, i: logs[m[s]] - logs[i] - logs[m[s] - i] + m[s] * LOG_HALF)


def mcnemar_p(better, worse):
    """Two-sided exact McNemar p of `better` items one run gets and the other misses against `worse` the other way:
    min(1, 2 P(X <= min(better, worse))) for X ~ Binomial(better + worse, 1/2); 1 without discordant items. Takes
    counts of any shape (all at once: a board's 4,950 pairs in milliseconds) and gives a float for scalars."""
    b, c = np.asarray(better, dtype=np.int64), np.asarray(worse, dtype=np.int64)
    m, k = (b + c).ravel(), np.minimum(b, c).ravel()
    p = np.ones(m.shape)
    some = np.flatnonzero(m > 0)
    if len(some):
        p[some] = np.minimum(1.0, 2 * np.exp(log_lower_tails(m[some], k[some])))
    return float(p[0]) if b.ndim == 0 and c.ndim == 0 else p.reshape(np.broadcast(b, c).shape)


def critical_count(m: int, alpha: float = ALPHA) -> int:
    """The largest k whose two-sided exact p among m discordant items is below alpha (-1: none, m < 6 at 0.05)."""
    if m <= 0:
        return -1
    logs, i = log_factorials(m), np.arange(m // 2 + 1)
    tails = np.logaddexp.accumulate(logs[m] - logs[i] - logs[m - i] + m * LOG_HALF)  # log P(X <= k), k = 0..m/2
    below = np.flatnonzero(2 * np.exp(tails) < alpha)
    return int(below[-1]) if len(below) else -1


def power_at(q: np.ndarray, m: int, k: int) -> np.ndarray:
    """P(B <= k) + P(B >= m - k) for B ~ Binomial(m, q), for each q in [1/2, 1): the test's power when a discordant
    item goes the first run's way with probability q. Only the terms that weigh are summed: next to k for B <= k,
    and around B's mean for B >= m - k (i = m - B near m (1 - q))."""
    q = np.asarray(q, dtype=np.float64)
    logs = log_factorials(m)
    reach = int(window(m))
    lower_first = np.full(len(q), max(0, k - reach))
    middle = np.floor(m * (1 - q)).astype(np.int64)
    upper_first = np.clip(middle - reach, 0, k)
    upper_last = np.clip(middle + reach, 0, k)
    log_q, log_p = np.log(q), np.log1p(-q)

    def lower(s: np.ndarray, i: np.ndarray) -> np.ndarray:  # B = i
        return logs[m] - logs[i] - logs[m - i] + i * log_q[s] + (m - i) * log_p[s]

    def upper(s: np.ndarray, i: np.ndarray) -> np.ndarray:  # B = m - i
        return logs[m] - logs[i] - logs[m - i] + i * log_p[s] + (m - i) * log_q[s]

    return np.exp(log_sums(lower_first, np.full(len(q), k), lower)) + np.exp(log_sums(upper_first, upper_last, upper))


def power_slope(q: float, m: int, k: int) -> float:
    """d power / d q: m b(m - k - 1; m - 1, q) - m b(k; m - 1, q), b the binomial probability (d/dq P(B >= j) is
    m b(j - 1; m - 1, q))."""
    logs = log_factorials(m)

    def log_b(j: int) -> float:
        return logs[m - 1] - logs[j] - logs[m - 1 - j] + j * math.log(q) + (m - 1 - j) * math.log1p(-q)

    return m * (math.exp(log_b(m - k - 1)) - math.exp(log_b(k)))


@functools.lru_cache(maxsize=4096)  # a board's pairs and groups repeat discordant counts
def detectable_share(m: int, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The q in (1/2, 1) where the exact test among m discordant items has `power` (None: it never rejects): Newton's
    steps on the exact power from the normal approximation's guess, kept inside a bracket that halves when a step
    would leave it."""
    k = critical_count(m, alpha)
    if k < 0:
        return None
    low, high = 0.5, 1.0
    q = min(0.999, (m - k + 0.84 * math.sqrt(m) / 2) / m)  # B >= m - k four times in five, roughly
    for _ in range(100):
        gap = float(power_at(np.array([q]), m, k)[0]) - power
        if abs(gap) < 1e-9:
            break
        low, high = (q, high) if gap < 0 else (low, q)
        if high - low < 1e-12:
            break
        slope = power_slope(q, m, k)
        step = q - gap / slope if slope > 0 else -1.0
        q = step if low < step < high else 0.5 * (low + high)
    return q


def detectable_difference(better: int, worse: int, n: int, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The difference (as a share of the n items) the exact test detects with `power` at two-sided `alpha`, given
    the better + worse discordant items: m (2 q* - 1) / n. None where nothing is detectable (fewer than 6 at 0.05)."""
    m = int(better) + int(worse)
    q = detectable_share(m, alpha, power) if n > 0 else None
    return None if q is None else m * (2 * q - 1) / n


def not_detectable_text(n: int, discordant: int) -> str:
    """What a page says where the test can flag nothing: `not detectable at n=100 (5 discordant)`."""
    return f"not detectable at n={n:,} ({discordant:,} discordant)"


def discordant_counts(hits: np.ndarray) -> np.ndarray:
    """[i, j] = the items run i scores 1 and run j scores 0, for runs x items of 0/1, every pair from one matrix
    product (hits @ (1 - hits).T; float64 counts are exact to 2**53 items). [j, i] is the other discordant count."""
    x = np.asarray(hits, dtype=np.float64)
    return np.rint(x @ (1.0 - x).swapaxes(-1, -2)).astype(np.int64)


# --- which metrics it applies to ---------------------------------------------------------------------------


def item_scores(outcomes: Outcomes, estimator: Estimator) -> np.ndarray | None:
    """Each item's score when the metric is the plain mean of them (checked on the items and on one resample), else
    None (a macro average, F1, a share of steps)."""
    if estimator.stratified or estimator.weighted is not None or not len(outcomes):  # weighted: AURC, ECE, no means
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


def is_binary(values: np.ndarray) -> bool:
    return bool(np.isin(values, (0.0, 1.0)).all())


def zero_one_scores(outcomes: Outcomes, estimator: Estimator) -> np.ndarray | None:
    """The items' 0/1 scores when the metric is their mean (micro acc@k: a query's hit), else None: the exact test
    applies to a metric exactly when both runs have them."""
    scores = item_scores(outcomes, estimator)
    return scores if scores is not None and is_binary(scores) else None


def exact_test(first: np.ndarray, second: np.ndarray) -> dict:
    """The exact McNemar test of `first - second` on 0/1 scores of the same items: {"p_value", "test", "better",
    "worse"} as every surface records it."""
    better, worse = int(np.sum(first > second)), int(np.sum(first < second))
    return {"p_value": mcnemar_p(better, worse), "test": EXACT, "better": better, "worse": worse}


def one_test(found: dict, first: Outcomes, second: Outcomes, estimator: Estimator) -> dict:
    """A paired comparison of `first - second` on the same items (medprobe.stats.paired's entry) with the one test of
    its question: the exact McNemar p where both runs score each item 0 or 1 on this metric, else its permutation p;
    the test named beside it."""
    x, y = zero_one_scores(first, estimator), zero_one_scores(second, estimator)
    if x is not None and y is not None:
        return {**found, **exact_test(x, y)}
    return {**found, "test": PERMUTATION, "better": None, "worse": None}
