"""`medprobe profile`: plan the runs, prepare their data, run each through medprobe.run.run into the staged
folder, and seal and write the profile (medprobe.profiling.folder swaps it in).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from medprobe import distributed
from medprobe.atomic_folder import check_output_folder
from medprobe.contracts import UserError
from medprobe.profiling.plan import (
    KIND_NAMES,
    MODEL_KIND_HINT,
    PlannedRun,
    ProfileOptions,
    check_data_dirs,
    make_request,
    missing_configs,
    plan_runs,
    prepare_data,
    quick_settings,
)
from medprobe.profiling.profile import Profile, summary, write_profile
from medprobe.records.tables import validity_rows
from medprobe.registry import task_entry


def headline_row(planned: PlannedRun, record: Any, floor_record: Any | None, floor_label: str = "") -> dict:
    """One row of the profile table: the task's headline metric and, where defined, chance and floor
    (the value of the floor run `floor_label`, as the plan's `floor_text` describes it)."""
    entry = task_entry(planned.task)
    value = record.metrics.get(entry.headline)
    row = {
        "benchmark": planned.benchmark,
        "config": planned.config,
        "prober": planned.prober,
        "run": planned.label,
        "metric": entry.headline,
        "value": value,
        "chance": None,
        "chance_source": "none defined for this metric",
        "floor": None,
        "floor_source": "none",
    }
    if value is None:
        row["note"] = f"the run's metrics have no {entry.headline!r} (found: {', '.join(record.metrics)})"
    chance = record.chance.get(entry.headline) if isinstance(getattr(record, "chance", None), dict) else None
    if chance:
        row.update(chance=chance["value"], chance_source=chance["method"])
    interval = (getattr(record, "intervals", None) or {}).get(entry.headline)
    if interval:
        row.update(low=interval["low"], high=interval["high"], n=interval["n"], interval_method=interval["method"])
    # is it knowledge? the facets beside the headline, with the clustered interval (medprobe.records.tables)
    row["validity"] = validity_rows(record.metrics, getattr(record, "intervals", None) or {}, entry.headline)
    if floor_record is not None:
        row["floor"] = floor_record.metrics.get(entry.headline)
        row["floor_source"] = f"{entry.profile.floor_text}, run {floor_label}"
    return row


def figure_available() -> str:
    """'' when matplotlib can draw profile.png, else why not (checked before any run)."""
    from medprobe.records.tables import plot_format

    try:
        plot_format("profile.png")
    except UserError:
        return "matplotlib is not installed, so profile.png was not drawn: pip install matplotlib"
    return ""


def check_outputs(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder for the profile")
    # the profile is staged beside OUT and swapped in: OUT's folder must be writable, OUT no mount point nor immutable
    check_output_folder(out)


def run_profile(options: ProfileOptions, print_fn: Callable[[str], None] = print) -> Profile:
    """Plan, prepare the data, run every pair through medprobe.run.run, write profile.json/md/png.

    The whole folder is written beside OUT, under a lock, and replaces OUT in one swap at the end; a
    profile killed before resumes from what it left (medprobe.profiling.folder)."""
    from medprobe.profiling.folder import open_folder

    out = Path(options.out)
    check_outputs(out)
    check_data_dirs(options.data_dirs, options.benchmarks)
    with open_folder(out, overwrite=options.overwrite, print_fn=print_fn) as folder:
        profile = profile_runs(options, folder, print_fn)
    if distributed.is_main_process():
        print_fn(summary(profile, out))
    return profile


def profile_runs(options: ProfileOptions, folder: Any, print_fn: Callable[[str], None]) -> Profile:
    """The profile of `run_profile`, its datasets and runs written into `folder` (a ProfileFolder)."""
    from medprobe.records.record import RunRecord
    from medprobe.run import check_request, probe_argv, run

    start = time.perf_counter()
    staged = replace(options, out=str(folder.staged))  # what the builds and runs write: the staging folder
    figure_note = figure_available()
    kind, why = read_model_kind(options)
    print_fn(f"model {options.model}: {KIND_NAMES[kind]} ({why})")
    planned, skipped = plan_runs(kind, options.benchmarks, set(options.data_dirs))
    profile = Profile(
        model=options.model,
        kind=kind,
        kind_reason=why,
        figure_note=figure_note,
        settings={
            "benchmarks": list(options.benchmarks),
            "quick": options.quick,
            "quick_settings": quick_settings() if options.quick else None,
            "seed": options.seed,
            "device": options.device,
            "data_dirs": dict(options.data_dirs),
        },
        skipped=[asdict(s) for s in skipped],
    )
    for item in skipped:
        print_fn(f"skipped: {item.benchmark} ({item.prober or '-'}): {item.reason}")
    data = prepare_data(staged, list(dict.fromkeys(p.benchmark for p in planned)), print_fn)
    profile.data = {name: asdict(source) for name, source in data.items()}
    planned, lacking = missing_configs(planned, data)
    for item in lacking:
        print_fn(f"skipped: {item.benchmark}/{item.config} ({item.prober}): {item.reason}")
    profile.skipped += [asdict(s) for s in lacking]
    requests = [make_request(p, data[p.benchmark], staged) for p in planned]
    # outputs writable, prober fits task, --plot format: before any model loads; each run's registry entries, once
    entries = [check_request(request) for request in requests]
    reused = folder.reuse([(p.label, r, profile.data[p.benchmark]) for p, r in zip(planned, requests)])

    records: dict[str, Any] = {}
    for number, (item, request, found) in enumerate(zip(planned, requests, entries), start=1):
        print_fn(f"\nrun {number}/{len(planned)}: {item.title}")
        if item.label in reused:  # a killed profile's run of the same request and data, its files unchanged
            print_fn(f"run {number}/{len(planned)}: reused from the killed profile this one resumes")
            records[item.label] = RunRecord(**reused[item.label]["record"])
            profile.runs.append(reused[item.label])
            continue
        command = "medprobe " + shlex.join(probe_argv(folder.logical(request), entries=found))  # as run from OUT
        entry = {
            "label": item.label,
            "benchmark": item.benchmark,
            "config": item.config,
            "prober": item.prober,
            "floor_of": item.floor_of,
            "request": asdict(request),
            "command": command,
            "results": request.out,
            "predictions": request.task_options.get("predictions"),
            "record": None,
            "seconds": None,
        }
        started = time.perf_counter()
        try:
            record = run(request, print_fn=print_fn, entries=found)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the profile stops here, resumable from its journal
            journal_if_written(folder, entry, request, profile.data[item.benchmark], started)
            raise
        except RUN_ERRORS as err:  # a run a user can fix: recorded, and the others still run
            entry["seconds"] = round(time.perf_counter() - started, 1)
            error = folder.logical(str(err))  # naming files as in OUT, not in the staging folder
            print_fn(f"run {number}/{len(planned)} failed: {error}")
            profile.failed.append({"label": item.label, "benchmark": item.benchmark, "prober": item.prober, "error": error})
            profile.runs.append(entry)
            continue
        entry["record"], entry["seconds"] = asdict(record), round(time.perf_counter() - started, 1)
        print_fn(f"run {number}/{len(planned)} took {entry['seconds']:.0f} s")
        folder.finished(entry, request, profile.data[item.benchmark])
        records[item.label] = record
        profile.runs.append(entry)

    profile.headline = headline_rows(planned, records, profile.failed)
    profile.seconds = round(time.perf_counter() - start, 1)
    from medprobe.records.record import library_versions

    profile.versions = library_versions()
    if not distributed.is_main_process():  # under a launch every process holds the same profile; one writes it
        return profile
    folder.seal(profile)
    write_profile(profile, folder.out, into=folder.staged)
    return profile


def journal_if_written(folder: Any, entry: dict, request: Any, source: dict, started: float) -> None:
    """A run stopped by Ctrl-C or SIGTERM after its files were written is journaled as a finished one, so that the
    profile resuming this one takes it: a signal that comes while the files are renamed into place takes effect
    once they all are (medprobe.atomic.signals_deferred), so its results JSON, renamed last, is there only when
    every file of the run is."""
    from medprobe.records import RecordError, load_record_file

    results = Path(request.out)
    if not results.is_file():  # stopped before its files were written: run again by the next profile
        return
    try:
        record = load_record_file(results)
    except (RecordError, OSError):
        return
    entry["record"], entry["seconds"] = asdict(record), round(time.perf_counter() - started, 1)
    folder.finished(entry, request, source)


def read_model_kind(options: ProfileOptions) -> tuple[str, str]:
    """(kind, why) of the profiled model: as --model-kind gives it, else read from its config. A plugin's prober
    may read a model that is no model folder (as `probe` lets it): then the kind, which picks the plans, is given."""
    if options.model_kind:
        if options.model_kind not in KIND_NAMES:
            raise UserError(f"--model-kind {options.model_kind!r}: choose one of {', '.join(KIND_NAMES)}")
        return options.model_kind, "as --model-kind gives it"
    from medprobe.models import load_model_kind

    try:
        return load_model_kind(options.model)
    except (UserError, OSError) as err:
        raise UserError(f"{err}; {MODEL_KIND_HINT}") from err


def run_errors() -> tuple[type[BaseException], ...]:
    from medprobe.atomic import UnwritableOutput

    return (UserError, UnwritableOutput, FileNotFoundError, NotADirectoryError, ConnectionError, PermissionError)


RUN_ERRORS = run_errors()


def headline_rows(planned: list[PlannedRun], records: dict[str, Any], failed: list[dict]) -> list[dict]:
    errors = {item["label"]: item["error"] for item in failed}
    floors = {p.floor_of: p for p in planned if p.floor_of}
    rows = []
    for item in planned:
        if item.floor_of:
            continue
        if item.label in records:
            floor_run = floors.get(item.label)
            floor = records.get(floor_run.label) if floor_run else None
            row = headline_row(item, records[item.label], floor, floor_run.label if floor_run else "")
            if floor_run and floor is None:
                row["floor_source"] = f"the {floor_run.floor_name} run failed: {errors.get(floor_run.label, 'no record')}"
        else:
            row = {
                "benchmark": item.benchmark,
                "config": item.config,
                "prober": item.prober,
                "run": item.label,
                "metric": task_entry(item.task).headline,
                "value": None,
                "chance": None,
                "chance_source": "",
                "floor": None,
                "floor_source": "",
                "note": f"failed: {errors.get(item.label, 'no record')}",
            }
        rows.append(row)
    return rows
