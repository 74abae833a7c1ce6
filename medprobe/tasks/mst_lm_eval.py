"""mst: one multiple_choice task per config (medprobe_mst_<config>) and the group medprobe_mst (mean
over tasks). The context is the text before [MASK]; each choice is the rest of the sentence with
the choice in the slot, scored by total log-likelihood (acc; medprobe's causal-lm prober with
--length-normalization none ranks the same way). The default build: 5,000 test rows, 12,000
requests.

The lm-evaluation-harness export of MST (registry: `lm_eval="medprobe.tasks.mst_lm_eval:export"`):
`medprobe_mst_<config>.yaml` per config, sharing `_medprobe_mst_template_yaml`; the group
`_medprobe_mst.yaml`, whose accuracy is the mean over the tasks (as medprobe reports MST); and
utils.py, medprobe/tasks/lm_eval_utils.py with one `process_docs_<config>` per config (each row stamped
with its medprobe id and digest) and the items each task was exported with appended. (The first
paragraph is `medprobe export lm-eval --help`'s text on MST.)

Each task's metadata says what `medprobe import lm-eval` needs (medprobe.export.lm_eval.task_metadata): a
logged run of the tasks becomes one record of the `mst` task over every config run (config None, each
config a group, as `medprobe probe --task mst` without --config), or of the one config run alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from medprobe.contracts import UserError
from medprobe.export.lm_eval import (
    ExportReport,
    RecordPlan,
    check_slots,
    exported_items,
    group_yaml,
    load_configs,
    task_metadata,
    task_metrics,
    yaml_lines,
)
from medprobe.loading import column
from medprobe.tasks import Scored
from medprobe.tasks.lm_eval_logs import SCORING, Imported, LoggedTask, check_items, check_per_doc, check_reported
from medprobe.tasks.lm_eval_utils import items_sha256, mst_identity

MST_CONFIGS = ("comparison", "argminmax", "sorting", "unit_conversion", "reference_range")
UTILS_SOURCE = Path(__file__).with_name("lm_eval_utils.py")  # the export's utils.py (standard library only)


def export(dataset: str, location: str, split: str) -> tuple[dict[str, str], ExportReport]:
    data = load_configs(dataset, MST_CONFIGS, split, ("id", "text", "choices", "label"))
    requests = {}
    for config, rows in data.items():
        check_slots(dataset, config, rows["text"], rows["id"], "[MASK]")
        requests[config] = sum(len(choices) for choices in rows["choices"])
    tasks = [f"medprobe_mst_{config}" for config in data]
    items = {config: config_items(config, rows) for config, rows in data.items()}
    digests = {config: (len(found), items_sha256(found)) for config, found in items.items()}
    record = RecordPlan(None, tuple(tasks), sum(map(len, items.values())))
    files = {"_medprobe_mst_template_yaml": mst_template(location, split)}
    for config, task in zip(data, tasks):
        files[f"{task}.yaml"] = yaml_lines(
            {
                "include": "_medprobe_mst_template_yaml",
                "task": task,
                "dataset_name": config,
                "process_docs": f"!function utils.process_docs_{config}",
                "metadata": task_metadata("mst", dataset, location, config, split, digests[config], record),
            }
        )
    files["_medprobe_mst.yaml"] = group_yaml("medprobe_mst", tasks, ("acc", "acc_norm"), weight_by_size=False)
    exported = {task: (split, digests[config][1]) for config, task in zip(data, tasks)}
    files["utils.py"] = UTILS_SOURCE.read_text(encoding="utf-8") + process_docs(list(data), exported)
    notes = [f"MST configs missing from --dataset, not exported: {', '.join(c for c in MST_CONFIGS if c not in data)}"]
    return files, ExportReport(Path(), tasks, ["medprobe_mst"], requests, notes if len(data) < len(MST_CONFIGS) else [])


def config_items(config: str, rows) -> list[tuple[str, str]]:
    """(id, digest) of every row, as medprobe's MST task and the exported utils.py give them."""
    fields = {name: column(rows, name) for name in ("text", "choices", "label")}
    return [
        mst_identity(config, index, {name: values[index] for name, values in fields.items()}) for index in range(rows.num_rows)
    ]


def process_docs(configs: list[str], exported: dict[str, tuple[str, str]]) -> str:
    """utils.py's tail: the items of each task, and one `process_docs_<config>` per config, which its YAML names."""
    functions = "".join(
        f"def process_docs_{config}(dataset):\n    return mst_docs(dataset, {config!r}, {f'medprobe_mst_{config}'!r})\n\n\n"
        for config in configs
    )
    return (
        "\n\n# --- written by `medprobe export lm-eval mst`: the items of each task, and each task's process_docs ---\n\n"
        + exported_items(exported)
        + "\n\n"
        + functions.rstrip("\n")
        + "\n"
    )


def mst_template(location: str, split: str) -> str:
    return "\n".join(
        [
            "# medprobe MST, written by `medprobe export lm-eval mst`. The context is the text before [MASK]; each",
            "# choice is the rest of the sentence with the choice in the slot (see utils.py). acc = the choice with the",
            "# highest total log-likelihood (medprobe's causal-lm --length-normalization none); acc_norm divides by bytes.",
            f"dataset_path: {json.dumps(location)}",
            "output_type: multiple_choice",
            f"test_split: {json.dumps(split)}",
            'fewshot_split: "train"',
            "doc_to_text: !function utils.mst_text",
            "doc_to_choice: !function utils.mst_choices",
            "doc_to_target: label",
            'target_delimiter: ""',  # the white space before the slot is part of each choice
            *task_metrics("acc", "acc_norm"),
        ]
    )


# --- the import: a logged run of the tasks as a record of the `mst` task -------------------------------

FIELDS = {
    "label": "index of the gold choice",
    "prediction": "index of the choice of highest total log-likelihood in lm-eval's log (its acc; the first on ties), one column",
    "choices": "number of choices (chance = 1 / choices)",
}


def identity(metadata: dict, index: int, doc: dict) -> tuple[str, str]:
    """(medprobe id, content digest) of a logged doc: `<config>/<row index>` (lm-eval's doc_id is the row index)."""
    return mst_identity(metadata["config"], index, doc)


def imported(tasks: list[LoggedTask], groups: dict[str, dict]) -> Imported:
    """The MST record of the logged tasks: per item the gold choice and the choice of highest log-likelihood
    (lm-eval's acc), accuracy per task and its mean over the tasks (medprobe's MST accuracy, lm-eval's group acc),
    each checked against lm-eval's per-doc and reported values."""
    from medprobe.stats import Outcomes, estimate
    from medprobe.tasks.mst import MSTTask

    ids, groups_of, contents, labels, chosen, sizes, chance = [], [], [], [], [], [], {}
    for task in tasks:
        config = task.metadata["config"]
        items = check_items(task, identity)
        picks = [int(np.argmax(task.choices(number))) for number in range(len(task.docs))]
        for number, doc in enumerate(task.docs):
            if len(task.choices(number)) != len(doc["choices"]):
                raise UserError(
                    f"{task.path}, line {number + 1}: {len(task.choices(number))} log-likelihoods for "
                    f"{len(doc['choices'])} choices; not a log of the exported task"
                )
        check_per_doc(task, "acc", [float(pick == doc["label"]) for pick, doc in zip(picks, task.docs)])
        ids += [item for item, _ in items]
        contents += [digest for _, digest in items]
        groups_of += [config] * len(items)
        labels += [doc["label"] for doc in task.docs]
        chosen += [[pick] for pick in picks]
        sizes += [len(doc["choices"]) for doc in task.docs]
        chance[config] = 1 / len(task.docs[0]["choices"])
    outcomes = Outcomes.build(ids, groups_of, {"label": labels, "prediction": chosen, "choices": sizes}, contents)
    estimator = MSTTask.estimators({})["accuracy"]
    accuracy = estimate(outcomes, estimator)
    per_group = {}
    for task in tasks:
        config = task.metadata["config"]
        value = estimate(outcomes.group(config), estimator)
        check_reported(str(task.path), "acc", task.reported.get("acc"), value)
        per_group[config] = {"accuracy": value, "accuracy_std": 0.0, "accuracy_per_seed": [value], "chance": chance[config]}
    check_reported("lm-eval's group medprobe_mst", "acc", groups.get("medprobe_mst", {}).get("acc"), accuracy)
    scored = Scored(
        metrics={"accuracy": accuracy},
        per_group=per_group,
        counts={"tasks": len(tasks), **{f"{config}_rows": {"test": len(outcomes.group(config))} for config in per_group}},
        settings=dict(SCORING),
        outcomes=outcomes,
        chance={
            "accuracy": {
                "value": float(np.mean(list(chance.values()))),
                "method": "1 / number of choices, averaged over the tasks",
            }
        },
    )
    return Imported(scored, FIELDS)
