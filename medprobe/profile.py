"""`medprobe profile`: one model, every benchmark that fits it, one knowledge-profile table.

    profile = run_profile(ProfileOptions(model="minilm", out="out/profile", data_dirs={"medlama": "/data/medlama"}))

The model's kind is read from its config (`model_kind`): an encoder without a masked-LM head, a
masked LM, a causal LM or a seq2seq LM. `plan_runs` turns the kind into benchmark/prober pairs and
a list of what is skipped, with the reason (no data, wrong model kind):

    benchmark          encoder                   masked LM                    causal LM        seq2seq
    medlama full+hard  contrastive               contrastive, mask-average    causal-lm        generative
    mst                mlm-head + scratch floor  mlm-head + scratch floor     skipped          skipped
    context_variance   contrastive (scorer)      mask-average                 causal-lm        skipped
    disknE             pair-classifier (data)    pair-classifier (data)       skipped          skipped

Every pair is one `medprobe.run.run(RunRequest(...))`, the same loop as `medprobe probe`, writing
DIR/runs/<label>.json (and <label>.predictions.jsonl for the tasks that write predictions); the
request of each run is recorded in profile.json with the `medprobe probe` command that repeats it.

Data (`--data-dir NAME=PATH`): a folder built by `medprobe build` (its README.md has a
`medprobe_build:` record) is read as it is; any other folder is a raw release, built first into
DIR/datasets/NAME. Without one: MedLAMA uses the small MedLAMA-format sample shipped for the demo
(not MedLAMA: its scores are not comparable, and the outputs say so); MST is generated into
DIR/datasets/mst; context variance is built from the sample corpus shipped with its builder into
DIR/datasets/context_variance (config real-target); DisKnE is skipped (no data).

`--quick` (QUICK below) keeps every benchmark but probes a subset: MedLAMA full and hard with the
first 10 queries of each relation; MST generated with 200 train / 20 validation / 100 test rows
per task and 1 seed; context variance with the first 5 instances of each relation; DisKnE with the
first 2 eligible diseases and 1 training epoch. With MiniLM and the real MedLAMA release it
finishes in under 10 minutes on 2 CPU cores.

Outputs: DIR/profile.json (model, kind, settings, data sources, every run's request and RunRecord,
one headline row per run that is not a floor, the skipped list, the sha256 of every file of the
folder), DIR/profile.md (the table) and DIR/profile.png (each headline against its chance level and
floor). matplotlib is an optional extra: without it the figure is left out, and profile.json and the
printed summary say so (the runs are not lost for want of a plot). The whole folder, runs/ and
datasets/ included, is written beside DIR under a lock and replaces DIR in one swap at the end; DIR
must be new, empty or a profile medprobe wrote (`overwrite` replaces anything); a profile killed
before is resumed, reusing its runs of the same request (medprobe/profile_folder.py).

Every headline row carries the run's 95% interval and n (`medprobe.stats`) and its chance level,
as the run recorded them (`RunRecord.chance`): MedLAMA acc@k of a uniformly random order of each
query's candidates (exact, with its gold answers); MST 1/|choices| (the mean over its tasks);
context variance the UCM shares of two independent random rankings of each step's candidates;
DisKnE the F1 of the always-positive classifier. MST also has, as the floor, the same
architecture with random weights (the `--scratch` run).
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
from medprobe.atomic import check_creatable, write_all_atomically
from medprobe.registry import task_entry

BENCHMARKS = ("medlama", "mst", "context_variance", "disknE")
MEDLAMA_CONFIGS = ("full", "hard")
CONTEXT_VARIANCE_CONFIG = "real-target"  # the builder's default config: real context, centred on the target
DISKNE_CONFIG = "medical_similar"  # the builder's default variant
MEDLAMA_SAMPLE = Path(__file__).resolve().parent / "demo_data" / "medlama_sample"  # what `medprobe demo` probes too
MST_CAUSAL_REASON = "MST needs a masked-LM head (choice scoring with a causal LM is not implemented)"

# What --quick changes, per benchmark: options of the task, of the prober, and of the build.
QUICK: dict[str, dict[str, dict[str, Any]]] = {
    "medlama": {"task": {"per_relation": 10}},
    "mst": {"task": {"seeds": 1}, "build": {"train_size": 200, "validation_size": 20, "test_size": 100}},
    "context_variance": {"task": {"per_relation": 5}},
    "disknE": {"task": {"diseases": 2}, "prober": {"epochs": 1}},
}
QUICK_HELP = (
    "a subset that finishes in under 10 minutes on 2 CPU cores with MiniLM and the real MedLAMA: MedLAMA full and "
    "hard with the first 10 queries of each relation (--per-relation 10); MST generated with 200 train / 20 "
    "validation / 100 test rows per task and 1 seed (--seeds 1); context variance with the first 5 instances "
    "of each relation (--per-relation 5); DisKnE (only with its data) with the first 2 diseases (--diseases 2) "
    "and 1 epoch (--epochs 1)"
)

# Which probers serve a model kind on each benchmark.
MEDLAMA_PROBERS = {
    "encoder": ("contrastive",),
    "masked-lm": ("contrastive", "mask-average"),
    "causal-lm": ("causal-lm",),
    "seq2seq": ("generative",),
}
CONTEXT_VARIANCE_SCORER = {"encoder": "contrastive", "masked-lm": "mask-average", "causal-lm": "causal-lm"}
KIND_NAMES = {
    "encoder": "an encoder without a masked-LM head",
    "masked-lm": "a masked LM",
    "causal-lm": "a causal LM",
    "seq2seq": "a seq2seq (encoder-decoder) LM",
}


@dataclass(frozen=True)
class PlannedRun:
    """One benchmark/prober pair of a profile, before its data is known."""

    benchmark: str
    task: str
    prober: str
    config: str | None
    prober_options: dict = field(default_factory=dict)
    floor_of: str | None = None  # the label of the run this one is the floor of (MST's scratch twin)

    @property
    def label(self) -> str:
        parts = [self.benchmark, self.config, self.prober, "scratch" if self.prober_options.get("scratch") else None]
        return "-".join(part for part in parts if part)

    @property
    def title(self) -> str:
        scratch = " (scratch floor)" if self.floor_of else ""
        return f"{self.benchmark}/{self.config or 'all'} {self.prober}{scratch}"


@dataclass(frozen=True)
class Skipped:
    benchmark: str
    reason: str
    prober: str | None = None
    config: str | None = None


@dataclass
class DataSource:
    benchmark: str
    dataset: str  # what the runs pass as --dataset
    source: str  # "built folder", "built from a release folder", "shipped sample", "generated", ...
    note: str = ""
    sample: bool = False  # not the benchmark itself: not comparable, not published as its eval results

    def describe(self, path: bool = True) -> str:
        """One line; `path=False` for profile.md, which may go into a public model card."""
        where = f" ({self.dataset})" if path else ""
        return f"{self.benchmark}: {self.source}{where}" + (f"; {self.note}" if self.note else "")


@dataclass
class ProfileOptions:
    model: str
    out: str
    benchmarks: tuple[str, ...] = BENCHMARKS
    data_dirs: dict[str, str] = field(default_factory=dict)
    quick: bool = False
    device: str = "auto"
    seed: int | None = None
    overwrite: bool = False  # replace --out even when it holds files that are not a medprobe profile's


# --- the model's kind --------------------------------------------------------------------------------


def model_kind(config: Any) -> tuple[str, str]:
    """(kind, why) of a model from its config: `encoder`, `masked-lm`, `causal-lm` or `seq2seq`.

    The saved class names (`architectures`) say whether a checkpoint has a head; without them a
    bidirectional model type is taken as an encoder, the kind that needs no head."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    architectures = list(getattr(config, "architectures", None) or [])
    model_type = getattr(config, "model_type", "?")
    named = f"architectures {', '.join(architectures)}" if architectures else f"model type {model_type!r}"
    if getattr(config, "is_encoder_decoder", False):
        return "seq2seq", f"{named}: an encoder-decoder"
    if any(name.endswith(("ForMaskedLM", "ForPreTraining")) for name in architectures):
        return "masked-lm", f"{named}: a masked-LM head"
    if any(name.endswith(("ForCausalLM", "LMHeadModel")) for name in architectures):
        return "causal-lm", f"{named}: a causal-LM head"
    bidirectional = model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES and not getattr(config, "is_decoder", False)
    if bidirectional:
        return "encoder", f"{named}: a bidirectional encoder without a masked-LM head"
    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "causal-lm", f"{named}: a decoder-only model type"
    raise UserError(
        f"cannot tell what kind of model this is ({named}); medprobe profile takes an encoder, a masked LM, "
        "a causal LM or a seq2seq LM — run single benchmarks with `medprobe probe` instead"
    )


def load_model_kind(model: str) -> tuple[str, str]:
    from medprobe.models import load_config

    return model_kind(load_config(model))


# --- the plan ----------------------------------------------------------------------------------------


def plan_runs(
    kind: str, benchmarks: tuple[str, ...] = BENCHMARKS, data: frozenset[str] | set[str] = frozenset()
) -> tuple[list[PlannedRun], list[Skipped]]:
    """The runs for a model of `kind` and what is skipped, with the reason; `data` names the
    benchmarks whose data was given (only DisKnE has no default data)."""
    runs: list[PlannedRun] = []
    skipped: list[Skipped] = []
    wrong = f"wrong model kind: the model is {KIND_NAMES[kind]}"
    for benchmark in benchmarks:
        if benchmark == "medlama":
            runs += [
                PlannedRun("medlama", "medlama", prober, config) for config in MEDLAMA_CONFIGS for prober in MEDLAMA_PROBERS[kind]
            ]
        elif benchmark == "mst":
            if kind in ("encoder", "masked-lm"):
                model_run = PlannedRun("mst", "mst", "mlm-head", None)
                runs += [model_run, PlannedRun("mst", "mst", "mlm-head", None, {"scratch": True}, floor_of=model_run.label)]
            elif kind == "causal-lm":
                skipped.append(Skipped("mst", MST_CAUSAL_REASON, "mlm-head"))
            else:
                skipped.append(
                    Skipped("mst", f"{wrong}; MST's mlm-head prober trains a masked-LM head on an encoder", "mlm-head")
                )
        elif benchmark == "context_variance":
            scorer = CONTEXT_VARIANCE_SCORER.get(kind)
            if scorer:
                runs.append(PlannedRun("context_variance", "context_variance", scorer, CONTEXT_VARIANCE_CONFIG))
            else:
                skipped.append(
                    Skipped(
                        "context_variance",
                        f"{wrong}; context variance needs a prober that scores candidates (the generative prober only generates)",
                        config=CONTEXT_VARIANCE_CONFIG,
                    )
                )
        elif benchmark == "disknE":
            if kind not in ("encoder", "masked-lm"):
                skipped.append(
                    Skipped("disknE", f"{wrong}; DisKnE fine-tunes an encoder as a pair classifier", "pair-classifier")
                )
            elif "disknE" not in data:
                skipped.append(
                    Skipped(
                        "disknE",
                        "no data: DisKnE is built from licensed MedNLI and UMLS files; pass "
                        "--data-dir disknE=PATH (a release folder, or a folder built by `medprobe build disknE`)",
                        "pair-classifier",
                        DISKNE_CONFIG,
                    )
                )
            else:
                runs.append(PlannedRun("disknE", "disknE", "pair-classifier", DISKNE_CONFIG))
        else:
            raise UserError(f"unknown benchmark {benchmark!r}; choose from {', '.join(BENCHMARKS)}")
    return runs, skipped


# --- data ---------------------------------------------------------------------------------------------


def build_record(folder: Path) -> dict | None:
    """The `medprobe_build:` record of a folder's card (benchmark, configs, ...), or None."""
    from medprobe.building.build import CARD, card_meta
    from medprobe.building.cards import RECORD_KEY

    meta = card_meta(folder / CARD) if (folder / CARD).is_file() else None
    record = (meta or {}).get(RECORD_KEY)
    return record if isinstance(record, dict) else None


def built_benchmark(folder: Path) -> str | None:
    """The benchmark a `medprobe build` folder holds, or None for any other folder."""
    return (build_record(folder) or {}).get("benchmark")


def missing_configs(planned: list[PlannedRun], data: dict[str, DataSource]) -> tuple[list[PlannedRun], list[Skipped]]:
    """Runs whose config a given `medprobe build` folder lacks are skipped (no data), not failed after the others."""
    kept, skipped = [], []
    for item in planned:
        record = build_record(Path(data[item.benchmark].dataset).expanduser())
        configs = record.get("configs") if record else None
        if item.config and isinstance(configs, dict) and item.config not in configs:
            reason = f"no data: the folder built by `medprobe build` has no {item.config} config (it has {', '.join(configs)})"
            skipped.append(Skipped(item.benchmark, reason, item.prober, item.config))
        else:
            kept.append(item)
    return kept, skipped


def check_data_dirs(data_dirs: dict[str, str], benchmarks: tuple[str, ...]) -> None:
    """Every --data-dir names a profiled benchmark and an existing folder (before anything runs)."""
    for name, path in data_dirs.items():
        if name not in BENCHMARKS:
            raise UserError(f"--data-dir {name}={path}: unknown benchmark {name!r}; use one of {', '.join(BENCHMARKS)}")
        if name not in benchmarks:
            raise UserError(f"--data-dir {name}={path}: {name} is not among --benchmarks ({', '.join(benchmarks)})")
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise UserError(
                f"--data-dir {name}={path}: no such folder; give a release folder or a `medprobe build {name}` folder"
            )
        built = built_benchmark(folder)
        if built is not None and built != name:
            raise UserError(f"--data-dir {name}={path}: that folder is a medprobe build of {built!r}, not of {name!r}")
        if name == "mst" and built is None:
            raise UserError(
                f"--data-dir mst={path}: MST is generated, it has no release; give a folder built by "
                "`medprobe build mst`, or leave --data-dir mst out to generate it"
            )


def prepare_data(
    options: ProfileOptions, benchmarks: list[str], print_fn: Callable[[str], None] = print
) -> dict[str, DataSource]:
    """The dataset of each benchmark that has runs: a given built folder as it is, else built into DIR/datasets."""
    sources: dict[str, DataSource] = {}
    for name in benchmarks:
        given = options.data_dirs.get(name)
        if given and built_benchmark(Path(given).expanduser()) == name:
            sources[name] = DataSource(name, str(given), "a folder built by `medprobe build`")
        elif name == "medlama" and not given:
            sources[name] = medlama_sample()
        else:
            sources[name] = build_into(options, name, given, print_fn)
        print_fn(f"data: {sources[name].describe()}")
    return sources


def medlama_sample() -> DataSource:
    return DataSource(
        "medlama",
        str(MEDLAMA_SAMPLE),
        "the MedLAMA-format sample shipped with medprobe (108 textbook facts)",
        note="no --data-dir medlama=PATH given: this is NOT MedLAMA and its scores are not comparable with MedLAMA's",
        sample=True,
    )


def build_into(options: ProfileOptions, name: str, data_dir: str | None, print_fn: Callable[[str], None]) -> DataSource:
    from medprobe.building.build import build

    out = Path(options.out) / "datasets" / name  # in the profile's staging folder: new, whatever OUT holds
    params = QUICK.get(name, {}).get("build", {}) if options.quick else {}
    configs = {"medlama": list(MEDLAMA_CONFIGS), "context_variance": [CONTEXT_VARIANCE_CONFIG], "disknE": [DISKNE_CONFIG]}.get(
        name
    )
    where = f"the release folder {data_dir}" if data_dir else "its default source"
    print_fn(f"building {name} from {where} into {out} ...")
    start = time.perf_counter()
    built: list[tuple[int, float]] = []
    if distributed.is_main_process():  # under a launch one process builds, the others wait and read it
        report = build(name, out, data_dir=data_dir, configs=configs, params=params, overwrite=True)
        built.append((sum(sum(splits.values()) for splits in report.rows.values()), time.perf_counter() - start))
    [(rows, seconds)] = distributed.gather(built)  # the main process's figures, on every process
    if data_dir:
        return DataSource(
            name, str(out), "built from a release folder (--data-dir)", note=f"{rows:,} rows, built in {seconds:.0f} s"
        )
    if name == "context_variance":
        return DataSource(
            name,
            str(out),
            "built from the sample corpus shipped with the context-variance builder",
            note=f"{rows:,} rows; a synthetic sample, not the paper's corpus",
            sample=True,
        )
    sizes = ", ".join(f"{key}={value}" for key, value in params.items()) or "the builder's default sizes"
    return DataSource(name, str(out), "generated by the MST builder", note=f"{sizes}; {rows:,} rows")


# --- requests ------------------------------------------------------------------------------------------


def task_options_for(planned: PlannedRun, options: ProfileOptions, runs_dir: Path) -> dict:
    task = dict(QUICK.get(planned.benchmark, {}).get("task", {})) if options.quick else {}
    if any(option.dest == "predictions" for option in task_entry(planned.task).options):
        task["predictions"] = str(runs_dir / f"{planned.label}.predictions.jsonl")
    return task


def prober_options_for(planned: PlannedRun, options: ProfileOptions) -> dict:
    quick = QUICK.get(planned.benchmark, {}).get("prober", {}) if options.quick else {}
    return {**quick, **planned.prober_options}


def make_request(planned: PlannedRun, data: DataSource, options: ProfileOptions) -> Any:
    from medprobe.run import RunRequest

    runs_dir = Path(options.out) / "runs"
    return RunRequest(
        task=planned.task,
        prober=planned.prober,
        dataset=data.dataset,
        config=planned.config,
        split="test",
        model=options.model,
        seed=options.seed,
        device=options.device,
        prober_options=prober_options_for(planned, options),
        task_options=task_options_for(planned, options, runs_dir),
        out=str(runs_dir / f"{planned.label}.json"),
    )


# --- headline rows ------------------------------------------------------------------------------------


def headline_row(planned: PlannedRun, record: Any, floor_record: Any | None) -> dict:
    """One row of the profile table: the task's headline metric and, where defined, chance and floor."""
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
        row["floor_source"] = f"the same architecture with random weights (--scratch), run {planned.label}-scratch"
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
        return "matplotlib is not installed, so profile.png was not drawn: pip install 'medprobe[plot]'"
    return ""


def check_outputs(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder for the profile")
    check_creatable(out, "--out")  # the profile is staged beside OUT and swapped in: OUT's folder must be writable


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
    floors = {p.floor_of: p.label for p in planned if p.floor_of}
    rows = []
    for item in planned:
        if item.floor_of:
            continue
        if item.label in records:
            floor = records.get(floors.get(item.label, ""))
            row = headline_row(item, records[item.label], floor)
            if item.label in floors and floor is None:
                row["floor_source"] = f"the scratch run failed: {errors.get(floors[item.label], 'no record')}"
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
    lines += [f"  note: {source['benchmark']}: {source['note']}" for source in profile.data.values() if source["sample"]]
    if profile.figure_note:
        lines.append(f"  note: {profile.figure_note}")
    written = ["profile.json", "profile.md"] + ([] if profile.figure_note else ["profile.png"])
    lines.append(f"wrote {', '.join(str(out / name) for name in written)}")
    return "\n".join(lines)
