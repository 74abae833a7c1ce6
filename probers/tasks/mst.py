"""Probing the measuring-skill tests (MST): `medprobe probe --prober mlm-head`, and a quick demo.

The protocol of Park, Ryu, Choi (2022): per task, train only a masked-LM head on the frozen
encoder with the `train` split, report accuracy on the evaluated split (default `test`), mean
and standard deviation over several seeds; `--scratch` runs the same architecture with random
weights as the floor. Accuracy is acc@1 of the `acc_at_k` evaluate module on the choices
ranked by the prober (for one gold choice per item, acc@1 is accuracy).

    medprobe build mst --out out/mst
    medprobe probe --dataset out/mst --prober mlm-head --model minilm --seeds 3            # all tasks
    medprobe probe --dataset out/mst --config comparison --prober mlm-head --model minilm --scratch

`run_mst_demo()` builds small MST splits with the real builder, probes a model and its scratch
twin on every task and prints one table (about 40 s on 2 CPU cores).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm.auto import tqdm

from probers.ranking import check_fields
from probers.results import RunRecord, save_run
from probers.api import UserError

if TYPE_CHECKING:  # datasets and torch are imported where used, so that `medprobe --help` stays fast
    import datasets

MST_TASKS = ("comparison", "argminmax", "sorting", "unit_conversion", "reference_range")
ITEM_FIELDS = ("text", "choices", "label")


@dataclass
class TaskScores:
    """Accuracy of one task over seeds."""

    task: str
    chance: float  # 1 / number of choices
    train_rows: int
    test_rows: int
    accuracy: list[float] = field(default_factory=list)  # one per seed

    @property
    def mean(self) -> float:
        return statistics.fmean(self.accuracy)

    @property
    def std(self) -> float:
        """Population standard deviation over seeds (0 for one seed)."""
        return statistics.pstdev(self.accuracy)


def add_mlm_head_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "mlm-head prober (MST: frozen encoder, trained masked-LM head)",
        "Trains on --train-split, scores --split. Without --config, every task of the dataset is probed.",
    )
    group.add_argument("--scratch", action="store_true", help="same architecture with random weights (the floor)")
    group.add_argument("--train-split", default="train", help="split the head is trained on (default: train)")
    group.add_argument(
        "--vocabulary", choices=["choices", "full"], default="choices",
        help="softmax over the choices' word pieces (default, fast) or the whole vocabulary",
    )  # fmt: skip


def training_arguments(epochs: float | None, learning_rate: float | None, use_cpu: bool, output_dir: str):
    """TrainingArguments with the probe's defaults (no Trainer bars: `probe_tasks` shows one over
    all fits), overriding only what was asked for."""
    from probers.lm.mlm_head import default_training_args

    args = default_training_args(0, use_cpu, False, output_dir)
    if epochs is not None:
        args.num_train_epochs = epochs
    if learning_rate is not None:
        args.learning_rate = learning_rate
    return args


def probe_tasks(
    model: str,
    tasks: dict[str, tuple[datasets.Dataset, datasets.Dataset]],
    *,
    seeds: Sequence[int],
    scratch: bool = False,
    vocabulary: str = "choices",
    training_args=None,
    batch_size: int = 64,
    device: str = "auto",
    progress: bool = True,
    metric=None,
) -> tuple[dict[str, TaskScores], object]:
    """Train a head per (seed, task) on the first dataset of each pair, score the second.

    One probe serves every task and seed: a pretrained encoder is encoded once per text; a
    scratch encoder is drawn once per seed. Returns the scores per task and the probe (for its
    settings and timings). `metric` is the loaded acc_at_k module (loaded here when None).
    """
    from probers.lm.mlm_head import MLMHeadProbe

    metric = metric or load_accuracy_metric()
    scores = {
        task: TaskScores(task, 1 / len(test[0]["choices"]), train.num_rows, test.num_rows)
        for task, (train, test) in tasks.items()
    }
    probe = None
    runs = [(seed, task) for seed in seeds for task in tasks]
    with tqdm(total=len(runs), desc="training heads", unit="head", disable=not progress) as bar:
        for seed, task in runs:
            train, test = tasks[task]
            bar.set_postfix_str(f"seed {seed}, {task}")
            if probe is None:
                probe = MLMHeadProbe(
                    model, scratch=scratch, seed=seed, vocabulary=vocabulary, training_args=training_args,
                    batch_size=batch_size, device=device, progress=progress,
                )  # fmt: skip
            else:
                probe.reset(seed)
            probe.fit(train["text"], train["choices"], train["label"])
            ranked = rank_choices(probe.score(test["text"], test["choices"]), test["choices"])
            gold = [[options[label]] for options, label in zip(test["choices"], test["label"])]
            scores[task].accuracy.append(metric.compute(predictions=ranked, references=gold, k=[1])["acc@1"])
            bar.update()
    return scores, probe


def load_accuracy_metric():
    """acc_at_k from its evaluate module: acc@1 of ranked choices against the one gold choice."""
    import evaluate

    from probers.hub.resources import metric_path

    return evaluate.load(metric_path("acc_at_k"))


def rank_choices(scores: list[list[float]], choices: list[list[str]]) -> list[list[str]]:
    """Choices best first; equal scores keep the choices' order."""
    return [[options[i] for i in sorted(range(len(options)), key=lambda i: -row[i])] for row, options in zip(scores, choices)]


def format_scores(columns: dict[str, dict[str, TaskScores]]) -> str:
    """One row per task, one column per run (e.g. minilm, scratch): accuracy % (mean ± std)."""
    tasks = list(next(iter(columns.values())))
    width = max(len("mean over tasks"), *(len(t) for t in tasks))
    several = any(len(s.accuracy) > 1 for run in columns.values() for s in run.values())
    cell = 15 if several else 8

    def show(values: list[float]) -> str:
        text = f"{100 * statistics.fmean(values):.1f}"
        return text + f" ± {100 * statistics.pstdev(values):.1f}" if several else text

    lines = [f"{'task':<{width}}  {'chance':>6}  " + "  ".join(f"{name:>{cell}}" for name in columns)]
    lines.append("-" * len(lines[0]))
    for task in tasks:
        first = next(iter(columns.values()))[task]
        cells = "  ".join(f"{show(run[task].accuracy):>{cell}}" for run in columns.values())
        lines.append(f"{task:<{width}}  {100 * first.chance:>6.1f}  {cells}")
    lines.append("-" * len(lines[0]))
    # mean over tasks per seed, then mean and std of those over seeds
    means = {name: [statistics.fmean(seed_values) for seed_values in zip(*(s.accuracy for s in run.values()))]
             for name, run in columns.items()}  # fmt: skip
    lines.append(f"{'mean over tasks':<{width}}  {'':>6}  " + "  ".join(f"{show(v):>{cell}}" for v in means.values()))
    return "\n".join(lines)


def run_mlm_head(args: argparse.Namespace) -> int:
    """`medprobe probe --prober mlm-head`: probe one or all tasks of an MST-format dataset."""
    from probers.models import resolve_device
    from probers.probe import apply_training_defaults, dataset_config_names, load_probe_dataset

    if not args.model:
        raise UserError("--prober mlm-head needs --model (a masked-LM or encoder folder, a Hub id, or minilm)")
    apply_training_defaults(args, seeds=3)  # epochs and learning rate: the head's own defaults (20, 1e-3)
    started = time.perf_counter()
    if args.config:
        task_names = [args.config]
    else:  # every config, the five MST tasks in their usual order first
        names = dataset_config_names(args.dataset)
        task_names = sorted(names, key=lambda n: (MST_TASKS.index(n) if n in MST_TASKS else len(MST_TASKS), n))
    tasks = {}
    for task in task_names:
        train = load_probe_dataset(args.dataset, task, args.train_split)
        test = load_probe_dataset(args.dataset, task, args.split)
        for split, ds in ((args.train_split, train), (args.split, test)):
            check_fields(ds, ITEM_FIELDS, f"dataset {args.dataset!r} (config {task!r}, split {split!r})")
        tasks[task] = (train, test)
    loaded = time.perf_counter() - started

    first_seed = 0 if args.seed is None else args.seed
    seeds = list(range(first_seed, first_seed + args.seeds))
    use_cpu = resolve_device(args.device).type == "cpu"
    with tempfile.TemporaryDirectory(prefix="medprobe-mlm-head-") as trainer_dir:  # the Trainer's; nothing is kept
        training_args = training_arguments(args.epochs, args.learning_rate, use_cpu, trainer_dir)
        scores, probe = probe_tasks(
            args.model, tasks, seeds=seeds, scratch=args.scratch, vocabulary=args.vocabulary,
            training_args=training_args, batch_size=args.batch_size, device=args.device,
        )  # fmt: skip
    name = f"{Path(args.model).name}{' (scratch)' if args.scratch else ''}"
    per_seed_means = [statistics.fmean(values) for values in zip(*(s.accuracy for s in scores.values()))]
    record = RunRecord(
        benchmark="mst",
        dataset=args.dataset,
        config=args.config,
        split=args.split,
        prober=args.prober,
        model=args.model,
        seed=first_seed,
        settings={"seeds": seeds, "train_split": args.train_split, "batch_size": args.batch_size, **probe.settings},
        metrics={"accuracy": statistics.fmean(per_seed_means), "accuracy_std": statistics.pstdev(per_seed_means)},
        per_group={
            task: {"accuracy": s.mean, "accuracy_std": s.std, "accuracy_per_seed": s.accuracy, "chance": s.chance}
            for task, s in scores.items()
        },
        timings={"load_dataset": round(loaded, 3), **{k: round(v, 3) for k, v in probe.timings.items()},
                 "total": round(time.perf_counter() - started, 3)},  # fmt: skip
        counts={"tasks": len(tasks), **{f"{t}_rows": {"train": s.train_rows, "test": s.test_rows} for t, s in scores.items()}},
    )
    print(f"mlm-head probe, {len(seeds)} seed(s), accuracy in % (mean ± std over seeds):")
    print(format_scores({name: scores}))
    print(f"probed in {record.timings['total']:.0f} s")
    save_run(record, args.out, plot=args.plot, plot_metric="accuracy")
    return 0


def run_mst_demo(
    model: str = "minilm",
    *,
    train_size: int = 200,
    test_size: int = 100,
    seeds: int = 1,
    tasks: Sequence[str] = MST_TASKS,
    vocabulary: str = "choices",
    device: str = "cpu",
    print_fn: Callable[[str], None] = print,
) -> dict:
    """A small MiniLM-vs-scratch run on every MST task: build, probe, print one table.

    Builds the tasks with the real builder into a temporary Hub folder, loads them with
    `load_dataset`, and probes `model` and its scratch twin (same architecture, random
    weights). Returns {"scores": {run: {task: TaskScores}}, "seconds": {phase or run: wall
    seconds}, "settings": {run: the probe's settings}}. About 40 s on 2 CPU cores with the
    defaults (most of it encoding 3,000 sentences twice).
    """
    import datasets

    from probers.hub.build import build

    bars_were_on = not datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="medprobe-mst-demo-") as folder:
            sizes = {"train_size": train_size, "validation_size": 1, "test_size": test_size}
            build("mst", folder, configs=list(tasks), params=sizes)
            data = {
                task: (datasets.load_dataset(folder, task, split="train"), datasets.load_dataset(folder, task, split="test"))
                for task in tasks
            }
        metric = load_accuracy_metric()
        seconds = {"build and load": time.perf_counter() - start}
        columns, settings = {}, {}
        for scratch in (False, True):
            name = "scratch" if scratch else Path(model).name
            start = time.perf_counter()
            columns[name], probe = probe_tasks(
                model, data, seeds=range(seeds), scratch=scratch, vocabulary=vocabulary, device=device,
                progress=False, metric=metric,
            )  # fmt: skip
            seconds[name] = time.perf_counter() - start
            settings[name] = probe.settings
    finally:
        if bars_were_on:
            datasets.enable_progress_bars()
    print_fn(
        f"MST: {Path(model).name} vs scratch (same architecture, random weights); frozen encoder, trained MLM head.\n"
        f"{train_size} train / {test_size} test rows per task, {seeds} seed(s); accuracy in %."
    )
    print_fn(format_scores(columns))
    print_fn("wall time: " + ", ".join(f"{name} {s:.1f} s" for name, s in seconds.items()))
    return {"scores": columns, "seconds": seconds, "settings": settings}


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
