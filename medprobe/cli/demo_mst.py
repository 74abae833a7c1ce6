"""The MST step of `medprobe demo`: a model against its scratch twin on every MST task, small sizes.

`run_mst_demo()` builds small MST splits with the real builder and runs `medprobe probe --prober
mlm-head` on the model and on its scratch twin through `medprobe.run.run`, then prints one table.
Alone: `python -m medprobe.cli.demo_mst --model minilm`.

It may import the run loop and the MST task's formatting helpers (a command sits above both).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from medprobe.records.record import RunRecord
from medprobe.records.tables import interval_text
from medprobe.tasks.mst import MST_TASKS, format_scores, scores_from_record


def run_mst_demo(
    model: str = "minilm",
    *,
    train_size: int = 200,
    test_size: int = 100,
    seeds: int = 1,
    tasks: Sequence[str] = MST_TASKS,
    vocabulary: str = "choices",
    device: str = "cpu",
    out: str | Path | None = None,
    print_fn: Callable[[str], None] = print,
    phase: Callable[[str], None] = lambda text: None,
) -> dict:
    """A small MiniLM-vs-scratch run on every MST task: build, probe, print one table.

    Builds the tasks with the real builder (into `out`/mst, or a temporary folder) and runs
    `medprobe probe --prober mlm-head` on `model` and on its scratch twin (same architecture, random
    weights) through `medprobe.run.run`, the loop of every probe (with `out`, each writes its results
    file there, mst-<run>.json). Returns {"scores": {run: {task: TaskScores}}, "seconds": {phase or
    run: wall seconds}, "settings": {run: the run's settings}, "commands": {run: its `medprobe probe`
    command}, "records": {run: its RunRecord}}. About 40 s on 2 CPU cores with the defaults (most of it encoding 3,000 sentences twice).
    `phase(text)` is told what runs now (the demo shows it on the step's progress line).
    """
    import datasets

    from medprobe.building.build import build
    from medprobe.run import RunRequest, run

    bars_were_on = not datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    result: dict = {"scores": {}, "seconds": {}, "settings": {}, "commands": {}, "records": {}}
    try:
        with tempfile.TemporaryDirectory(prefix="medprobe-mst-demo-") as scratch_folder:
            folder = Path(out) / "mst" if out is not None else Path(scratch_folder)
            start = time.perf_counter()
            phase(f"building the {len(tasks)} MST tasks")
            sizes = {"train_size": train_size, "validation_size": 1, "test_size": test_size}
            build("mst", folder, configs=list(tasks), params=sizes)
            result["seconds"]["build"] = time.perf_counter() - start
            for scratch in (False, True):
                name = "scratch" if scratch else Path(model).name
                request = RunRequest(
                    task="mst",
                    prober="mlm-head",
                    dataset=str(folder),
                    model=model,
                    seed=0,
                    device=device,
                    prober_options={"vocabulary": vocabulary, **({"scratch": True} if scratch else {})},
                    task_options={"seeds": seeds},
                    out=str(Path(out) / f"mst-{name}.json") if out is not None else None,
                )
                start = time.perf_counter()
                phase(f"probing {name}")
                record = run(request, print_fn=lambda text: None)  # one table of both runs, below
                result["seconds"][name] = time.perf_counter() - start
                result["scores"][name] = scores_from_record(record)
                result["settings"][name] = record.settings
                result["commands"][name] = record.command
                result["records"][name] = record
    finally:
        if bars_were_on:
            datasets.enable_progress_bars()
    print_fn(
        f"MST: {Path(model).name} vs scratch (same architecture, random weights); frozen encoder, trained MLM head.\n"
        f"{train_size} train / {test_size} test rows per task, {seeds} seed(s); accuracy in %."
    )
    print_fn(format_scores(result["scores"]))
    print_fn(explain_scores(result["records"], result["seconds"]))
    return result


def explain_scores(records: dict[str, RunRecord], seconds: dict[str, float]) -> str:
    """The line under the MST table: what the numbers mean, the chance level, the 95% intervals, the time."""
    intervals = "; 95% intervals of the mean: " + ", ".join(
        f"{name} {interval_text(record, 'accuracy', digits=1)}" for name, record in records.items()
    )
    return (
        "% of test items answered right by a head trained on the frozen encoder; chance = 1 / number of choices; "
        f"the scratch twin shows what training the head alone reaches{intervals}. "
        "Time: " + ", ".join(f"{name} {s:.1f} s" for name, s in seconds.items())
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="MST demo: a model vs its scratch twin on every task, small sizes.")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--train-size", type=int, default=200)
    parser.add_argument("--test-size", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--vocabulary", choices=["choices", "full"], default="choices")
    args = parser.parse_args(argv)
    run_mst_demo(args.model, train_size=args.train_size, test_size=args.test_size, seeds=args.seeds, vocabulary=args.vocabulary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
