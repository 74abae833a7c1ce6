"""The context-variance task: UCM of a candidate scorer on a context-variance dataset.

    medprobe probe --prober causal-lm --task context_variance --dataset out/context_variance --config real-target --model smollm2
    medprobe probe --prober mask-average --task context_variance --dataset out/context_variance --model <masked LM>

Loads a context-variance folder (or Hub id) with `load_dataset`, scores every context step with
the prober's `score_candidates` (any candidate scorer: mask-average, causal-lm, contrastive; see
medprobe.tasks.context_variance_ranks), pairs each step with the previous one, and reports
Understand / Confuse / Misunderstand shares per relation (UCM_k) and overall (UCM_m) from the `ucm`
evaluate module, the mean rank changes, and top-k accuracy without and with context.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from medprobe import distributed
from medprobe.loading import column, row_digests
from medprobe.stats import Estimator, Outcomes, Sample, rank_change_chance
from medprobe.tasks import Scored
from medprobe.tasks.base import BenchmarkTask, Writers
from medprobe.tasks.context_variance_ranks import (
    CONTEXT_VARIANCE_FIELDS,
    RowRanks,
    UCMSteps,
    first_instances_per_relation,
    format_ucm_table,
    rank_rows,
    row_rank_records,
    scoring_settings,
    ucm_steps,
)

if TYPE_CHECKING:
    import datasets

    from medprobe.contracts import CandidateScorer
    from medprobe.records.record import RunRecord


@dataclass
class RankedRows:
    """What `predict` returns: the ranks of every row, and the settings of the probe that ranked them."""

    row_ranks: list[RowRanks]
    settings: dict


SHARES = ("understand", "confuse", "misunderstand")


class ContextVarianceTask(BenchmarkTask):
    """Context variance (Yao et al., 2023): UCM and rank changes of any candidate scorer, per relation."""

    FIELDS = CONTEXT_VARIANCE_FIELDS
    METRIC = "ucm"
    GROUP_BY = "relation"
    plot_metric = "understand"
    outcome_unit = "instance"
    # a step whose added correct object leaves the rank as it was (confuse) or makes it worse (misunderstand)
    lower_is_better = frozenset({"confuse", "misunderstand", "macro_confuse", "macro_misunderstand"})
    outcome_fields = {
        **{share: f"steps of the instance whose added object is correct and that count as {share}" for share in SHARES},
        "steps": "steps of the instance whose added object is correct (the UCM steps)",
        "rank_without_context": "best rank of a gold object for the prompt alone (null: not ranked)",
        "rank_with_context": "best rank of a gold object after the whole context (null: not ranked)",
    }

    def __init__(self, k: list[int] = [1, 10], per_relation: int | None = None, predictions: str | None = None):  # noqa: B006 (copied, never changed)
        super().__init__()
        self.k = list(k)
        self.per_relation = per_relation
        self.predictions = predictions

    def load(self, dataset: str, config: str | None, split: str) -> datasets.Dataset:
        ds = self.read(dataset, config, split)
        if self.per_relation:
            rows_in, instances_in = ds.num_rows, len(set(column(ds, "instance_id")))
            ds = first_instances_per_relation(ds, self.per_relation)
            self.note_subset(
                len(set(column(ds, "instance_id"))),
                instances_in,
                "instances",
                f"probing the first {self.per_relation} instances of each relation: {ds.num_rows:,} of {rows_in:,} rows",
            )
        return ds

    def predict(self, prober: CandidateScorer, data: datasets.Dataset, seed: int | None) -> RankedRows:
        """Ranks of every row's tracked objects under `prober` (deterministic: `seed` is not used).
        The scorer's own batch size is the number of queries per score_candidates call."""
        batch_size = getattr(prober, "batch_size", 64)
        row_ranks = rank_rows(data, prober, batch_size, progress=distributed.is_main_process())
        return RankedRows(row_ranks, {"batch_size": batch_size, **scoring_settings(prober)})

    def score(self, data: datasets.Dataset, outputs: RankedRows) -> Scored:
        steps = ucm_steps(data, outputs.row_ranks)
        inputs = steps.inputs
        scores = self.metric().compute(**inputs, k=self.k)
        per_group = scores["per_group"]
        return Scored(
            metrics={key: value for key, value in scores.items() if key != "per_group"},
            per_group=per_group,
            counts={
                "rows": data.num_rows,
                "instances": len(set(column(data, "instance_id"))),
                "steps": len(inputs["target_rank_before"]),
                "candidates": len({name for names in column(data, "candidates") for name in names}),
            },
            settings={"k": self.k, "per_relation": self.per_relation, **outputs.settings},
            # a relation without a scored step has no shares to draw
            plot_per_group={group: values for group, values in per_group.items() if values["steps"]},
            outcomes=instance_outcomes(data, steps),
            chance=share_chance(steps),
        )

    @staticmethod
    def estimators(settings: dict) -> dict[str, Estimator]:
        """The UCM shares over all steps (UCM_m) and their mean over relations, resampling instances
        (an instance's steps share one document, so they are resampled together); acc@k without and
        with context over the instances that have both gold ranks."""
        estimators: dict[str, Estimator] = {}
        for share in SHARES:
            estimators[share] = Estimator(functools.partial(micro_share, share=share), "instance")
            estimators[f"macro_{share}"] = Estimator(functools.partial(macro_share, share=share), "instance", stratified=True)
        for k in settings["k"]:
            for when in ("without_context", "with_context"):
                estimators[f"acc@{k}_{when}"] = Estimator(functools.partial(context_accuracy, k=k, when=when), "instance")
        return estimators

    def table(self, record: RunRecord) -> str:
        return format_ucm_table({**record.metrics, "per_group": record.per_group})

    def writers(self, data: datasets.Dataset, outputs: RankedRows) -> Writers:
        return self.jsonl_writer(self.predictions, lambda: row_rank_records(data, outputs.row_ranks))


def instance_outcomes(data: datasets.Dataset, steps: UCMSteps) -> Outcomes:
    """Per instance: its Understand / Confuse / Misunderstand step counts, its UCM steps, and its best
    gold rank without and with context."""
    relation_of = dict(zip(column(data, "instance_id"), column(data, "relation")))
    instances = list(relation_of)
    row_of = {instance: row for row, instance in enumerate(instances)}
    columns = {name: np.zeros(len(instances)) for name in (*SHARES, "steps")}
    inputs = steps.inputs
    for instance, before, after, correct in zip(
        steps.step_instances, inputs["target_rank_before"], inputs["target_rank_after"], inputs["added_is_correct"]
    ):
        if correct:
            change = after - before
            share = "understand" if change < 0 else "confuse" if change == 0 else "misunderstand"
            columns[share][row_of[instance]] += 1
            columns["steps"][row_of[instance]] += 1
    for when in ("without_context", "with_context"):
        ranks = np.full(len(instances), np.nan)
        for instance, rank in zip(steps.rank_instances, inputs.get(f"ranks_{when}", [])):
            ranks[row_of[instance]] = rank
        columns[f"rank_{when}"] = ranks
    return Outcomes.build(instances, [relation_of[i] for i in instances], columns, instance_digests(data, instances))


INSTANCE_CONTENT = ("step", "text", "target", "added_object", "added_is_correct", "candidates")


def instance_digests(data: datasets.Dataset, instances: list[str]) -> list[str]:
    """Per instance, the digest of its relation and its rows' contents in step order (what it asks, step by step)."""
    from medprobe.stats import item_digest

    rows: dict[str, list[tuple[int, str]]] = {}
    for instance, step, digest in zip(column(data, "instance_id"), column(data, "step"), row_digests(data, INSTANCE_CONTENT)):
        rows.setdefault(instance, []).append((step, digest))
    relation_of = dict(zip(column(data, "instance_id"), column(data, "relation")))
    return [item_digest(relation_of[instance], [digest for _, digest in sorted(rows[instance])]) for instance in instances]


def micro_share(sample: Sample, share: str) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return sample[share].sum(axis=1) / sample["steps"].sum(axis=1)


def macro_share(sample: Sample, share: str) -> np.ndarray:
    """The mean of the per-relation shares over the relations with UCM steps (as the ucm metric's macro_*)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        per_group = sample.group_sum(sample[share]) / sample.group_sum(sample["steps"])
    counted = np.isfinite(per_group)
    return np.where(counted, per_group, 0).sum(axis=1) / np.where(counted.any(axis=1), counted.sum(axis=1), np.nan)


def context_accuracy(sample: Sample, k: int, when: str) -> np.ndarray:
    ranks = sample[f"rank_{when}"]
    ranked = ~np.isnan(ranks)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (ranks <= k).sum(axis=1) / ranked.sum(axis=1)


def share_chance(steps: UCMSteps) -> dict[str, dict]:
    """The UCM shares of a uniformly random ranking before and after every step, with each step's
    own number of candidates (exact: medprobe.stats.rank_change_chance), over the UCM steps."""
    correct = np.asarray(steps.inputs["added_is_correct"], dtype=bool)
    if not correct.any():
        return {}
    candidates = np.asarray(steps.step_candidates, dtype=np.float64)[correct]
    groups = np.asarray(steps.inputs["groups"])[correct]
    method = "expected share under two independent uniformly random rankings of each step's candidates (exact)"
    chance = {}
    for share, per_step in rank_change_chance(candidates).items():
        chance[share] = {"value": float(per_step.mean()), "method": method}
        macro = [per_step[groups == group].mean() for group in dict.fromkeys(groups.tolist())]
        chance[f"macro_{share}"] = {"value": float(np.mean(macro)), "method": method}
    return chance
