"""A run's headline as a `.eval_results/*.yaml` entry of a model repo: the Hub's current form of eval results, beside
the older `model-index` (medprobe.hub.eval_results), which `publish results` keeps writing for older readers.

The format followed (cite it when it changes):
- https://huggingface.co/docs/hub/eval-results, as huggingface/hub-docs docs/hub/eval-results.md has it at commit
  e3bb58f5fb17812b4e3bca023e7e6eb9ae5bb584 ("Adding Evaluation Results": a list of entries, each `dataset.id` (a
  Benchmark dataset) and `dataset.task_id` (a task of that dataset's eval.yaml) and `value` required;
  `dataset.revision`, `verifyToken`, `date` (ISO-8601), `source` {url (required with source), name, user} and
  `notes` optional), and hub-docs eval_results.yaml (the specification it links);
- written with huggingface_hub's own encoding of it (2.4: `EvalResultEntry`, `eval_result_entries_to_yaml`).

One value per entry, and a leaderboard per task ranks that value: medprobe writes one entry per run, the value of
the task's headline metric (the registry's, as the results repo and the profile report it), one file per
benchmark/config/prober so that probers stay apart (a file per variant, as the Hub asks). n and the 95% interval go
where the format has room: `notes` (with the prober and the metric), and `source` links to the model card, whose
medprobe section gives each run's n, interval, data fingerprint and command. A run of a subset is left out (its
entry would sit on the leaderboard of the whole task); it stays in the model-index, labelled a subset.

The Hub shows an entry only for a task its dataset declares: a real publish reads the dataset's `eval.yaml` and
writes the entries of the tasks it declares with the run's config and split, and says which it left out and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from huggingface_hub import EvalResultEntry, constants, eval_result_entries_to_yaml

from medprobe.hub.eval_yaml import DEFAULT_CONFIG, DEFAULT_SPLIT, task_id
from medprobe.hub.published import name_part
from medprobe.records.record import RunRecord

FOLDER = constants.EVAL_RESULTS_FOLDER  # ".eval_results"


@dataclass
class EntryFile:
    """One `.eval_results/<name>.yaml` file of the model repo: a run's entry, and what it must match in eval.yaml."""

    path: str  # .eval_results/medprobe_<benchmark>_<config>_<prober>.yaml
    entry: EvalResultEntry
    config: str  # the run's dataset config, as eval.yaml names it
    split: str
    what: str  # the run, for notes

    def text(self) -> str:
        return yaml.safe_dump(eval_result_entries_to_yaml([self.entry]), sort_keys=False, allow_unicode=True)


def headline(record: RunRecord) -> str | None:
    from medprobe.registry import task_entry

    metric = task_entry(record.task).headline if record.task else None
    return metric if metric in record.metrics else None


def notes(record: RunRecord, metric: str) -> str:
    """The prober and the metric, then n and the 95% interval as the run recorded them."""
    from medprobe.stats import plural

    interval = (record.intervals or {}).get(metric) or {}
    parts = [f"medprobe {record.prober}", metric]
    if interval.get("n") is not None:
        parts.append(f"n = {interval['n']:,} {plural(interval.get('unit') or 'item')}")
    if interval.get("low") is not None and interval.get("high") is not None:
        how = f" ({interval['method']}, {interval.get('resamples'):,} resamples)" if interval.get("method") else ""
        parts.append(f"95% CI [{interval['low']:.4f}, {interval['high']:.4f}]{how}")
    return "; ".join(parts)


def dataset_revision(record: RunRecord, dataset_id: str) -> str | None:
    """The dataset commit the run read, when it read exactly that Hub dataset at one commit."""
    fingerprint = record.data_fingerprint or {}
    revision = fingerprint.get("revision")
    same = (fingerprint.get("hub") or "").lower() == dataset_id.lower()
    return revision if same and isinstance(revision, str) and len(revision) == 40 else None


def entry_file(
    record: RunRecord, dataset_id: str, repo_id: str, what: str, source_url: str | None = None
) -> tuple[EntryFile | None, str | None]:
    """(the run's entry file, None) or (None, why it has none)."""
    metric = headline(record)
    if metric is None:
        return None, f"{what}: no .eval_results entry (it has no value of its benchmark's headline metric)"
    entry = EvalResultEntry(
        dataset_id=dataset_id,
        task_id=task_id(record.config),
        value=float(record.metrics[metric]),
        dataset_revision=dataset_revision(record, dataset_id),
        date=record.created or None,
        source_url=source_url or f"{constants.ENDPOINT}/{repo_id}",
        source_name=None if source_url else "medprobe results in the model card (n, 95% interval, data, command)",
        notes=notes(record, metric),
    )
    name = "_".join(name_part(part) for part in ("medprobe", record.benchmark, record.config or "all", record.prober))
    return EntryFile(f"{FOLDER}/{name}.yaml", entry, record.config or DEFAULT_CONFIG, record.split or DEFAULT_SPLIT, what), None


def entry_files(runs: list[tuple[RunRecord, str, str, str | None]], repo_id: str, args: Any) -> tuple[list[EntryFile], list[str]]:
    """The entry files of (record, dataset id, what, subset phrase) runs, and why the others have none: a subset run
    (it would sit on the leaderboard of the whole task), a headline left out by --metric, or no headline."""
    files, left_out = [], []
    for record, dataset_id, what, subset in runs:
        metric = headline(record)
        if subset:
            left_out.append(
                f"{what}: no {FOLDER} entry: it probed a subset ({subset}), and the entry would rank on the whole task"
            )
        elif args.metric and metric not in args.metric:
            left_out.append(f"{what}: no {FOLDER} entry: its benchmark's headline {metric} is not among --metric")
        else:
            found, why = entry_file(record, dataset_id, repo_id, what, args.source_url)
            files += [found] if found else []
            left_out += [why] if why else []
    return files, left_out


def plan_lines(files: list[EntryFile], left_out: list[str]) -> list[str]:
    """What the dry run shows: each file and its YAML, then the runs without an entry."""
    lines = [f"  {FOLDER} (the Hub's current eval results; written where the dataset's eval.yaml declares the task):"]
    for found in files:
        lines.append(
            f"    {found.path} (task {found.entry.task_id} of {found.entry.dataset_id}: config {found.config}, split {found.split})"
        )
        lines += ["      " + line for line in found.text().splitlines()]
    lines += [f"    note: {note}" for note in left_out]
    return lines if files or left_out else []


# --- the dataset's eval.yaml, read at publish time ------------------------------------------------------


def declared_tasks(text: str | None) -> dict[str, tuple[str, str]] | None:
    """task id -> (config, split) of an eval.yaml's tasks (defaults as the spec states them); None: no usable eval.yaml."""
    try:
        data = yaml.safe_load(text) if text else None
    except yaml.YAMLError:
        return None
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, list):
        return None
    found = {}
    for task in tasks:
        if isinstance(task, dict) and isinstance(task.get("id"), str):
            found[task["id"]] = (str(task.get("config") or DEFAULT_CONFIG), str(task.get("split") or DEFAULT_SPLIT))
    return found


def declared(files: list[EntryFile], eval_yamls: dict[str, str | None]) -> tuple[list[EntryFile], list[str]]:
    """The files whose task the dataset's eval.yaml declares for the run's config and split; why each other is left out."""
    kept, notes_ = [], []
    for found in files:
        dataset = found.entry.dataset_id
        tasks = declared_tasks(eval_yamls.get(dataset))
        task = (tasks or {}).get(found.entry.task_id)
        if tasks is None:
            notes_.append(
                f"{found.path} not written: {dataset} has no eval.yaml (not a Hub benchmark, or no such dataset), so the Hub "
                "would not show the entry"
            )
        elif task is None:
            notes_.append(f"{found.path} not written: {dataset}'s eval.yaml declares no task {found.entry.task_id!r}")
        elif task != (found.config, found.split):
            notes_.append(
                f"{found.path} not written: task {found.entry.task_id!r} of {dataset} is config {task[0]}, split {task[1]}; "
                f"{found.what} probed config {found.config}, split {found.split}"
            )
        else:
            kept.append(found)
    return kept, notes_


def read_eval_yaml(api: Any, dataset_id: str) -> str | None:
    """The dataset's eval.yaml at its head; None without one, or without such a dataset (--dataset-mismatch-ok)."""
    from huggingface_hub.errors import RepositoryNotFoundError

    from medprobe.hub.publish import download_text

    try:
        return download_text(api, dataset_id, "eval.yaml", None, "dataset")
    except RepositoryNotFoundError:
        return None


def operations(files: list[EntryFile]) -> list[Any]:
    from huggingface_hub import CommitOperationAdd

    return [CommitOperationAdd(found.path, found.text().encode("utf-8")) for found in files]
