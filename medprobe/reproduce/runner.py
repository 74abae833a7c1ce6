"""Run a recipe's cells through the one run loop (medprobe.run.run), resumably.

    report = reproduce(ReproduceOptions(recipe="medlama-table5", out="repro", data_dirs={"medlama": "out/medlama"}))

Before anything runs, the inputs are checked (medprobe.reproduce.checks: --model-map ids, --data-dir and
--corpus-dir folders, --set options), OUT goes through the checks of every output folder (a file, a mount
point, read-only: one line), and the folder lock is taken for the whole command (a second reproduce into
OUT stops at once, naming the first); OUT may hold only what reproduce writes unless --overwrite.

Each cell becomes one RunRequest (or one per value of its `repeat`, e.g. the ten rewiring corpora of
MedLAMA's Table 5); each run's RunRecord is written to OUT/runs/, and the cell's result to
OUT/cells/<cell-id>.json, after each run (medprobe.reproduce.cells). A rerun reuses each run whose request
is the same and whose results JSON verifies (medprobe.records.load_run) and agrees with the cell file, so an
interrupted reproduction resumes inside a cell; a changed request (another model, data folder, option) runs
again. Under `accelerate launch` every process runs every cell (the run loop splits the work) and only the
main process locks and writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medprobe import distributed
from medprobe.atomic_folder import out_lock, prepare_parent
from medprobe.contracts import UserError
from medprobe.digests import json_digest
from medprobe.reproduce.cells import run_cell
from medprobe.reproduce.checks import check_data, check_model_map, check_ours, check_overrides, settable
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
    overwrite: bool = False  # write into an OUT that holds files reproduce did not write


@dataclass(frozen=True)
class PlannedCell:
    cell: Cell
    model: str  # what the run loads: the Hub id, or the mapped folder
    mapped: bool  # the model is not the paper's (--model-map)
    substitute: bool  # the recipe's Hub id stands in for a checkpoint the paper used that is not on the Hub
    requests: tuple  # RunRequests, one per repeat value
    overridden: dict[str, Any]  # the overrides that changed this cell's options
    key: str  # what decides the cell's result (all its requests)
    files: tuple[str, ...] = ()  # each run's results JSON, relative to OUT (runs/<name>.json)
    run_keys: tuple[str, ...] = ()  # what decides each run's result: a run is a resumable unit
    values: tuple = ()  # each run's repeat value (None without a repeat)


def reproduce(options: ReproduceOptions, print_fn=print) -> dict:
    """Check the inputs and OUT, run the chosen cells (reusing verified runs) and write the report; returns it."""
    from medprobe.reproduce.report import build_report, write_report

    recipe = load_recipe(options.recipe)
    cells = [recipe.cell(cell_id) for cell_id in options.cells] if options.cells else list(recipe.cells)
    check_model_map(recipe, options.model_map)
    check_data(recipe, cells, options.data_dirs, options.corpus_dir)
    check_overrides(cells, options.overrides)
    out = Path(options.out)
    prepare_parent(out)
    with writing(out):
        if distributed.is_main_process():
            check_ours(out, options.overwrite)
        results = run_cells(recipe, cells, options, out, print_fn)
        report = build_report(recipe, cells, results, options)
        if distributed.is_main_process():
            write_report(report, out)
            print_fn(f"reproduce {recipe.id}: wrote {out / 'report.md'}, {out / 'report.json'}")
    return report


@contextmanager
def writing(out: Path) -> Iterator[None]:
    """The folder lock for the whole command, in the process that writes (under a launch: the main one)."""
    with out_lock(out, "reproduce") if distributed.is_main_process() else nullcontext():
        yield


def run_cells(recipe: Recipe, cells: list[Cell], options: ReproduceOptions, out: Path, print_fn) -> dict[str, dict]:
    """Each cell's result; a cell that cannot be planned or run is 'failed' with the reason, and the others still run."""
    planned: dict[str, PlannedCell | str] = {}
    for cell in cells:
        if cell.runnable:
            try:
                planned[cell.id] = plan_cell(recipe, cell, options, out)
            except UserError as err:  # e.g. a model not on the Hub and not mapped: said before anything runs
                planned[cell.id] = str(err)
                print_fn(f"cell {cell.id}: cannot run: {err}")
    results: dict[str, dict] = {}
    done_by_key: dict[str, dict] = {}  # in this process: cells that share a request run it once
    for cell in cells:
        plan = planned.get(cell.id)
        if not cell.runnable:
            results[cell.id] = {"cell": cell.id, "status": "not runnable", "reason": cell.reason}
        elif isinstance(plan, str):
            results[cell.id] = {"cell": cell.id, "status": "failed", "reason": plan}
        else:
            try:
                results[cell.id] = run_cell(plan, out, done_by_key, print_fn)
            except UserError as err:  # e.g. a model that cannot be loaded here: the other cells still run
                print_fn(f"cell {cell.id}: failed: {err}")
                results[cell.id] = {"cell": cell.id, "status": "failed", "reason": str(err)}
    return results


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
    dests = settable(cell)  # not the repeat's option: each run sets it, so an override would change nothing
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

    dataset = options.data_dirs[recipe.benchmark]  # checked: check_data
    model, mapped = model_to_run(recipe.models[cell.model], options.model_map)
    merged, overridden = cell_options(cell, options.overrides)
    values = cell.repeat["values"] if cell.repeat else [None]
    requests, files = [], []
    for index, value in enumerate(values):
        run_options = dict(merged)
        if cell.repeat:
            run_options[cell.repeat["option"]] = value
        run_options = {key: corpus_value(v, options.corpus_dir) for key, v in run_options.items()}
        prober_options, task_options = split_options(cell.prober, cell.task, run_options)
        name = f"{cell.id}-{index}" if cell.repeat else cell.id
        files.append(f"runs/{name}.json")
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
                out=str(out / files[-1]),
            )
        )
    spec = recipe.models[cell.model]
    return PlannedCell(
        cell,
        model,
        mapped,
        spec.substitute,
        tuple(requests),
        overridden,
        key=request_key(requests, spec),
        files=tuple(files),
        run_keys=tuple(request_key([request], spec) for request in requests),
        values=tuple(values),
    )


def request_key(requests: list, model: Model) -> str:
    """What decides the result of these runs (a cell's, or one run's): the requests (model, data folder, config,
    options) and the revision; not the device or where outputs go."""
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
    return json_digest(described)
