"""The one run loop of every benchmark: load -> prober -> task -> evaluate metric -> RunRecord.

    record = run(RunRequest(task="medlama", prober="contrastive", dataset="out/medlama", model="minilm"))

`medprobe probe` and `medprobe profile` both call `run`; the results (JSON, table, plot, predictions)
depend only on the request, so the same request gives the same predictions bytes from either, and
from one process or several (`accelerate launch` / `torchrun`, see medprobe.distributed: the tasks
split their work over the processes and gather it back; only the main process prints and writes).
What can be checked without a model (the outputs can be written, the prober fits the task, the
dataset loads and has the task's fields) is checked before the model loads.
"""

from __future__ import annotations

import math
import shlex
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from medprobe import distributed, timeline
from medprobe.atomic import check_distinct_outputs, check_writable
from medprobe.citations import citation_keys
from medprobe.contracts import UserError
from medprobe.local_paths import check_local_path, could_be_local, dataset_source
from medprobe.options import RESAMPLES_OPTION, check_positive
from medprobe.records.outcomes import outcomes_entry, outcomes_jsonl, outcomes_path
from medprobe.records.record import RunRecord
from medprobe.records.tables import format_intervals, plot_format
from medprobe.records.write import save_run
from medprobe.registry import PROBERS, REMOVED_PROBERS, TASKS, load, prober_entry, task_entry, tasks_for
from medprobe.stats import RESAMPLES, Estimator, estimate, intervals


@dataclass
class RunRequest:
    task: str  # a name in medprobe.registry.TASKS
    prober: str  # a name in medprobe.registry.PROBERS
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


def check_request(request: RunRequest) -> None:
    """What must stop a run before any dataset or model loads."""
    if request.task not in TASKS:
        raise UserError(f"unknown task {request.task!r}; choose one of {', '.join(TASKS)}")
    if request.prober in REMOVED_PROBERS:
        raise UserError(f"--prober {request.prober} was removed: {REMOVED_PROBERS[request.prober]}")
    if request.prober not in PROBERS:
        raise UserError(f"unknown prober {request.prober!r}; choose one of {', '.join(PROBERS)}")
    task, prober = task_entry(request.task), prober_entry(request.prober)
    if not set(prober.kinds) & set(task.accepts):
        fits = ", ".join(tasks_for(request.prober)) or "none"
        raise UserError(
            f"--prober {request.prober} cannot run the {request.task} task: it needs a prober that does "
            f"{' or '.join(task.accepts)} (the tasks {request.prober} can run: {fits})"
        )
    if not request.model:
        raise UserError(f"--prober {request.prober} needs --model ({prober.model}; a folder, a Hub id, or a packaged name)")
    check_input_files(request, (*prober.options, *task.options))
    check_positive(RESAMPLES_OPTION, request.resamples)
    outputs = {
        "--out": request.out,
        "--plot": request.plot,
        "--out's outcomes file": outcomes_path(request.out) if request.out else None,
    }
    outputs.update({option.flag: request.task_options.get(option.dest) for option in task.options if option.output})
    for option, path in outputs.items():
        if path:
            check_writable(path, option)
    check_distinct_outputs(outputs)
    if request.plot:
        plot_format(request.plot)  # matplotlib is installed and writes this image format


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


def make_task(request: RunRequest) -> Any:
    return load(task_entry(request.task).target)(**request.task_options)


def make_prober(name: str, model: str, *, device: str = "auto", seed: int | None = None, options: dict | None = None) -> Any:
    """The registered prober `name` on `model` (`ProberEntry.create`), with only the options given."""
    return prober_entry(name).create(model, device=device, seed=seed, **(options or {}))


def run(request: RunRequest, *, print_fn: Callable[[str], None] = print) -> RunRecord:
    """Run one prober on one task and write its outputs; returns the RunRecord written to `request.out`."""
    timeline.mark("run starts (imports and argument parsing done)")
    check_request(request)
    dataset_source(request.dataset)  # a typo'd folder, or a Hub id while offline: one line now, not after retries
    entry = task_entry(request.task)
    task = make_task(request)
    timings: dict[str, float] = {}

    start = time.perf_counter()
    data = task.load(request.dataset, request.config, request.split)
    timings["load_dataset"] = time.perf_counter() - start
    timeline.mark("dataset loaded")

    start = time.perf_counter()
    prober = make_prober(request.prober, request.model, device=request.device, seed=request.seed, options=request.prober_options)
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
    timings.update(getattr(task, "timings", {}))
    timings.update(getattr(prober, "timings", {}))

    seed = scored.seed if scored.seed is not None else request.seed
    record = RunRecord(
        benchmark=entry.benchmark,
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
        command="medprobe " + shlex.join(probe_argv(request, prober)),
        citations=citation_keys(request.task, request.prober),
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
        describe_measurement(record, request, task, scored)
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


def checked_estimators(record: RunRecord, request: RunRequest, task: Any, scored: Any) -> dict[str, Estimator]:
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


def describe_measurement(record: RunRecord, request: RunRequest, task: Any, scored: Any) -> None:
    """What the record's numbers measured (the intervals aside): chance, data, subset, model, source."""
    from medprobe.provenance import dataset_fingerprint, items_digest, model_identity, source_identity

    record.chance = scored.chance
    subset_options = {
        option.dest: request.task_options[option.dest]
        for option in task_entry(request.task).options
        if option.subset and request.task_options.get(option.dest) is not None
    }
    record.subset = {"subset": bool(subset_options), "options": subset_options}
    if subset_options and getattr(task, "subset_of", None):  # e.g. {"probed": 190, "total": 15329, "unit": "queries"}
        record.subset["of"] = task.subset_of
    if scored.outcomes is not None:
        record.subset.update({"items": len(scored.outcomes), "item_ids_sha256": items_digest(scored.outcomes.ids)})
    record.data_fingerprint = dataset_fingerprint(
        request.dataset, getattr(task, "loaded", None) or [(request.config, request.split)]
    )
    record.model_identity = model_identity(request.model) if request.model else {}
    record.source = source_identity()


def probe_argv(request: RunRequest, prober: Any = None) -> list[str]:
    """The `medprobe probe` arguments that make the same RunRequest (recorded in every results file).

    With the `prober` that ran, they name the device and dtype it resolved instead of what was asked:
    `--device auto` and `--dtype auto` are this machine's choice (bfloat16 on a CUDA GPU, float32 on
    CPU), and the recorded command must repeat the run on any machine."""
    options = dict(request.prober_options)
    device = request.device
    if prober is not None:
        device = resolved_device(prober, request.device)
        dtype = (getattr(prober, "settings", None) or {}).get("dtype")
        takes = next((option for option in prober_entry(request.prober).options if option.dest == "dtype"), None)
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
        (prober_entry(request.prober).options, options),
        (task_entry(request.task).options, request.task_options),
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
