"""Agreement between raters on the 1-5 scale, with seeded bootstrap intervals over rated items.

- two raters: Cohen's kappa with quadratic weights, 1 - sum(w * observed) / sum(w * expected),
  w_ij = (i - j)^2 / (max - min)^2, expected from the two raters' own marginals;
- three or more: Krippendorff's alpha with the interval metric (squared difference, the same
  disagreement as quadratic weights), 1 - D_o / D_e, for complete data (every rater rates every
  item: the import checks it).

Both are computed for many resamples at once (medprobe.stats: ratings of shape
(resamples, items, raters)); a resample whose ratings are all one value has no expected
disagreement and no coefficient (NaN, left out of the interval).
"""

from __future__ import annotations

import numpy as np

from medprobe.review.scale import HIGHEST, LOWEST
from medprobe.stats import Estimator, Outcomes, estimate, intervals

VALUES = np.arange(LOWEST, HIGHEST + 1)


def quadratic_kappa(ratings: np.ndarray) -> np.ndarray:
    """(resamples, items, 2) ratings -> (resamples,) quadratic-weighted Cohen's kappa."""
    a, b = ratings[..., 0], ratings[..., 1]
    span = float(HIGHEST - LOWEST) ** 2
    observed = ((a - b) ** 2).mean(axis=-1) / span
    share_a = (a[..., None] == VALUES).mean(axis=-2)  # (resamples, values)
    share_b = (b[..., None] == VALUES).mean(axis=-2)
    weights = (VALUES[:, None] - VALUES[None, :]) ** 2 / span
    expected = np.einsum("ri,ij,rj->r", share_a, weights, share_b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - observed / expected, np.nan)


def interval_alpha(ratings: np.ndarray) -> np.ndarray:
    """(resamples, items, raters) complete ratings -> (resamples,) Krippendorff's alpha, interval metric.

    With m values per item and n = items * m values in all: D_o averages, per item, the squared
    differences of its ordered pairs of values over m - 1; D_e the squared differences of all
    ordered pairs of the n values over n - 1. sum over ordered pairs of (x - y)^2 = 2 N sum x^2 - 2 (sum x)^2.
    """
    m = ratings.shape[-1]
    per_item = 2 * m * (ratings**2).sum(axis=-1) - 2 * ratings.sum(axis=-1) ** 2  # (resamples, items)
    n = ratings.shape[-2] * m
    flat = ratings.reshape(ratings.shape[0], -1)
    observed = per_item.sum(axis=-1) / (m - 1) / n
    expected = (2 * n * (flat**2).sum(axis=-1) - 2 * flat.sum(axis=-1) ** 2) / (n * (n - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - observed / expected, np.nan)


def agreement(table: dict[str, dict[str, int]], items: list[str], resamples: int, seed: int) -> dict | None:
    """The coefficient for these raters, its 95% interval and n (rated items), or None for one rater."""
    raters = list(table)
    if len(raters) < 2:
        return None
    matrix = np.array([[table[rater][item] for rater in raters] for item in items], dtype=np.float64)
    two = len(raters) == 2
    compute = quadratic_kappa if two else interval_alpha
    name = "quadratic-weighted Cohen's kappa" if two else "Krippendorff's alpha (interval metric)"
    outcomes = Outcomes.build(items, ["all"] * len(items), {"ratings": matrix})
    estimator = Estimator(lambda sample: compute(sample["ratings"]), "rated prediction")
    value = estimate(outcomes, estimator)
    found = intervals(outcomes, {name: estimator}, resamples=resamples, seed=seed)[name]
    return {
        "coefficient": name,
        "raters": raters,
        "value": None if np.isnan(value) else value,
        **{key: found[key] for key in ("low", "high", "level", "n", "method", "resamples", "seed")},
    }
