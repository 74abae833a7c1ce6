"""toy_facts: one multiple_choice task (medprobe_toy_facts) over the answer space, in the group medprobe_toy.

The lm-eval export hook the toy entry names (`lm_eval="toy_medprobe.lm_eval:export"`)."""

import json
from pathlib import Path

from medprobe.export.lm_eval import ExportReport, group_yaml, load_configs, task_metrics, yaml_lines


def export(dataset: str, location: str, split: str) -> tuple[dict[str, str], ExportReport]:
    data = load_configs(dataset, ("facts",), split, ("id", "query", "answers"))["facts"]
    space = sorted({answer for answers in data["answers"] for answer in answers})
    template = [f"dataset_path: {json.dumps(location)}", "output_type: multiple_choice", f"test_split: {json.dumps(split)}"]
    template += [
        "doc_to_text: !function utils.text",
        "doc_to_choice: !function utils.choices",
        "doc_to_target: !function utils.target",
    ]
    files = {
        "medprobe_toy_facts.yaml": yaml_lines({"task": "medprobe_toy_facts", "dataset_name": "facts"})
        + "\n".join(template + task_metrics("acc")),
        "_medprobe_toy.yaml": group_yaml("medprobe_toy", ["medprobe_toy_facts"], ("acc",), weight_by_size=False),
        "utils.py": (
            f"SPACE = {space!r}\n\n\ndef text(doc):\n    return doc['query'].split('[Y]')[0].strip()\n\n\n"
            "def choices(doc):\n    return [' ' + name for name in SPACE]\n\n\n"
            "def target(doc):\n    return SPACE.index(doc['answers'][0])\n"
        ),
    }
    report = ExportReport(Path(), ["medprobe_toy_facts"], ["medprobe_toy"], {"facts": data.num_rows * len(space)})
    return files, report
