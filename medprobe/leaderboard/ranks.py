"""Every pair of a board's runs tested, and only what those tests allow said: rank intervals and letters.

    tests = all_pairs(scores, values, estimator, resamples, seed)   # every pair: b, c, p, Holm-adjusted p
    best, worst = rank_intervals(tests.above())                     # each run's rank interval
    letters(tests.separated())                                      # ["a", "ab", "b"]: a compact letter display

A shared rank group of adjacent pairs chains (A ties B, B ties C, yet A and C differ): on 100 made-up models
every one fell in one group while the top and bottom differed by 25 points. Here every statement holds
pairwise. All m (m - 1) / 2 pairs are tested on their common items: the exact McNemar test for 0/1 item scores
(discordant counts of all pairs from one matrix product over the runs' outcomes: medprobe.mcnemar), the
paired permutation test otherwise (macro averages, F1, means of non-binary scores), and Holm's correction runs
over all of them at once, so the chance that a board of equal runs claims any separation is at most 0.05.

From the separated pairs: a run's rank interval runs from 1 + the number of runs significantly better than it
to the number of runs minus the number it is significantly better than, and letters (Piepho 2004, insert and
absorb, then sweep the redundant ones) give two runs a common letter exactly when they do not differ significantly.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from medprobe.leaderboard.pairs import ALPHA, Scored, permutation_p
from medprobe.mcnemar import EXACT, PERMUTATION, discordant_counts, mcnemar_p
from medprobe.stats import Estimator, holm_array

RULE = (
    "Two runs share a letter only when their paired difference is not significant, and a run's rank interval runs "
    "from 1 + the runs significantly better to the runs minus those significantly worse: every pair of a board is "
    "tested (exact McNemar for 0/1 item scores, else a paired permutation test), Holm over all its pairs, α 0.05."
)


@dataclass(frozen=True)
class PairTests:
    """Each pair of a board's runs (in rank order): [i, j] of runs x runs matrices, symmetric but for `difference`
    (value i - value j) and `better` (the items i scores 1 and j scores 0: its transpose is the other count)."""

    p: np.ndarray
    p_holm: np.ndarray
    difference: np.ndarray
    better: np.ndarray | None  # None where not every pair was tested on 0/1 scores
    tests: np.ndarray  # the name of each pair's test

    def separated(self) -> np.ndarray:
        return self.p_holm < ALPHA

    def above(self) -> np.ndarray:
        """[i, j]: run i is significantly better than run j."""
        return self.separated() & (self.difference > 0)

    def rows(self) -> list[dict]:
        """Every pair as leaderboard.json holds it: upper and lower by their row's position (1-based), the discordant
        counts where the test is exact, the difference, p and Holm-adjusted p: enough to recompute each number."""
        found = []
        for i, j in zip(*np.triu_indices(len(self.p), 1)):
            exact = self.better is not None and self.tests[i, j] == EXACT
            found.append(
                {
                    "upper": int(i) + 1,
                    "lower": int(j) + 1,
                    "test": str(self.tests[i, j]),
                    "better": int(self.better[i, j]) if exact else None,
                    "worse": int(self.better[j, i]) if exact else None,
                    "difference": float(self.difference[i, j]),
                    "p": float(self.p[i, j]),
                    "p_holm": float(self.p_holm[i, j]),
                    "separated": bool(self.p_holm[i, j] < ALPHA),
                }
            )
        return found


def all_pairs(
    scores: Sequence[Scored], values: Sequence[float | None], estimator: Estimator, resamples: int, seed: int
) -> PairTests:
    """Every pair of `scores` (one run each, on the same items in the same order) tested, Holm over all pairs."""
    runs = len(scores)
    upper = np.triu_indices(runs, 1)
    value = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    tests = np.full((runs, runs), PERMUTATION, dtype=object)
    better = None
    if runs > 1 and all(run.binary and run.scores is not None for run in scores):
        better = discordant_counts(np.stack([run.scores for run in scores]))
        p_upper = np.asarray(mcnemar_p(better[upper], better.T[upper]), dtype=np.float64)
        tests[:] = EXACT
    else:
        found = [pair_p(scores[i], scores[j], estimator, resamples, seed) for i, j in zip(*upper)]
        p_upper = np.array([p for p, _ in found], dtype=np.float64)
        tests[upper] = tests.T[upper] = [name for _, name in found]
    tested = np.isfinite(p_upper)  # a pair without a value has no p and stays out of Holm's family
    adjusted = np.full(len(p_upper), np.nan)
    adjusted[tested] = holm_array(p_upper[tested])
    return PairTests(
        p=symmetric(p_upper, runs),
        p_holm=symmetric(adjusted, runs),
        difference=value[:, None] - value[None, :],
        better=better,
        tests=tests,
    )


def pair_p(upper: Scored, lower: Scored, estimator: Estimator, resamples: int, seed: int) -> tuple[float, str]:
    """One pair's p and its test where not every run scores 0/1: exact McNemar when these two do, else the
    permutation p (NaN: no value to compare)."""
    if upper.binary and lower.binary and upper.scores is not None and lower.scores is not None:
        i, j = int(np.sum(upper.scores > lower.scores)), int(np.sum(upper.scores < lower.scores))
        return float(mcnemar_p(i, j)), EXACT
    found = permutation_p(upper, lower, estimator, resamples, seed)
    return (np.nan if found is None else found), PERMUTATION


def symmetric(upper_values: np.ndarray, runs: int) -> np.ndarray:
    """A runs x runs matrix from its upper triangle's values (row by row), mirrored; 1 on the diagonal (a run and
    itself), NaN where a pair has no value."""
    matrix = np.ones((runs, runs))
    rows, columns = np.triu_indices(runs, 1)
    matrix[rows, columns] = upper_values
    matrix[columns, rows] = upper_values
    return matrix


def rank_intervals(above: np.ndarray) -> tuple[list[int], list[int]]:
    """Each run's (best, worst) rank: 1 + the runs significantly better, and the runs minus those it is significantly
    better than."""
    runs = len(above)
    return [1 + int(n) for n in above.sum(axis=0)], [runs - int(n) for n in above.sum(axis=1)]


# --- letters ------------------------------------------------------------------------------------------------


def letters(separated: np.ndarray) -> list[list[str]]:
    """Each run's letters: two runs share one exactly when they are not separated (Piepho 2004). Start with one
    letter for all; for each separated pair, split every letter both hold into one without each (insert), dropping
    a split that another letter already covers (absorb); then take a letter off a run wherever each pair it joined
    shares another one (sweep). Letters are named in the order of their first run: "a" holds the top run."""
    runs = len(separated)
    columns = np.ones((1, runs), dtype=bool)
    for i, j in zip(*np.nonzero(np.triu(separated, 1))):
        both = columns[:, i] & columns[:, j]
        if not both.any():
            continue
        kept, split = columns[~both], columns[both]
        without_i, without_j = split.copy(), split.copy()
        without_i[:, i], without_j[:, j] = False, False
        new = np.concatenate([without_i, without_j])
        # a split column is never inside another split one, nor a kept one inside it (no column is inside another)
        covered = (new.astype(np.int32) @ (~kept).T.astype(np.int32) == 0).any(axis=1) if len(kept) else np.zeros(len(new), bool)
        columns = np.concatenate([kept, new[~covered]])
    columns = sweep(columns)
    columns = columns[np.argsort([int(np.argmax(column)) for column in columns], kind="stable")]
    names = letter_names(len(columns))
    return [[names[c] for c in range(len(columns)) if columns[c, run]] for run in range(runs)]


def sweep(columns: np.ndarray) -> np.ndarray:
    """Take a letter off a run that has another one, where every run it shares that letter with shares another letter
    with it too; then drop letters left on no run: the same pairs share a letter, with fewer letters."""
    columns = columns.copy()
    shared = columns.T.astype(np.int64) @ columns.astype(np.int64)  # [i, j]: letters runs i and j share
    for c in range(len(columns)):
        for run in np.flatnonzero(columns[c]):
            others = np.flatnonzero(columns[c])
            others = others[others != run]
            if shared[run, run] >= 2 and (shared[run, others] >= 2).all():  # a run keeps one letter at least
                columns[c, run] = False
                shared[run, others] -= 1
                shared[others, run] -= 1
                shared[run, run] -= 1
    return columns[columns.any(axis=1)]


def letter_names(count: int) -> list[str]:
    """a..z, then A..Z, then a2..z2, A2..Z2, and so on."""
    alphabet = string.ascii_lowercase + string.ascii_uppercase
    return [alphabet[i % 52] + (str(i // 52 + 1) if i >= 52 else "") for i in range(count)]


def letters_text(found: list[str], board_letters: Sequence[Sequence[str]]) -> str:
    """A run's letters as a page shows them: joined ("ab"), or spaced where the board has names of two characters."""
    long = any(len(name) > 1 for names in board_letters for name in names)
    return (" " if long else "").join(found)
