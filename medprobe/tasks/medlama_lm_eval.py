"""medlama: per config (full, hard) and relation, the query's log-likelihood with every candidate
of its relation (medprobe_medlama_<config>_<relation>), acc_at_1 and acc_at_10 counting every gold
name; groups medprobe_medlama_<config> (macro over relations, the paper's figure) and
medprobe_medlama_<config>_micro (over queries). Costly: the release's hard set is 4.7 M
log-likelihood requests, full 9.2 M (the export prints the count); use --limit N in lm_eval
for a first look.

The lm-evaluation-harness export of MedLAMA (registry: `lm_eval="medprobe.tasks.medlama_lm_eval:export"`):
`medprobe_medlama_<config>_<relation>.yaml` per config and relation, sharing
`_medprobe_medlama_template_yaml`; the groups `_medprobe_medlama_<config>.yaml` and
`_medprobe_medlama_<config>_micro.yaml`; and utils.py, medprobe/tasks/lm_eval_utils.py with one
`process_docs_<relation>` per relation appended. (The first paragraph is `medprobe export lm-eval
--help`'s text on MedLAMA.)
"""

from __future__ import annotations

import json
from pathlib import Path

from medprobe.contracts import MASK_SLOT, UserError
from medprobe.export.lm_eval import (
    ExportReport,
    check_identifiers,
    check_slots,
    group_yaml,
    identifier,
    load_configs,
    task_metrics,
    yaml_lines,
)

MEDLAMA_CONFIGS = ("full", "hard")
UTILS_SOURCE = Path(__file__).with_name("lm_eval_utils.py")  # the export's utils.py (standard library only)


def export(dataset: str, location: str, split: str) -> tuple[dict[str, str], ExportReport]:
    data = load_configs(dataset, MEDLAMA_CONFIGS, split, ("id", "relation", "query", "answers"))
    files = {"_medprobe_medlama_template_yaml": medlama_template(location, split)}
    relations: set[str] = set()
    tasks, groups, requests = [], [], {}
    for config, rows in data.items():
        check_slots(dataset, config, rows["query"], rows["id"], MASK_SLOT)
        by_relation: dict[str, list[list[str]]] = {}
        for row_id, relation, answers in zip(rows["id"], rows["relation"], rows["answers"]):
            if not answers:
                raise UserError(f"--dataset {dataset} (config {config!r}): row {row_id!r} has no answer")
            by_relation.setdefault(relation, []).append(answers)
        check_identifiers(dataset, config, list(by_relation))
        requests[config] = sum(len(lists) * len({n for names in lists for n in names}) for lists in by_relation.values())
        names = []
        for relation in sorted(by_relation):
            relations.add(relation)
            task = f"medprobe_medlama_{config}_{identifier(relation)}"
            names.append(task)
            files[f"{task}.yaml"] = yaml_lines(
                {
                    "include": "_medprobe_medlama_template_yaml",
                    "task": task,
                    "dataset_name": config,
                    "process_docs": f"!function utils.process_docs_{identifier(relation)}",
                }
            )
        metrics = ("acc_at_1", "acc_at_10")
        files[f"_medprobe_medlama_{config}.yaml"] = group_yaml(f"medprobe_medlama_{config}", names, metrics, weight_by_size=False)
        files[f"_medprobe_medlama_{config}_micro.yaml"] = group_yaml(
            f"medprobe_medlama_{config}_micro", names, metrics, weight_by_size=True
        )
        tasks += names
        groups += [f"medprobe_medlama_{config}", f"medprobe_medlama_{config}_micro"]
    files["utils.py"] = UTILS_SOURCE.read_text(encoding="utf-8") + process_docs(relations)
    notes = [f"MedLAMA configs missing from --dataset, not exported: {', '.join(c for c in MEDLAMA_CONFIGS if c not in data)}"]
    return files, ExportReport(Path(), tasks, groups, requests, notes if len(data) < len(MEDLAMA_CONFIGS) else [])


def process_docs(relations: set[str]) -> str:
    """utils.py's tail: one `process_docs_<relation>` per relation, which the relation's YAML names."""
    return (
        "\n\n# --- one process_docs per relation (written by `medprobe export lm-eval medlama`) ---\n\n"
        + "".join(
            f"def process_docs_{identifier(r)}(dataset):\n    return medlama_docs(dataset, {r!r})\n\n\n"
            for r in sorted(relations)
        ).rstrip("\n")
        + "\n"
    )


def medlama_template(location: str, split: str) -> str:
    return "\n".join(
        [
            "# medprobe MedLAMA, written by `medprobe export lm-eval medlama`. Each query is scored with every candidate of",
            "# its relation (the sorted union of the relation's answers, medprobe's --candidates relation): the context is",
            "# the query before [Y], each choice the rest of the query with the candidate in the slot (see utils.py).",
            "# acc_at_k: any gold name among the k candidates of highest total log-likelihood; ties keep candidate order.",
            f"dataset_path: {json.dumps(location)}",
            "output_type: multiple_choice",
            f"test_split: {json.dumps(split)}",
            "doc_to_text: !function utils.medlama_text",
            "doc_to_choice: !function utils.medlama_choices",
            "doc_to_target: !function utils.medlama_target",
            'target_delimiter: ""',
            "process_results: !function utils.medlama_results",
            *task_metrics("acc_at_1", "acc_at_10"),
        ]
    )
