"""What `medprobe profile` runs for a model, read from the registry: the plan, the data, the requests.

Every task entry with a `ProfilePlan` (medprobe.registry) is profiled; nothing here names a benchmark.
`plan_runs` turns the model's kind (medprobe.models.model_kind) into benchmark/prober pairs and a list
of what is skipped, with the reason:

- a kind the plan gives probers gets one run per config and prober (plus, where the plan has a floor,
  a floor run of the same prober with the floor's options right after it, e.g. random weights);
- any other kind is skipped: "wrong model kind: the model is <kind>; <the plan's reason>";
- a benchmark whose plan has no data of its own (`without_data="skip"`) is skipped without
  `--data-dir NAME=PATH`, with the plan's `data_text`.

Data (`prepare_data`): a folder built by `medprobe build` (its README.md has a `medprobe_build:`
record) is read as it is; any other folder is a raw release, built first into DIR/datasets/NAME.
Without one, the plan says: a sample shipped with medprobe (`sample`, probed as it is), or the
builder's default source built into DIR/datasets/NAME (`build`: generated data, or a sample corpus
the builder ships). Data that is not the benchmark itself (`sample_is_benchmark=False`) is marked
`sample`: its scores are not comparable, the outputs say so and `publish` leaves them out.

`--quick` (`quick_settings()`) takes each plan's `quick` options of the task, of the prober and of the build.

The validity facets (issue 39): a profile asks for everything a model and its data allow (`facet_options`),
read from the options the task and prober take, not from a benchmark's name: the widest `--variants` the data
holds (`all` where a build from a UMLS release has subject synonyms, else `templates`; none for a build without a
variants config) and `--memorisation` where the prober has it and the task ranks (causal LMs on MedLAMA). The control, confidence and clustered
intervals are on by default in every ranking run.

Each planned run becomes one `medprobe.run.RunRequest` (`make_request`): the same loop as
`medprobe probe`, writing DIR/runs/<label>.json (and <label>.predictions.jsonl for the tasks that
have a --predictions option).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medprobe import distributed
from medprobe.atomic import shown_path
from medprobe.contracts import UserError
from medprobe.local_paths import check_local_path
from medprobe.registry import ProfilePlan, TaskEntry, registry, task_entry

KIND_NAMES = {
    "encoder": "an encoder without a masked-LM head",
    "masked-lm": "a masked LM",
    "causal-lm": "a causal LM",
    "seq2seq": "a seq2seq (encoder-decoder) LM",
}
MODEL_KIND_HINT = f"or give --model-kind ({', '.join(KIND_NAMES)}) when a plugin's prober reads this model itself"


def profiled() -> list[TaskEntry]:
    """The task entries `medprobe profile` runs, in registry order."""
    return [entry for entry in registry().tasks.values() if entry.profile is not None]


def profiled_benchmarks() -> tuple[str, ...]:
    """The benchmarks `medprobe profile` runs (its --benchmarks choices and default), in registry order."""
    return tuple(dict.fromkeys(entry.benchmark for entry in profiled()))


def quick_settings() -> dict[str, dict[str, dict[str, Any]]]:
    """What --quick changes, per task: options of the task, of the prober and of the build (recorded in profile.json)."""
    return {entry.name: entry.profile.quick for entry in profiled()}


def quick_help() -> str:
    return "a subset of every benchmark that finishes in under 10 minutes on 2 CPU cores with MiniLM: " + "; ".join(
        entry.profile.quick_text for entry in profiled() if entry.profile.quick_text
    )


def plans_of(benchmark: str) -> list[tuple[TaskEntry, ProfilePlan]]:
    return [(entry, entry.profile) for entry in profiled() if entry.benchmark == benchmark]


@dataclass(frozen=True)
class PlannedRun:
    """One benchmark/prober pair of a profile, before its data is known."""

    benchmark: str
    task: str
    prober: str
    config: str | None
    prober_options: dict = field(default_factory=dict)
    floor_of: str | None = None  # the label of the run this one is the floor of (e.g. its random-weights twin)

    @property
    def floor_name(self) -> str:
        """A floor run's options as words of its label: {"scratch": True} -> "scratch"."""
        return "-".join(key if value is True else f"{key}-{value}" for key, value in self.prober_options.items())

    @property
    def label(self) -> str:
        parts = [self.benchmark, self.config, self.prober, self.floor_name if self.floor_of else None]
        return "-".join(part for part in parts if part)

    @property
    def title(self) -> str:
        floor = f" ({self.floor_name} floor)" if self.floor_of else ""
        return f"{self.benchmark}/{self.config or 'all'} {self.prober}{floor}"


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
        where = f" ({shown_path(self.dataset)})" if path else ""  # as in OUT, not in the staging folder
        return f"{self.benchmark}: {self.source}{where}" + (f"; {self.note}" if self.note else "")


@dataclass
class ProfileOptions:
    model: str
    out: str
    benchmarks: tuple[str, ...] = field(default_factory=profiled_benchmarks)
    data_dirs: dict[str, str] = field(default_factory=dict)
    quick: bool = False
    device: str = "auto"
    seed: int | None = None
    overwrite: bool = False  # replace --out even when it holds files that are not a medprobe profile's
    model_kind: str | None = None  # the model's kind, given (--model-kind) rather than read from its config


# --- the plan ----------------------------------------------------------------------------------------


def only(values: list) -> Any:
    """The one distinct value of `values`, or None when there are several (or none)."""
    distinct = list(dict.fromkeys(values))
    return distinct[0] if len(distinct) == 1 else None


def plan_runs(
    kind: str, benchmarks: tuple[str, ...] | None = None, data: frozenset[str] | set[str] = frozenset()
) -> tuple[list[PlannedRun], list[Skipped]]:
    """The runs for a model of `kind` and what is skipped, with the reason; `benchmarks` (default: all)
    are those profiled, `data` names the benchmarks whose data was given (`--data-dir`)."""
    known = profiled_benchmarks()
    benchmarks = known if benchmarks is None else benchmarks
    unknown = [name for name in benchmarks if name not in known]
    if unknown:
        raise UserError(f"unknown benchmark {unknown[0]!r}; choose from {', '.join(known)}")
    runs: list[PlannedRun] = []
    skipped: list[Skipped] = []
    for entry in profiled():
        if entry.benchmark not in benchmarks:
            continue
        plan = entry.profile
        # what a skip names: the benchmark's one prober and one config, where it has only one
        prober = only([name for names in plan.probers.values() for name in names])
        config = only(list(plan.configs))
        if kind not in plan.probers:
            why = plan.skip.get(kind, f"no prober of {entry.name} takes this kind of model")
            skipped.append(Skipped(entry.benchmark, f"wrong model kind: the model is {KIND_NAMES[kind]}; {why}", prober, config))
        elif plan.without_data == "skip" and entry.benchmark not in data:
            skipped.append(Skipped(entry.benchmark, plan.data_text, prober, config))
        else:
            runs += planned_runs(entry, kind)
    return runs, skipped


def planned_runs(entry: TaskEntry, kind: str) -> list[PlannedRun]:
    """One run per config and prober of the plan for `kind`, each followed by its floor run (if the plan has one)."""
    plan = entry.profile
    runs = []
    for config in plan.configs:
        for prober in plan.probers[kind]:
            model_run = PlannedRun(entry.benchmark, entry.name, prober, config)
            runs.append(model_run)
            if plan.floor:
                runs.append(PlannedRun(entry.benchmark, entry.name, prober, config, dict(plan.floor), model_run.label))
    return runs


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
    known = profiled_benchmarks()
    for name, path in data_dirs.items():
        if name not in known:
            raise UserError(f"--data-dir {name}={path}: unknown benchmark {name!r}; use one of {', '.join(known)}")
        if name not in benchmarks:
            raise UserError(f"--data-dir {name}={path}: {name} is not among --benchmarks ({', '.join(benchmarks)})")
        folder = check_local_path(path, f"--data-dir {name}=", f"give a release folder or a `medprobe build {name}` folder")
        if not folder.is_dir():
            raise UserError(f"--data-dir {name}={path} is a file; give a release folder or a `medprobe build {name}` folder")
        built = built_benchmark(folder)
        if built is not None and built != name:
            raise UserError(f"--data-dir {name}={path}: that folder is a medprobe build of {built!r}, not of {name!r}")
        if built is None and not all(plan.release for _, plan in plans_of(name)):
            raise UserError(
                f"--data-dir {name}={path}: {name} is generated, it has no release; give a folder built by "
                f"`medprobe build {name}`, or leave --data-dir {name} out to generate it"
            )


def prepare_data(
    options: ProfileOptions, benchmarks: list[str], print_fn: Callable[[str], None] = print
) -> dict[str, DataSource]:
    """The dataset of each benchmark that has runs: a given built folder as it is, the shipped sample
    its plan names, or a build into DIR/datasets (of the given release folder, or of the builder's default source)."""
    sources: dict[str, DataSource] = {}
    for name in benchmarks:
        given = options.data_dirs.get(name)
        plan = plans_of(name)[0][1]
        if given and built_benchmark(Path(given).expanduser()) == name:
            sources[name] = DataSource(name, str(given), "a folder built by `medprobe build`")
        elif plan.without_data == "sample" and not given:
            sources[name] = sample_source(name, plan)
        else:
            sources[name] = build_into(options, name, given, print_fn)
        print_fn(f"data: {sources[name].describe()}")
    return sources


def sample_folder(plan: ProfilePlan) -> Path:
    """The shipped sample a plan probes without --data-dir (relative to the medprobe package, or absolute)."""
    from medprobe.resources import shipped_sample

    return shipped_sample(plan.sample)


def sample_source(name: str, plan: ProfilePlan) -> DataSource:
    return DataSource(
        name,
        str(sample_folder(plan)),
        f"a sample shipped with medprobe (no --data-dir {name}=PATH given)",
        note=plan.data_text,
        sample=not plan.sample_is_benchmark,
    )


def build_settings(name: str, quick: bool) -> tuple[list[str] | None, dict]:
    """(configs, builder parameters) of a benchmark's build for a profile: the configs its plans
    profile (None: all, when a plan leaves the config to the task) and, with --quick, their quick build parameters."""
    plans = plans_of(name)
    configs = list(dict.fromkeys(config for _, plan in plans for config in plan.configs))
    params = {key: value for entry, plan in plans for key, value in plan.quick.get("build", {}).items()}
    return (None if None in configs else configs), (params if quick else {})


def build_into(options: ProfileOptions, name: str, data_dir: str | None, print_fn: Callable[[str], None]) -> DataSource:
    from medprobe.building.build import build

    out = Path(options.out) / "datasets" / name  # in the profile's staging folder: new, whatever OUT holds
    configs, params = build_settings(name, options.quick)
    where = f"the release folder {data_dir}" if data_dir else "its default source"
    print_fn(f"building {name} from {where} into {shown_path(out)} ...")
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
    plan = plans_of(name)[0][1]
    sizes = ", ".join(f"{key}={value}" for key, value in params.items()) or "the builder's default sizes"
    return DataSource(name, str(out), plan.data_text, note=f"{sizes}; {rows:,} rows", sample=not plan.sample_is_benchmark)


# --- requests ------------------------------------------------------------------------------------------


def facet_options(planned: PlannedRun, dataset: str) -> tuple[dict, dict]:
    """(task options, prober options) asking for every validity facet beyond the defaults that the task, the prober
    and the data allow: --variants at its widest for the data, --memorisation where the prober records it. A floor
    run asks for none: it is the model run's baseline, not a profile of its own."""
    from medprobe.registry import prober_entry

    if planned.floor_of:
        return {}, {}
    task: dict = {}
    if any(option.dest == "variants" for option in task_entry(planned.task).options):
        from medprobe.tasks.variants import widest_mode

        mode = widest_mode(dataset, "test")
        task = {"variants": mode} if mode != "none" else {}
    # the memorisation signal is a ranking task's facet (medprobe.tasks.memorisation): a prober that records it,
    # on a task that ranks (context variance scores candidates and never asks for it)
    records_it = any(option.dest == "memorisation" for option in prober_entry(planned.prober).options)
    prober = {"memorisation": True} if records_it and "ranking" in task_entry(planned.task).accepts else {}
    return task, prober


def task_options_for(planned: PlannedRun, options: ProfileOptions, runs_dir: Path, facets: dict | None = None) -> dict:
    task = dict(quick_settings().get(planned.task, {}).get("task", {})) if options.quick else {}
    task.update(facets or {})
    if any(option.dest == "predictions" for option in task_entry(planned.task).options):
        task["predictions"] = str(runs_dir / f"{planned.label}.predictions.jsonl")
    return task


def prober_options_for(planned: PlannedRun, options: ProfileOptions, facets: dict | None = None) -> dict:
    quick = quick_settings().get(planned.task, {}).get("prober", {}) if options.quick else {}
    return {**quick, **(facets or {}), **planned.prober_options}


def make_request(planned: PlannedRun, data: DataSource, options: ProfileOptions) -> Any:
    from medprobe.run import RunRequest

    runs_dir = Path(options.out) / "runs"
    task_facets, prober_facets = facet_options(planned, data.dataset)
    return RunRequest(
        task=planned.task,
        prober=planned.prober,
        dataset=data.dataset,
        config=planned.config,
        split="test",
        model=options.model,
        seed=options.seed,
        device=options.device,
        prober_options=prober_options_for(planned, options, prober_facets),
        task_options=task_options_for(planned, options, runs_dir, task_facets),
        out=str(runs_dir / f"{planned.label}.json"),
    )
