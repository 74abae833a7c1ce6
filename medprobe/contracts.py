"""The prober contracts: one verb means one thing in every class.

A prober wraps a model (and its tokenizer) and answers one kind of question. Each prober class
declares which of these Protocols it implements (`Prober.kinds`); a task accepts the kinds it can
use (see `medprobe.registry`), and every registered class, a plugin's too, is tested against the
Protocols it declares on a tiny model.

- `RankingProber.rank(queries, candidates, k)`: the top-k (name, score) pairs per cloze query, best first (MedLAMA).
- `CandidateScorer.score_candidates(queries, candidate_lists)`: one score per candidate of each
  query, higher is better (context variance, re-ranking; a scorer gets `rank` for free).
- `ChoiceScorer.score_choices(texts, choices)`: one score per choice of each cloze text, after
  `fit` on labelled items (MST's trained masked-LM head).
- `DiseaseClassifier.run_disease(encoded, splits, seed)`: fine-tune with the `transformers.Trainer`
  on one disease's training rows and label its test rows (DisKnE).

Queries hold the answer slot `[Y]`; each prober replaces it with its own mask token (or sentinel,
or nothing) through `fill_mask_slot`.
"""
# Nothing here imports torch or datasets; tests/test_registry_conformance.py checks the registered classes.

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "MASK_SLOT",
    "Ranked",
    "PROTOCOLS",
    "CandidateScorer",
    "ChoiceScorer",
    "DiseaseClassifier",
    "Prober",
    "RankingProber",
    "UserError",
    "fill_mask_slot",
    "names_and_scores",
]

MASK_SLOT = "[Y]"


class UserError(ValueError):
    """An error whose message tells the user what to fix; the CLI prints it without a traceback.

    A subclass of ValueError so that callers that already catch ValueError for bad input keep working.
    """


def names_and_scores(ranked: Sequence[Sequence[Any]], who: str) -> tuple[list[list[str]], list[list[float]] | None]:
    """The names of every query's `rank` result, and their scores (None: the prober returned plain names, the
    contract before scores, which still runs without the facets that need them). Anything else is a prober's bug,
    said in one line naming it (`who`)."""
    names: list[list[str]] = []
    scores: list[list[float]] = []
    kinds = set()
    for row in ranked:
        if isinstance(row, (str, bytes)) or not isinstance(row, Sequence):
            raise UserError(f"{who}.rank returned {row!r} for a query; expected a list of (name, score) pairs")
        row_names, row_scores = [], []
        for entry in row:
            if isinstance(entry, str):
                kinds.add("name")
                row_names.append(entry)
            elif isinstance(entry, Sequence) and len(entry) == 2 and isinstance(entry[0], str) and is_real(entry[1]):
                kinds.add("pair")
                row_names.append(entry[0])
                row_scores.append(float(entry[1]))
            else:
                raise UserError(f"{who}.rank returned {entry!r} in a query's list; expected a (name, score) pair")
        names.append(row_names)
        scores.append(row_scores)
    if len(kinds) > 1:
        raise UserError(f"{who}.rank mixed plain names and (name, score) pairs; return (name, score) pairs")
    return names, (None if kinds == {"name"} else scores)


def is_real(value: Any) -> bool:
    """A score: a real number (numpy's floats too), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def fill_mask_slot(query: str, mask: str) -> str:
    """Put a model's mask token (or sentinel) into the [Y] slot of a query."""
    if MASK_SLOT not in query:
        raise UserError(f"query {query!r} has no {MASK_SLOT} slot for the answer; every query needs exactly one")
    return query.replace(MASK_SLOT, mask)


Ranked = list[tuple[str, float]]  # one query's top k: (name, score) pairs, best first, higher = better


@runtime_checkable
class RankingProber(Protocol):
    def rank(self, queries: Sequence[str], candidates: Sequence[str], k: int) -> list[Ranked]:
        """Per query, its top-k (name, score) pairs, best first (scores non-increasing), ties broken by candidate
        order. The scores give each run its confidence facets (the top-1 margin; with `Prober.probabilities`, the
        top-1 probability). A prober written before scores were part of the contract returns plain names: it
        still runs, without those facets (`names_and_scores`)."""
        ...


@runtime_checkable
class CandidateScorer(Protocol):
    def score_candidates(self, queries: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """One float array per query, aligned with that query's candidates; higher is better."""
        ...


@runtime_checkable
class ChoiceScorer(Protocol):
    def fit(self, texts: Sequence[str], choices: Sequence[Sequence[str]], labels: Sequence[int]) -> dict:
        """Train on labelled cloze items (texts with [MASK]); returns what training reported."""
        ...

    def score_choices(self, texts: Sequence[str], choices: Sequence[Sequence[str]]) -> list[list[float]]:
        """One score per choice of each text, higher is better."""
        ...


@runtime_checkable
class DiseaseClassifier(Protocol):
    def encode(self, ds: Any) -> Any:
        """Tokenise every row once; the per-disease splits are row selections of the result."""
        ...

    def run_disease(self, encoded: Any, splits: Any, seed: int) -> Any:
        """Fine-tune on one disease's training rows with the Trainer and label its test rows."""
        ...


# kind name (used by the registry and the tasks) -> the Protocol a prober of that kind implements
PROTOCOLS: dict[str, type] = {
    "ranking": RankingProber,
    "candidate-scoring": CandidateScorer,
    "choice-scoring": ChoiceScorer,
    "disease-classification": DiseaseClassifier,
}


class Prober:
    """What every prober class shares: its registry name, the Protocols it implements, the settings
    a results file records, and the seconds spent per phase. What it cites is declared in its registry
    entry (`ProberEntry.citations`)."""

    name: ClassVar[str] = ""
    kinds: ClassVar[tuple[str, ...]] = ()
    # True: rank's scores are natural-log probabilities (exp(score) is the name's probability: over the candidates it
    # ranked, or the model's own probability of a generated answer), so a run reports calibration (ECE, Brier)
    probabilities: ClassVar[bool] = False

    @property
    def timings(self) -> dict[str, float]:
        # created on first use, so that subclasses need not call a base __init__
        if "_timings" not in self.__dict__:
            self.__dict__["_timings"] = {}
        return self.__dict__["_timings"]

    @timings.setter
    def timings(self, value: dict[str, float]) -> None:
        self.__dict__["_timings"] = value

    @property
    def settings(self) -> dict:
        return {}

    @classmethod
    def create(cls, model: str, *, device: str = "auto", seed: int | None = None, **options: Any) -> Prober:
        """The one construction call of every prober (`medprobe.registry.ProberEntry.create` makes it):
        the prober on `model` (a folder, a Hub id or a packaged name), on `device`, with `options` (the
        keywords of its registry options; left out = the class's own defaults). `seed` seeds what the
        prober draws itself (a head, a rewiring); a prober that draws nothing ignores it."""
        raise NotImplementedError(f"{cls.__name__} does not define create(model, *, device, seed, **options)")
