"""`medprobe export lm-eval`: a benchmark as lm-evaluation-harness (0.4.x) tasks, for `--include_path DIR`.

    medprobe build mst --out out/mst
    medprobe export lm-eval mst --dataset out/mst --out lm_eval_tasks
    lm_eval --model hf --model_args pretrained=<causal LM> --include_path lm_eval_tasks --tasks medprobe_mst

A benchmark has an export when its registry entry names a hook (`TaskEntry.lm_eval`, "module:function"):
`export(dataset, location, split) -> (files, ExportReport)` returns the files of DIR by name (the task
and group YAMLs, and the `utils.py` their `!function` tags name) with what they hold; the built-in hooks
are medprobe/tasks/mst_lm_eval.py and medprobe/tasks/medlama_lm_eval.py. This module holds what every
export shares: the dataset's location, loading its configs with their fields checked, YAML helpers,
the README.md with the commands, and writing DIR.

The dataset is named in the YAMLs as given: a Hub id, or a built folder as an absolute path (lm-eval
runs `load_dataset(path, config)`, which reads a medprobe folder through its card). The folder is
written whole beside DIR and swapped in, like `medprobe build`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from medprobe.contracts import UserError
from medprobe.local_paths import check_local_path, could_be_local

if TYPE_CHECKING:
    import datasets

# What a previous export leaves in DIR: the folder may be replaced only when it holds nothing else.
EXPORTED_NAME = re.compile(r"^(utils\.py|README\.md|__pycache__|_?medprobe_[\w.]*)$")
ENCODER_NOTE = (
    "These tasks are for causal LMs (lm-eval's `hf` model, e.g. SmolLM2). Encoders and masked LMs (BERT, PubMedBERT, "
    "MiniLM) cannot run in lm-eval (MiniLM crashes there): probe them with `medprobe probe`."
)


@dataclass
class ExportReport:
    out: Path
    tasks: list[str]
    groups: list[str]
    requests: dict[str, int]  # per config: log-likelihood requests of a full run (rows x choices)
    notes: list[str] = field(default_factory=list)


def exporters() -> dict[str, str]:
    """benchmark -> the "module:function" of its lm-eval export hook, for every registry entry that has one."""
    from medprobe.registry import registry

    hooks: dict[str, str] = {}
    for entry in registry().tasks.values():
        if entry.lm_eval:
            hooks.setdefault(entry.benchmark, entry.lm_eval)
    return hooks


def export_lm_eval(benchmark: str, dataset: str, out: str | Path, split: str = "test") -> ExportReport:
    """Write the lm-eval tasks of `benchmark` (a registry benchmark with an lm-eval hook) over `dataset`
    (Hub id or built folder) into `out`: the hook's files, and a README.md with the commands."""
    from medprobe.registry import load

    hooks = exporters()
    if benchmark not in hooks:
        raise UserError(f"medprobe export lm-eval: no export for {benchmark!r}; choose one of {', '.join(hooks)}")
    out = Path(out).expanduser()
    check_out(out)
    location = dataset_location(dataset)
    files, report = load(hooks[benchmark])(dataset, location, split)
    files["README.md"] = readme(benchmark, dataset, report)
    write_folder(out, files)
    report.out = out
    return report


# --- the dataset ---------------------------------------------------------------------------------


def dataset_location(dataset: str) -> str:
    """What the YAMLs name as dataset_path: an existing folder as an absolute path, else the Hub id as given."""
    if could_be_local(dataset):
        return str(check_local_path(dataset, "--dataset", "build one with `medprobe build BENCHMARK --out DIR`").resolve())
    if dataset.count("/") != 1:
        raise UserError(f"--dataset {dataset}: no such folder, and not a Hub id (<org>/<name>); build one with `medprobe build`")
    return dataset


def load_configs(dataset: str, wanted: tuple[str, ...], split: str, fields: tuple[str, ...]) -> dict[str, datasets.Dataset]:
    """The `split` of every config of `dataset` among `wanted`, fields checked; an error names the dataset."""
    from medprobe.loading import check_fields, dataset_config_names, load_probe_dataset

    present = dataset_config_names(dataset)
    configs = [config for config in wanted if config in present]
    if not configs:
        raise UserError(
            f"--dataset {dataset} has none of the configs {', '.join(wanted)} (it has {', '.join(present) or 'none'}): "
            "is it the benchmark you named?"
        )
    loaded = {}
    for config in configs:
        loaded[config] = load_probe_dataset(dataset, config, split)
        check_fields(loaded[config], fields, f"--dataset {dataset} (config {config!r}, split {split!r})")
    return loaded


def check_slots(dataset: str, config: str, texts: list[str], ids: list[str], slot: str) -> None:
    """Every row's text has exactly one slot (else lm-eval would stop mid-run, or score nothing)."""
    for row_id, text in zip(ids, texts):
        if text.count(slot) != 1:
            raise UserError(
                f"--dataset {dataset} (config {config!r}): row {row_id!r} has {text.count(slot)} {slot} slots, expected 1"
            )


# --- the YAMLs ----------------------------------------------------------------------------------


TASK_VERSION = 1.0  # lm-eval's version of every exported task: what a task computes changed when it changes


def task_metrics(*metrics: str) -> list[str]:
    """The closing lines of a task YAML: its metrics (mean over documents, higher is better) and version (each task's
    own YAML repeats the version in its `metadata`, beside what medprobe reads back: `task_metadata`)."""
    lines = ["metric_list:"]
    for metric in metrics:
        lines += [f"  - metric: {metric}", "    aggregation: mean", "    higher_is_better: true"]
    return [*lines, "metadata:", f"  version: {TASK_VERSION}", ""]


def identifier(name: str) -> str:
    """A relation name as part of a task and function name."""
    return re.sub(r"\W", "_", name)


def check_identifiers(dataset: str, config: str, relations: list[str]) -> None:
    """Two relations whose names differ only in punctuation would write the same task file."""
    seen: dict[str, str] = {}
    for relation in relations:
        other = seen.setdefault(identifier(relation), relation)
        if other != relation:
            raise UserError(
                f"--dataset {dataset} (config {config!r}): relations {other!r} and {relation!r} give the same task name"
            )


# --- what `medprobe import lm-eval` reads back: the items and data of each task -------------------

METADATA_FORMAT = 1  # of the `medprobe` block of a task's metadata; `medprobe import lm-eval` reads this one


@dataclass(frozen=True)
class RecordPlan:
    """The medprobe record an imported run of some exported tasks becomes: its config (None: every config, as MST's
    run of all its tasks), the tasks it is made of and their items (a run of fewer is a subset)."""

    config: str | None
    tasks: tuple[str, ...]
    items: int


def task_metadata(
    benchmark: str,
    dataset: str,
    location: str,
    config: str,
    split: str,
    items: tuple[int, str],
    record: RecordPlan,
    **more: object,
) -> dict:
    """A task YAML's `metadata`: lm-eval's version of the task, and what medprobe needs to read its logged run back
    (`medprobe import lm-eval`): the benchmark and registry task, the data (as given, where lm-eval reads it, and the
    fingerprint of its files, as a run of medprobe records them), the items (their count and digest, utils.items_sha256
    of their `(id, digest)` pairs, also checked by the exported utils.py before lm-eval scores) and the record they go
    into."""
    from medprobe import __version__
    from medprobe.loading import dataset_fingerprint

    return {
        "version": TASK_VERSION,
        "medprobe": {
            "format": METADATA_FORMAT,
            "exported_by": f"medprobe {__version__}",
            "benchmark": benchmark,
            "dataset": dataset,
            "dataset_path": location,
            "config": config,
            "split": split,
            "items": items[0],
            "items_sha256": items[1],
            "data_fingerprint": dataset_fingerprint(dataset, [(config, split)]),
            "record": {"config": record.config, "tasks": list(record.tasks), "items": record.items},
            **more,
        },
    }


def exported_items(exported: dict[str, tuple[str, str]]) -> str:
    """utils.py's `EXPORTED` entries (task -> (split, items_sha256)), which its `stamp` checks the data against."""
    return "".join(f"EXPORTED[{task!r}] = ({split!r}, {digest!r})\n" for task, (split, digest) in sorted(exported.items()))


# --- the files -----------------------------------------------------------------------------------


def yaml_lines(entries: dict[str, str | dict]) -> str:
    """`key: value` lines; values are written as JSON (strings, and mappings such as `metadata`: valid YAML) except
    `!function` tags."""
    return "".join(
        f"{key}: {value if isinstance(value, str) and value.startswith('!function ') else json.dumps(value)}\n"
        for key, value in entries.items()
    )


def group_yaml(group: str, tasks: list[str], metrics: tuple[str, ...], weight_by_size: bool) -> str:
    how = "the mean over queries (micro)" if weight_by_size else "the mean over the tasks (macro)"
    lines = [f"# written by `medprobe export lm-eval`: each metric of the group is {how}", f"group: {group}", "task:"]
    lines += [f"  - {task}" for task in tasks]
    lines.append("aggregate_metric_list:")
    for metric in metrics:
        lines += [f"  - metric: {metric}", "    aggregation: mean", f"    weight_by_size: {str(weight_by_size).lower()}"]
    lines += ["metadata:", "  version: 1.0", ""]
    return "\n".join(lines)


def readme(benchmark: str, dataset: str, report: ExportReport) -> str:
    requests = ", ".join(f"{config} {count:,}" for config, count in report.requests.items())
    return "\n".join(
        [
            f"# medprobe {benchmark} for lm-evaluation-harness",
            "",
            f"Written by `medprobe export lm-eval {benchmark} --dataset {dataset}`. Run (lm-eval 0.4.x):",
            "",
            "```",
            *(
                f"lm_eval --model hf --model_args pretrained=<causal LM> --include_path <this folder> --tasks {g}"
                for g in report.groups
            ),
            "```",
            "",
            f"Tasks: {', '.join(report.tasks)}.",
            f"Log-likelihood requests of a full run (rows x choices): {requests}; `--limit N` runs the first N rows of each task.",
            "",
            ENCODER_NOTE,
            "",
        ]
    )


def check_out(out: Path) -> None:
    """OUT is absent, empty, or a previous export (it is replaced whole); anything else is refused."""
    from medprobe.atomic_folder import check_output_folder

    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder for the task YAMLs")
    check_output_folder(out)  # not a mount point nor immutable; its folder takes the lock and the staging folder
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir() if not EXPORTED_NAME.match(p.name))
        if foreign:
            raise UserError(
                f"--out {out} holds files an export does not write ({', '.join(foreign[:5])}); "
                "it is replaced whole, so give an empty or new folder"
            )


def write_folder(out: Path, files: dict[str, str]) -> None:
    """Write `files` into a staging folder beside OUT, then swap it into place (OUT is old or new, never half)."""
    from medprobe.atomic_folder import staged_folder

    with staged_folder(out, "export lm-eval", refuse=check_out) as folder:  # checked again under the lock
        folder.write_texts(files)
