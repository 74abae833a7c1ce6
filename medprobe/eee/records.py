"""A medprobe run as the two records of the Every Eval Ever schema (every-eval-ever 0.3, schema 0.3.0), built
with that package's own pydantic models, so that a field it does not define, or a value of the wrong type, fails
here and not in a reader's hands.

    RUN (its results JSON, read and re-checked by medprobe.records) ->
        EvaluationLog                 one per run: model, source, library, one result per overall metric
        InstanceLevelEvaluationLog    one per item and metric whose item scores add up to it (medprobe.eee.items)

Where each medprobe fact goes (what the schema has a place for; docs/eee.md lists what it has none for):
- the metric's value -> score_details.score; its 95% interval -> score_details.uncertainty.confidence_interval
  (lower, upper, confidence_level, method); n -> uncertainty.num_samples; the bootstrap's resamples ->
  num_bootstrap_samples; its seed, unit and strata, the spread over training seeds -> score_details.details;
- the metric's range and direction -> metric_config (min_score, max_score, score_type continuous,
  lower_is_better, from the task: medprobe.tasks.base.BenchmarkTask), each metric its own range (`score_bounds`):
  a count facet (answerable_from_template@k) 0..n, a paired difference (above_bias@k, above_shuffled@k,
  mink_high_minus_low@k) -1..1, every other metric the task's score_range; its chance level ->
  metric_config.additional_details;
- the dataset -> source_data (a Hub dataset with its split and n, else "other"), its config, revision and the data
  fingerprint -> source_data.additional_details; the command that repeats the run ->
  generation_config.generation_args.execution_command, the settings -> generation_config.additional_details;
- the model -> model_info (its Hub id; revision and weights sha256 in additional_details);
- each item -> sample_id (its medprobe id), metadata: its group, content digest and outcome columns; no item text
  unless asked for and allowed (medprobe.eee.export), and then only the run's own predictions (output.raw).
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from medprobe.digests import sha256_text
from medprobe.eee.items import ItemScores
from medprobe.records.outcomes import plain
from medprobe.records.record import RunRecord
from medprobe.stats import Outcomes

SOURCE_NAME = "medprobe"
K = re.compile(r"acc@(\d+)")
# validity facets that are the paired difference of two 0/1 hits per item (issue 39): each runs from -1 to 1
DIFFERENCE = re.compile(r"(above_bias|above_shuffled|mink_high_minus_low)@\d+")


def score_bounds(name: str, record: RunRecord, task: Any) -> tuple[float, float]:
    """(min_score, max_score) of one metric: a count (its interval's scale) 0..n, a paired difference -1..1, any
    other the task's score_range (a share: 0..1)."""
    found = (record.intervals or {}).get(name) or {}
    if found.get("scale") == "count":
        return 0.0, float(found.get("n") or (record.subset or {}).get("items") or 0)
    if DIFFERENCE.fullmatch(name):
        return -1.0, 1.0
    return getattr(task, "score_range", (0.0, 1.0))


def item_best(name: str, record: RunRecord, task: Any) -> float:
    """The best score one item can have for a metric (is_correct): a count's and a difference's items score 0/1 and
    -1/0/1, so 1; else the top of the task's range, or its bottom where lower is better."""
    low, high = getattr(task, "score_range", (0.0, 1.0))
    if name in getattr(task, "lower_is_better", frozenset()):
        return low
    counted = ((record.intervals or {}).get(name) or {}).get("scale") == "count"
    return 1.0 if counted or DIFFERENCE.fullmatch(name) else high


@dataclass
class Options:
    """What the command line says of every exported run."""

    organization: str = "unknown"  # source_metadata.source_organization_name (the package's own converters' default)
    relationship: str = "third_party"  # evaluator_relationship: first_party, third_party, collaborative, other
    organization_url: str | None = None


@dataclass
class RunModel:
    """The model a run probed, as the schema names it: model_info.id (Hub form) and what else is known of it."""

    id: str
    name: str
    details: dict[str, str] = field(default_factory=dict)


@dataclass
class Exported:
    """A run's two records, ready to be written: the aggregate and its instance lines, where they go, what was left out."""

    uuid: str
    collection: str
    developer: str
    model_dir: str
    aggregate: Any  # every_eval_ever.eval_types.EvaluationLog
    instances: list  # every_eval_ever.instance_level_types.InstanceLevelEvaluationLog
    notes: list[str] = field(default_factory=list)

    @property
    def folder(self) -> str:
        return f"data/{self.collection}/{self.developer}/{self.model_dir}"

    @property
    def aggregate_path(self) -> str:
        return f"{self.folder}/{self.uuid}.json"

    @property
    def samples_path(self) -> str:
        return f"{self.folder}/{self.uuid}_samples.jsonl"


def file_uuid(results_sha256: str, model_id: str) -> str:
    """A UUIDv4-shaped id derived from the run's results JSON and the model id: the same run exports under the same
    name and evaluation_id every time (the datastore asks for a UUIDv4 file name; the bits that say so are set)."""
    return str(uuid.UUID(bytes=bytes.fromhex(sha256_text(f"{results_sha256}\n{model_id}")[:32]), version=4))


def strings(values: dict[str, Any]) -> dict[str, str]:
    """The schema's `additional_details` hold strings only: numbers and lists as JSON, None left out."""
    return {
        key: value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        for key, value in values.items()
        if value is not None
    }


def evaluation_name(record: RunRecord) -> str:
    """`<benchmark>/<config>/<prober>`: a run's results are this prober on this config (probers stay apart)."""
    return "/".join(part for part in (record.benchmark, record.config, record.prober) if part)


def metric_config(name: str, record: RunRecord, task: Any, label: str) -> Any:
    """The metric's config through the package's own helper (metric_id `medprobe.<name>`, kind, unit, bounds), with
    the task's range and direction and the run's chance level."""
    from every_eval_ever.converters.common.metrics import metric_config_fields
    from every_eval_ever.eval_types import MetricConfig

    lookup = "acc" if K.fullmatch(name.removeprefix("macro_")) else "f1" if name.endswith("f1") else name
    low, high = score_bounds(name, record, task)
    k = K.fullmatch(name.removeprefix("macro_"))
    fields = metric_config_fields(
        name,
        harness=SOURCE_NAME,
        bounds_table={lookup: (low, high)},
        lookup_name=lookup,
        metric_parameters={"k": int(k.group(1))} if k else None,
    )
    chance = (record.chance or {}).get(name) or {}
    details = {
        **(fields.pop("additional_details") or {}),
        **strings({"chance": chance.get("value"), "chance_method": chance.get("method")}),
        "estimator": f"macro: the mean over {task.GROUP_BY or 'groups'}" if name.startswith("macro_") else "micro",
    }
    fields["lower_is_better"] = name in getattr(task, "lower_is_better", frozenset())
    return MetricConfig(evaluation_description=f"{name} of {label}", metric_name=name, additional_details=details, **fields)


def score_details(name: str, value: float, record: RunRecord) -> Any:
    """The value with its 95% interval, n and bootstrap, as the schema's uncertainty block holds them."""
    from every_eval_ever.eval_types import ConfidenceInterval, ScoreDetails, Uncertainty

    interval = (record.intervals or {}).get(name) or {}
    bounded = interval.get("low") is not None and interval.get("high") is not None
    uncertainty = Uncertainty(
        confidence_interval=ConfidenceInterval(
            lower=interval["low"], upper=interval["high"], confidence_level=interval.get("level"), method=interval.get("method")
        )
        if bounded
        else None,
        num_samples=interval.get("n"),
        num_bootstrap_samples=interval.get("resamples"),
    )
    details = strings(
        {
            "interval_seed": interval.get("seed"),
            "unit": interval.get("unit"),
            "groups": interval.get("groups"),
            "seed_std": record.metrics.get(f"{name}_std"),
            "interval": None if bounded or not interval else "no finite bootstrap value: no interval",
        }
    )
    return ScoreDetails(score=value, uncertainty=uncertainty if interval else None, details=details or None)


def source_data(record: RunRecord, label: str, hub_id: str | None, outcomes: Outcomes) -> Any:
    """The dataset: a Hub dataset (repo, split, n, the ids of a subset) or "other" (a local folder)."""
    from every_eval_ever.eval_types import SourceDataHf, SourceDataPrivate

    fingerprint = record.data_fingerprint or {}
    details = strings(
        {
            "dataset": record.dataset,
            "config": record.config,
            "split": record.split,
            "revision": fingerprint.get("revision"),
            "data_sha256": fingerprint.get("sha256"),
            "subset": json.dumps(record.subset.get("options")) if (record.subset or {}).get("subset") else None,
        }
    )
    if hub_id:
        subset = bool((record.subset or {}).get("subset"))
        return SourceDataHf(
            dataset_name=label,
            source_type="hf_dataset",
            hf_repo=hub_id,
            hf_split=record.split,
            samples_number=len(outcomes),
            sample_ids=list(outcomes.ids) if subset else None,
            additional_details=details,
        )
    return SourceDataPrivate(dataset_name=label, source_type="other", additional_details=details)


def generation_config(record: RunRecord) -> Any:
    from every_eval_ever.eval_types import GenerationArgs, GenerationConfig

    settings = strings({"prober": record.prober, "task": record.task, "seed": record.seed, **(record.settings or {})})
    return GenerationConfig(generation_args=GenerationArgs(execution_command=record.command or None), additional_details=settings)


def evaluation_results(
    record: RunRecord, task: Any, metrics: dict[str, float], label: str, hub_id: str | None, outcomes: Outcomes
) -> list:
    from every_eval_ever.eval_types import EvaluationResult

    source = source_data(record, label, hub_id, outcomes)
    generation = generation_config(record)
    return [
        EvaluationResult(
            evaluation_result_id=name,
            evaluation_name=evaluation_name(record),
            source_data=source,
            evaluation_timestamp=record.created or None,
            metric_config=metric_config(name, record, task, label),
            score_details=score_details(name, value, record),
            generation_config=generation,
        )
        for name, value in metrics.items()
    ]


def model_info(model: RunModel, record: RunRecord) -> Any:
    from every_eval_ever.eval_types import InferenceEngine, ModelInfo

    details = {
        "deployment_type": "self_deployed",  # medprobe loads the weights in its own process
        "model_availability": "unknown",
        **model.details,
    }
    engine = InferenceEngine(name="transformers", version=(record.versions or {}).get("transformers"))
    return ModelInfo(name=model.name, id=model.id, inference_engine=engine, additional_details=details)


def aggregate_log(
    run_id: str, model: RunModel, record: RunRecord, results: list, options: Options, retrieved: str, detailed: Any
) -> Any:
    """The EvaluationLog of a run (every_eval_ever.eval_types): its pydantic model validates as it is built."""
    from every_eval_ever.eval_types import EvalLibrary, EvaluationLog, SourceMetadata
    from every_eval_ever.schema import get_schema_version

    source = record.source or {}
    return EvaluationLog(
        schema_version=get_schema_version(),
        evaluation_id=run_id,
        evaluation_timestamp=record.created or None,
        retrieved_timestamp=retrieved,
        source_metadata=SourceMetadata(
            source_name=SOURCE_NAME,
            source_type="evaluation_run",  # per-item outcomes, not a reported number
            source_organization_name=options.organization,
            source_organization_url=options.organization_url,
            evaluator_relationship=options.relationship,
        ),
        eval_library=EvalLibrary(
            name=SOURCE_NAME,
            version=str(source.get("version") or "unknown"),
            additional_details=strings({"commit": source.get("commit"), "citations": record.citations or None}) or None,
        ),
        model_info=model_info(model, record),
        evaluation_results=results,
        detailed_evaluation_results=detailed,
    )


def instance_logs(
    run_id: str,
    model_id: str,
    record: RunRecord,
    outcomes: Outcomes,
    scores: list[ItemScores],
    task: Any,
    predictions: dict[str, list[str]] | None,
) -> list:
    """One InstanceLevelEvaluationLog per item and metric with item scores; an item whose score is undefined
    alone (NaN) has none for that metric. `is_correct`: the item has the metric's best score (the top of the task's
    score_range, or its bottom where lower is better: `item_best`). No item text, but the run's own predictions (its top names) when given."""
    from every_eval_ever.instance_level_types import (
        AnswerAttributionItem,
        Evaluation,
        Input,
        InstanceLevelEvaluationLog,
        InteractionType,
        Output,
    )

    name = evaluation_name(record)
    schema = aggregate_schema_version()
    metadata = item_metadata(outcomes, predictions is not None)
    logs = []
    for scored in scores:
        best = item_best(scored.metric, record, task)
        for row, value in enumerate(scored.values.tolist()):
            if value != value:  # NaN: undefined for this item alone
                continue
            item = outcomes.ids[row]
            names = (predictions or {}).get(item) or []
            attribution = [
                AnswerAttributionItem(
                    turn_idx=0, source="output.raw", extracted_value=name, extraction_method="rank 1", is_terminal=True
                )
                for name in names[:1]
            ]
            logs.append(
                InstanceLevelEvaluationLog(
                    schema_version=schema,
                    evaluation_id=run_id,
                    model_id=model_id,
                    evaluation_name=name,
                    evaluation_result_id=scored.metric,
                    sample_id=item,
                    interaction_type=InteractionType.single_turn,
                    input=Input(raw="", reference=[]),
                    output=Output(raw=list(names)),
                    answer_attribution=attribution,
                    evaluation=Evaluation(score=value, is_correct=value == best),
                    metadata=metadata[row],
                )
            )
    return logs


def aggregate_schema_version() -> str:
    from every_eval_ever.schema import get_schema_version

    return get_schema_version()


TEXT_WITHHELD = "not carried: pair by sample_id and item_digest, the text is the dataset's"


def item_metadata(outcomes: Outcomes, with_predictions: bool) -> list[dict[str, str]]:
    """Per item: its group, content digest and every outcome column (JSON, as the outcomes file writes them)."""
    rows = []
    for row, group in enumerate(outcomes.groups):
        entry = {"group": group, "text": "the run's predictions in output.raw" if with_predictions else TEXT_WITHHELD}
        if outcomes.contents:
            entry["item_digest"] = outcomes.contents[row]
        for column, values in outcomes.columns.items():
            value = values[row]
            entry[f"outcome.{column}"] = json.dumps([plain(v) for v in value] if values.ndim > 1 else plain(value))
        rows.append(entry)
    return rows
