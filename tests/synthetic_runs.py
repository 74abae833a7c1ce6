"""Made-up results JSONs with their outcomes files, and profile folders of them, for `medprobe compare` tests.

A run is written the way `medprobe.run.run` writes one: the metrics are the task's estimators on the
outcomes (so they agree, as a real run's do), the intervals come from medprobe.stats, and the
record names its outcomes file, its data fingerprint and the digest of its item ids. No model.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

import numpy as np

from medprobe.provenance import items_digest
from medprobe.records.outcomes import outcomes_entry, outcomes_jsonl, outcomes_path
from medprobe.records.record import RunRecord
from medprobe.registry import load, task_entry
from medprobe.stats import Outcomes, estimate, intervals, item_digest

RELATIONS = ("may_treat", "may_prevent", "occurs_after")
MEDLAMA_SETTINGS = {"k": [1, 10], "candidates": "set", "exclude_head": False, "per_relation": None, "layers": None}


def medlama_ranks(queries_per_relation: int, hit_share: float, seed: int) -> tuple[list[str], list[str], list[float]]:
    """Ids, relations and best-gold ranks (NaN: no gold in the top 10) of made-up MedLAMA queries."""
    rng = np.random.default_rng(seed)
    ids, groups, ranks = [], [], []
    for relation in RELATIONS:
        for row in range(queries_per_relation):
            ids.append(f"{relation}-{row:04d}")
            groups.append(relation)
            ranks.append(float(rng.integers(1, 11)) if rng.random() < hit_share else float("nan"))
    return ids, groups, ranks


def write_run(
    path: Path,
    ids: list[str],
    groups: list[str],
    columns: dict[str, list],
    *,
    task: str = "medlama",
    config: str | None = "hard",
    split: str = "test",
    prober: str = "contrastive",
    model: str = "minilm",
    settings: dict | None = None,
    fingerprint: str = "d" * 64,
    subset_options: dict | None = None,
    subset_of: dict | None = None,
    contents: list[str] | None = None,
    resamples: int = 50,
    per_group: bool = False,
    seed_spread: bool = False,
    **fields,
) -> Path:
    """A results JSON at `path` and its outcomes file beside it. Each item's content digest is `contents`' (default:
    the digest of its id alone, as if every made-up run asked the same question under one id).

    `subset_of`: what of the benchmark a subset run kept ({"probed", "total", "unit"}); `per_group`: each metric per
    group too; `seed_spread`: `<metric>_std` over the seeds of 2-D columns (as a task
    trained with several seeds records it); `fields`: RunRecord fields that replace the made-up ones (dataset,
    model_identity, source, command, chance, a `subset` with its "of", ...), none of them a number the outcomes give."""
    settings = dict(MEDLAMA_SETTINGS if settings is None else settings)
    outcomes = Outcomes.build(ids, groups, columns, contents or [item_digest("made-up", item) for item in ids])
    cls = load(task_entry(task).target)
    estimators = cls.estimators(settings)
    metrics = {name: estimate(outcomes, estimator) for name, estimator in estimators.items()}
    if seed_spread:
        metrics.update(seed_spreads(outcomes, estimators, cls.seed_spread))
    text = outcomes_jsonl(outcomes)
    record = RunRecord(
        benchmark=task_entry(task).benchmark,
        dataset="made-up",
        config=config,
        split=split,
        prober=prober,
        model=model,
        seed=None,
        settings=settings,
        metrics=metrics,
        task=task,
        per_group={
            group: {name: estimate(outcomes.group(group), estimator) for name, estimator in estimators.items()}
            for group in outcomes.group_names
        }
        if per_group
        else {},
        intervals=intervals(outcomes, estimators, resamples=resamples),
        outcomes=outcomes_entry(text, path, outcomes, cls.outcome_unit, {}),
        data_fingerprint={"sha256": fingerprint},
        subset={
            "subset": bool(subset_options),
            "options": subset_options or {},
            "items": len(outcomes),
            "item_ids_sha256": items_digest(outcomes.ids),
            **({"of": subset_of} if subset_of else {}),
        },
        command=f"medprobe probe --prober {prober} --task {task} --model {model} --out {path}",
    )
    record = dataclasses.replace(record, **fields)
    path.parent.mkdir(parents=True, exist_ok=True)
    record.save(path)
    outcomes_path(path).write_text(text, encoding="utf-8")
    return path


def seed_spreads(outcomes: Outcomes, estimators: dict, spread: str) -> dict[str, float]:
    """`<metric>_std`: the spread of each metric over the seeds (the columns of 2-D outcomes), as the task states it."""
    from medprobe.records.verify import per_seed

    seeds = next(array.shape[1] for array in outcomes.columns.values() if array.ndim > 1)
    spreads = {}
    for name, estimator in estimators.items():
        values = per_seed(outcomes, estimator, seeds)
        spreads[f"{name}_std"] = (
            0.0 if seeds < 2 else statistics.stdev(values) if spread == "sample" else statistics.pstdev(values)
        )
    return spreads


def medlama_hits(sizes: dict[str, int], at_1: dict[str, int], at_10: dict[str, int]) -> tuple[list[str], list[str], list[float]]:
    """Ids, relations and best-gold ranks of made-up MedLAMA queries whose acc@k are round: of each relation's
    `sizes[r]` queries, the first `at_1[r]` rank a gold answer 1st, the next ones up to `at_10[r]` 5th, the rest none."""
    ids, groups, ranks = [], [], []
    for relation, size in sizes.items():
        for row in range(size):
            ids.append(f"{relation}-{row:04d}")
            groups.append(relation)
            ranks.append(1.0 if row < at_1[relation] else 5.0 if row < at_10[relation] else float("nan"))
    return ids, groups, ranks


def write_medlama_run(path: Path, hit_share: float, seed: int, queries_per_relation: int = 20, **options) -> Path:
    ids, groups, ranks = medlama_ranks(queries_per_relation, hit_share, seed)
    return write_run(path, ids, groups, {"rank": ranks}, **options)


def write_mst_run(path: Path, seeds: int, accuracy: float, rng_seed: int) -> Path:
    """Made-up MST items of two tasks, `seeds` predictions each."""
    rng = np.random.default_rng(rng_seed)
    ids = [f"{task}/{row}" for task in ("comparison", "sorting") for row in range(30)]
    groups = [item.split("/")[0] for item in ids]
    labels = rng.integers(0, 2, len(ids))
    right = rng.random((len(ids), seeds)) < accuracy
    predictions = np.where(right, labels[:, None], 1 - labels[:, None])
    return write_run(
        path,
        ids,
        groups,
        {"label": labels, "prediction": predictions, "choices": [2] * len(ids)},
        task="mst",
        config=None,
        prober="mlm-head",
        settings={"seeds": list(range(seeds)), "train_split": "train"},
    )


def write_profile(folder: Path, runs: dict[str, dict], recorded_root: Path | None = None) -> Path:
    """A profile folder: runs/<label>.json per entry of `runs` (label -> {"benchmark", "config", "prober",
    "writer": callable(path), "floor_of", "failed"}) and a profile.json naming each run's results at
    `recorded_root`/runs/<label>.json (where it was written at profile time; default: the folder itself)."""
    entries = []
    for label, spec in runs.items():
        path = folder / "runs" / f"{label}.json"
        record = None
        if not spec.get("failed"):
            spec["writer"](path)
            record = json.loads(path.read_text())
        results = (recorded_root or folder) / "runs" / f"{label}.json"
        entries.append(
            {
                "label": label,
                "benchmark": spec["benchmark"],
                "config": spec["config"],
                "prober": spec["prober"],
                "floor_of": spec.get("floor_of"),
                "results": str(results),
                "record": record,
            }
        )
    (folder / "profile.json").write_text(json.dumps({"model": "made-up", "runs": entries, "headline": []}), encoding="utf-8")
    return folder
