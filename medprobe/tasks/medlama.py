"""The MedLAMA task: rank the answer space for every cloze query, score acc@k per relation.

    task = MedLAMATask(k=[1, 10], candidates="set")
    data = task.load("out/medlama", "full", "test")      # rows, answer space, --rerank shortlists
    outputs = task.predict(prober, data, seed=None)       # the top-k names of every query
    scored = task.score(data, outputs)                     # acc@k micro, macro and per relation

A ranking prober answers cloze queries such as "Aspirin may treat [Y] ." by ranking candidate
names (`medprobe.contracts.RankingProber`). The candidates are the answer space of the whole set (every
head and answer name, sorted), or only the answers of the query's relation. Scores come from the
`acc_at_k` evaluate module, loaded the way any Hub user loads it; there is no second copy of it here.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from medprobe import distributed
from medprobe.contracts import CandidateScorer, RankingProber, UserError
from medprobe.loading import column, row_digests
from medprobe.records.record import RunRecord
from medprobe.records.tables import format_table
from medprobe.registry import registry
from medprobe.stats import Estimator, Outcomes, Sample, hit_chance
from medprobe.tasks import Scored, memorisation
from medprobe.tasks import variants as variants_module
from medprobe.tasks.base import BenchmarkTask, Writers

if TYPE_CHECKING:  # datasets and evaluate are imported where used: `medprobe --help` stays fast
    import datasets

MEDLAMA_FIELDS = ("id", "relation", "head_name", "query", "answers")
CANDIDATE_SETS = ("set", "relation")
CONTENT_FIELDS = ("relation", "query", "answers")  # what a query asks: its item digest (outcomes pair on id and digest)

Candidates = list[str] | dict[str, list[str]]  # one list for every query, or one per relation


@dataclass
class MedLAMAData:
    rows: datasets.Dataset  # the rows probed (all, or the first --per-relation N of each relation)
    candidates: Candidates
    shortlists: dict[str, list[str]] | None = None  # query -> names, with --rerank
    variants: variants_module.VariantPlan | None = None  # the variant queries of the rows, with --variants


@dataclass
class MedLAMAOutputs:
    predictions: list[list[str]]  # the top-k names of every probed row, best first
    unanswered: int  # rows that got no name at all (scored as misses)
    settings: dict  # what predicting added to the record (the --rerank shortlist)
    variant_predictions: list[list[str]] | None = None  # the top-k names of every variant query, with --variants
    memorised: memorisation.Measured | None = None  # issue 39 §4: Min-K%++ per row (--memorisation), else None


class MedLAMATask(BenchmarkTask):
    """MedLAMA (Meng, Liu et al., ACL 2022) and any set of the same fields; see `medprobe.registry`
    for the options, whose defaults are the defaults of this signature."""

    FIELDS = MEDLAMA_FIELDS
    METRIC = "acc_at_k"
    GROUP_BY = "relation"
    outcome_unit = "query"

    def __init__(
        self,
        *,
        k: Sequence[int] = [1, 10],  # never mutated; a list, as the registry's default
        candidates: str = "set",
        per_relation: int | None = None,
        exclude_head: bool = False,
        predictions: str | None = None,
        rerank: str | None = None,
        rerank_top: int = 100,
        variants: str = "none",
    ):
        cutoffs = sorted(set(k))
        if not cutoffs or cutoffs[0] < 1:
            raise UserError(f"--k needs positive integers, got {list(k)}")
        if candidates not in CANDIDATE_SETS:
            raise UserError(f"--candidates must be one of {', '.join(CANDIDATE_SETS)}, got {candidates!r}")
        for flag, value in (("--per-relation", per_relation), ("--rerank-top", rerank_top)):
            if value is not None and value < 1:
                raise UserError(f"{flag} must be a positive integer, got {value}")
        variants_module.check_options(variants, rerank)
        super().__init__()
        self.k, self.candidates, self.per_relation, self.exclude_head = cutoffs, candidates, per_relation, exclude_head
        self.predictions, self.rerank, self.rerank_top, self.variants = predictions, rerank, rerank_top, variants
        self.plot_metric = f"acc@{max(cutoffs)}"
        self.outcome_fields = {
            "rank": f"1-based rank of the query's best gold answer among its top {max(cutoffs)} predictions; "
            f"null: none in the top {max(cutoffs)}",
            **(variants_module.OUTCOME_FIELDS if variants != "none" else {}),
        }

    def load(self, dataset: str, config: str | None, split: str) -> MedLAMAData:
        """The rows to probe and their candidates, and the --rerank shortlists checked against them,
        all before any model loads (a file that does not fit fails now, not after the model)."""
        ds = self.read(dataset, config, split)
        # the answer space of the whole set, also when only a subset is probed
        candidates = answer_space(ds) if self.candidates == "set" else relation_answer_spaces(ds)
        rows = ds
        if self.per_relation:
            rows = first_per_group(ds, self.per_relation)
            self.note_subset(
                rows.num_rows,
                ds.num_rows,
                "queries",
                f"probing the first {self.per_relation} queries of each relation: {rows.num_rows:,} of {ds.num_rows:,} queries",
            )
        data = MedLAMAData(rows, candidates, variants=variants_module.load_variants(dataset, split, rows, self.variants))
        if self.rerank:
            data.shortlists = load_rerank_shortlists(self.rerank, self.rerank_top, data)
        return data

    def predict(self, prober: RankingProber, data: MedLAMAData, seed: int | None = None) -> MedLAMAOutputs:
        """The top max(k) names of every row; with --rerank, the prober scores only each row's shortlist."""
        settings: dict = {}
        # issue 39 §4, the memorisation signal (medprobe.tasks.memorisation): None unless the prober was asked
        memorised = memorisation.measure(prober, column(data.rows, "query"), column(data.rows, "answers"))
        if self.rerank:
            prober = self.shortlist_prober(prober, data)
            settings = {"shortlist": prober.source, "shortlist_size": prober.shortlist_size}
        predictions = rank_queries(prober, data.rows, max(self.k), data.candidates, exclude_head=self.exclude_head)
        unanswered = report_unanswered(column(data.rows, "id"), predictions)
        outputs = MedLAMAOutputs(predictions, unanswered, settings, memorised=memorised)
        if data.variants is not None:  # every variant query in one rank call, with the same prober and candidates
            start = time.perf_counter()
            ranking = functools.partial(rank_queries, prober, candidates=data.candidates)
            outputs.variant_predictions = variants_module.rank_variants(data.variants, ranking, max(self.k), self.exclude_head)
            self.timings["rank_variants"] = time.perf_counter() - start
        return outputs

    def shortlist_prober(self, prober: Any, data: MedLAMAData) -> Any:
        from medprobe.lm.candidate_scoring import ShortlistProber

        if not isinstance(prober, CandidateScorer):
            scorers = [name for name, entry in registry().probers.items() if {"ranking", "candidate-scoring"} <= set(entry.kinds)]
            raise UserError(
                f"--rerank works with --prober {', '.join(scorers[:-1])} or {scorers[-1]} (they score a shortlist), "
                f"not {getattr(prober, 'name', '') or type(prober).__name__}"
            )
        assert data.shortlists is not None  # read by `load` whenever --rerank is given
        return ShortlistProber(prober, data.shortlists, source=f"top {self.rerank_top} of {self.rerank}")

    def score(self, data: MedLAMAData, outputs: MedLAMAOutputs) -> Scored:
        scores = score_ranking(data.rows, outputs.predictions, self.k)
        candidates = data.candidates
        answers = column(data.rows, "answers")
        ranks = best_gold_ranks(outputs.predictions, answers)
        outcomes = Outcomes.build(
            column(data.rows, "id"),
            column(data.rows, "relation"),
            {
                "rank": ranks,
                **memorisation.columns(outputs.memorised),  # issue 39 §4: + mink_pp
                **variants_module.variant_columns(data.variants, outputs.predictions, answers, outputs.variant_predictions),
            },
            row_digests(data.rows, CONTENT_FIELDS),
        )
        metrics = {key: value for key, value in scores.items() if key != "per_group"}
        metrics, per_group, settings, counts = variants_module.with_variants(
            data.variants, outcomes, self.k, metrics, scores["per_group"]
        )
        scored = Scored(
            metrics=metrics,
            per_group=per_group,
            counts={
                "queries": data.rows.num_rows,
                "candidates": len(candidates) if isinstance(candidates, list) else sum(map(len, candidates.values())),
                "queries_without_predictions": outputs.unanswered,
                **counts,
            },
            settings={
                "k": self.k,
                "candidates": self.candidates,
                "exclude_head": self.exclude_head,
                "per_relation": self.per_relation,
                **outputs.settings,
                **settings,
            },
            outcomes=outcomes,
            chance=self.chance(data),
        )
        memorisation.record(scored, outputs.memorised, self.k, self.outcome_fields)  # issue 39 §4
        return scored

    @staticmethod
    def estimators(settings: dict) -> dict[str, Estimator]:
        """acc@k (micro, over queries) and macro_acc@k (the mean over relations, resampled within each)."""
        estimators = {}
        for k in settings["k"]:
            estimators[f"acc@{k}"] = Estimator(functools.partial(micro_hits, k=k), "query")
            estimators[f"macro_acc@{k}"] = Estimator(functools.partial(macro_hits, k=k), "query", stratified=True)
        if variants_module.measured(settings):  # consistency@k, consistency_top1, robust_acc@k
            estimators.update(variants_module.variant_estimators(settings["k"]))
        estimators.update(memorisation.estimators(settings))  # issue 39 §4: acc@k per Min-K%++ tertile
        return estimators

    def chance(self, data: MedLAMAData) -> dict[str, dict]:
        """acc@k of a uniformly random ranking of each query's candidates, exactly (medprobe.stats.hit_chance):
        a query with g of its gold answers among its c candidates is a hit at k with 1 - C(c-g, k)/C(c, k)."""
        sizes, golds = candidate_counts(data, self.exclude_head)
        return chance_levels(self.k, column(data.rows, "relation"), sizes, golds)

    def table(self, record: RunRecord) -> str:
        return format_table(record, [f"acc@{k}" for k in self.k], group_label="relation")

    def writers(self, data: MedLAMAData, outputs: MedLAMAOutputs) -> Writers:
        return self.jsonl_writer(self.predictions, lambda: prediction_records(data.rows, outputs.predictions))


# --- the answer space and the rows ------------------------------------------------------------------


def answer_space(ds: datasets.Dataset) -> list[str]:
    """The union of all head names and answer names of a set, sorted.

    A fixed order matters: distinct names can receive identical scores (223 MedLAMA names
    tokenize identically under an uncased vocabulary), and probers break ties by candidate
    order, so a sorted space gives the same winners on every run and machine.
    """
    names = set(column(ds, "head_name"))
    for answers in column(ds, "answers"):
        names.update(answers)
    names.discard("")
    if not names:
        raise UserError("the answer space is empty: the dataset has no head or answer names")
    return sorted(names)


def relation_answer_spaces(ds: datasets.Dataset) -> dict[str, list[str]]:
    """Per relation, the sorted union of its answer names (a restricted candidate set)."""
    spaces: dict[str, set[str]] = {}
    for relation, answers in zip(column(ds, "relation"), column(ds, "answers")):
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


def load_rerank_shortlists(path: str, top: int, data: MedLAMAData) -> dict[str, list[str]]:
    """Query -> the first `top` names of the --rerank file, checked against the rows to probe:
    every row needs a shortlist holding at least one of its candidates."""
    from medprobe.lm.candidate_scoring import read_shortlists, shortlists_by_query

    rows, candidates = data.rows, data.candidates
    if isinstance(candidates, list):
        allowed = [set(candidates)] * rows.num_rows
    else:
        per_relation = {relation: set(names) for relation, names in candidates.items()}
        allowed = [per_relation.get(relation, set()) for relation in column(rows, "relation")]
    probed = list(zip(column(rows, "id"), column(rows, "query"), allowed))
    return shortlists_by_query(read_shortlists(path, top), probed, f"--rerank {path}")


# --- ranking and scoring ----------------------------------------------------------------------------


def rank_queries(
    prober: RankingProber,
    ds: datasets.Dataset,
    k: int,
    candidates: Candidates,
    exclude_head: bool = False,
) -> list[list[str]]:
    """Rank every query of `ds`; `candidates` is one list for all, or one list per relation.

    With `exclude_head`, a query's own head name is left out of its predictions (the answer
    space holds every head name, and an encoder's nearest name to "Aspirin may treat [MASK] ."
    is often "Aspirin"); the prober ranks k + 1 names so that k remain.
    """
    if exclude_head:
        ranked = rank_queries(prober, ds, k + 1, candidates)
        return [[name for name in names if name != head][:k] for names, head in zip(ranked, column(ds, "head_name"))]
    if isinstance(candidates, list):
        return distributed.rank_in_shards(prober, column(ds, "query"), candidates, k)
    predictions: list[list[str] | None] = [None] * ds.num_rows
    by_relation: dict[str, list[int]] = {}
    for index, relation in enumerate(column(ds, "relation")):
        by_relation.setdefault(relation, []).append(index)
    missing = [relation for relation in by_relation if relation not in candidates]
    if missing:
        raise UserError(f"no candidate list for relation {missing[0]!r}")
    queries = column(ds, "query")
    # under a launch each process ranks its share of every relation's queries (rank_in_shards);
    # the bar of the main process counts its own share
    own = {
        relation: len(indices) if getattr(prober, "collective", False) else len(distributed.split(indices))
        for relation, indices in by_relation.items()
    }
    with overall_progress(prober, sum(own.values())) as advance:
        for relation, indices in by_relation.items():
            ranked = distributed.rank_in_shards(prober, [queries[i] for i in indices], candidates[relation], k)
            for index, names in zip(indices, ranked):
                predictions[index] = names
            advance(own[relation])
    return predictions  # type: ignore[return-value]


@contextmanager
def overall_progress(prober: Any, total: int) -> Iterator[Callable[[int], None]]:
    """One bar over all `total` queries of a run that calls `prober.rank` once per relation.

    Each rank call would otherwise draw its own bar, counting one relation's queries with an ETA
    for that relation only. A prober (or the scorer inside a --rerank ShortlistProber) with a
    `progress_bar` attribute advances this bar per query itself; any other has its own bars
    (`progress`, `show_progress`) switched off meanwhile, and the bar advances per relation.
    Yields `advance(n)`, called after each relation; a prober whose bars are off gets none here.
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


def score_ranking(ds: datasets.Dataset, predictions: list[list[str]], cutoffs: Sequence[int]) -> dict:
    """acc@k (micro), macro_acc@k and per-relation values from the acc_at_k evaluate module."""
    metric = MedLAMATask.metric()
    return metric.compute(
        predictions=predictions, references=column(ds, "answers"), groups=column(ds, "relation"), k=list(cutoffs)
    )


def report_unanswered(ids: list[str], predictions: list[list[str]]) -> int:
    """How many queries got no name at all (scored as misses); said aloud, never a silent 0."""
    unanswered = [example_id for example_id, names in zip(ids, predictions) if not names]
    if unanswered:
        print(
            f"note: {len(unanswered):,} of {len(ids):,} queries got no predictions and count as misses "
            f"(e.g. {', '.join(map(str, unanswered[:3]))}); counts.queries_without_predictions in the results file"
        )
    return len(unanswered)


# --- per-query outcomes and chance ------------------------------------------------------------------


def best_gold_ranks(predictions: list[list[str]], answers: list[list[str]]) -> np.ndarray:
    """Per query, the 1-based rank of the first predicted name that is a gold answer (NaN: none is).

    acc@k is exactly `rank <= k` for every k up to the number of predictions kept."""
    ranks = np.full(len(predictions), np.nan)
    for row, (names, gold) in enumerate(zip(predictions, answers)):
        wanted = set(gold)
        ranks[row] = next((position for position, name in enumerate(names, start=1) if name in wanted), np.nan)
    return ranks


def chance_levels(cutoffs: Sequence[int], relations: list[str], sizes: np.ndarray, golds: np.ndarray) -> dict[str, dict]:
    """acc@k and macro_acc@k of a uniformly random order of each query's candidates: `sizes` of them, `golds` gold
    (also what `medprobe import lm-eval` records of a run lm-eval scored)."""
    method = "expected acc@k of a uniformly random order of each query's candidates (exact)"
    chance = {}
    for k in cutoffs:
        per_query = hit_chance(sizes, golds, k)
        by_relation: dict[str, list[float]] = {}
        for relation, value in zip(relations, per_query.tolist()):
            by_relation.setdefault(relation, []).append(value)
        chance[f"acc@{k}"] = {"value": float(np.mean(per_query)), "method": method}
        chance[f"macro_acc@{k}"] = {"value": float(np.mean([np.mean(v) for v in by_relation.values()])), "method": method}
    return chance


def micro_hits(sample: Sample, k: int) -> np.ndarray:
    return sample.map("rank", lambda rank: rank <= k).mean(axis=1)


def macro_hits(sample: Sample, k: int) -> np.ndarray:
    return sample.group_mean(sample.map("rank", lambda rank: rank <= k)).mean(axis=1)


def candidate_counts(data: MedLAMAData, exclude_head: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per query, how many names it is ranked among and how many of them are its gold answers.

    The candidates are the set's answer space, the relation's, or the query's --rerank shortlist;
    with --exclude-head the query's own head name is not among them."""
    rows = data.rows
    if isinstance(data.candidates, list):
        spaces = [set(data.candidates)] * rows.num_rows
    else:
        by_relation = {relation: set(names) for relation, names in data.candidates.items()}
        spaces = [by_relation.get(relation, set()) for relation in column(rows, "relation")]
    if data.shortlists is not None:
        spaces = [space & set(data.shortlists.get(query, ())) for space, query in zip(spaces, column(rows, "query"))]
    sizes, golds = np.zeros(rows.num_rows), np.zeros(rows.num_rows)
    for row, (space, answers, head) in enumerate(zip(spaces, column(rows, "answers"), column(rows, "head_name"))):
        gold = set(answers) & space
        if exclude_head and head in space:
            sizes[row] = len(space) - 1
            gold.discard(head)
        else:
            sizes[row] = len(space)
        golds[row] = len(gold)
    return sizes, golds


# --- the --predictions file -------------------------------------------------------------------------


def prediction_records(ds: datasets.Dataset, predictions: list[list[str]]) -> Iterator[dict]:
    """The top-k names of every query, one JSON line each (`run` writes them atomically with the results JSON)."""
    for example_id, names in zip(column(ds, "id"), predictions):
        yield {"id": example_id, "predictions": names}
