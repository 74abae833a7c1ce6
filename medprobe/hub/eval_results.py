"""A run's numbers (medprobe.records.record.RunRecord) as eval results in a Hub model card.

The results go into the card's `model-index` YAML through huggingface_hub's
`ModelCardData(eval_results=[EvalResult(...)])`: one entry per overall metric of the run,
naming the dataset id, config, split, metric and value, with the prober as the task name so
that runs of different probers on the same data stay apart. An existing card is merged, not
overwritten: its text and other metadata are kept, an entry that describes the same result
(everything equal but the value) is updated, and new ones are appended.

(`.eval_results/*.yaml` entries are not written: that format names a task of a benchmark that
the Hub has allow-listed through an `eval.yaml` in the dataset repo, with one headline value per
task, which a medprobe dataset does not declare.)
"""

from __future__ import annotations

import yaml
from huggingface_hub import EvalResult, ModelCard, ModelCardData
from huggingface_hub.repocard_data import eval_results_to_model_index

from medprobe.building.cards import template_metadata
from medprobe.hub.checks import PublishError
from medprobe.records.record import RunRecord


def overall_metrics(record: RunRecord, wanted: list[str] | None) -> dict[str, float]:
    """The run's overall numeric metrics (per-group numbers stay in the results file)."""
    numeric = {
        name: float(value)
        for name, value in record.metrics.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    }
    if not numeric:
        raise PublishError(f"the results file has no numeric overall metrics (found: {', '.join(record.metrics) or 'none'})")
    if not wanted:
        return numeric
    unknown = [name for name in wanted if name not in numeric]
    if unknown:
        raise PublishError(f"--metric {', '.join(unknown)}: not in the results file; available: {', '.join(numeric)}")
    return {name: numeric[name] for name in wanted}


def benchmark_metadata(benchmark: str) -> dict:
    """The benchmark's card header (pretty name, task categories), or {} for an unknown benchmark."""
    try:
        return template_metadata(benchmark)
    except FileNotFoundError:
        return {}


def dataset_label(record: RunRecord, subset: str | None = None) -> str:
    """`MedLAMA (hard)`, or `MedLAMA (hard; subset: first 10 queries per relation, 190 of 15,329 queries)`."""
    pretty = benchmark_metadata(record.benchmark).get("pretty_name") or record.benchmark
    inside = [part for part in (record.config, f"subset: {subset}" if subset else None) if part]
    return f"{pretty} ({'; '.join(inside)})" if inside else pretty


def eval_results_for(
    record: RunRecord,
    dataset_id: str,
    *,
    metrics: list[str] | None = None,
    task_type: str | None = None,
    source_url: str | None = None,
    subset: str | None = None,
    config: str | None = None,
) -> list[EvalResult]:
    """One EvalResult per overall metric; `subset` (medprobe.hub.subsets.subset_phrase) goes into the dataset name,
    `config` (medprobe.hub.subsets.subset_config: the record's config, or it with the subset) is the dataset config."""
    meta = benchmark_metadata(record.benchmark)
    task_type = task_type or next(iter(meta.get("task_categories") or []), None)
    if not task_type:
        raise PublishError(
            f"no task type for benchmark {record.benchmark!r} (its card template names no task_categories): "
            "pass --task-type, e.g. fill-mask or text-classification"
        )
    pretty = meta.get("pretty_name") or record.benchmark
    dataset_name = dataset_label(record, subset)
    return [
        EvalResult(
            task_type=task_type,
            task_name=f"{pretty} probing: {record.prober}",
            dataset_type=dataset_id,
            dataset_name=dataset_name,
            dataset_config=config if subset else record.config,
            dataset_split=record.split,
            metric_type=name,
            metric_name=name,
            metric_value=value,
            source_name="medprobe" if source_url else None,
            source_url=source_url,
        )
        for name, value in overall_metrics(record, metrics).items()
    ]


def model_index_yaml(results: list[EvalResult], model_name: str) -> str:
    """The `model-index` YAML these results make on their own (what --dry-run shows)."""
    return yaml.safe_dump({"model-index": eval_results_to_model_index(model_name, results)}, sort_keys=False)


def merge_into_card(existing: str | None, results: list[EvalResult], model_name: str, dataset_id: str | list[str]) -> ModelCard:
    """The model card with `results` merged into its model-index and `dataset_id` (one or several) in
    its datasets; `existing=None` starts a new card."""
    if existing is None:
        card = ModelCard(f"---\n{ModelCardData().to_yaml()}\n---\n\n# {model_name}\n")
    else:
        try:
            card = ModelCard(existing)
        except ValueError as err:
            raise PublishError(f"the model card README.md of the repo does not parse ({err}); fix it first") from err
    data = card.data
    data.model_name = data.model_name or model_name
    merged = list(data.eval_results or [])
    for result in results:
        same = next((i for i, old in enumerate(merged) if old.is_equal_except_value(result)), None)
        if same is None:
            merged.append(result)
        else:
            merged[same] = result
    data.eval_results = merged or None
    listed = [data.datasets] if isinstance(data.datasets, str) else list(data.datasets or [])
    added = [name for name in ([dataset_id] if isinstance(dataset_id, str) else dataset_id) if name not in listed]
    if added:
        data.datasets = [*listed, *added]
    return ModelCard(f"---\n{data.to_yaml()}\n---\n{card.text}")
