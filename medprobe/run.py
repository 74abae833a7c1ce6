"""The one run loop of every benchmark: load -> prober -> task -> evaluate metric -> RunRecord.

    record = run(RunRequest(task="medlama", prober="contrastive", dataset="out/medlama", model="minilm"))

`medprobe probe` and `medprobe profile` both call `run`; the results (JSON, table, plot, predictions)
depend only on the request, so the same request gives the same predictions bytes from either, and
from one process or several (`accelerate launch` / `torchrun`, see medprobe.distributed: the tasks
split their work over the processes and gather it back; only the main process prints and writes).
What can be checked without a model (the outputs can be written, the prober fits the task, the
dataset loads and has the task's fields) is checked before the model loads.

A run enters the registry once: `resolve` looks its task and prober up (medprobe.registry.registry())
into `RunEntries`, which every later step is handed (the task class, the options, the citations, the
plugin distributions recorded in `source.plugins`). The task is used through its contract, the `Task`
Protocol of medprobe.tasks (checked for every entry by medprobe.cli.plugin_kit.conformance).
"""

from __future__ import annotations

import math
import shlex
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from medprobe import distributed, timeline
from medprobe.atomic import check_distinct_outputs, check_writable
from medprobe.citations import keys_of
from medprobe.contracts import UserError
from medprobe.local_paths import check_local_path, could_be_local, dataset_source
from medprobe.options import RESAMPLES_OPTION, check_positive
from medprobe.records.outcomes import outcomes_entry, outcomes_jsonl, outcomes_path
from medprobe.records.record import RunRecord
from medprobe.records.tables import format_intervals, plot_format
from medprobe.records.write import save_run
from medprobe.registry import REMOVED_PROBERS, ProberEntry, TaskEntry, load, registry
from medprobe.stats import RESAMPLES, Estimator, estimate
from medprobe.validity import intervals

if TYPE_CHECKING:  # the run reaches tasks through the registry, never by import (tests/test_import_layers.py)
    from medprobe.tasks import Scored, Task


@dataclass
class RunRequest:
    task: str  # a task name of the registry (medprobe.registry.registry().tasks)
    prober: str  # a prober name of the registry
    dataset: str  # a folder written by `medprobe build`, or a Hub id
    config: str | None = None
    split: str = "test"
    model: str | None = None
    seed: int | None = None  # None: the task's or prober's own default
    device: str = "auto"
    prober_options: dict = field(default_factory=dict)  # keywords of the prober's create; left out = its default
    task_options: dict = field(default_factory=dict)  # keywords of the task's class; left out = its default
    out: str | None = "results.json"
    plot: str | None = None
    resamples: int = RESAMPLES  # bootstrap resamples of every interval


@dataclass
class RunEntries:
    """The registry entries a run uses, looked up once (`resolve`) and handed to every step after."""

    task: TaskEntry
    prober: ProberEntry
    plugins: dict = field(default_factory=dict)  # the plugin distributions of the two (`source.plugins`); {}: built in

    @cached_property
    def task_class(self) -> type[Task]:
        return load(self.task.target)  # imported when first needed: after the checks, before the data loads

    @property
    def citations(self) -> list[str]:
        return keys_of(self.task, self.prober)


def resolve(request: RunRequest) -> RunEntries:
    """The request's task and prober, from the registry, checked to fit each other: a run's one lookup."""
    found = registry()
    if request.task not in found.tasks:
        raise UserError(f"unknown task {request.task!r}; choose one of {', '.join(found.tasks)}")
    if request.prober in REMOVED_PROBERS:
        raise UserError(f"--prober {request.prober} was removed: {REMOVED_PROBERS[request.prober]}")
    if request.prober not in found.probers:
        raise UserError(f"unknown prober {request.prober!r}; choose one of {', '.join(found.probers)}")
    task, prober = found.tasks[request.task], found.probers[request.prober]
    if not set(prober.kinds) & set(task.accepts):
        fits = ", ".join(found.tasks_for(request.prober)) or "none"
        raise UserError(
            f"--prober {request.prober} cannot run the {request.task} task: it needs a prober that does "
            f"{' or '.join(task.accepts)} (the tasks {request.prober} can run: {fits})"
        )
    return RunEntries(task, prober, found.plugins_used(request.task, request.prober))


def check_request(request: RunRequest, entries: RunEntries | None = None) -> RunEntries:
    """What must stop a run before any dataset or model loads; returns the run's entries (`resolve`)."""
    entries = entries or resolve(request)
    if not request.model:
        raise UserError(
            f"--prober {request.prober} needs --model ({entries.prober.model}; a folder, a Hub id, or a packaged name)"
        )
    check_input_files(request, (*entries.prober.options, *entries.task.options))
    check_positive(RESAMPLES_OPTION, request.resamples)
    outputs = output_paths(request, entries)
    for option, path in outputs.items():
        if path:
            check_writable(path, option)
    check_distinct_outputs(outputs)
    if request.plot:
        plot_format(request.plot)  # matplotlib is installed and writes this image format
    check_dataset_benchmark(request, entries)
    return entries


def check_dataset_benchmark(request: RunRequest, entries: RunEntries) -> None:
    """A --dataset folder that says it holds another benchmark than the task reads (a MedLAMA build given to the MST
    task, the default of --prober mlm-head): the line `--task` of that benchmark would give, not what datasets says of
    a split the folder lacks."""
    from dataclasses import replace

    from medprobe.loading import folder_benchmark

    found = folder_benchmark(request.dataset) if could_be_local(request.dataset) else None
    if found is None or found == entries.task.benchmark:
        return
    what = f"--dataset {request.dataset} holds {found} data, not {entries.task.benchmark}"
    tasks = [name for name, entry in registry().tasks.items() if entry.benchmark == found]
    fitting = [name for name in tasks if set(entries.prober.kinds) & set(registry().tasks[name].accepts)]
    if fitting:
        raise UserError(f"{what}: give --task {fitting[0]}, or a --dataset folder of {entries.task.benchmark}")
    if tasks:
        try:
            resolve(replace(request, task=tasks[0]))  # raises: the prober cannot run that benchmark's task
        except UserError as err:
            raise UserError(f"{what}, and {err}") from None
    raise UserError(f"{what}: give a --dataset folder of {entries.task.benchmark}")


def output_paths(request: RunRequest, entries: RunEntries) -> dict[str, str | None]:
    """Every file the run writes, by the option that names it (the outcomes file is named by --out)."""
    outputs = {
        "--out": request.out,
        "--plot": request.plot,
        "--out's outcomes file": str(outcomes_path(request.out)) if request.out else None,
    }
    outputs.update({option.flag: request.task_options.get(option.dest) for option in entries.task.options if option.output})
    return outputs


def refuse_foreign_outputs(request: RunRequest, entries: RunEntries) -> None:
    """An output path holding a file medprobe did not write (a user's notes.json at --out, their notes.outcomes.jsonl
    beside it): one line naming it, before any model loads (medprobe.records.owned). `probe` skips it under --overwrite;
    profile, reproduce and the demo write into staging folders, where nothing is anyone else's."""
    from medprobe.records.owned import refuse_foreign_outputs as refuse

    refuse(output_paths(request, entries), request.out)


def check_input_files(request: RunRequest, options: tuple) -> None:
    """Options that read a file, checked on disk before the dataset loads: another run's --predictions file
    (JSONL: --rerank) must exist; a FILE that may also be a name or DIR/NAME (--rewire-corpus, resolved by its
    prober) must at least lie in a folder that exists, when it can be a local path at all."""
    given = {**request.prober_options, **request.task_options}
    for option in options:
        value = given.get(option.dest)
        if option.output or not isinstance(value, str) or not could_be_local(value):
            continue
        if option.metavar == "JSONL":
            check_local_path(value, option.flag)
        elif option.metavar == "FILE" and "/" in value.rstrip("/"):
            check_local_path(value.rstrip("/").rpartition("/")[0] or "/", option.flag)


def make_task(entries: RunEntries, options: dict) -> Task:
    return entries.task_class(**options)


def make_prober(
    prober: str | ProberEntry, model: str, *, device: str = "auto", seed: int | None = None, options: dict | None = None
) -> Any:
    """The prober (a registry name, or its entry) on `model` (`ProberEntry.create`), with only the options given."""
    entry = registry().prober(prober) if isinstance(prober, str) else prober
    return entry.create(model, device=device, seed=seed, **(options or {}))


def run(request: RunRequest, *, print_fn: Callable[[str], None] = print, entries: RunEntries | None = None) -> RunRecord:
    """Run one prober on one task and write its outputs; returns the RunRecord written to `request.out`.
    `entries`: the request's, when its caller checked it already (`check_request`)."""
    timeline.mark("run starts (imports and argument parsing done)")
    entries = check_request(request, entries)
    dataset_source(request.dataset)  # a typo'd folder, or a Hub id while offline: one line now, not after retries
    task = make_task(entries, request.task_options)
    timings: dict[str, float] = {}

    start = time.perf_counter()
    data = task.load(request.dataset, request.config, request.split)
    timings["load_dataset"] = time.perf_counter() - start
    timeline.mark("dataset loaded")

    start = time.perf_counter()
    prober = make_prober(entries.prober, request.model, device=request.device, seed=request.seed, options=request.prober_options)
    timings["load_model"] = time.perf_counter() - start
    timeline.mark("model loaded; probing starts")
    distributed.quiet_other_processes(prober, getattr(prober, "scorer", None))  # under a launch: the main one reports

    start = time.perf_counter()
    outputs = task.predict(prober, data, request.seed)
    timings["probe"] = time.perf_counter() - start
    timeline.mark("probed")

    start = time.perf_counter()
    scored = task.score(data, outputs)
    timings["score"] = time.perf_counter() - start
    timeline.mark("scored")
    timings.update(task.timings)
    timings.update(getattr(prober, "timings", {}))

    seed = scored.seed if scored.seed is not None else request.seed
    record = RunRecord(
        benchmark=entries.task.benchmark,
        dataset=request.dataset,
        config=request.config,
        split=request.split,
        prober=request.prober,
        model=request.model,
        seed=seed if seed is not None else getattr(prober, "seed", None),
        settings={**scored.settings, **getattr(prober, "settings", {})},
        metrics=scored.metrics,
        per_group=scored.per_group,
        timings={phase: round(seconds, 3) for phase, seconds in timings.items()},
        counts=scored.counts,
        task=request.task,
        command="medprobe " + shlex.join(probe_argv(request, prober, entries)),
        citations=entries.citations,
    )
    if distributed.launched():
        record.settings["processes"] = distributed.num_processes()
    if not distributed.is_main_process():  # every process holds the same record; one writes it
        return record
    start = time.perf_counter()
    estimators = checked_estimators(record, request, task, scored)
    # the bootstrap is numpy, which lets go of the GIL: it runs beside the hashing and the outcomes text
    with ThreadPoolExecutor(max_workers=1) as pool:
        bootstrap = pool.submit(intervals, scored.outcomes, estimators, resamples=request.resamples) if estimators else None
        describe_measurement(record, request, task, scored, entries)
        outcomes_text = outcomes_jsonl(scored.outcomes) if request.out and scored.outcomes is not None else None
        if bootstrap is not None:
            record.intervals = with_seed_spread(bootstrap.result(), record)
    record.timings["intervals"] = round(time.perf_counter() - start, 3)
    timeline.mark("intervals done")
    print_fn(task.table(record))
    if record.intervals:
        print_fn(format_intervals(record))
    if request.out:
        plotted = record if scored.plot_per_group is None else RunRecord(**{**vars(record), "per_group": scored.plot_per_group})
        more = task.writers(data, outputs)
        if outcomes_text is not None:
            record.outcomes = outcomes_entry(outcomes_text, request.out, scored.outcomes, task.outcome_unit, task.outcome_fields)
            more = [(outcomes_path(request.out), lambda temp: temp.write_text(outcomes_text, encoding="utf-8")), *more]
        save_run(record, request.out, plot=request.plot, plot_metric=task.plot_metric, plot_record=plotted, more=more)
        timeline.mark("outputs written")
    return record


def checked_estimators(record: RunRecord, request: RunRequest, task: Task, scored: Scored) -> dict[str, Estimator]:
    """The task's estimators of the metrics this run has, each checked to give the metric's value from the
    per-item outcomes (the intervals resample those outcomes); none when the task records no outcomes."""
    if scored.outcomes is None:
        return {}
    estimators = {
        name: estimator
        for name, estimator in type(task).estimators(record.settings).items()
        if isinstance(record.metrics.get(name), (int, float))
    }
    for name, estimator in estimators.items():  # an estimator that drifted from the metric is a bug, not a user error
        value = estimate(scored.outcomes, estimator)
        if not math.isclose(value, record.metrics[name], rel_tol=1e-9, abs_tol=1e-12):
            raise RuntimeError(
                f"{request.task}: {name} from the per-item outcomes is {value}, the metric says {record.metrics[name]}"
            )
    return estimators


def with_seed_spread(found: dict[str, dict], record: RunRecord) -> dict[str, dict]:
    """Intervals of a task trained with several seeds also say the spread over the seeds."""
    seeds = record.settings.get("seeds")
    for name, interval in found.items():
        if isinstance(seeds, list) and len(seeds) > 1 and f"{name}_std" in record.metrics:
            interval.update({"seeds": len(seeds), "seed_std": record.metrics[f"{name}_std"]})
    return found


def describe_measurement(record: RunRecord, request: RunRequest, task: Task, scored: Scored, entries: RunEntries) -> None:
    """What the record's numbers measured (the intervals aside): chance, data, subset, model, source (medprobe's,
    and the plugin distributions of the run's entries, if any)."""
    from medprobe.provenance import dataset_fingerprint, items_digest, model_identity, source_identity

    record.chance = scored.chance
    subset_options = {
        option.dest: request.task_options[option.dest]
        for option in entries.task.options
        if option.subset and request.task_options.get(option.dest) not in (None, False)  # a switch left off: no subset
    }
    record.subset = {"subset": bool(subset_options), "options": subset_options}
    if subset_options and task.subset_of:  # e.g. {"probed": 190, "total": 15329, "unit": "queries"}
        record.subset["of"] = task.subset_of
    if scored.outcomes is not None:
        record.subset.update({"items": len(scored.outcomes), "item_ids_sha256": items_digest(scored.outcomes.ids)})
    record.data_fingerprint = dataset_fingerprint(request.dataset, task.loaded or [(request.config, request.split)])
    record.model_identity = model_identity(request.model) if request.model else {}
    # a copy: source_identity() is cached; built-in entries add nothing, so their records are as before
    record.source = {**source_identity(), **({"plugins": entries.plugins} if entries.plugins else {})}


def probe_argv(request: RunRequest, prober: Any = None, entries: RunEntries | None = None) -> list[str]:
    """The `medprobe probe` arguments that make the same RunRequest (recorded in every results file).

    With the `prober` that ran, they name the device and dtype it resolved instead of what was asked:
    `--device auto` and `--dtype auto` are this machine's choice (bfloat16 on a CUDA GPU, float32 on
    CPU), and the recorded command must repeat the run on any machine."""
    entries = entries or resolve(request)
    options = dict(request.prober_options)
    device = request.device
    if prober is not None:
        device = resolved_device(prober, request.device)
        dtype = (getattr(prober, "settings", None) or {}).get("dtype")
        takes = next((option for option in entries.prober.options if option.dest == "dtype"), None)
        if takes is not None and dtype in (takes.choices or ()):
            options["dtype"] = dtype
    argv = ["probe", "--prober", request.prober, "--task", request.task, "--dataset", request.dataset]
    if request.config:
        argv += ["--config", request.config]
    argv += ["--split", request.split, "--model", str(request.model)]
    if request.out:
        argv += ["--out", request.out]
    argv += ["--device", device]
    if request.seed is not None:
        argv += ["--seed", str(request.seed)]
    if request.resamples != RESAMPLES:
        argv += ["--resamples", str(request.resamples)]
    for entry_options, given in (
        (entries.prober.options, options),
        (entries.task.options, request.task_options),
    ):
        by_dest = {option.dest: option for option in entry_options}
        for dest, value in given.items():
            option = by_dest[dest]
            if option.switch:
                if bool(value) != option.invert:
                    argv.append(option.flag)
            else:
                argv += [option.flag, ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)]
    return argv


def resolved_device(prober: Any, given: str) -> str:
    """The device the prober's model is on (`prober.device`, else its model's first parameter's), or `given`
    under a launch, where `auto` is each process's own GPU and one resolved name would send them all to it."""
    if distributed.launched():
        return given
    device = getattr(prober, "device", None)
    if device is None:  # only then: a warm contrastive probe loads its model on first access of `model`
        model = getattr(prober, "model", None)
        parameter = next(iter(model.parameters()), None) if hasattr(model, "parameters") else None
        device = getattr(parameter, "device", None)
    return str(device) if device is not None else given
