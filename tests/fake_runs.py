"""A stand-in for medprobe.run.run that writes a made-up run per request: results JSON, outcomes, predictions.

For the tests of the folder `medprobe profile` writes (lock, staging, kills, resume: tests/test_profile_folder.py,
through tests/build_pause.py --fake-runs), where the model is not the point. The files are written the way a real
run writes them (medprobe.records.write.save_run: outcomes and predictions first, the JSON last, naming their sha256),
so the runs read back through medprobe.records. A MedLAMA or MST run has 1,000 items of which 250 + seed are hits,
so its headline metric is 0.25 + seed / 1000 and the runs of profiles with other seeds differ.
"""

from __future__ import annotations

import numpy as np

import medprobe.run
from medprobe.digests import sha256_text
from medprobe.provenance import items_digest
from medprobe.records.outcomes import outcomes_entry, outcomes_jsonl, outcomes_path
from medprobe.records.record import RunRecord
from medprobe.records.write import save_run
from medprobe.registry import load, task_entry
from medprobe.stats import Outcomes, estimate, intervals, item_digest

CALLS: list = []  # the requests run, in this process
ITEMS = 1000


def fake_outcomes(task: str, seed: int) -> tuple[Outcomes, dict]:
    """(outcomes with 250 + seed hits of 1,000, the settings the task's estimators read)."""
    ids = [f"{task}-{row:04d}" for row in range(ITEMS)]
    hit = np.arange(ITEMS) < 250 + seed
    contents = [item_digest("fake", item) for item in ids]
    if task == "mst":
        labels = np.zeros(ITEMS)
        columns = {"label": labels, "prediction": np.where(hit, 0, 1)[:, None], "choices": np.full(ITEMS, 2)}
        return Outcomes.build(ids, ["comparison"] * ITEMS, columns, contents), {"seeds": [seed], "train_split": "train"}
    columns = {"rank": np.where(hit, 1.0, np.nan)}
    settings = {"k": [1, 10], "candidates": "set", "exclude_head": False, "per_relation": None}
    return Outcomes.build(ids, ["may_treat"] * ITEMS, columns, contents), settings


def fake_record(request: medprobe.run.RunRequest, outcomes: Outcomes, settings: dict) -> RunRecord:
    estimators = load(task_entry(request.task).target).estimators(settings)
    return RunRecord(
        benchmark=task_entry(request.task).benchmark,
        dataset=request.dataset,
        config=request.config,
        split=request.split,
        prober=request.prober,
        model=request.model,
        seed=request.seed,
        settings=settings,
        metrics={name: estimate(outcomes, estimator) for name, estimator in estimators.items()},
        intervals=intervals(outcomes, estimators, resamples=100),
        subset={"subset": False, "options": {}, "items": len(outcomes), "item_ids_sha256": items_digest(outcomes.ids)},
        data_fingerprint={"sha256": sha256_text(f"{request.task}/{request.config}")},  # made-up data: one per config
        task=request.task,
    )


def fake_run(request: medprobe.run.RunRequest, print_fn=print, entries=None) -> RunRecord:
    CALLS.append(request)
    if request.task not in ("medlama", "mst"):
        raise NotImplementedError(f"fake_runs makes MedLAMA and MST runs only, not {request.task}")
    outcomes, settings = fake_outcomes(request.task, request.seed or 0)
    record = fake_record(request, outcomes, settings)
    text = outcomes_jsonl(outcomes)
    record.outcomes = outcomes_entry(text, request.out, outcomes, "query", {})
    predictions = request.task_options.get("predictions")
    more = [
        (outcomes_path(request.out), lambda temp: temp.write_text(text, encoding="utf-8")),
        (predictions, lambda temp: temp.write_text(f'{{"seed": {request.seed}}}\n', encoding="utf-8")),
    ]
    save_run(record, request.out, more=more)
    print_fn(f"fake run of {request.task}/{request.prober}: {record.metrics}")
    return record


def install() -> None:
    medprobe.run.run = fake_run
