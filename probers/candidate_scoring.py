"""Ranking built on per-candidate scores, shared by the mask-average and causal-LM probers.

A candidate scorer answers

    score_candidates(queries, candidates) -> list[numpy.ndarray]

with one candidate list per query (each query holds the `[Y]` slot) and one float array per
query, aligned with its candidates, higher = better. `rank` is always derived from those
scores (so the two never disagree) and breaks ties by candidate order, which for the answer
space is sorted order: the same winners on every run.

`ShortlistProber` restricts a scorer to the top-N names another prober wrote with
`medprobe probe --predictions`, so that an expensive scorer re-ranks a cheap one's shortlist.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np


class CandidateScorer(Protocol):
    settings: dict  # recorded in the results file

    def score_candidates(self, queries: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """One score per candidate of each query (higher = better); queries hold the [Y] slot."""
        ...


def top_k(candidates: Sequence[str], scores: np.ndarray, k: int) -> list[str]:
    """The k best candidates, best first; equal scores keep candidate order (stable sort)."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")[:k]
    return [candidates[i] for i in order]


def rank_by_scores(scorer: CandidateScorer, queries: Sequence[str], candidates: Sequence[str], k: int) -> list[list[str]]:
    """`rank` for a scorer: every query ranks the same candidate list."""
    candidates = list(candidates)
    scores = scorer.score_candidates(queries, [candidates] * len(queries))
    return [top_k(candidates, row, k) for row in scores]


def check_candidate_lists(queries: Sequence[str], candidates: Sequence[Sequence[str]]) -> None:
    if isinstance(candidates, str) or len(candidates) != len(queries):
        raise ValueError(
            f"score_candidates expects one candidate list per query: got {len(queries)} queries and "
            f"{'a string' if isinstance(candidates, str) else f'{len(candidates)} lists'}"
        )


def read_shortlists(path: str | Path, query_of_id: dict[str, str], top_n: int) -> dict[str, list[str]]:
    """query text -> the first `top_n` names of a `--predictions` JSONL file (keyed by row id).

    The file may cover only some rows (e.g. a `--per-relation` run); a query probed without a
    shortlist is an error at ranking time.
    """
    shortlists: dict[str, list[str]] = {}
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                example_id, names = row["id"], row["predictions"]
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                raise ValueError(f"{path}, line {line_number}: expected {{'id': ..., 'predictions': [...]}} ({err})") from err
            if example_id in query_of_id:
                shortlists[query_of_id[example_id]] = list(names)[:top_n]
    if not shortlists:
        raise ValueError(f"{path} has predictions for none of the dataset's row ids; was it written for another dataset?")
    return shortlists


class ShortlistProber:
    """Rank, per query, only its shortlisted names that are also in the candidate set, by a scorer."""

    def __init__(self, scorer: CandidateScorer, shortlists: dict[str, list[str]], source: str = ""):
        self.scorer = scorer
        self.shortlists = shortlists
        self.settings = {**scorer.settings, "shortlist": source, "shortlist_size": max(map(len, shortlists.values()), default=0)}
        self.timings = getattr(scorer, "timings", {})

    def rank(self, queries: Sequence[str], candidates: Sequence[str], k: int) -> list[list[str]]:
        allowed = set(candidates)
        lists = []
        for query in queries:
            if query not in self.shortlists:
                raise ValueError(f"no shortlist for the query {query!r}: the --rerank file has no predictions for its row")
            lists.append([name for name in self.shortlists[query] if name in allowed])
        scores = self.scorer.score_candidates(queries, lists)
        return [top_k(names, row, k) for names, row in zip(lists, scores)]
