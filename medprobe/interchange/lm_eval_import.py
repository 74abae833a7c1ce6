"""`medprobe import lm-eval OUTPUT_DIR`: an lm-evaluation-harness run of tasks `medprobe export lm-eval` wrote, read back
as medprobe records, one per exported benchmark config, each with its per-item outcomes.

    paths = import_lm_eval("out/lm_eval", out="runs")      # runs/medprobe_mst_all_<time>.json, ...

Every item is identified by its medprobe id and content digest, recomputed from the doc lm-eval logged and checked
against the digest the exported task stamped it with (so an imported run pairs with medprobe's own in `compare`);
its outcome is recomputed from the logged log-likelihoods and checked against lm-eval's per-doc value, and every
number lm-eval reported for the tasks and groups against the record's. The record is written through the one
writer (medprobe.records.write) and read back through the one loader (medprobe.records.load_run), like any run.
It says it was scored by lm-eval (`prober` "lm-eval", `settings.scored_by`, `source.lm_eval`), names the model,
backend and arguments lm-eval recorded, lm-eval's version and the task versions, and repeats as an lm_eval command.

Refused, in one line: a folder without lm-eval results or without samples (`--log_samples`), a run of no task
medprobe exported (or exported by a medprobe that did not stamp its docs), logs of other data than the export's,
and a partial run (`--limit`, or some of a record's tasks) unless `--allow-subset`, which records it as a subset
(with what was probed of what), so that it never passes for the benchmark.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from medprobe.contracts import UserError
from medprobe.digests import sha256_file
from medprobe.export.lm_eval import METADATA_FORMAT, exporters
from medprobe.interchange.lm_eval_run import LoggedRun, format_number, read_run
from medprobe.registry import load, registry
from medprobe.tasks.lm_eval_logs import Imported, LoggedTask

ALLOW_SUBSET = "--allow-subset"
PROBER = "lm-eval"  # the record's prober: the numbers are lm-eval's


@dataclass
class Plan:
    """The exported tasks of one record, as this run holds them."""

    benchmark: str
    task: str  # the registry task (medlama, mst)
    config: str | None  # the record's config (None: every config of the benchmark, as MST's run of all its tasks)
    exported: tuple[str, ...]  # every task the record is made of, as exported
    items: int  # their items, as exported
    tasks: list[str] = field(default_factory=list)  # those this run holds, in the export's order

    @property
    def name(self) -> str:
        return f"{self.benchmark}/{self.config or 'all'}"


def import_lm_eval(
    output: str | Path, out: str | Path | None = None, *, allow_subset: bool = False, overwrite: bool = False
) -> list[Path]:
    """Read the lm-eval run at OUTPUT (its folder, its model's folder, or its results JSON) and write one record per
    exported benchmark config into `out` (default: beside lm-eval's results JSON); returns the results JSONs written."""
    start = time.perf_counter()
    run = read_run(Path(output).expanduser())
    plans = plan_records(run)
    folder = Path(out).expanduser() if out is not None else run.path.parent
    targets = {plan.name: folder / f"medprobe_{plan.benchmark}_{plan.config or 'all'}_{run.time}.json" for plan in plans}
    subsets = {plan.name: subset_of(run, plan) for plan in plans}
    partial = [(plan, subsets[plan.name]) for plan in plans if subsets[plan.name]["subset"]]
    if partial and not allow_subset:
        plan, subset = partial[0]
        raise UserError(
            f"{run.path}: a partial run of {plan.name} ({subset['why']}: {subset['of']['probed']:,} of "
            f"{subset['of']['total']:,} {subset['of']['unit']}); its numbers are not the benchmark's: run lm_eval over "
            f"every task without --limit, or pass {ALLOW_SUBSET} to import it recorded as a subset"
        )
    check_samples(run, plans)
    if not overwrite:
        check_outputs(targets)
    built = [build_record(run, plan, subsets[plan.name], targets[plan.name]) for plan in plans]  # all checked, then written
    written = []
    for plan, (record, outcomes_text, predictions) in zip(plans, built):
        record.timings["import"] = round(time.perf_counter() - start, 3)
        written.append(write_record(record, targets[plan.name], outcomes_text, predictions))
    return written


# --- which records the run makes ------------------------------------------------------------------


def plan_records(run: LoggedRun) -> list[Plan]:
    """The records of the run's exported tasks, by benchmark and config; UserError when it holds none."""
    hooks = exporters()
    plans: dict[tuple, Plan] = {}
    foreign = []
    for task in run.results.get("configs") or {}:
        metadata = (run.task_config(task).get("metadata") or {}).get("medprobe")
        if not isinstance(metadata, dict):
            if task.startswith("medprobe_"):
                raise UserError(
                    f"{run.path}: task {task} carries no medprobe metadata: it was exported by an older medprobe (export "
                    "it again with `medprobe export lm-eval` and rerun lm_eval), or by a plugin whose export records none"
                )
            foreign.append(task)
            continue
        if metadata.get("format") != METADATA_FORMAT or metadata.get("benchmark") not in hooks:
            raise UserError(
                f"{run.path}: task {task} was exported by {metadata.get('exported_by', 'another medprobe')} in a form this "
                f"medprobe does not read (format {metadata.get('format')!r}, benchmark {metadata.get('benchmark')!r})"
            )
        record = metadata["record"]
        key = (metadata["benchmark"], record["config"], tuple(record["tasks"]))
        if key not in plans:
            plans[key] = Plan(
                metadata["benchmark"], registry_task(metadata["benchmark"]), record["config"], key[2], record["items"]
            )
        plans[key].tasks.append(task)
    if not plans:
        raise UserError(
            f"{run.path}: the run holds no task exported by medprobe (it ran {', '.join(foreign) or 'no task'}); "
            "`medprobe import lm-eval` reads runs of the tasks `medprobe export lm-eval` writes"
        )
    if foreign:
        print(f"medprobe: not imported (not exported by medprobe): {', '.join(foreign)}")
    for plan in plans.values():
        plan.tasks.sort(key=plan.exported.index)
        if plan.config is None and len(plan.tasks) == 1:  # one config of a benchmark whose record covers them all
            plan.config = run.task_config(plan.tasks[0])["metadata"]["medprobe"]["config"]
            plan.exported, plan.items = (plan.tasks[0],), run.task_config(plan.tasks[0])["metadata"]["medprobe"]["items"]
    return list(plans.values())


def registry_task(benchmark: str) -> str:
    """The registry task whose lm-eval export wrote the benchmark's tasks."""
    hook = exporters()[benchmark]
    return next(name for name, entry in registry().tasks.items() if entry.lm_eval == hook)


def subset_of(run: LoggedRun, plan: Plan) -> dict:
    """What of the record's items the run probed: {"subset", "why", "options", "of"} (`of`: probed, total, unit)."""
    missing = [task for task in plan.exported if task not in plan.tasks]
    probed, why = 0, []
    for task in plan.tasks:
        exported = run.task_config(task)["metadata"]["medprobe"]["items"]
        original, effective = run.sample_counts(task)
        if original is not None and original != exported:
            raise UserError(
                f"{run.path}: lm-eval read {original} docs for {task}, the export recorded {exported}: other data than was exported"
            )
        probed += exported if effective is None else effective
    limit = run.config.get("limit")
    if isinstance(limit, float) and limit.is_integer():
        limit = int(limit)  # lm-eval records --limit 5 as 5.0
    if probed < plan.items and limit is not None:
        why.append(f"lm_eval --limit {format_number(limit)}")
    if missing:
        why.append(f"{len(missing)} of its {len(plan.exported)} tasks not run")
    unit = outcome_units(plan.task)
    subset = probed < plan.items or bool(missing)
    options: dict = {"limit": limit} if subset and limit is not None else {}
    if missing:
        options["tasks"] = ",".join(plan.tasks)
    return {
        "subset": subset,
        "why": ", ".join(why) or "fewer docs than exported",
        "options": options,
        "of": {"probed": probed, "total": plan.items, "unit": unit},
    }


def outcome_units(task: str) -> str:
    """`queries`, `items`: what the task's outcomes count, in the plural."""
    from medprobe.stats import plural

    return plural(outcome_unit_of(task))


def check_outputs(targets: dict[str, Path]) -> None:
    """A file at an output path that medprobe did not write is refused, naming it (unless --overwrite)."""
    from medprobe.records.outcomes import outcomes_path
    from medprobe.records.owned import refuse_foreign_outputs

    for target in targets.values():
        outputs = {"the record": target, "its outcomes": outcomes_path(target), "its predictions": predictions_path(target)}
        refuse_foreign_outputs(outputs, target, command="import lm-eval")


def predictions_path(target: Path) -> Path:
    """Where a ranking record's top-k names go: `<stem>.predictions.jsonl`, where `review export` looks for them."""
    return target.with_name(f"{target.stem}.predictions.jsonl")


# --- one record ---------------------------------------------------------------------------------------


def check_samples(run: LoggedRun, plans: list[Plan]) -> None:
    """Every task of the plans has its samples file (lm_eval --log_samples)."""
    missing = [task for plan in plans for task in plan.tasks if not run.samples_path(task).is_file()]
    if missing:
        raise UserError(
            f"{run.path.parent}: no samples for {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''} "
            f"(samples_<task>_{run.time}.jsonl): run lm_eval with --log_samples"
        )


def logged_tasks(run: LoggedRun, plan: Plan) -> tuple[list[LoggedTask], dict[str, str]]:
    """The plan's tasks read from their samples files, with each file's sha256."""
    tasks = [
        LoggedTask.read(
            run.samples_path(task),
            task,
            run.task_config(task)["metadata"]["medprobe"],
            (run.results.get("versions") or {}).get(task),
            run.reported(task),
        )
        for task in plan.tasks
    ]
    digests = {task.path.name: task.sha256 for task in tasks}
    for task in tasks:
        _, effective = run.sample_counts(task.name)
        if effective is not None and effective != len(task.docs):
            raise UserError(f"{task.path} holds {len(task.docs)} samples, the results file counts {effective}: not of one run")
    return tasks, digests


def imported(plan: Plan, tasks: list[LoggedTask], run: LoggedRun) -> Imported:
    hook = exporters()[plan.benchmark]
    module = hook.partition(":")[0]
    try:
        function = load(f"{module}:imported")
    except AttributeError:
        raise UserError(f"lm-eval runs of {plan.benchmark} cannot be imported: its export ({hook}) has no `imported`") from None
    groups = {name: run.reported(name) for name in (run.results.get("groups") or {})}
    return function(tasks, groups)


def build_record(run: LoggedRun, plan: Plan, subset: dict, target: Path):
    """The record of one plan, with its outcomes text and predictions lines (None for a task without)."""
    from medprobe.citations import keys_of
    from medprobe.provenance import items_digest, source_identity
    from medprobe.records.outcomes import outcomes_entry, outcomes_jsonl
    from medprobe.records.record import RunRecord
    from medprobe.stats import RESAMPLES, intervals

    tasks, digests = logged_tasks(run, plan)
    found = imported(plan, tasks, run)
    scored, first = found.scored, tasks[0].metadata
    outcomes = scored.outcomes
    model, identity = run.model()
    settings = {**scored.settings, **run.settings(plan.tasks)}
    options = dict(subset["options"])
    if subset["subset"] and found.limit_option and isinstance(options.get("limit"), int) and "tasks" not in options:
        settings[found.limit_option] = options[found.limit_option] = options.pop("limit")  # --limit N is this option
    record = RunRecord(
        benchmark=plan.benchmark,
        dataset=first["dataset_path"],
        config=plan.config,
        split=first["split"],
        prober=PROBER,
        model=model,
        seed=None,
        settings=settings,
        metrics=scored.metrics,
        per_group=scored.per_group,
        timings={"lm_eval": run.lm_eval(plan.tasks).get("total_evaluation_time_seconds", 0.0)},
        counts=scored.counts,
        task=plan.task,
        command=run.command(plan.tasks, str(output_path(run))),
        citations=keys_of(registry().task(plan.task)),
        versions=run.versions(),
    )
    record.chance = scored.chance
    record.subset = {"subset": subset["subset"], "options": options, **({"of": subset["of"]} if subset["subset"] else {})}
    record.subset.update({"items": len(outcomes), "item_ids_sha256": items_digest(outcomes.ids)})
    record.data_fingerprint = merged_fingerprint([task.metadata["data_fingerprint"] for task in tasks])
    record.model_identity = identity
    record.source = {
        **source_identity(),
        "scored_by": "lm-eval",
        "lm_eval": {
            **run.lm_eval(plan.tasks),
            "results": {"file": run.path.name, "sha256": sha256_file(run.path)},
            "samples": digests,
            "task_versions": {task.name: task.version for task in tasks},
            "exported_by": first.get("exported_by"),
        },
    }
    estimators = {name: e for name, e in type_estimators(plan.task, record.settings).items() if name in record.metrics}
    record.intervals = intervals(outcomes, estimators, resamples=RESAMPLES)
    text = outcomes_jsonl(outcomes)
    record.outcomes = outcomes_entry(text, target, outcomes, outcome_unit_of(plan.task), found.outcome_fields)
    return record, text, found.predictions


def type_estimators(task: str, settings: dict) -> dict:
    return load(registry().task(task).target).estimators(settings)


def outcome_unit_of(task: str) -> str:
    return getattr(load(registry().task(task).target), "outcome_unit", "item")


def output_path(run: LoggedRun) -> Path:
    """lm_eval's --output_path: the folder above the model's folder it wrote into."""
    folder = run.path.parent
    return folder.parent if folder.name == run.results.get("model_name_sanitized") else folder


def merged_fingerprint(fingerprints: list[dict]) -> dict:
    """The data fingerprint of the configs the tasks read, as a run of medprobe that read them all records it."""
    from medprobe.loading import files_digest

    files: dict[str, str] = {}
    hubs, revisions = [], []
    for found in fingerprints:
        files.update(found.get("files") or {})
        if found.get("hub"):
            hubs.append(found["hub"])
            revisions.append(found.get("revision", ""))
    merged: dict = {"sha256": files_digest(files), "files": dict(sorted(files.items()))}
    if hubs:
        merged["hub"] = ", ".join(dict.fromkeys(hubs))
        merged["revision"] = ", ".join(dict.fromkeys(revisions))
    return merged


def write_record(record, target: Path, outcomes_text: str, predictions: list[dict] | None) -> Path:
    """The record's files as one unit (medprobe.records.write), as `medprobe probe` writes a run's; every reader reads
    it through the one loader (medprobe.records.load_run), which recomputes its numbers from the outcomes."""
    import json

    from medprobe.records.outcomes import outcomes_path
    from medprobe.records.write import save_run

    more = [(outcomes_path(target), lambda temp: temp.write_text(outcomes_text, encoding="utf-8"))]
    if predictions is not None:
        lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in predictions)
        more.append((predictions_path(target), lambda temp: temp.write_text(lines, encoding="utf-8")))
    target.parent.mkdir(parents=True, exist_ok=True)
    return save_run(record, target, more=more)[-1]


def summary(path: Path) -> str:
    """The record's headline numbers with their 95% intervals and n, in a few lines."""
    from medprobe.records import load_record_file
    from medprobe.records.tables import format_intervals

    record = load_record_file(path)
    subset = record.subset.get("of")
    what = f"{subset['probed']:,} of {subset['total']:,} {subset['unit']} (a subset)" if subset else "the whole config"
    head = f"{record.benchmark}/{record.config or 'all'}: {record.model} scored by lm-eval, {what}"
    return "\n".join([head, format_intervals(record)])
