"""`medprobe profile`: one model, every benchmark that fits it, one knowledge-profile table.

    profile = run_profile(ProfileOptions(model="minilm", out="out/profile", data_dirs={"medlama": "/data/medlama"}))

The model's kind is read from its config (medprobe.models.model_kind): an encoder without a
masked-LM head, a masked LM, a causal LM or a seq2seq LM. What runs for each kind, on which data,
and what `--quick` changes are each benchmark's `ProfilePlan` in the registry (medprobe/profile_plan.py
reads them); with the built-in benchmarks:

    benchmark          encoder                   masked LM                    causal LM        seq2seq
    medlama full+hard  contrastive               contrastive, mask-average    causal-lm        generative
    mst                mlm-head + scratch floor  mlm-head + scratch floor     skipped          skipped
    context_variance   contrastive (scorer)      mask-average                 causal-lm        skipped
    disknE             pair-classifier (data)    pair-classifier (data)       skipped          skipped

Every pair is one `medprobe.run.run(RunRequest(...))`, the same loop as `medprobe probe`, writing
DIR/runs/<label>.json (and <label>.predictions.jsonl for the tasks that write predictions); the
request of each run is recorded in profile.json with the `medprobe probe` command that repeats it.

Outputs: DIR/profile.json (model, kind, settings, data sources, every run's request and RunRecord,
one headline row per run that is not a floor, the skipped list, the sha256 of every file of the
folder), DIR/profile.md (the table) and DIR/profile.png (each headline against its chance level and
floor). matplotlib is an optional extra: without it the figure is left out, and profile.json and the
printed summary say so (the runs are not lost for want of a plot). The whole folder, runs/ and
datasets/ included, is written beside DIR under a lock and replaces DIR in one swap at the end; DIR
must be new, empty or a profile medprobe wrote (`overwrite` replaces anything); a profile killed
before is resumed, reusing its runs of the same request (medprobe/profile_folder.py).

Every headline row carries the run's 95% interval and n (`medprobe.stats`) and its chance level,
as the run recorded them (`RunRecord.chance`, e.g. MedLAMA acc@k of a uniformly random order of each
query's candidates), and, where the plan has a floor run (MST: the same architecture with random
weights, `--scratch`), the floor's value.

Imports (docs/architecture.md, layer uses of runs): any layer but the commands; never cli/.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from medprobe import distributed
from medprobe.api import UserError
from medprobe.atomic import write_all_atomically
from medprobe.atomic_folder import check_output_folder
from medprobe.profile_plan import (
    KIND_NAMES,
    QUICK,
    DataSource,
    PlannedRun,
    ProfileOptions,
    check_data_dirs,
    make_request,
    missing_configs,
    plan_runs,
    prepare_data,
)
from medprobe.registry import task_entry

# --- headline rows ------------------------------------------------------------------------------------


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
    if floor_record is not None:
        row["floor"] = floor_record.metrics.get(entry.headline)
        row["floor_source"] = f"{entry.profile.floor_text}, run {floor_label}"
    return row


# --- the profile --------------------------------------------------------------------------------------


@dataclass
class Profile:
    model: str
    kind: str
    kind_reason: str
    settings: dict
    data: dict[str, dict] = field(default_factory=dict)
    runs: list[dict] = field(default_factory=list)  # label, request, command, results, predictions, record
    headline: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)
    figure: str | None = None
    figure_note: str = ""
    seconds: float = 0.0
    versions: dict = field(default_factory=dict)
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    # sha256 of every file of the folder but profile.json and the runs' own (each run entry's `files`):
    # what makes the folder a medprobe profile a new one may replace, and what `publish results` checks
    files: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n"


def figure_available() -> str:
    """'' when matplotlib can draw profile.png, else why not (checked before any run)."""
    from medprobe.results import plot_format

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
    profile killed before resumes from what it left (medprobe.profile_folder)."""
    from medprobe.profile_folder import open_folder

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
    from medprobe.models import load_model_kind
    from medprobe.results import RunRecord
    from medprobe.run import check_request, probe_argv, run

    start = time.perf_counter()
    staged = replace(options, out=str(folder.staged))  # what the builds and runs write: the staging folder
    figure_note = figure_available()
    kind, why = load_model_kind(options.model)
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
            "quick_settings": QUICK if options.quick else None,
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
    for request in requests:  # outputs writable, prober fits task, --plot format: before any model loads
        check_request(request)
    reused = folder.reuse([(p.label, r, profile.data[p.benchmark]) for p, r in zip(planned, requests)])

    records: dict[str, Any] = {}
    for number, (item, request) in enumerate(zip(planned, requests), start=1):
        print_fn(f"\nrun {number}/{len(planned)}: {item.title}")
        if item.label in reused:  # a killed profile's run of the same request and data, its files unchanged
            print_fn(f"run {number}/{len(planned)}: reused from the killed profile this one resumes")
            records[item.label] = RunRecord(**reused[item.label]["record"])
            profile.runs.append(reused[item.label])
            continue
        command = "medprobe " + shlex.join(probe_argv(folder.logical(request)))  # as run from OUT
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
            record = run(request, print_fn=print_fn)
        except RUN_ERRORS as err:  # a run a user can fix: recorded, and the others still run
            entry["seconds"] = round(time.perf_counter() - started, 1)
            print_fn(f"run {number}/{len(planned)} failed: {err}")
            profile.failed.append({"label": item.label, "benchmark": item.benchmark, "prober": item.prober, "error": str(err)})
            profile.runs.append(entry)
            continue
        entry["record"], entry["seconds"] = asdict(record), round(time.perf_counter() - started, 1)
        print_fn(f"run {number}/{len(planned)} took {entry['seconds']:.0f} s")
        folder.finished(entry, request, profile.data[item.benchmark])
        records[item.label] = record
        profile.runs.append(entry)

    profile.headline = headline_rows(planned, records, profile.failed)
    profile.seconds = round(time.perf_counter() - start, 1)
    from medprobe.results import library_versions

    profile.versions = library_versions()
    if not distributed.is_main_process():  # under a launch every process holds the same profile; one writes it
        return profile
    folder.seal(profile)
    write_profile(profile, folder.out, into=folder.staged)
    return profile


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


# --- outputs ------------------------------------------------------------------------------------------


def percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.2f}"


def model_label(model: str) -> str:
    """A local model folder by its name only (profile.md may go into a public card), else the Hub id or packaged name."""
    return Path(model).name if Path(model).expanduser().exists() else model


def markdown(profile: Profile) -> str:
    """profile.md: the knowledge-profile table (one row per benchmark run, then the skipped ones) and notes."""
    subset = "the --quick subset" if profile.settings.get("quick") else "full benchmarks"
    lines = [
        f"# Knowledge profile: {model_label(profile.model)}",
        "",
        f"{KIND_NAMES[profile.kind]} ({profile.kind_reason}); medprobe profile, {subset}, {profile.created}.",
        "Values, 95% intervals, chance and floor in %; n = the items the interval resampled.",
        "",
        "| benchmark | config | prober | metric | value | 95% interval | n | chance | floor |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    notes: list[str] = []
    for row in profile.headline:
        value = percent(row["value"]) if row["value"] is not None else row.get("note", "—")
        interval = f"{percent(row['low'])}–{percent(row['high'])}" if row.get("low") is not None else "—"
        lines.append(
            f"| {row['benchmark']} | {row['config'] or 'all'} | {row['prober']} | {row['metric']} | {value} "
            f"| {interval} | {row.get('n') or '—'} | {percent(row['chance'])} | {percent(row['floor'])} |"
        )
        for what in ("chance", "floor"):
            if row[what] is not None:
                notes.append(f"{row['benchmark']}/{row['config'] or 'all'} {row['prober']}: {what} = {row[f'{what}_source']}")
    for item in profile.skipped:
        lines.append(
            f"| {item['benchmark']} | {item['config'] or '—'} | {item['prober'] or '—'} | — | skipped: {item['reason']} | | |"
        )
    lines += ["", "Data:", ""]
    lines += [f"- {DataSource(**source).describe(path=False)}" for source in profile.data.values()]
    if notes:
        lines += ["", "Chance and floor:", ""] + [f"- {note}" for note in notes]
    if profile.failed:
        lines += ["", "Failed runs:", ""] + [f"- {item['label']}: {item['error']}" for item in profile.failed]
    return "\n".join(lines) + "\n"


def draw_figure(profile: Profile, path: Path) -> None:
    """profile.png: one bar per headline row, with its chance (black) and floor (red) marked."""
    from medprobe.results import require_matplotlib

    plt = require_matplotlib()
    rows = [row for row in profile.headline if row["value"] is not None]
    labels = [f"{row['benchmark']}/{row['config'] or 'all'}\n{row['prober']} · {row['metric']}" for row in rows]
    fig, ax = plt.subplots(figsize=(8, 0.6 * max(len(rows), 1) + 1.6))
    positions = list(range(len(rows)))[::-1]
    errors = [
        [100 * (row["value"] - row["low"]) if row.get("low") is not None else 0 for row in rows],
        [100 * (row["high"] - row["value"]) if row.get("high") is not None else 0 for row in rows],
    ]
    bars = ax.barh(
        positions,
        [100 * row["value"] for row in rows],
        color="#3b75af",
        label="model (95% interval)",
        xerr=errors,
        error_kw={"ecolor": "#333333", "capsize": 3, "elinewidth": 1},
    )
    ax.bar_label(bars, labels=[f"{100 * row['value']:.1f}" for row in rows], padding=3, fontsize=8)
    for what, color, marker in (("chance", "black", "|"), ("floor", "#c44e52", "D")):
        marked = [(y, 100 * row[what]) for y, row in zip(positions, rows) if row[what] is not None]
        if marked:
            ax.scatter([x for _, x in marked], [y for y, _ in marked], color=color, marker=marker, s=140, zorder=3, label=what)
    ax.set_yticks(positions, labels, fontsize=8)
    ax.set_xlabel("headline metric (%)")
    ax.set_xlim(0, 100)
    ax.set_title(f"knowledge profile · {model_label(profile.model)} ({profile.kind})", fontsize=10)
    if rows:
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120, format="png")
    finally:
        plt.close(fig)


def write_profile(profile: Profile, out: Path, into: Path | None = None) -> list[Path]:
    """profile.json, profile.md and (with matplotlib) profile.png of the profile folder OUT, all or nothing,
    written into `into` (default OUT; `run_profile` writes its staging folder); profile.json records the
    sha256 of the other two in `files`."""
    from medprobe.building.cards import sha256

    into = into or out
    if not profile.figure_note:
        profile.figure = str(out / "profile.png")

    def write_table(temp: Path) -> None:
        temp.write_text(markdown(profile), encoding="utf-8")
        profile.files["profile.md"] = sha256(temp)

    def draw(temp: Path) -> None:
        draw_figure(profile, temp)
        profile.files["profile.png"] = sha256(temp)

    writers = [  # profile.json last: it records the others' sha256
        (into / "profile.md", write_table),
        (None if profile.figure_note else into / "profile.png", draw),
        (into / "profile.json", lambda temp: temp.write_text(profile.to_json(), encoding="utf-8")),
    ]
    return write_all_atomically(writers)


def check_headline(folder: Path, profile: dict, runs: dict[str, Any]) -> None:
    """Each headline row of profile.json is its run's headline number, interval, n and chance, and profile.md is
    the table those rows give (what `publish results` puts into a card)."""
    for row in profile.get("headline") or []:
        loaded = runs.get(row.get("run"))
        if loaded is None:
            continue
        record, metric = loaded.record, row.get("metric")
        interval = record.intervals.get(metric) or {}
        chance = (record.chance.get(metric) or {}).get("value")
        found = {"value": record.metrics.get(metric), "low": interval.get("low"), "high": interval.get("high")}
        found.update({"n": interval.get("n"), "chance": chance})
        for key, value in found.items():
            if key in row and row[key] != value:
                raise UserError(
                    f"{folder / 'profile.json'}: its headline {key} of run {row.get('run')} is {row[key]!r}, the run's "
                    f"record says {value!r}; the profile was edited: run `medprobe profile` again"
                )
    table = folder / "profile.md"
    try:
        expected = markdown(Profile(**profile))
    except (TypeError, KeyError) as err:
        raise UserError(f"{folder / 'profile.json'} is not a profile this medprobe can read ({err})") from None
    if table.is_file() and table.read_text(encoding="utf-8") != expected:
        raise UserError(f"{table} is not the table of {folder / 'profile.json'} (edited?); run `medprobe profile` again")


def summary(profile: Profile, out: Path) -> str:
    lines = [f"\nknowledge profile of {profile.model} ({profile.kind}), {profile.seconds:.0f} s:"]
    for row in profile.headline:
        extra = [f"{what} {percent(row[what])}" for what in ("chance", "floor") if row[what] is not None]
        value = percent(row["value"]) if row["value"] is not None else row.get("note", "—")
        if row.get("low") is not None:
            value += f" [{percent(row['low'])}, {percent(row['high'])}], n={row['n']:,}"
        lines.append(
            f"  {row['benchmark']}/{row['config'] or 'all'} {row['prober']}: {row['metric']} {value}"
            + (f" ({', '.join(extra)})" if extra else "")
        )
    lines += [f"  skipped {item['benchmark']}: {item['reason']}" for item in profile.skipped]
    lines += [f"  FAILED {item['label']}: {item['error']}" for item in profile.failed]
    # data that is not the benchmark itself, in full: what it is and why its scores are not the benchmark's
    lines += [f"  note: {DataSource(**source).describe(path=False)}" for source in profile.data.values() if source["sample"]]
    if profile.figure_note:
        lines.append(f"  note: {profile.figure_note}")
    written = ["profile.json", "profile.md"] + ([] if profile.figure_note else ["profile.png"])
    lines.append(f"wrote {', '.join(str(out / name) for name in written)}")
    return "\n".join(lines)
