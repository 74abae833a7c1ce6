"""A stand-in for medprobe.run.run that writes a made-up results JSON (and predictions) per request.

For the tests of the folder `medprobe profile` writes (lock, staging, kills, resume: tests/test_profile_folder.py,
through tests/build_pause.py --fake-runs), where the model is not the point. The headline metric of each
run is 0.25 + seed / 1000, so the runs of profiles with other seeds differ.
"""

from __future__ import annotations

import medprobe.run
from medprobe.atomic import write_text_atomically
from medprobe.registry import task_entry
from medprobe.results import RunRecord

CALLS: list = []  # the requests run, in this process


def fake_record(request: medprobe.run.RunRequest) -> RunRecord:
    value = round(0.25 + (request.seed or 0) / 1000, 4)
    return RunRecord(
        benchmark=request.task,
        dataset=request.dataset,
        config=request.config,
        split=request.split,
        prober=request.prober,
        model=request.model,
        seed=request.seed,
        metrics={task_entry(request.task).headline: value},
    )


def fake_run(request: medprobe.run.RunRequest, print_fn=print) -> RunRecord:
    CALLS.append(request)
    record = fake_record(request)
    record.save(request.out)
    if request.task_options.get("predictions"):
        write_text_atomically(request.task_options["predictions"], f'{{"seed": {request.seed}}}\n')
    print_fn(f"fake run of {request.task}/{request.prober}: {record.metrics}")
    return record


def install() -> None:
    medprobe.run.run = fake_run
