"""`medprobe export eee RUN... --out DIR`: runs as the aggregate and instance-level records of Every Eval Ever.

    DIR/data/<benchmark>/<developer>/<model>/<uuid>.json            the aggregate record of a run (EvaluationLog)
    DIR/data/<benchmark>/<developer>/<model>/<uuid>_samples.jsonl   its instance-level records
    DIR/eee-files.json                                              what this command wrote (sha256 of each file)

DIR/data is laid out as the Every Eval Ever datastore lays out its `data/` folder, so that the package's own
validator checks the files with every repository rule (path, companion file, score bounds, model identity), and a
pull request to the datastore copies them as they are. Each RUN is a results JSON, a profile folder (each of its
runs), or a published run (`hub:ORG/NAME/...`), read as `medprobe compare` reads them (medprobe.comparison.inputs:
through medprobe.records, every number recomputed from the outcomes).

Nothing invalid leaves: the records are the package's pydantic models, built (and so validated) before anything is
written; the files are written into a staging folder beside DIR and checked there with the package's validator
(`validate_file`, with its repository checks); only a folder that passes replaces DIR, in one swap
(medprobe.atomic_folder.staged_folder). DIR is the command's own: a file it did not write, or one changed since
(eee-files.json records their sha256), is refused unless --overwrite.

Item text leaves only when asked for and allowed, by the rule `publish results --results-repo --predictions`
keeps: the records carry no question or answer text; with --predictions, a MedLAMA run's own top-k names go into
output.raw, and those are UMLS names, so only with --gated (the folder goes only into a gated repo) or
--private (credentialed text: only a private one).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medprobe.contracts import UserError
from medprobe.eee.records import Exported, Options, RunModel

FILES_RECORD = "eee-files.json"
WRITTEN_BY = "medprobe export eee"
INSTALL = (
    "every-eval-ever is not installed: pip install 'medprobe[eee]' (Python 3.12+), or on Python 3.10-3.11: "
    "pip install --no-deps --ignore-requires-python every-eval-ever==0.3.0 (see docs/eee.md)"
)


def require_package() -> str:
    """The installed every-eval-ever's version, or one line saying how to install it."""
    try:
        import every_eval_ever.eval_types  # noqa: F401
        import every_eval_ever.validator.validation_core  # noqa: F401
    except ImportError:
        raise UserError(INSTALL) from None
    from medprobe.building.cards import package_version

    return package_version("every-eval-ever")


@dataclass
class Report:
    """What an export wrote, for the printed summary."""

    out: Path
    exported: list[Exported] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    version: str = ""


# --- the runs ----------------------------------------------------------------------------------------


def read_runs(paths: list[str]) -> tuple[list[Any], list[str]]:
    """Every run of the inputs (medprobe.comparison.inputs.Run), each given once, and notes on what was left out."""
    from medprobe.comparison.inputs import read_input
    from medprobe.digests import sha256_file

    runs, notes, seen = [], [], {}
    for path in paths:
        found = read_input(path)
        notes += [note.replace(", not compared", ", not exported") for note in found.left_out]  # compare's words
        for run in found.runs.values():
            digest = sha256_file(run.path)
            if digest in seen:
                raise UserError(f"{path}: the run {run.path} is given twice (also in {seen[digest]}); give each run once")
            seen[digest] = path
            runs.append(run)
    if not runs:
        raise UserError(f"no run to export in {', '.join(paths)}")
    return runs, notes


def run_model(record: Any, model_id: str | None, what: str) -> RunModel:
    """The model as the schema names it (a Hub id): the run's Hub model, a packaged model's source repo, or --model-id."""
    from medprobe.hub.model_match import same_repo
    from medprobe.hub.publish import REPO_ID
    from medprobe.models import PACKAGED

    identity = record.model_identity or {}
    packaged = PACKAGED.get(record.model or "")
    known = identity.get("hub_id") or (packaged.hub_id if packaged else None)
    if model_id and known and not same_repo(model_id, known):
        raise UserError(
            f"{what} probed the Hub model {known}, not --model-id {model_id}: leave out --model-id, or export it alone"
        )
    chosen = model_id or known
    if not chosen:
        raise UserError(
            f"{what}: its model {record.model!r} was read from a folder that names no Hub id; pass --model-id ORG/NAME "
            "(the schema names models by their Hub id)"
        )
    if not REPO_ID.match(chosen):
        raise UserError(f"--model-id {chosen!r}: expected ORG/NAME, the model's Hub id")
    revision = identity.get("revision") or (packaged.revision if packaged and not identity.get("hub_id") else None)
    details = {"revision": revision, "weights_sha256": identity.get("weights_sha256"), "medprobe_model": record.model}
    return RunModel(chosen, record.model or chosen, {key: str(value) for key, value in details.items() if value})


def hub_dataset(record: Any) -> str | None:
    """The Hub id the run read its data from, or None for a local folder."""
    from medprobe.hub.publish import REPO_ID

    dataset = record.dataset or ""
    return dataset if REPO_ID.match(dataset) and not Path(dataset).exists() else None


# --- the predictions (the only text that may leave) --------------------------------------------------


def check_text_allowed(runs: list[Any], gated: bool, private: bool) -> None:
    """--predictions go where their licence lets them, as `publish results --results-repo --predictions` rules."""
    from medprobe.hub.results_repo import predictions_licence

    for run in runs:
        licence = predictions_licence(run.record.benchmark)
        if licence == "credentialed" and not private:
            raise UserError(
                f"{run.path}: the predictions of {run.record.benchmark} hold credentialed text (MedNLI, MIMIC): with "
                "--predictions, pass --private (the folder goes only into a private repo), or leave out --predictions"
            )
        if licence != "open" and not (gated or private):
            raise UserError(
                f"{run.path}: the predictions of {run.record.benchmark} hold licensed text ({licence}: e.g. UMLS names): "
                "with --predictions, pass --gated (the folder goes only into a gated repo), or leave out --predictions"
            )


def read_predictions(run: Any) -> dict[str, list[str]]:
    """The run's own predictions file (named and hashed in its record): item id -> its top names, best first."""
    from medprobe.hub.results_repo import prediction_files

    files = prediction_files(run)
    if not files:
        raise UserError(f"{run.path} wrote no predictions file beside it (probe --predictions FILE): leave out --predictions")
    found: dict[str, list[str]] = {}
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            row = json.loads(line) if line.strip() else None
            names = row.get("predictions") if isinstance(row, dict) else None
            if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
                raise UserError(
                    f"{path}, line {number}: not a list of predicted names ({run.record.benchmark}'s predictions are not "
                    "text): leave out --predictions"
                )
            found[str(row.get("id"))] = names
    return found


# --- a run as records --------------------------------------------------------------------------------


def exported_metrics(record: Any, estimators: dict, what: str) -> tuple[dict[str, float], list[str]]:
    """The overall metrics recomputed from the outcomes (those with an estimator), finite; notes on the others."""
    metrics, notes = {}, []
    for name, value in record.metrics.items():
        if name.endswith("_std") and name[:-4] in estimators:
            continue  # the spread over training seeds: in the details of its metric
        if name not in estimators:
            notes.append(f"{what}: {name} left out (not a metric the loader recomputes from the outcomes)")
        elif not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            notes.append(f"{what}: {name} left out (its value is {value!r}: the schema takes finite numbers only)")
        else:
            metrics[name] = float(value)
    if not metrics:
        raise UserError(f"{what}: no overall metric with a finite value to export (found: {', '.join(record.metrics) or 'none'})")
    return metrics, notes


def export_run(run: Any, model_id: str | None, options: Options, retrieved: str, predictions: bool) -> tuple[Exported, str]:
    """A run's aggregate record and instance records (the package's models), and the instance file's text."""
    from every_eval_ever.helpers.io import datastore_path_components

    from medprobe.eee.items import item_scores
    from medprobe.eee.records import aggregate_log, evaluation_name, evaluation_results, file_uuid, instance_logs
    from medprobe.hub.data_check import sample_read, sample_words
    from medprobe.hub.eval_results import dataset_label
    from medprobe.hub.subsets import subset_phrase
    from medprobe.records.verify import estimators_of, task_of

    record, what = run.record, str(run.path)
    model = run_model(record, model_id, what)
    try:
        collection, developer, model_dir = datastore_path_components(record.benchmark, model.id, None)
    except ValueError as err:
        raise UserError(f"{what}: no Every Eval Ever datastore path for model {model.id!r}: {err}") from None
    task = task_of(record, run.path)
    estimators = estimators_of(record, task, run.path)
    metrics, notes = exported_metrics(record, estimators, what)
    from medprobe.digests import sha256_file

    name = file_uuid(sha256_file(run.path), model.id)
    run_id = f"{evaluation_name(record)}/{model.id}/{name}"
    scores = []
    for metric, value in metrics.items():
        found = item_scores(run.outcomes, metric, estimators[metric], value)
        if found is None:
            notes.append(f"{what}: no instance records for {metric} (not the mean of its items' own scores)")
        else:
            scores.append(found)
    texts = read_predictions(run) if predictions else None
    instances = instance_logs(run_id, model.id, record, run.outcomes, scores, task, texts)
    samples = "".join(json_line(log) for log in instances)
    exported = Exported(name, collection, developer, model_dir, None, instances, notes)
    label = dataset_label(record, subset_phrase(record))
    sample = sample_read(record)
    if sample is not None:  # its numbers are not the benchmark's: said in the records' dataset name, not only here
        label = f"{sample_words(sample[0])}, not the benchmark: {label}"
        notes.append(f"{what} probed {sample_words(sample[0])}: its records name it so, not {record.benchmark}")
    results = evaluation_results(record, task, metrics, label, hub_dataset(record), run.outcomes)
    exported.aggregate = aggregate_log(
        run_id, model, record, results, options, retrieved, detailed_results(exported, samples) if instances else None
    )
    return exported, samples


def detailed_results(exported: Exported, samples: str) -> Any:
    from every_eval_ever.eval_types import DetailedEvaluationResults

    from medprobe.digests import sha256_text

    return DetailedEvaluationResults(
        format="jsonl",
        file_path=exported.samples_path,
        hash_algorithm="sha256",
        checksum=sha256_text(samples),
        total_rows=len(exported.instances),
    )


def json_line(log: Any) -> str:
    """One instance record as a JSON line, serialised by pydantic itself (its scores are finite: a NaN is never one)."""
    return log.model_dump_json(exclude_none=True) + "\n"


def aggregate_text(log: Any) -> str:
    """As the package writes an aggregate (helpers.io.save_evaluation_logs): no nulls, indent 2, strict JSON."""
    return json.dumps(log.model_dump(mode="json", exclude_none=True), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
