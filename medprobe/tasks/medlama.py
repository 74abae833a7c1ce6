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
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from medprobe.contracts import CandidateScorer, RankingProber, UserError
from medprobe.counted import mean_estimator
from medprobe.loading import column, row_digests
from medprobe.records.record import RunRecord
from medprobe.records.tables import format_table
from medprobe.registry import registry
from medprobe.stats import Estimator, Outcomes, estimate, hit_chance
from medprobe.tasks import Scored, memorisation
from medprobe.tasks import variants as variants_module
from medprobe.tasks.base import BenchmarkTask, Writers
from medprobe.tasks.facets import (
    CONTROL_PLACEHOLDER,
    ECE_BINS,
    FacetOptions,
    RankingRows,
    facet_estimators,
    rank_with_facets,
    template_problem,
)
from medprobe.tasks.ranking import Candidates, rank_queries

if TYPE_CHECKING:  # datasets and evaluate are imported where used: `medprobe --help` stays fast
    import datasets

MEDLAMA_FIELDS = ("id", "relation", "head_name", "query", "answers")
CANDIDATE_SETS = ("set", "relation")
CONTENT_FIELDS = ("relation", "query", "answers")  # what a query asks: its item digest (outcomes pair on id and digest)


@dataclass
class MedLAMAData:
    rows: datasets.Dataset  # the rows probed (all, or the first --per-relation N of each relation)
    candidates: Candidates
    shortlists: dict[str, list[str]] | None = None  # query -> names, with --rerank
    variants: variants_module.VariantPlan | None = None  # the variant queries of the rows, with --variants


@dataclass
class MedLAMAOutputs:
    rows: datasets.Dataset  # the rows scored (with --only-control-misses, those the control misses)
    predictions: list[list[str]]  # the top-k names of every scored row, best first
    unanswered: int  # rows that got no name at all (scored as misses)
    settings: dict  # what predicting added to the record (the --rerank shortlist, the facets and variants measured)
    # per-item outcome columns (medprobe.tasks.facets; variant_ranks, variant_top1_same with --variants;
    # mink_pp with --memorisation), of the scored rows
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)  # each column described
    memorised: memorisation.Measured | None = None  # issue 39 §4: Min-K%++ per scored row (--memorisation), else None


class MedLAMATask(BenchmarkTask):
    """MedLAMA (Meng, Liu et al., ACL 2022) and any set of the same fields; see `medprobe.registry`
    for the options, whose defaults are the defaults of this signature."""

    FIELDS = MEDLAMA_FIELDS
    METRIC = "acc_at_k"
    GROUP_BY = "relation"
    outcome_unit = "query"
    # selective answering and calibration: lower is better (what an export states of each metric)
    lower_is_better = frozenset({"aurc", "aurc_oracle", "aurc_random", "ece", "brier"})

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
        control: bool = True,
        control_placeholder: str = CONTROL_PLACEHOLDER,
        only_control_misses: bool = False,
        shuffled_control: bool = False,
        ece_bins: int = ECE_BINS,
    ):
        cutoffs = sorted(set(k))
        if not cutoffs or cutoffs[0] < 1:
            raise UserError(f"--k needs positive integers, got {list(k)}")
        if candidates not in CANDIDATE_SETS:
            raise UserError(f"--candidates must be one of {', '.join(CANDIDATE_SETS)}, got {candidates!r}")
        for flag, value in (("--per-relation", per_relation), ("--rerank-top", rerank_top), ("--ece-bins", ece_bins)):
            if value is not None and value < 1:
                raise UserError(f"{flag} must be a positive integer, got {value}")
        if "[" in control_placeholder or not control_placeholder.strip():
            raise UserError(f"--control-placeholder must be text without brackets, got {control_placeholder!r}")
        if only_control_misses and (not control or rerank):
            raise UserError(
                "--only-control-misses keeps the queries the prompt-bias control misses: it needs the control "
                "(no --no-control) and no --rerank (a control query has no shortlist)"
            )
        variants_module.check_options(variants, rerank)
        super().__init__()
        self.k, self.candidates, self.per_relation, self.exclude_head = cutoffs, candidates, per_relation, exclude_head
        self.predictions, self.rerank, self.rerank_top, self.variants = predictions, rerank, rerank_top, variants
        self.facets = FacetOptions(
            k=cutoffs,
            exclude_head=exclude_head,
            control=control and not rerank,
            placeholder=control_placeholder,
            shuffled=shuffled_control and not rerank,
            ece_bins=ece_bins,
        )
        self.only_control_misses = only_control_misses
        self.controls_asked = control or shuffled_control
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
        if self.only_control_misses:
            problem = template_problem(ranking_rows(rows))
            if problem:
                raise UserError(f"--only-control-misses needs the prompt-bias control, and {problem}")
        return data

    def predict(self, prober: RankingProber, data: MedLAMAData, seed: int | None = None) -> MedLAMAOutputs:
        """The top max(k) names of every row and the facets' outcome columns; with --rerank, the prober scores only
        each row's shortlist."""
        settings: dict = {}
        # issue 39 §4, the memorisation signal (medprobe.tasks.memorisation): None unless the prober was asked
        memorised = memorisation.measure(prober, column(data.rows, "query"), column(data.rows, "answers"))
        if self.rerank:
            prober = self.shortlist_prober(prober, data)
            settings = {"shortlist": prober.source, "shortlist_size": prober.shortlist_size}
            if self.controls_asked:
                print("note: the prompt-bias controls are left out with --rerank: a control query has no shortlist of its own")
        who = getattr(prober, "name", "") or type(prober).__name__
        options = replace(self.facets, seed=seed if seed is not None else 0)
        found = rank_with_facets(prober, ranking_rows(data.rows), data.candidates, options, who)
        self.timings.update(found.timings)  # what the facets' queries cost, beside the prober's own timings
        settings.update(found.settings)
        predictions, columns = found.predictions, dict(found.columns)
        if data.variants is not None:  # every variant query in one rank call, with the same prober and candidates
            start = time.perf_counter()
            ranking = functools.partial(rank_rows, prober, candidates=data.candidates)
            ranked = variants_module.rank_variants(data.variants, ranking, max(self.k), self.exclude_head)
            self.timings["rank_variants"] = time.perf_counter() - start
            columns.update(variants_module.variant_columns(data.variants, predictions, column(data.rows, "answers"), ranked))
        columns.update(memorisation.columns(memorised))  # issue 39 §4: + mink_pp
        rows = data.rows
        if self.only_control_misses:
            keep = [row for row, rank in enumerate(columns["control_rank"].tolist()) if math.isnan(rank)]
            probed = self.subset_of["total"] if self.subset_of else rows.num_rows
            self.note_subset(
                len(keep),
                probed,
                "queries",
                f"scoring the {len(keep):,} of {rows.num_rows:,} queries whose prompt-bias control has no gold answer in its "
                f"top {max(self.k)} (--only-control-misses)",
            )
            rows, predictions = rows.select(keep), [predictions[i] for i in keep]
            columns = {name: values[keep] for name, values in columns.items()}  # variant_ranks: (items, slots)
            if memorised is not None:
                memorised = replace(memorised, scores=memorised.scores[keep])
        settings["control_misses_only"] = self.only_control_misses
        unanswered = report_unanswered(column(rows, "id"), predictions)
        return MedLAMAOutputs(rows, predictions, unanswered, settings, columns, found.fields, memorised)

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
        rows = outputs.rows
        scores = score_ranking(rows, outputs.predictions, self.k)
        candidates = data.candidates
        settings = {
            "k": self.k,
            "candidates": self.candidates,
            "exclude_head": self.exclude_head,
            "per_relation": self.per_relation,
            **outputs.settings,
            "clusters": "subject: head_cui, else head_name",
        }
        outcomes = Outcomes.build(
            column(rows, "id"),
            column(rows, "relation"),
            outputs.columns,
            row_digests(rows, CONTENT_FIELDS),
            ranking_rows(rows).clusters,
        )
        self.outcome_fields = {**self.outcome_fields, **outputs.fields}
        metrics = {key: value for key, value in scores.items() if key != "per_group"}
        metrics, per_group, variant_settings, counts = variants_module.with_variants(
            data.variants, outcomes, self.k, metrics, scores["per_group"]
        )
        settings.update(variant_settings)
        add_facet_values(metrics, per_group, outcomes, facet_estimators(settings, self.outcome_unit))
        scored = Scored(
            metrics=metrics,
            per_group=per_group,
            counts={
                "queries": rows.num_rows,
                "candidates": len(candidates) if isinstance(candidates, list) else sum(map(len, candidates.values())),
                "queries_without_predictions": outputs.unanswered,
                **counts,
            },
            settings=settings,
            outcomes=outcomes,
            chance=self.chance(data, rows),
        )
        memorisation.record(scored, outputs.memorised, self.k, self.outcome_fields)  # issue 39 §4
        return scored

    @staticmethod
    def estimators(settings: dict) -> dict[str, Estimator]:
        """acc@k (micro, over queries) and macro_acc@k (the mean over relations, resampled within each), and the
        validity facets the run measured (medprobe.tasks.facets)."""
        estimators = {}
        for k in settings["k"]:
            hit = functools.partial(rank_within, k=k)
            estimators[f"acc@{k}"] = mean_estimator(hit, "query")
            estimators[f"macro_acc@{k}"] = mean_estimator(hit, "query", stratified=True)
        if variants_module.measured(settings):  # consistency@k, consistency_top1, robust_acc@k
            estimators.update(variants_module.variant_estimators(settings["k"]))
        estimators.update(memorisation.estimators(settings))  # issue 39 §4: acc@k per Min-K%++ tertile
        return {**estimators, **facet_estimators(settings, "query")}

    def chance(self, data: MedLAMAData, rows: datasets.Dataset | None = None) -> dict[str, dict]:
        """acc@k of a uniformly random ranking of each query's candidates, exactly (medprobe.stats.hit_chance):
        a query with g of its gold answers among its c candidates is a hit at k with 1 - C(c-g, k)/C(c, k)."""
        rows = data.rows if rows is None else rows
        sizes, golds = candidate_counts(data, rows, self.exclude_head)
        return chance_levels(self.k, column(rows, "relation"), sizes, golds)

    def table(self, record: RunRecord) -> str:
        return format_table(record, [f"acc@{k}" for k in self.k], group_label="relation")

    def writers(self, data: MedLAMAData, outputs: MedLAMAOutputs) -> Writers:
        return self.jsonl_writer(self.predictions, lambda: prediction_records(outputs.rows, outputs.predictions))


def ranking_rows(rows: datasets.Dataset) -> RankingRows:
    """MedLAMA's rows as the facets read them: the subject is the head, clustered by head_cui (else head_name)."""
    return RankingRows.of(rows, group="relation", subject="head_name", clusters=("head_cui", "head_name"))


def rank_rows(prober: Any, rows: datasets.Dataset, k: int, candidates: Candidates) -> list[Any]:
    """The `rank` results of the queries of `rows` (fields query and relation) over their candidates, as the task's
    own queries are ranked: how --variants ranks its queries (medprobe.tasks.variants.rank_variants)."""
    return rank_queries(prober, column(rows, "query"), column(rows, "relation"), candidates, k)


def rank_within(columns: Any, k: int) -> np.ndarray:
    """A query's hit at k: its best gold answer ranks k or better (null, not in the top K, never does)."""
    return columns["rank"] <= k


def add_facet_values(metrics: dict, per_group: dict, outcomes: Outcomes, estimators: dict[str, Estimator]) -> None:
    """Each facet metric, overall and per group, from the outcomes (so the loader recomputes exactly these)."""
    for name, estimator in estimators.items():
        metrics[name] = estimate(outcomes, estimator)
        for group in outcomes.group_names:
            per_group.setdefault(group, {})[name] = estimate(outcomes.group(group), estimator)


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


def candidate_counts(data: MedLAMAData, rows: datasets.Dataset, exclude_head: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per query of `rows`, how many names it is ranked among and how many of them are its gold answers.

    The candidates are the set's answer space, the relation's, or the query's --rerank shortlist;
    with --exclude-head the query's own head name is not among them."""
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
