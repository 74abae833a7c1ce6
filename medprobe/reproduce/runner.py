"""Run a recipe's cells through the one run loop (medprobe.run.run), resumably.

    report = reproduce(ReproduceOptions(recipe="medlama-table5", out="repro", data_dirs={"medlama": "out/medlama"}))

Each cell becomes one RunRequest (or one per value of its `repeat`, e.g. the ten rewiring corpora of
MedLAMA's Table 5); each run's RunRecord is written to OUT/runs/, and the cell's result, with the
request's key, to OUT/cells/<cell-id>.json. A rerun skips a cell whose file holds the same key, so an
interrupted reproduction resumes where it stopped; a changed request (another model, data folder,
option) has another key and runs again. Under `accelerate launch` every process runs every cell (the
run loop splits the work) and only the main process writes.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medprobe import distributed
from medprobe.api import UserError
from medprobe.atomic import write_text_atomically
from medprobe.reproduce.recipe import Cell, Model, Recipe, load_recipe

RELEASE_CORPUS_PREFIXES = ("pubmed_sents_no_punkt_10k_", "wiki_sents_no_punkt_10k")


@dataclass
class ReproduceOptions:
    recipe: str  # a shipped recipe's name or a recipe file
    out: str
    cells: list[str] | None = None  # None: every cell
    model_map: dict[str, str] = field(default_factory=dict)  # model name, Hub id or "*" -> a folder (or another id)
    data_dirs: dict[str, str] = field(default_factory=dict)  # benchmark -> a folder built by `medprobe build`
    corpus_dir: str | None = None  # a MedLAMA release folder with elicit_corpora/ (rewiring corpora, offline)
    overrides: dict[str, Any] = field(default_factory=dict)  # option dest -> value, for every cell that has it
    device: str = "auto"


@dataclass(frozen=True)
class PlannedCell:
    cell: Cell
    model: str  # what the run loads: the Hub id, or the mapped folder
    mapped: bool  # the model is not the paper's (--model-map)
    substitute: bool  # the recipe's Hub id stands in for a checkpoint the paper used that is not on the Hub
    requests: tuple  # RunRequests, one per repeat value
    overridden: dict[str, Any]  # the overrides that changed this cell's options
    key: str


def reproduce(options: ReproduceOptions, print_fn=print) -> dict:
    """Run the chosen cells (skipping finished ones) and write the report; returns the report."""
    from medprobe.reproduce.report import build_report, write_report

    recipe = load_recipe(options.recipe)
    cells = [recipe.cell(cell_id) for cell_id in options.cells] if options.cells else list(recipe.cells)
    out = Path(options.out)
    results: dict[str, dict] = {}
    done_by_key: dict[str, dict] = {}  # in this process: cells that share a request run it once
    for cell in cells:
        if not cell.runnable:
            results[cell.id] = {"cell": cell.id, "status": "not runnable", "reason": cell.reason}
            continue
        planned = plan_cell(recipe, cell, options, out)
        try:
            results[cell.id] = run_cell(planned, out, done_by_key, print_fn)
        except UserError as err:  # e.g. a model that cannot be loaded here: the other cells still run
            print_fn(f"cell {cell.id}: failed: {err}")
            results[cell.id] = {"cell": cell.id, "status": "failed", "reason": str(err)}
    report = build_report(recipe, cells, results, options)
    if distributed.is_main_process():
        write_report(report, out)
        print_fn(f"reproduce {recipe.id}: wrote {out / 'report.md'}, {out / 'report.json'}")
    return report


def model_to_run(model: Model, model_map: dict[str, str]) -> tuple[str, bool]:
    """(what to load, whether it was mapped): --model-map by recipe name, Hub id or '*', else the Hub id."""
    for key in (model.name, model.hub, "*"):
        if key and key in model_map:
            return model_map[key], True
    if not model.hub:
        raise UserError(
            f"model {model.name} ({model.paper_name}) is not on the Hub ({model.note}); give --model-map {model.name}=PATH"
        )
    return model.hub, False


def cell_options(cell: Cell, overrides: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The cell's options with the overrides that apply to its prober or task, and those overrides."""
    from medprobe.registry import prober_entry, task_entry

    dests = {o.dest for o in prober_entry(cell.prober).options} | {o.dest for o in task_entry(cell.task).options}
    applied = {key: value for key, value in overrides.items() if key in dests}
    return {**cell.options, **applied}, applied


def corpus_value(value: Any, corpus_dir: str | None) -> Any:
    """A release rewiring corpus by bare name is read from --corpus-dir when given (else downloaded)."""
    if corpus_dir and isinstance(value, str) and value.startswith(RELEASE_CORPUS_PREFIXES) and "/" not in value:
        return str(Path(corpus_dir) / value)
    return value


def plan_cell(recipe: Recipe, cell: Cell, options: ReproduceOptions, out: Path) -> PlannedCell:
    from medprobe.python_api import split_options
    from medprobe.run import RunRequest

    dataset = options.data_dirs.get(recipe.benchmark)
    if not dataset:
        raise UserError(f"recipe {recipe.id} needs --data-dir {recipe.benchmark}=PATH: {recipe.data}")
    model, mapped = model_to_run(recipe.models[cell.model], options.model_map)
    merged, overridden = cell_options(cell, options.overrides)
    values = cell.repeat["values"] if cell.repeat else [None]
    requests = []
    for index, value in enumerate(values):
        run_options = dict(merged)
        if cell.repeat:
            run_options[cell.repeat["option"]] = value
        run_options = {key: corpus_value(v, options.corpus_dir) for key, v in run_options.items()}
        prober_options, task_options = split_options(cell.prober, cell.task, run_options)
        name = f"{cell.id}-{index}" if cell.repeat else cell.id
        requests.append(
            RunRequest(
                task=cell.task,
                prober=cell.prober,
                dataset=str(dataset),
                config=cell.config,
                split=cell.split,
                model=model,
                device=options.device,
                prober_options=prober_options,
                task_options=task_options,
                out=str(out / "runs" / f"{name}.json"),
            )
        )
    key = request_key(requests, recipe.models[cell.model])
    return PlannedCell(cell, model, mapped, recipe.models[cell.model].substitute, tuple(requests), overridden, key)


def request_key(requests: list, model: Model) -> str:
    """What decides a cell's result: the requests (model, data folder, config, options) and the revision;
    not the device or where outputs go."""
    described = [
        {
            "task": r.task,
            "prober": r.prober,
            "dataset": str(Path(r.dataset).expanduser().resolve()) if Path(r.dataset).exists() else r.dataset,
            "config": r.config,
            "split": r.split,
            "model": r.model,
            "revision": model.revision,
            "seed": r.seed,
            "prober_options": r.prober_options,
            "task_options": r.task_options,
        }
        for r in requests
    ]
    text = json.dumps(described, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cell_path(out: Path, cell_id: str) -> Path:
    return out / "cells" / f"{cell_id}.json"


def finished(out: Path, planned: PlannedCell) -> dict | None:
    """The stored result of this cell when it finished with the same key (else None: run it)."""
    path = cell_path(out, planned.cell.id)
    if not path.is_file():
        return None
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return None  # written atomically, so only a hand-edited file gets here: run again
    return stored if stored.get("key") == planned.key and stored.get("status") == "finished" else None


def run_cell(planned: PlannedCell, out: Path, done_by_key: dict[str, dict], print_fn) -> dict:
    from medprobe.run import run

    on_disk = finished(out, planned)
    stored = on_disk or done_by_key.get(planned.key)
    if stored is not None:
        print_fn(f"cell {planned.cell.id}: finished before (same request), not rerun")
        result = {**stored, "cell": planned.cell.id}
    else:
        print_fn(f"cell {planned.cell.id}: {planned.cell.prober} on {planned.model} ({len(planned.requests)} run(s))")
        records = [run(request, print_fn=lambda _text: None) for request in planned.requests]
        result = cell_result(planned, records)
    done_by_key[planned.key] = result
    if distributed.is_main_process() and on_disk is None:  # a finished cell's file stays as it was
        write_text_atomically(cell_path(out, planned.cell.id), json.dumps(result, indent=2, sort_keys=True) + "\n")
    return result


def cell_result(planned: PlannedCell, records: list) -> dict:
    """What the report needs of a cell's runs: per figure the measured value and its interval, and per
    run the interval, n and data fingerprint the RunRecord holds."""
    cell = planned.cell
    repeat_values = cell.repeat["values"] if cell.repeat else [None]
    runs = [
        {
            "out": request.out,
            "repeat_value": value,
            "metrics": {f.metric: record.metrics.get(f.metric) for f in cell.figures},
            "intervals": {f.metric: record.intervals.get(f.metric) for f in cell.figures},
            "n": record.subset.get("items"),
            "subset": record.subset.get("subset", False),
            "data_fingerprint": record.data_fingerprint,
            "model_identity": record.model_identity,
            "command": record.command,
        }
        for request, record, value in zip(planned.requests, records, repeat_values)
    ]
    return {
        "cell": cell.id,
        "key": planned.key,
        "status": "finished",
        "model": {"ran": planned.model, "mapped": planned.mapped, "substitute": planned.substitute and not planned.mapped},
        "overrides": planned.overridden,
        "subset": any(r["subset"] for r in runs),
        "runs": runs,
        "measured": {f.metric: measured(f.metric, runs) for f in cell.figures},
    }


def measured(metric: str, runs: list[dict]) -> dict | None:
    """One run: its value and bootstrap interval. Several (a repeat): their mean and standard deviation
    (population std, as numpy's default, over the runs), as the paper's mean ± std is."""
    values = [r["metrics"].get(metric) for r in runs]
    if any(not isinstance(v, (int, float)) for v in values):
        return None
    if len(runs) == 1:
        interval = runs[0]["intervals"].get(metric) or {}
        return {"value": values[0], "low": interval.get("low"), "high": interval.get("high"), "runs": 1, "n": interval.get("n")}
    return {"value": statistics.fmean(values), "std": statistics.pstdev(values), "runs": len(values), "n": runs[0]["n"]}
