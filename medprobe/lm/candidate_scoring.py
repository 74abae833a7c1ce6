"""Ranking built on per-candidate scores, shared by the mask-average and causal-LM probers.

A candidate scorer answers

    score_candidates(queries, candidates) -> list[numpy.ndarray]

with one candidate list per query (each query holds the `[Y]` slot) and one float array per
query, aligned with its candidates, higher = better. `rank` is always derived from those
scores (so the two never disagree) and breaks ties by candidate order, which for the answer
space is sorted order: the same winners on every run. A scorer whose scores are log-likelihoods
(`probabilities = True`: the causal LM) ranks with them normalised over the candidates it ranked
(each score minus the log-sum-exp of all of them), so exp(score) is the name's probability among
those candidates; the order is the same.

`ShortlistProber` restricts a scorer to the top-N names another prober wrote with
`medprobe probe --predictions`, so that an expensive scorer re-ranks a cheap one's shortlist.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np

from medprobe.contracts import CandidateScorer, Prober, Ranked, UserError


def top_k(candidates: Sequence[str], scores: np.ndarray, k: int) -> list[str]:
    """The k best candidates, best first; equal scores keep candidate order (stable sort)."""
    return [name for name, _ in top_k_scored(candidates, scores, k)]


def top_k_scored(candidates: Sequence[str], scores: np.ndarray, k: int, normalise: bool = False) -> Ranked:
    """The k best (candidate, score) pairs, best first; equal scores keep candidate order (stable sort). With
    `normalise`, the scores are log-likelihoods made log-probabilities over all the candidates given (minus their
    log-sum-exp): the order is the same."""
    row = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-row, kind="stable")[:k]
    if normalise and len(row):
        top = row.max()
        row = row - (top + np.log(np.exp(row - top).sum()))
    return [(candidates[i], float(row[i])) for i in order]


def rank_by_scores(scorer: CandidateScorer, queries: Sequence[str], candidates: Sequence[str], k: int) -> list[Ranked]:
    """`rank` for a scorer: every query ranks the same candidate list; the scores are normalised over that list
    when the scorer's are log-likelihoods (`probabilities`)."""
    candidates = list(candidates)
    scores = scorer.score_candidates(queries, [candidates] * len(queries))
    normalise = bool(getattr(scorer, "probabilities", False))
    return [top_k_scored(candidates, row, k, normalise) for row in scores]


def check_candidate_lists(queries: Sequence[str], candidates: Sequence[Sequence[str]]) -> None:
    if isinstance(candidates, str) or len(candidates) != len(queries):
        raise UserError(
            f"score_candidates expects one candidate list per query: got {len(queries)} queries and "
            f"{'a string' if isinstance(candidates, str) else f'{len(candidates)} lists'}"
        )


def read_shortlists(path: str | Path, top_n: int) -> dict[str, list[str]]:
    """Row id -> the first `top_n` names of a `--predictions` JSONL file, every line checked.

    Each line is {"id": "<row id>", "predictions": ["name", ...]}: an id that is not a string,
    predictions that are not a list of distinct strings, an id seen twice or a file without
    lines is an error naming the file and line; nothing is skipped or converted.
    """
    if top_n < 1:
        raise UserError(f"--rerank-top must be at least 1, got {top_n}")
    shortlists: dict[str, list[str]] = {}
    first_line_of: dict[str, int] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as err:
        raise UserError(
            f"--rerank {path}: not UTF-8 text ({err.reason} at byte {err.start}); expected a --predictions file"
        ) from None
    except OSError as err:
        raise FileNotFoundError(f"--rerank {path}: cannot read it ({err.strerror or err})") from None
    for line_number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        example_id, names = parse_shortlist_line(line, f"--rerank {path}, line {line_number}")
        if example_id in first_line_of:
            raise UserError(
                f"--rerank {path}, line {line_number}: id {example_id!r} again (first on line {first_line_of[example_id]})"
            )
        first_line_of[example_id] = line_number
        shortlists[example_id] = names[:top_n]
    if not shortlists:
        raise UserError(f"--rerank {path} holds no predictions (an empty file)")
    return shortlists


def parse_shortlist_line(line: str, where: str) -> tuple[str, list[str]]:
    """(id, names) of one `--predictions` line, or an error saying what was found instead."""
    expected = 'expected {"id": "<row id>", "predictions": ["name", ...]}'
    try:
        row = json.loads(line)
    except json.JSONDecodeError as err:
        raise UserError(f"{where}: not JSON ({err.msg}); {expected}") from None
    if not isinstance(row, dict) or "id" not in row or "predictions" not in row:
        found = f"keys {sorted(row)}" if isinstance(row, dict) else f"a {type(row).__name__}"
        raise UserError(f"{where}: {expected}, found {found}")
    example_id, names = row["id"], row["predictions"]
    if not isinstance(example_id, str):
        raise UserError(f"{where}: the id must be a string, found {type(example_id).__name__} {example_id!r}")
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        found = (
            type(names).__name__
            if not isinstance(names, list)
            else "a list holding " + ", ".join(sorted({type(name).__name__ for name in names if not isinstance(name, str)}))
        )
        raise UserError(f"{where} (id {example_id!r}): predictions must be a list of strings, found {found}")
    if len(set(names)) != len(names):
        twice = next(name for index, name in enumerate(names) if name in names[:index])
        raise UserError(f"{where} (id {example_id!r}): the name {twice!r} appears twice in its predictions")
    return example_id, names


def shortlists_by_query(
    shortlists: dict[str, list[str]],
    rows: Sequence[tuple[str, str, Collection[str]]],
    source: str,
) -> dict[str, list[str]]:
    """Query text -> shortlist, for the probed rows given as (id, query, the names it may rank).

    Every probed row needs a shortlist with at least one name it may rank: a row the file has no
    line for, or whose names are all outside its candidates, would score a silent 0, so either
    is an error that names the rows and how many. Two rows with the same query text must have
    the same shortlist (the prober sees only the text).
    """
    missing = [example_id for example_id, _, _ in rows if example_id not in shortlists]
    if missing:
        raise UserError(
            f"{source} has no predictions for {len(missing):,} of the {len(rows):,} probed rows "
            f"(e.g. {', '.join(map(repr, missing[:3]))}); was it written for another dataset, config or --per-relation?"
        )
    empty = [example_id for example_id, _, allowed in rows if not any(name in allowed for name in shortlists[example_id])]
    if empty:
        raise UserError(
            f"{source}: the shortlists of {len(empty):,} of the {len(rows):,} probed rows hold no candidate name "
            f"(e.g. {', '.join(map(repr, empty[:3]))}); every row needs at least one name to rank"
        )
    by_query: dict[str, list[str]] = {}
    id_of_query: dict[str, str] = {}
    for example_id, query, _ in rows:
        names = shortlists[example_id]
        if query in by_query and by_query[query] != names:
            raise UserError(
                f"{source}: rows {id_of_query[query]!r} and {example_id!r} share the query {query!r} but not their shortlists"
            )
        by_query[query], id_of_query[query] = names, example_id
    return by_query


class ShortlistProber(Prober):
    """Rank, per query, only its shortlisted names that are also in the candidate set, by a scorer.

    Not a registered prober: the MedLAMA task wraps the run's prober in it for --rerank.
    """

    name = "shortlist"
    kinds = ("ranking",)

    def __init__(self, scorer: CandidateScorer, shortlists: dict[str, list[str]], source: str = ""):
        self.scorer = scorer
        self.shortlists = shortlists
        self.source = source
        self.shortlist_size = max(map(len, shortlists.values()), default=0)
        self.timings = getattr(scorer, "timings", {})
        self.collective = getattr(scorer, "collective", False)  # spread as its scorer is (medprobe.distributed)
        self.probabilities = bool(getattr(scorer, "probabilities", False))  # normalised over each shortlist it ranks

    @property
    def settings(self) -> dict:
        return {**getattr(self.scorer, "settings", {}), "shortlist": self.source, "shortlist_size": self.shortlist_size}

    def rank(self, queries: Sequence[str], candidates: Sequence[str], k: int) -> list[Ranked]:
        allowed = set(candidates)
        lists = []
        for query in queries:
            if query not in self.shortlists:
                raise UserError(f"no shortlist for the query {query!r}: the --rerank file has no predictions for its row")
            names = [name for name in self.shortlists[query] if name in allowed]
            if not names:  # ranking nothing would score a silent 0 for this query
                raise UserError(f"the shortlist of the query {query!r} holds none of the candidates")
            lists.append(names)
        scores = self.scorer.score_candidates(queries, lists)
        return [top_k_scored(names, row, k, self.probabilities) for names, row in zip(lists, scores)]
