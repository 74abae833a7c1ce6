"""The validity facets of a ranking task: is its score knowledge? (MedLAMA's, a plugin's: any task whose rows have
an id, a group, a query, gold answers, a subject and a template with [X] for the subject.)

    rows = RankingRows.of(ds, group="relation", subject="head_name", clusters=("head_cui", "head_name"))
    run = rank_with_facets(prober, rows, candidates, FacetOptions(k=[1, 10]), who="contrastive")
    run.predictions       # every row's top-k names (the predictions file), as a run without facets gives them
    run.columns           # the per-item outcome columns: rank, control_rank, margin, confidence, ...
    run.settings          # what the record says was measured; facet_estimators(run.settings, "query") recomputes it

The real queries are ranked exactly as before (one `rank` call per candidate list, so their predictions do not
change by a bit); every facet's own queries are ranked after them, in ONE more call per candidate list, by the same
prober over the same candidates. The facets:

- prompt-bias control (on by default): one control query per (group, template), the template with [X] replaced by
  a neutral placeholder (`CONTROL_PLACEHOLDER`), shared by the group's items; per item `control_rank`, its gold
  answers' rank in the control's top k (with --exclude-head the item's own subject left out, as for its query).
  Metrics: control_acc@k, above_bias@k (= acc@k - control_acc@k, the paired difference per item),
  answerable_from_template@k (the items the control gets: a count).
- shuffled-subject control (option): each item's template filled with another subject of its group (a seeded
  derangement: one cycle through the group's items in a seeded order); `shuffled_rank` (0: its group has no other
  item, not asked). Metrics: shuffled_acc@k, above_shuffled@k.
- confidence, from the scores `rank` returns (medprobe.contracts): `margin` (top-1 score - top-2 score) for AURC
  with its oracle and random values; where the prober's scores are log-probabilities (`Prober.probabilities`),
  `confidence` = the top-1 name's probability, for ECE (equal-mass bins) and Brier. Correct = the top-1 is gold.

The math is medprobe.validity's; clustered intervals come from the outcomes' clusters (the subject), recorded here.

Extension point: `FACETS` lists the facets that rank queries of their own (a `Facet`: the queries, the columns it
fills from their rankings, its settings and its estimators). Another facet (templates and synonyms as variants of an
item) is one more entry: `rank_with_facets` ranks its queries in the same extra call, `facet_estimators` returns its
estimators, and nothing else changes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from medprobe.contracts import MASK_SLOT, names_and_scores
from medprobe.counted import counts_estimator, mean_estimator
from medprobe.stats import Estimator
from medprobe.tasks.ranking import Candidates, best_gold_ranks, rank_queries
from medprobe.validity import aurc, aurc_oracle, aurc_plan, calibration_table, ece, once_per_columns, wrong_items

if TYPE_CHECKING:
    import datasets

SUBJECT_SLOT = "[X]"
# The control's subject: a bare variable name reads as a noun phrase in every template ("X might treat [Y] .", "The
# gene product X is encoded by gene [Y] ."), names nothing, and every tokenizer has it; a mask token would be a second
# answer slot to a masked LM and means nothing to a causal LM, an empty subject breaks templates that start with it.
CONTROL_PLACEHOLDER = "X"
ECE_BINS = 10


@dataclass
class RankingRows:
    """The fields of a ranking task's rows that the facets read (templates and subjects None: no control)."""

    ids: list[str]
    groups: list[str]
    queries: list[str]
    answers: list[list[str]]
    subjects: list[str] | None = None
    templates: list[str] | None = None
    clusters: list[str] | None = None

    @classmethod
    def of(
        cls,
        ds: datasets.Dataset,
        *,
        group: str,
        subject: str,
        template: str = "template",
        clusters: Sequence[str] = (),
    ) -> RankingRows:
        """The rows of `ds`; each item's cluster is the first non-empty of the `clusters` fields."""
        from medprobe.loading import column

        names = set(ds.column_names)
        found = [column(ds, name) for name in clusters if name in names]
        return cls(
            ids=column(ds, "id"),
            groups=column(ds, group),
            queries=column(ds, "query"),
            answers=column(ds, "answers"),
            subjects=column(ds, subject) if subject in names else None,
            templates=column(ds, template) if template in names else None,
            clusters=[next((str(v) for v in values if v), "") for values in zip(*found)] if found else None,
        )

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class FacetOptions:
    k: Sequence[int]  # the acc@k cut-offs
    exclude_head: bool = False  # each item's own subject is left out of its rankings (MedLAMA's --exclude-head)
    control: bool = True
    placeholder: str = CONTROL_PLACEHOLDER
    shuffled: bool = False
    seed: int = 0  # the shuffled control's derangement
    ece_bins: int = ECE_BINS


@dataclass
class Ranking:
    """The top names of some queries, and their scores (None: the prober returned names only)."""

    names: list[list[str]]
    scores: list[list[float]] | None


@dataclass
class FacetRun:
    predictions: list[list[str]]  # every row's top k names, best first
    columns: dict[str, np.ndarray]  # the per-item outcome columns
    fields: dict[str, str]  # each column, described for the outcomes file's readers
    settings: dict  # what was measured (read back by facet_estimators)
    notes: list[str] = field(default_factory=list)  # said once each (a facet left out, and why)
    timings: dict[str, float] = field(default_factory=dict)  # seconds of the facets' own rank call (its cost)


class Facet(Protocol):
    """A facet that ranks queries of its own beside the real ones (the extension point: `FACETS`)."""

    def active(self, rows: RankingRows, options: FacetOptions, notes: list[str]) -> bool:
        """Whether it runs here (say why not in `notes`)."""
        ...

    def queries(self, rows: RankingRows, options: FacetOptions) -> tuple[list[str], list[str]]:
        """Its query texts and, for each, the group whose candidates it ranks."""
        ...

    def columns(self, rows: RankingRows, options: FacetOptions, ranked: Ranking) -> dict[str, np.ndarray]:
        """Its outcome columns, from the rankings of its queries (best first, k + 1 with --exclude-head)."""
        ...

    def describe(self, options: FacetOptions, k: int) -> tuple[dict, dict[str, str]]:
        """What the record's settings say of it, and its columns described."""
        ...


# --- ranking ---------------------------------------------------------------------------------------------------------


def rank_with_facets(prober: Any, rows: RankingRows, candidates: Candidates, options: FacetOptions, who: str) -> FacetRun:
    """The rows' predictions and every facet's outcome columns (see the module docstring)."""
    top = max(options.k)
    asked = top + 1 if options.exclude_head else top
    notes: list[str] = []
    real = ranking(rank_queries(prober, rows.queries, rows.groups, candidates, asked), who)
    facets = [facet for facet in FACETS if facet.active(rows, options, notes)]
    texts: list[str] = []
    groups: list[str] = []
    spans = []
    for facet in facets:
        own, own_groups = facet.queries(rows, options)
        spans.append((len(texts), len(texts) + len(own)))
        texts += own
        groups += own_groups
    start = time.perf_counter()
    extra = ranking(rank_queries(prober, texts, groups, candidates, asked), who) if texts else Ranking([], [])
    seconds = time.perf_counter() - start
    heads = rows.subjects if options.exclude_head else None
    names, scores = kept(real, heads, top)
    columns = {"rank": best_gold_ranks(names, rows.answers)}
    fields = {"rank": f"1-based rank of the item's best gold answer among its top {top} predictions; null: none in the top {top}"}
    settings: dict = {}
    if scores is None:
        notes.append(
            f"{who} returns names without scores (its rank predates scores in the contract): the confidence facets "
            "(margin, AURC, ECE, Brier) are left out"
        )
        settings["confidence"] = None
    else:
        columns.update(confidence_columns(scores, bool(getattr(prober, "probabilities", False))))
        settings.update(confidence_settings(bool(getattr(prober, "probabilities", False)), options.ece_bins))
        fields.update(CONFIDENCE_FIELDS if "confidence" in columns else {"margin": CONFIDENCE_FIELDS["margin"]})
    for facet, (start, stop) in zip(facets, spans):
        own = Ranking(extra.names[start:stop], extra.scores[start:stop] if extra.scores is not None else None)
        columns.update(facet.columns(rows, options, own))
        said, described = facet.describe(options, top)
        settings.update(said)
        fields.update(described)
    for facet in FACETS:  # a facet that did not run says so in the settings too (its estimators stay out)
        if facet not in facets:
            settings.update({key: None for key in facet.describe(options, top)[0]})
    for note in notes:
        print(f"note: {note}")
    return FacetRun(names, columns, fields, settings, notes, {"facet_queries": seconds} if texts else {})


def ranking(results: list[Any], who: str) -> Ranking:
    names, scores = names_and_scores(results, who)
    return Ranking(names, scores)


def kept(ranked: Ranking, heads: Sequence[str] | None, k: int) -> tuple[list[list[str]], list[list[float]] | None]:
    """Each query's top k, its own head name left out first when `heads` are given."""
    names, scores = [], [] if ranked.scores is not None else None
    for row, found in enumerate(ranked.names):
        keep = [i for i, name in enumerate(found) if heads is None or name != heads[row]][:k]
        names.append([found[i] for i in keep])
        if scores is not None:
            scores.append([ranked.scores[row][i] for i in keep])
    return names, scores


# --- confidence ------------------------------------------------------------------------------------------------------

CONFIDENCE_FIELDS = {
    "margin": "the top-1 score minus the top-2 score of the item's query (its confidence for selective answering); "
    "null: fewer than two predictions",
    "confidence": "the top-1 prediction's probability (exp of its log-probability score); null: no prediction",
}


def confidence_columns(scores: list[list[float]], probabilities: bool) -> dict[str, np.ndarray]:
    """Each item's margin (and probability), to 8 significant digits: all a float32 score holds, and the outcomes
    file stays short (every reader parses it)."""
    margin = np.array([significant(row[0] - row[1]) if len(row) > 1 else np.nan for row in scores], dtype=np.float64)
    if not probabilities:
        return {"margin": margin}
    return {"margin": margin, "confidence": np.array([significant(math.exp(row[0])) if row else np.nan for row in scores])}


def significant(value: float, digits: int = 8) -> float:
    return float(f"{value:.{digits}g}")


def confidence_settings(probabilities: bool, bins: int) -> dict:
    if probabilities:
        return {"confidence": "margin and probability", "ece_bins": bins}
    return {"confidence": "margin"}


# --- the prompt-bias control -----------------------------------------------------------------------------------------


def template_problem(rows: RankingRows) -> str | None:
    """Why the rows cannot have a control (no subjects or templates, a template without [X], a query that is not its
    template filled with its subject), or None."""
    if rows.subjects is None or rows.templates is None:
        return "the rows have no subject and template fields"
    for row, (query, template, subject) in enumerate(zip(rows.queries, rows.templates, rows.subjects)):
        if SUBJECT_SLOT not in template or MASK_SLOT not in template:
            return f"the template of row {rows.ids[row]!r} ({template!r}) lacks {SUBJECT_SLOT} or {MASK_SLOT}"
        if template.replace(SUBJECT_SLOT, subject) != query:
            return f"the query of row {rows.ids[row]!r} is not its template with {SUBJECT_SLOT} replaced by its subject"
    return None


def gold_rank(names: Sequence[str], answers: Sequence[str], head: str | None, k: int) -> float:
    """The 1-based rank of the first gold answer among `names` (`head` left out first), within the top k; NaN: none."""
    wanted = set(answers)
    position = 0
    for name in names:
        if head is not None and name == head:
            continue
        position += 1
        if position > k:
            break
        if name in wanted:
            return float(position)
    return np.nan


class PromptBiasControl:
    """The control query of each (group, template): the template, its subject replaced by the placeholder."""

    def active(self, rows: RankingRows, options: FacetOptions, notes: list[str]) -> bool:
        if not options.control:
            return False
        problem = template_problem(rows)
        if problem:
            notes.append(f"the prompt-bias control is left out: {problem}")
        return problem is None

    @staticmethod
    def keys(rows: RankingRows) -> list[tuple[str, str]]:
        assert rows.templates is not None
        return list(zip(rows.groups, rows.templates))

    def queries(self, rows: RankingRows, options: FacetOptions) -> tuple[list[str], list[str]]:
        distinct = list(dict.fromkeys(self.keys(rows)))
        return [template.replace(SUBJECT_SLOT, options.placeholder) for _, template in distinct], [g for g, _ in distinct]

    def columns(self, rows: RankingRows, options: FacetOptions, ranked: Ranking) -> dict[str, np.ndarray]:
        where = {key: index for index, key in enumerate(dict.fromkeys(self.keys(rows)))}
        heads = rows.subjects if options.exclude_head else None
        top = max(options.k)
        return {
            "control_rank": np.array(
                [
                    gold_rank(ranked.names[where[key]], answers, heads[row] if heads else None, top)
                    for row, (key, answers) in enumerate(zip(self.keys(rows), rows.answers))
                ]
            )
        }

    def describe(self, options: FacetOptions, k: int) -> tuple[dict, dict[str, str]]:
        return {"control_placeholder": options.placeholder}, {
            "control_rank": f"the rank of the item's best gold answer in its control query's top {k} (its template with "
            f"{SUBJECT_SLOT} = {options.placeholder!r}, one query per group and template); null: none in the top {k}"
        }


class ShuffledControl:
    """Each item's template filled with another subject of its group (seeded): does the answer need THIS subject?"""

    def active(self, rows: RankingRows, options: FacetOptions, notes: list[str]) -> bool:
        if not options.shuffled:
            return False
        problem = template_problem(rows)
        if problem:
            notes.append(f"the shuffled-subject control is left out: {problem}")
        return problem is None

    @staticmethod
    def partners(rows: RankingRows, seed: int) -> list[int | None]:
        """Each row's partner: the next item in a seeded order of its group's items (a derangement); None: alone."""
        rng = np.random.default_rng(seed)
        by_group: dict[str, list[int]] = {}
        for row, group in enumerate(rows.groups):
            by_group.setdefault(group, []).append(row)
        partner: list[int | None] = [None] * len(rows)
        for members in by_group.values():
            if len(members) < 2:
                continue
            order = [members[i] for i in rng.permutation(len(members))]
            for position, row in enumerate(order):
                partner[row] = order[(position + 1) % len(order)]
        return partner

    def queries(self, rows: RankingRows, options: FacetOptions) -> tuple[list[str], list[str]]:
        assert rows.templates is not None and rows.subjects is not None
        texts, groups = [], []
        for row, other in enumerate(self.partners(rows, options.seed)):
            if other is not None:
                texts.append(rows.templates[row].replace(SUBJECT_SLOT, rows.subjects[other]))
                groups.append(rows.groups[row])
        return texts, groups

    def columns(self, rows: RankingRows, options: FacetOptions, ranked: Ranking) -> dict[str, np.ndarray]:
        heads = rows.subjects if options.exclude_head else None
        top, found, at = max(options.k), [], 0
        for row, other in enumerate(self.partners(rows, options.seed)):
            if other is None:
                found.append(0.0)
                continue
            found.append(gold_rank(ranked.names[at], rows.answers[row], heads[row] if heads else None, top))
            at += 1
        return {"shuffled_rank": np.array(found)}

    def describe(self, options: FacetOptions, k: int) -> tuple[dict, dict[str, str]]:
        return {"shuffled_control_seed": options.seed}, {
            "shuffled_rank": f"the rank of the item's best gold answer in the top {k} of its template filled with "
            f"another subject of its group (seeded); null: none in the top {k}; 0: its group has no other item"
        }


FACETS: list[Facet] = [PromptBiasControl(), ShuffledControl()]  # the extension point (see the module docstring)


# --- the estimators ----------------------------------------------------------------------------------------------------


def hits(ranks: np.ndarray, k: int) -> np.ndarray:
    return ranks <= k  # NaN (not in the top K) compares False


def facet_estimators(settings: dict, unit: str) -> dict[str, Estimator]:
    """Every facet metric the settings say was measured (a record without facet settings: none)."""
    found: dict[str, Estimator] = {}
    for k in settings.get("k", []):
        if settings.get("control_placeholder") is not None:
            control = lambda c, k=k: hits(c["control_rank"], k)  # noqa: E731
            found[f"control_acc@{k}"] = mean_estimator(control, unit, facet="prompt bias")
            found[f"above_bias@{k}"] = mean_estimator(
                lambda c, k=k: hits(c["rank"], k).astype(np.float64) - hits(c["control_rank"], k), unit, facet="prompt bias"
            )
            found[f"answerable_from_template@{k}"] = mean_estimator(control, unit, facet="prompt bias", scale="count")
        if settings.get("shuffled_control_seed") is not None:
            asked = lambda c, k=k: np.where(c["shuffled_rank"] == 0, np.nan, hits(c["shuffled_rank"], k))  # noqa: E731
            found[f"shuffled_acc@{k}"] = mean_estimator(asked, unit, facet="shuffled subject")
            found[f"above_shuffled@{k}"] = mean_estimator(
                lambda c, k=k: np.where(
                    c["shuffled_rank"] == 0, np.nan, hits(c["rank"], k) - hits(c["shuffled_rank"], k).astype(np.float64)
                ),
                unit,
                facet="shuffled subject",
            )
    if settings.get("confidence"):
        plan = once_per_columns(lambda c: aurc_plan(c["margin"], c["rank"] == 1))
        wrong = once_per_columns(lambda c: wrong_items(c["rank"] == 1))
        found["aurc"] = counts_estimator(
            lambda counts, c: aurc(counts, c["margin"], c["rank"] == 1, plan(c)), unit, facet="selective answering"
        )
        found["aurc_oracle"] = counts_estimator(
            lambda counts, c: aurc_oracle(counts, c["rank"] == 1, wrong(c)), unit, facet="selective answering"
        )
        found["aurc_random"] = mean_estimator(lambda c: c["rank"] != 1, unit, facet="selective answering")
    if settings.get("confidence") == "margin and probability":
        bins = int(settings["ece_bins"])
        table = once_per_columns(lambda c: calibration_table(c["confidence"], c["rank"] == 1, bins))
        found["ece"] = counts_estimator(
            lambda counts, c: ece(counts, c["confidence"], c["rank"] == 1, bins, table(c)), unit, facet="calibration"
        )
        found["brier"] = mean_estimator(
            lambda c: (c["confidence"] - (c["rank"] == 1)) ** 2, unit, facet="calibration", scale="score"
        )
    return found
