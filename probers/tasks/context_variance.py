"""The context-variance task: UCM of a candidate scorer on a context-variance dataset.

    medprobe probe --prober rank-change --dataset out/context_variance --config real-target --model smollm2
    medprobe probe --prober mask-average --task context_variance --dataset out/context_variance --model <masked LM>

Loads a context-variance folder (or Hub id) with `load_dataset`, scores every context step with
the prober's `score_candidates` (any candidate scorer: mask-average, causal-lm, contrastive; the
rank-change prober picks mask-average or causal-lm from the model), pairs each step with the
previous one, and reports Understand / Confuse / Misunderstand shares per relation (UCM_k) and
overall (UCM_m) from the `ucm` evaluate module, the mean rank changes, and top-k accuracy without
and with context.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from probers.lm.rank_change import (
    CONTEXT_VARIANCE_FIELDS,
    RankChangeProbe,
    RowRanks,
    dump_row_ranks,
    first_instances_per_relation,
    format_ucm_table,
    ucm_inputs,
)
from probers.tasks import Scored
from probers.tasks.loading import check_fields, load_probe_dataset

if TYPE_CHECKING:
    import datasets

    from probers.api import CandidateScorer
    from probers.results import RunRecord


@dataclass
class RankedRows:
    """What `predict` returns: the ranks of every row, and the settings of the probe that ranked them."""

    row_ranks: list[RowRanks]
    settings: dict


class ContextVarianceTask:
    plot_metric = "understand"

    def __init__(self, k: list[int] = [1, 10], per_relation: int | None = None, predictions: str | None = None):  # noqa: B006 (copied, never changed)
        self.k = list(k)
        self.per_relation = per_relation
        self.predictions = predictions
        self.timings: dict[str, float] = {}

    def load(self, dataset: str, config: str | None, split: str) -> datasets.Dataset:
        ds = load_probe_dataset(dataset, config, split)
        check_fields(ds, CONTEXT_VARIANCE_FIELDS, f"dataset {dataset!r} (config {config!r})")
        if self.per_relation:
            rows_in = ds.num_rows
            ds = first_instances_per_relation(ds, self.per_relation)
            print(f"probing the first {self.per_relation} instances of each relation: {ds.num_rows:,} of {rows_in:,} rows")
        return ds

    def predict(self, prober: CandidateScorer, data: datasets.Dataset, seed: int | None) -> RankedRows:
        """Ranks of every row's tracked objects under `prober` (deterministic: `seed` is not used).
        The scorer's own batch size is the number of queries per score_candidates call."""
        probe = RankChangeProbe(prober, batch_size=getattr(prober, "batch_size", 64))
        row_ranks = probe.rank_rows(data)
        return RankedRows(row_ranks, {"batch_size": probe.batch_size, **probe.settings})

    def score(self, data: datasets.Dataset, outputs: RankedRows) -> Scored:
        import evaluate

        from probers.hub.resources import metric_path

        inputs = ucm_inputs(data, outputs.row_ranks)
        scores = evaluate.load(metric_path("ucm")).compute(**inputs, k=self.k)
        per_group = scores["per_group"]
        return Scored(
            metrics={key: value for key, value in scores.items() if key != "per_group"},
            per_group=per_group,
            counts={
                "rows": data.num_rows,
                "instances": len(set(data["instance_id"])),
                "steps": len(inputs["target_rank_before"]),
                "candidates": len({name for names in data["candidates"] for name in names}),
            },
            settings={"k": self.k, "per_relation": self.per_relation, **outputs.settings},
            # a relation without a scored step has no shares to draw
            plot_per_group={group: values for group, values in per_group.items() if values["steps"]},
        )

    def table(self, record: RunRecord) -> str:
        return format_ucm_table({**record.metrics, "per_group": record.per_group})

    def writers(self, data: datasets.Dataset, outputs: RankedRows) -> list[tuple[str | Path | None, Callable[[Path], None]]]:
        return [(self.predictions, lambda temp: dump_row_ranks(temp, data, outputs.row_ranks))]
