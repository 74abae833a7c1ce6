"""medlama: per config (full, hard) and relation, the query's log-likelihood with every candidate
of its relation (medprobe_medlama_<config>_<relation>), acc_at_1 and acc_at_10 counting every gold
name; groups medprobe_medlama_<config> (macro over relations, the paper's figure) and
medprobe_medlama_<config>_micro (over queries). Costly: the release's hard set is 4.7 M
log-likelihood requests, full 9.2 M (the export prints the count); use --limit N in lm_eval
for a first look.

The lm-evaluation-harness export of MedLAMA (registry: `lm_eval="medprobe.tasks.medlama_lm_eval:export"`):
`medprobe_medlama_<config>_<relation>.yaml` per config and relation, sharing
`_medprobe_medlama_template_yaml`; the groups `_medprobe_medlama_<config>.yaml` and
`_medprobe_medlama_<config>_micro.yaml`; and utils.py, medprobe/tasks/lm_eval_utils.py with the items
of each task and one `process_docs_<config>_<relation>` per task appended (each row stamped with its
medprobe id and digest). (The first paragraph is `medprobe export lm-eval --help`'s text on MedLAMA.)

Each task's metadata says what `medprobe import lm-eval` needs (medprobe.export.lm_eval.task_metadata): a
logged run of a config's tasks becomes one record of the `medlama` task on that config, each relation a
group, as `medprobe probe --task medlama --config <config> --candidates relation` records it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from medprobe.contracts import MASK_SLOT, UserError
from medprobe.export.lm_eval import (
    ExportReport,
    RecordPlan,
    check_identifiers,
    check_slots,
    exported_items,
    group_yaml,
    identifier,
    load_configs,
    task_metadata,
    task_metrics,
    yaml_lines,
)
from medprobe.loading import column
from medprobe.tasks import Scored
from medprobe.tasks.lm_eval_logs import SCORING, Imported, LoggedTask, check_items, check_per_doc, check_reported
from medprobe.tasks.lm_eval_utils import MEDLAMA_CUTOFFS, items_sha256, medlama_identity

MEDLAMA_CONFIGS = ("full", "hard")
UTILS_SOURCE = Path(__file__).with_name("lm_eval_utils.py")  # the export's utils.py (standard library only)


def export(dataset: str, location: str, split: str) -> tuple[dict[str, str], ExportReport]:
    data = load_configs(dataset, MEDLAMA_CONFIGS, split, ("id", "relation", "query", "answers"))
    files = {"_medprobe_medlama_template_yaml": medlama_template(location, split)}
    tasks, groups, requests = [], [], {}
    exported: dict[str, tuple[str, str]] = {}
    relation_of: dict[str, str] = {}
    for config, rows in data.items():
        check_slots(dataset, config, rows["query"], rows["id"], MASK_SLOT)
        by_relation: dict[str, list[list[str]]] = {}
        for row_id, relation, answers in zip(rows["id"], rows["relation"], rows["answers"]):
            if not answers:
                raise UserError(f"--dataset {dataset} (config {config!r}): row {row_id!r} has no answer")
            by_relation.setdefault(relation, []).append(answers)
        check_identifiers(dataset, config, list(by_relation))
        requests[config] = sum(len(lists) * len({n for names in lists for n in names}) for lists in by_relation.values())
        # in the order the relations first appear in the data: the order medprobe's own run groups its outcomes in
        names = [f"medprobe_medlama_{config}_{identifier(relation)}" for relation in by_relation]
        record = RecordPlan(config, tuple(names), rows.num_rows)
        items = relation_items(rows)
        for relation, task in zip(by_relation, names):
            digest = items_sha256(items[relation])
            exported[task], relation_of[task] = (split, digest), relation
            metadata = task_metadata(
                "medlama", dataset, location, config, split, (len(items[relation]), digest), record, relation=relation
            )
            files[f"{task}.yaml"] = yaml_lines(
                {
                    "include": "_medprobe_medlama_template_yaml",
                    "task": task,
                    "dataset_name": config,
                    "process_docs": f"!function utils.{process_docs_name(task)}",
                    "metadata": metadata,
                }
            )
        metrics = ("acc_at_1", "acc_at_10")
        files[f"_medprobe_medlama_{config}.yaml"] = group_yaml(f"medprobe_medlama_{config}", names, metrics, weight_by_size=False)
        files[f"_medprobe_medlama_{config}_micro.yaml"] = group_yaml(
            f"medprobe_medlama_{config}_micro", names, metrics, weight_by_size=True
        )
        tasks += names
        groups += [f"medprobe_medlama_{config}", f"medprobe_medlama_{config}_micro"]
    files["utils.py"] = UTILS_SOURCE.read_text(encoding="utf-8") + process_docs(exported, relation_of)
    notes = [f"MedLAMA configs missing from --dataset, not exported: {', '.join(c for c in MEDLAMA_CONFIGS if c not in data)}"]
    return files, ExportReport(Path(), tasks, groups, requests, notes if len(data) < len(MEDLAMA_CONFIGS) else [])


def relation_items(rows) -> dict[str, list[tuple[str, str]]]:
    """Per relation, (id, digest) of each of its rows, as medprobe's MedLAMA task and the exported utils.py give them."""
    items: dict[str, list[tuple[str, str]]] = {}
    fields = ("id", "relation", "query", "answers")
    for values in zip(*(column(rows, name) for name in fields)):
        doc = dict(zip(fields, values))
        items.setdefault(doc["relation"], []).append(medlama_identity(doc))
    return items


def process_docs_name(task: str) -> str:
    """`process_docs_hard_may_treat` for the task `medprobe_medlama_hard_may_treat`."""
    return "process_docs_" + task.removeprefix("medprobe_medlama_")


def process_docs(exported: dict[str, tuple[str, str]], relation_of: dict[str, str]) -> str:
    """utils.py's tail: the items of each task, and one `process_docs_<config>_<relation>` per task, which its YAML
    names (the relation's rows, stamped, with their candidates)."""
    functions = "".join(
        f"def {process_docs_name(task)}(dataset):\n    return medlama_docs(dataset, {relation_of[task]!r}, {task!r})\n\n\n"
        for task in sorted(exported)
    )
    return (
        "\n\n# --- written by `medprobe export lm-eval medlama`: the items of each task, and each task's process_docs ---\n\n"
        + exported_items(exported)
        + "\n\n"
        + functions.rstrip("\n")
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


# --- the import: a logged run of a config's tasks as the record `medprobe probe --candidates relation` writes ---

LIMIT_OPTION = "per_relation"  # lm_eval --limit N over the relation tasks probes the first N queries of each relation


def identity(metadata: dict, index: int, doc: dict) -> tuple[str, str]:
    """(medprobe id, content digest) of a logged doc: MedLAMA's task pairs queries by their own id."""
    return medlama_identity(doc)


def imported(tasks: list[LoggedTask], groups: dict[str, dict]) -> Imported:
    """The MedLAMA record of a config's logged relation tasks: each query's rank of its best gold answer among its
    relation's candidates (total log-likelihood, ties in candidate order, as utils.medlama_results), acc@1/acc@10
    micro, macro and per relation, each checked against lm-eval's per-doc and reported values."""
    from medprobe.stats import Outcomes, estimate
    from medprobe.tasks.medlama import MedLAMATask, chance_levels

    cutoffs = list(MEDLAMA_CUTOFFS)
    ids, relations, contents, ranks, predictions, sizes, golds = [], [], [], [], [], [], []
    spaces: dict[str, int] = {}
    for task in tasks:
        relation = task.metadata["relation"]
        items = check_items(task, identity)
        task_ranks, task_predictions, task_sizes, task_golds = ranked(task)
        for k in cutoffs:
            check_per_doc(task, f"acc_at_{k}", [float(rank <= k) for rank in task_ranks])
        ids += [item for item, _ in items]
        contents += [digest for _, digest in items]
        relations += [relation] * len(items)
        ranks += [rank if rank <= max(cutoffs) else math.nan for rank in task_ranks]
        predictions += [{"id": item, "predictions": names} for (item, _), names in zip(items, task_predictions)]
        sizes += task_sizes
        golds += task_golds
        spaces[relation] = task_sizes[0]
    outcomes = Outcomes.build(ids, relations, {"rank": ranks}, contents)
    estimators = MedLAMATask.estimators({"k": cutoffs})
    metrics = {name: estimate(outcomes, estimator) for name, estimator in estimators.items()}
    per_group = {
        relation: {
            **{f"acc@{k}": estimate(outcomes.group(relation), estimators[f"acc@{k}"]) for k in cutoffs},
            "queries": int(len(outcomes.group(relation))),
        }
        for relation in outcomes.group_names
    }
    for task in tasks:
        for k in cutoffs:
            check_reported(
                str(task.path), f"acc_at_{k}", task.reported.get(f"acc_at_{k}"), per_group[task.metadata["relation"]][f"acc@{k}"]
            )
    config = tasks[0].metadata["config"]
    for k in cutoffs:
        for group, metric in ((f"medprobe_medlama_{config}", f"macro_acc@{k}"), (f"medprobe_medlama_{config}_micro", f"acc@{k}")):
            check_reported(f"lm-eval's group {group}", f"acc_at_{k}", groups.get(group, {}).get(f"acc_at_{k}"), metrics[metric])
    chance = chance_levels(cutoffs, relations, np.array(sizes), np.array(golds))
    scored = Scored(
        metrics=metrics,
        per_group=per_group,
        counts={"queries": len(outcomes), "candidates": sum(spaces.values()), "queries_without_predictions": 0},
        settings={"k": cutoffs, "candidates": "relation", "exclude_head": False, "per_relation": None, **SCORING},
        outcomes=outcomes,
        chance=chance,
    )
    fields = {
        "rank": f"1-based rank of the query's best gold answer among its top {max(cutoffs)} candidates by lm-eval's "
        f"log-likelihoods (ties in candidate order); null: none in the top {max(cutoffs)}"
    }
    return Imported(scored, fields, predictions, LIMIT_OPTION)


def ranked(task: LoggedTask) -> tuple[list[int], list[list[str]], list[int], list[int]]:
    """Per doc of a relation task: the 1-based rank of its best gold answer by the logged log-likelihoods (the
    candidates sorted by decreasing log-likelihood, stably: ties in candidate order), its top 10 names, its number of
    candidates and of gold answers among them. Every doc of an exported relation task has the relation's candidates,
    so the docs are ranked as one matrix (docs x candidates)."""
    first = task.docs[0].get("candidates") if task.docs else None
    for number, doc in enumerate(task.docs):
        candidates, count = doc.get("candidates"), len(task.choices(number))
        if not isinstance(candidates, list) or len(candidates) != count or candidates != first:
            raise UserError(
                f"{task.path}, line {number + 1}: {count} log-likelihoods for "
                f"{len(candidates) if isinstance(candidates, list) else 'no'} candidates, not its relation's "
                f"{len(first or [])}: not a log of the exported task"
            )
    where = {name: i for i, name in enumerate(first or [])}
    scores = task.lls.reshape(len(task.docs), len(first or []))
    gold = np.zeros(scores.shape, dtype=bool)
    for number, doc in enumerate(task.docs):
        found = [where[name] for name in doc["answers"] if name in where]
        if not found:
            raise UserError(f"{task.path}, line {number + 1}: none of the query's answers is among its candidates")
        gold[number, found] = True
    best = np.argmax(np.where(gold, scores, -np.inf), axis=1)  # the first of the golds of highest log-likelihood
    rows = np.arange(len(best))
    best = np.where(gold[rows, best], best, np.argmax(gold, axis=1))  # every gold at -inf: the first gold
    at_best = scores[rows, best][:, None]
    before = np.arange(scores.shape[1])[None, :] < best[:, None]
    ranks = 1 + np.count_nonzero(scores > at_best, axis=1) + np.count_nonzero((scores == at_best) & before, axis=1)
    top = np.argsort(-scores, axis=1, kind="stable")[:, : max(MEDLAMA_CUTOFFS)]
    names = np.array(first, dtype=object)
    return ranks.tolist(), names[top].tolist(), [scores.shape[1]] * len(best), gold.sum(axis=1).tolist()
