"""Consistency over variants of a ranking query: the same question asked another way (`--variants`).

    plan = load_variants(dataset, split, rows, "templates")          # the variant queries of the probed rows
    ranked = rank_variants(plan, rank_rows, k, exclude_head=False)    # every variant query in one rank call
    columns = variant_columns(plan, len(rows), real_predictions, answers, ranked)
    estimators = variant_estimators([1, 10])                          # consistency@k, consistency_top1, robust_acc@k

A benchmark whose data has a `variants` config (MedLAMA's: datasets/medlama/variants.py) holds, per item, the
item's query asked other ways: the release's other template (`default_prompt`), and subject synonyms
(`synonym_1` .. `synonym_N`, in a build from a UMLS release). Each variant query is ranked by the same prober over
the same candidates as the item's own query, and the per-item outcomes gain two columns:

- `variant_ranks`: one entry per variant slot, in the fixed order of `settings.variant_slots` (`default_prompt`,
  then `synonym_1` .. `synonym_N`, N the most synonyms any item of the data has): the 1-based rank of the best
  gold answer among that variant's top K, 0 when none is in its top K, null when the item has no such variant or
  the run did not ask it (`--variants templates` leaves the synonym slots null, `synonyms` the template slot), so
  every run of one data set has the same width, whatever it asked;
- `variant_top1_same`: 1 when every variant asked has the same top-1 name as the item's own query, 0 when one
  differs, null when the item has no variant asked.

The metrics, each a share with its 95% interval, recomputed from these columns by the record loader:
- `consistency@k`: among the items with at least one variant asked (the interval's n), the share whose hit@k is
  the same under their own query and under every variant;
- `consistency_top1`: among the same items, the share whose top-1 name is the same under every variant;
- `robust_acc@k`: over all items (as acc@k, so robust_acc@k <= acc@k item by item), the share that is a hit at k
  under their own query and under every variant they have; an item without a variant counts as acc@k does.

With --exclude-head a query's own head name is left out of its predictions; a variant's predictions leave out
the head name and the name the variant asks about (its synonym), so no variant is answered by echoing its own
subject. Nothing here depends on MedLAMA (its messages only name MedLAMA's build as where synonyms come from): a
ranking task whose rows have id, relation, head_name and answers, and whose data has a `variants` config of the
fields VARIANT_FIELDS, uses it as MedLAMA does.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from medprobe.contracts import UserError
from medprobe.counted import mean_estimator
from medprobe.digests import sha256_text
from medprobe.loading import check_fields, column, dataset_config_names, load_probe_dataset
from medprobe.stats import VARIANT_COLUMN_PREFIX, Estimator, Outcomes, Sample, estimate

if TYPE_CHECKING:  # datasets is imported where used: `medprobe --help` stays fast
    import datasets

MODES = ("none", "templates", "synonyms", "all")
CONFIG = "variants"  # the data's config of variant queries
TEMPLATE = "default_prompt"  # the variant asked with the release's other template
SYNONYM = re.compile(r"synonym_([1-9][0-9]*)")  # synonym_1, synonym_2, ...: the head named another way
VARIANT_FIELDS = ("id", "variant", "relation", "head_name", "subject", "query", "answers")
RANKS, SAME_TOP1 = f"{VARIANT_COLUMN_PREFIX}ranks", f"{VARIANT_COLUMN_PREFIX}top1_same"  # never read as seeds (stats)
OUTCOME_FIELDS = {
    RANKS: "per variant slot (settings.variant_slots: default_prompt, then synonym_1..N), the 1-based rank of the best "
    "gold answer among that variant query's top K; 0: none in its top K; null: the item has no such variant, or the "
    "run did not ask it",
    SAME_TOP1: "1 if every variant asked has the item's own top-1 name, 0 if one differs; null: no variant asked",
}


@dataclass(frozen=True)
class VariantPlan:
    """The variant queries of the probed rows, in the order they are ranked, and where each one's outcome goes."""

    mode: str
    slots: tuple[str, ...]  # the entries of variant_ranks, in order
    items: list[int]  # per variant query: the probed row it is a variant of
    slot_of: list[int]  # per variant query: its entry in variant_ranks
    queries: list[str]
    relations: list[str]
    excluded: list[tuple[str, ...]]  # per variant query: the names --exclude-head leaves out of its predictions

    def settings(self) -> dict:
        """What the record says about the variants asked (the digest: which variant queries, as text)."""
        lines = "".join(
            f"{item}\t{self.slots[slot]}\t{query}\n" for item, slot, query in zip(self.items, self.slot_of, self.queries)
        )
        return {"variants": self.mode, "variant_slots": list(self.slots), "variant_queries_sha256": sha256_text(lines)}


def check_options(mode: str, rerank: str | None) -> None:
    """--variants is one of MODES, and not given with --rerank (a shortlist is kept per query text: the variant
    queries have none, so they could not be ranked among the item's candidates)."""
    if mode not in MODES:
        raise UserError(f"--variants must be one of {', '.join(MODES)}, got {mode!r}")
    if rerank and mode != "none":
        raise UserError(
            "--variants ranks each variant among its item's candidates, and with --rerank those are a shortlist "
            "kept for the item's own query text: leave out --rerank or --variants"
        )


def wanted(mode: str, variant: str) -> bool:
    """Whether `--variants mode` asks a variant of this kind."""
    return (variant == TEMPLATE and mode in ("templates", "all")) or (
        SYNONYM.fullmatch(variant) is not None and mode in ("synonyms", "all")
    )


def load_variants(dataset: str, split: str, rows: datasets.Dataset, mode: str) -> VariantPlan | None:
    """The variant queries of `rows` (the probed rows) from the `variants` config of `dataset`; None for mode none.

    Each variant row must pair with a probed row of its id (same relation, head name and gold answers): the two
    configs of one build always do, a folder of mixed builds is refused, naming the row."""
    if mode == "none":
        return None
    if mode not in MODES:
        raise UserError(f"--variants must be one of {', '.join(MODES)}, got {mode!r}")
    configs = dataset_config_names(dataset)
    if CONFIG not in configs:
        raise UserError(
            f"--variants {mode} needs the {CONFIG!r} config of --dataset {dataset}, which has only {', '.join(configs)} "
            f"(a build by an older medprobe, or one without it): rebuild it with `medprobe build <benchmark> --config "
            f"{CONFIG} --out {dataset}`, or leave out --variants"
        )
    table = load_probe_dataset(dataset, CONFIG, split)
    check_fields(table, VARIANT_FIELDS, f"dataset {dataset!r} (config {CONFIG!r})")
    kinds = column(table, "variant")
    unknown = sorted({kind for kind in kinds if kind != TEMPLATE and not SYNONYM.fullmatch(kind)})
    if unknown:
        raise UserError(f"{dataset} ({CONFIG!r}): unknown variant(s) {', '.join(unknown[:5])}; expected {TEMPLATE} or synonym_N")
    most = max((int(match[1]) for kind in kinds if (match := SYNONYM.fullmatch(kind))), default=0)
    slots = (TEMPLATE,) + tuple(f"synonym_{i}" for i in range(1, most + 1))
    if mode in ("synonyms", "all") and most == 0:
        raise UserError(
            f"--variants {mode}: the {CONFIG!r} config of {dataset} holds no subject synonyms (the MedLAMA release "
            "files have none; a build from a UMLS release adds them: medprobe build medlama --umls-dir META); "
            "use --variants templates"
        )
    plan = pair_variants(dataset, table, rows, mode, slots)
    if not plan.queries:
        raise UserError(f"--variants {mode}: the {CONFIG!r} config of {dataset} has no such variant of the probed items")
    return plan


def widest_mode(dataset: str, split: str) -> str:
    """The widest --variants the data allows (what `medprobe profile` asks): "all" when its variants config holds
    subject synonyms (a build from a UMLS release), "templates" when it holds only the other template, "none" when
    the data has no variants config (an older build)."""
    if CONFIG not in dataset_config_names(dataset):
        return "none"
    kinds = set(column(load_probe_dataset(dataset, CONFIG, split), "variant"))
    if any(SYNONYM.fullmatch(kind) for kind in kinds):
        return "all"
    return "templates" if TEMPLATE in kinds else "none"


def pair_variants(
    dataset: str, table: datasets.Dataset, rows: datasets.Dataset, mode: str, slots: tuple[str, ...]
) -> VariantPlan:
    """The plan: each wanted variant row of a probed item, checked to be a variant of that item."""
    where = {item: index for index, item in enumerate(column(rows, "id"))}
    relations, heads, answers = column(rows, "relation"), column(rows, "head_name"), column(rows, "answers")
    slot_index = {slot: index for index, slot in enumerate(slots)}
    plan = VariantPlan(mode, slots, [], [], [], [], [])
    seen: set[tuple[int, int]] = set()
    fields = [column(table, name) for name in ("id", "variant", "relation", "head_name", "subject", "query", "answers")]
    for number, (item, kind, relation, head, subject, query, gold) in enumerate(zip(*fields), start=1):
        row = where.get(item)
        if row is None or not wanted(mode, kind):
            continue
        if (relation, head, list(gold)) != (relations[row], heads[row], list(answers[row])):
            raise UserError(
                f"{dataset} ({CONFIG!r}), row {number}: variant {kind} of {item!r} is not a variant of the probed item "
                "(its relation, head name or answers differ): the configs come from different builds; rebuild the folder"
            )
        if (row, slot_index[kind]) in seen:
            raise UserError(f"{dataset} ({CONFIG!r}), row {number}: {item!r} has variant {kind} twice")
        seen.add((row, slot_index[kind]))
        plan.items.append(row)
        plan.slot_of.append(slot_index[kind])
        plan.queries.append(query)
        plan.relations.append(relation)
        plan.excluded.append(tuple(dict.fromkeys((head, subject))))
    return plan


def names_of(ranked: Sequence[Any]) -> list[str]:
    """The names of one ranked list: plain names, or (name, score) pairs."""
    return [entry if isinstance(entry, str) else entry[0] for entry in ranked]


def rank_variants(
    plan: VariantPlan, rank_rows: Callable[[datasets.Dataset, int], list[list[Any]]], k: int, exclude_head: bool
) -> list[list[str]]:
    """The top-k names of every variant query, all ranked by one `rank_rows(rows, k)` call (the task's own ranking,
    with its prober and candidates: rows of query, relation and head_name). With `exclude_head`, a variant's head
    name and subject are left out of its predictions (two names at most: k + 2 are ranked)."""
    import datasets

    rows = datasets.Dataset.from_dict(
        {"query": plan.queries, "relation": plan.relations, "head_name": [names[0] for names in plan.excluded]}
    )
    ranked = [names_of(names) for names in rank_rows(rows, k + 2 if exclude_head else k)]
    if not exclude_head:
        return ranked
    return [[name for name in names if name not in left_out][:k] for names, left_out in zip(ranked, plan.excluded)]


def variant_columns(
    plan: VariantPlan | None,
    predictions: Sequence[Sequence[Any]],
    answers: Sequence[Sequence[str]],
    ranked: list[list[str]] | None,
) -> dict[str, np.ndarray]:
    """The outcome columns `variant_ranks` (items, slots) and `variant_top1_same` (items,), from the predictions of
    the items' own queries and of their variant queries (`ranked`, in plan order); none without a plan."""
    if plan is None or ranked is None:
        return {}
    items = len(predictions)
    ranks = np.full((items, len(plan.slots)), np.nan)
    same = np.full(items, np.nan)
    for item, slot, names in zip(plan.items, plan.slot_of, ranked):
        gold = set(answers[item])
        ranks[item, slot] = next((position for position, name in enumerate(names, start=1) if name in gold), 0)
        own = names_of(predictions[item][:1])
        agrees = names[:1] == own
        same[item] = float(agrees) if np.isnan(same[item]) else min(same[item], float(agrees))
    return {RANKS: ranks, SAME_TOP1: same}


# --- the metrics --------------------------------------------------------------------------------------------------


def hit_everywhere(rank: np.ndarray, variants: np.ndarray, k: int) -> np.ndarray:
    """Per item (any leading axes): a hit at k under its own query and under every variant it has."""
    return (rank <= k) & np.all(np.isnan(variants) | ((variants >= 1) & (variants <= k)), axis=-1)


def agrees_everywhere(rank: np.ndarray, variants: np.ndarray, k: int) -> np.ndarray:
    """Per item: at least one variant, and the same hit@k (hit or miss) under its own query and every variant."""
    asked = ~np.isnan(variants)
    same = (((variants >= 1) & (variants <= k)) == (rank <= k)[..., None]) | ~asked
    return np.all(same, axis=-1) & asked.any(axis=-1)


def share(hits: np.ndarray, of: np.ndarray) -> np.ndarray:
    """Per resample, hits / of (NaN where no item counts: a group without variants)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return hits.sum(axis=1) / of.sum(axis=1)


def consistency(sample: Sample, k: int) -> np.ndarray:
    agree = sample.map_items(("rank", RANKS), functools.partial(agrees_everywhere, k=k))
    asked = sample.map(RANKS, lambda ranks: ~np.all(np.isnan(ranks), axis=-1))
    return share(agree, asked)


def consistency_top1(sample: Sample) -> np.ndarray:
    return share(sample.map(SAME_TOP1, lambda same: same == 1), sample.map(SAME_TOP1, lambda same: ~np.isnan(same)))


def robust_acc(sample: Sample, k: int) -> np.ndarray:
    return sample.map_items(("rank", RANKS), functools.partial(hit_everywhere, k=k)).mean(axis=1)


def items_with_variants(outcomes: Outcomes) -> int:
    """The n of consistency@k: the items with at least one variant asked."""
    return int(np.sum(~np.all(np.isnan(outcomes.columns[RANKS]), axis=-1)))


def items_with_top1(outcomes: Outcomes) -> int:
    """The n of consistency_top1: the items whose variant_top1_same is recorded (the same items)."""
    return int(np.sum(~np.isnan(outcomes.columns[SAME_TOP1])))


def consistent_items(columns: Any, k: int) -> np.ndarray:
    """Per item: 1 when its hit@k is the same under its own query and every variant, 0 when not, NaN when it has
    no variant asked (it does not count): consistency@k is their mean."""
    variants = columns[RANKS]
    return np.where(np.all(np.isnan(variants), axis=-1), np.nan, agrees_everywhere(columns["rank"], variants, k))


def robust_items(columns: Any, k: int) -> np.ndarray:
    """Per item: a hit at k under its own query and every variant it has (robust_acc@k is their mean)."""
    return hit_everywhere(columns["rank"], columns[RANKS], k)


def same_top1_items(columns: Any) -> np.ndarray:
    """Per item: 1 when every variant asked has its own top-1 name, 0 when not, NaN with none asked."""
    same = columns[SAME_TOP1]
    return np.where(np.isnan(same), np.nan, same == 1)


def variant_estimators(cutoffs: Sequence[int], unit: str = "query") -> dict[str, Estimator]:
    """consistency@k and robust_acc@k for each k, and consistency_top1: each the mean of a per-item value (the
    items with a variant, or every item), so the validity facets' bootstrap reads them all from one pass of item
    counts and gives them intervals clustered by subject (medprobe.counted, medprobe.validity). On every sample
    they equal `consistency`, `robust_acc` and `consistency_top1` (ratios of the same whole-number sums)."""
    facet = "consistency"
    estimators = {}
    for k in cutoffs:
        estimators[f"consistency@{k}"] = mean_estimator(
            functools.partial(consistent_items, k=k), unit, facet=facet, count=items_with_variants
        )
        estimators[f"robust_acc@{k}"] = mean_estimator(functools.partial(robust_items, k=k), unit, facet=facet)
    estimators["consistency_top1"] = mean_estimator(same_top1_items, unit, facet=facet, count=items_with_top1)
    return estimators


def measured(settings: dict) -> bool:
    """Whether a run's settings say it asked variants (its outcomes then hold the variant columns)."""
    return settings.get("variants", "none") != "none"


def variant_metrics(outcomes: Outcomes, cutoffs: Sequence[int], unit: str = "query") -> tuple[dict[str, float], dict[str, dict]]:
    """The variant metrics overall and per group (a group without variants: null), from the estimators themselves."""
    estimators = variant_estimators(cutoffs, unit)
    overall = {name: estimate(outcomes, estimator) for name, estimator in estimators.items()}
    per_group: dict[str, dict] = {}
    for group in outcomes.group_names:
        part = outcomes.group(group)
        values = {name: estimate(part, estimator) for name, estimator in estimators.items()}
        per_group[group] = {name: None if np.isnan(value) else value for name, value in values.items()}
    return overall, per_group


def with_variants(
    plan: VariantPlan | None, outcomes: Outcomes, cutoffs: Sequence[int], metrics: dict, per_group: dict
) -> tuple[dict, dict, dict, dict]:
    """A ranking task's metrics and per-group values with the variant metrics added, and what the record's settings
    and counts gain (nothing without a plan)."""
    if plan is None:
        return metrics, per_group, {}, {}
    overall, by_group = variant_metrics(outcomes, cutoffs)
    per_group = {group: {**values, **by_group.get(group, {})} for group, values in per_group.items()}
    # of the items scored (all probed, or a subset of them such as --only-control-misses'): from their outcomes
    asked = ~np.isnan(outcomes.columns[RANKS])
    counts = {"variant_queries": int(asked.sum()), "items_with_variants": int(asked.any(axis=-1).sum())}
    return {**metrics, **overall}, per_group, plan.settings(), counts
