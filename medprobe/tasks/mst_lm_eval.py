"""mst: one multiple_choice task per config (medprobe_mst_<config>) and the group medprobe_mst (mean
over tasks). The context is the text before [MASK]; each choice is the rest of the sentence with
the choice in the slot, scored by total log-likelihood (acc; medprobe's causal-lm prober with
--length-normalization none ranks the same way). The default build: 5,000 test rows, 12,000
requests.

The lm-evaluation-harness export of MST (registry: `lm_eval="medprobe.tasks.mst_lm_eval:export"`):
`medprobe_mst_<config>.yaml` per config, sharing `_medprobe_mst_template_yaml`; the group
`_medprobe_mst.yaml`, whose accuracy is the mean over the tasks (as medprobe reports MST); and
utils.py, medprobe/tasks/lm_eval_utils.py as it is. (The first paragraph is `medprobe export
lm-eval --help`'s text on MST.)
"""

from __future__ import annotations

import json
from pathlib import Path

from medprobe.export.lm_eval import ExportReport, check_slots, group_yaml, load_configs, task_metrics, yaml_lines

MST_CONFIGS = ("comparison", "argminmax", "sorting", "unit_conversion", "reference_range")
UTILS_SOURCE = Path(__file__).with_name("lm_eval_utils.py")  # the export's utils.py (standard library only)


def export(dataset: str, location: str, split: str) -> tuple[dict[str, str], ExportReport]:
    data = load_configs(dataset, MST_CONFIGS, split, ("id", "text", "choices", "label"))
    requests = {}
    for config, rows in data.items():
        check_slots(dataset, config, rows["text"], rows["id"], "[MASK]")
        requests[config] = sum(len(choices) for choices in rows["choices"])
    tasks = [f"medprobe_mst_{config}" for config in data]
    files = {"_medprobe_mst_template_yaml": mst_template(location, split)}
    for config, task in zip(data, tasks):
        files[f"{task}.yaml"] = yaml_lines({"include": "_medprobe_mst_template_yaml", "task": task, "dataset_name": config})
    files["_medprobe_mst.yaml"] = group_yaml("medprobe_mst", tasks, ("acc", "acc_norm"), weight_by_size=False)
    files["utils.py"] = UTILS_SOURCE.read_text(encoding="utf-8")
    notes = [f"MST configs missing from --dataset, not exported: {', '.join(c for c in MST_CONFIGS if c not in data)}"]
    return files, ExportReport(Path(), tasks, ["medprobe_mst"], requests, notes if len(data) < len(MST_CONFIGS) else [])


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
