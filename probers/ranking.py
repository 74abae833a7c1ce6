"""What every ranking prober shares: the contract, the answer space, the cloze slot, and scoring.

A ranking prober answers cloze queries such as "Aspirin may treat [Y] ." by ranking a set of
candidate names (MedLAMA, BioLAMA-style triples):

    prober.rank(queries, candidates, k) -> list[list[str]]   # top-k names per query, best first

Each prober replaces the `[Y]` slot with its own mask token (or sentinel, or nothing for a
causal LM) through `fill_mask_slot`. Scores come from the `acc_at_k` evaluate module, loaded the
way any Hub user loads it; there is no second copy of the metric here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from probers.hub.resources import metric_path
from probers.api import UserError

if TYPE_CHECKING:  # datasets and evaluate are imported where used: `medprobe --help` stays fast
    import datasets

MASK_SLOT = "[Y]"
MEDLAMA_FIELDS = ("id", "relation", "head_name", "query", "answers")


class RankingProber(Protocol):
    def rank(self, queries: Sequence[str], candidates: Sequence[str], k: int) -> list[list[str]]:
        """Top-k candidates per query, best first, with ties broken by candidate order."""
        ...


def fill_mask_slot(query: str, mask: str) -> str:
    """Put a model's mask token (or sentinel) into the [Y] slot of a query."""
    if MASK_SLOT not in query:
        raise UserError(f"query {query!r} has no {MASK_SLOT} slot for the answer; every query needs exactly one")
    return query.replace(MASK_SLOT, mask)


def check_fields(ds: datasets.Dataset, required: Sequence[str], what: str) -> None:
    missing = [f for f in required if f not in ds.column_names]
    if missing:
        raise UserError(
            f"{what} lacks the field(s) {', '.join(missing)} that this prober needs "
            f"(expected {', '.join(required)}; found {', '.join(ds.column_names)})"
        )


def answer_space(ds: datasets.Dataset) -> list[str]:
    """The union of all head names and answer names of a set, sorted.

    A fixed order matters: distinct names can receive identical scores (223 MedLAMA names
    tokenize identically under an uncased vocabulary), and probers break ties by candidate
    order, so a sorted space gives the same winners on every run and machine.
    """
    names = set(ds["head_name"])
    for answers in ds["answers"]:
        names.update(answers)
    names.discard("")
    if not names:
        raise UserError("the answer space is empty: the dataset has no head or answer names")
    return sorted(names)


def relation_answer_spaces(ds: datasets.Dataset) -> dict[str, list[str]]:
    """Per relation, the sorted union of its answer names (a restricted candidate set)."""
    spaces: dict[str, set[str]] = {}
    for relation, answers in zip(ds["relation"], ds["answers"]):
        spaces.setdefault(relation, set()).update(answers)
    return {relation: sorted(names) for relation, names in sorted(spaces.items())}


def first_per_group(ds: datasets.Dataset, n: int, column: str = "relation") -> datasets.Dataset:
    """The first `n` rows of every group, in dataset order (a reproducible subset)."""
    seen: dict[str, int] = {}
    keep = []
    for index, group in enumerate(ds[column]):
        if seen.get(group, 0) < n:
            seen[group] = seen.get(group, 0) + 1
            keep.append(index)
    return ds.select(keep)


def rank_queries(
    prober: RankingProber,
    ds: datasets.Dataset,
    k: int,
    candidates: list[str] | dict[str, list[str]],
    exclude_head: bool = False,
) -> list[list[str]]:
    """Rank every query of `ds`; `candidates` is one list for all, or one list per relation.

    With `exclude_head`, a query's own head name is left out of its predictions (the answer
    space holds every head name, and an encoder's nearest name to "Aspirin may treat [MASK] ."
    is often "Aspirin"); the prober ranks k + 1 names so that k remain.
    """
    if exclude_head:
        ranked = rank_queries(prober, ds, k + 1, candidates)
        return [[name for name in names if name != head][:k] for names, head in zip(ranked, ds["head_name"])]
    if isinstance(candidates, list):
        return prober.rank(ds["query"], candidates, k)
    predictions: list[list[str] | None] = [None] * ds.num_rows
    by_relation: dict[str, list[int]] = {}
    for index, relation in enumerate(ds["relation"]):
        by_relation.setdefault(relation, []).append(index)
    queries = ds["query"]
    for relation, indices in by_relation.items():
        if relation not in candidates:
            raise UserError(f"no candidate list for relation {relation!r}")
        ranked = prober.rank([queries[i] for i in indices], candidates[relation], k)
        for index, names in zip(indices, ranked):
            predictions[index] = names
    return predictions  # type: ignore[return-value]


def score_ranking(ds: datasets.Dataset, predictions: list[list[str]], cutoffs: Sequence[int]) -> dict:
    """acc@k (micro), macro_acc@k and per-relation values from the acc_at_k evaluate module."""
    import evaluate

    metric = evaluate.load(metric_path("acc_at_k"))
    return metric.compute(predictions=predictions, references=ds["answers"], groups=ds["relation"], k=list(cutoffs))
