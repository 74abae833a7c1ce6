"""Ranking a task's queries over their candidates: one `rank` call over one candidate list, or one per group (MedLAMA's
--candidates relation) under one progress bar, and the rank of each query's best gold answer.

    results = rank_queries(prober, queries, groups, candidates, k)   # each query's rank result, in order
    ranks = best_gold_ranks(names, answers)                          # 1-based, NaN: no gold answer ranked

The real queries of a ranking task and every facet's own queries (medprobe.tasks.facets, medprobe.tasks.variants)
are ranked through here, so they meet the same prober, candidates and sharding (medprobe.distributed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from medprobe import distributed

Candidates = list[str] | dict[str, list[str]]  # one list for every query, or one per group


def rank_queries(prober: Any, queries: Sequence[str], groups: Sequence[str], candidates: Candidates, k: int) -> list[Any]:
    """Every query's `rank` result (pairs, or an older prober's names): one call over one candidate list, or one per
    group over the group's list (`candidates` a dict), under one progress bar over all the queries."""
    if isinstance(candidates, list):
        return distributed.rank_in_shards(prober, list(queries), candidates, k)
    predictions: list[Any] = [None] * len(queries)
    by_group: dict[str, list[int]] = {}
    for index, group in enumerate(groups):
        by_group.setdefault(group, []).append(index)
    missing = [group for group in by_group if group not in candidates]
    if missing:
        from medprobe.contracts import UserError

        raise UserError(f"no candidate list for relation {missing[0]!r}")
    # under a launch each process ranks its share of every group's queries (rank_in_shards); the bar of the main
    # process counts its own share
    own = {
        group: len(indices) if getattr(prober, "collective", False) else len(distributed.split(indices))
        for group, indices in by_group.items()
    }
    with overall_progress(prober, sum(own.values())) as advance:
        for group, indices in by_group.items():
            ranked = distributed.rank_in_shards(prober, [queries[i] for i in indices], candidates[group], k)
            for index, result in zip(indices, ranked):
                predictions[index] = result
            advance(own[group])
    return predictions


@contextmanager
def overall_progress(prober: Any, total: int) -> Iterator[Callable[[int], None]]:
    """One bar over all `total` queries of a run that calls `prober.rank` once per group.

    Each rank call would otherwise draw its own bar, counting one group's queries with an ETA for that group only.
    A prober (or the scorer inside a --rerank ShortlistProber) with a `progress_bar` attribute advances this bar
    per query itself; any other has its own bars (`progress`, `show_progress`) switched off meanwhile, and the bar
    advances per group. Yields `advance(n)`, called after each group; a prober whose bars are off gets none here.
    """
    from medprobe.progress import progress_bar

    inner = getattr(prober, "scorer", prober)
    switches = [
        (obj, name)
        for obj in {id(prober): prober, id(inner): inner}.values()
        for name in ("progress", "show_progress")
        if isinstance(getattr(obj, name, None), bool)
    ]
    shown = all(getattr(obj, name) for obj, name in switches)
    saved = [(obj, name, getattr(obj, name)) for obj, name in switches]
    fine = hasattr(inner, "progress_bar")
    if fine:
        saved.append((inner, "progress_bar", inner.progress_bar))
    with progress_bar(total=total, desc="ranking, relation by relation", unit="query", disable=not shown) as bar:
        try:
            for obj, name in switches:
                setattr(obj, name, False)
            if fine:
                inner.progress_bar = bar
            yield (lambda n: None) if fine else bar.update
        finally:
            for obj, name, value in saved:
                setattr(obj, name, value)


def best_gold_ranks(predictions: Sequence[Sequence[str]], answers: Sequence[Sequence[str]]) -> np.ndarray:
    """Per query, the 1-based rank of the first predicted name that is a gold answer (NaN: none is).

    acc@k is exactly `rank <= k` for every k up to the number of predictions kept."""
    ranks = np.full(len(predictions), np.nan)
    for row, (names, gold) in enumerate(zip(predictions, answers)):
        wanted = set(gold)
        ranks[row] = next((position for position, name in enumerate(names, start=1) if name in wanted), np.nan)
    return ranks
