"""Probing the measuring-skill tests (MST): `medprobe probe --prober mlm-head`.

The protocol of Park, Ryu, Choi (2022): per task, train only a masked-LM head on the frozen
encoder with the `train` split, report accuracy on the evaluated split (default `test`), mean
and standard deviation over several seeds; `--scratch` runs the same architecture with random
weights as the floor. Accuracy is acc@1 of the `acc_at_k` evaluate module on the choices
ranked by the prober (for one gold choice per item, acc@1 is accuracy).

    medprobe build mst --out out/mst
    medprobe probe --dataset out/mst --prober mlm-head --model minilm --seeds 3            # all tasks
    medprobe probe --dataset out/mst --config comparison --prober mlm-head --model minilm --scratch

The demo's MST step (`medprobe demo`, medprobe/cli/demo_mst.py) runs this task through the run loop.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from medprobe import distributed
from medprobe.contracts import UserError
from medprobe.loading import column, row_digests
from medprobe.stats import Estimator, Outcomes, Sample
from medprobe.tasks import Scored
from medprobe.tasks.base import BenchmarkTask

if TYPE_CHECKING:  # datasets and torch are imported where used, so that `medprobe --help` stays fast
    import datasets

    from medprobe.lm.mlm_head import MLMHeadProbe
    from medprobe.records.record import RunRecord

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
    predictions: list[list[int]] = field(default_factory=list)  # per seed, the chosen choice of every test item

    @property
    def mean(self) -> float:
        return statistics.fmean(self.accuracy)

    @property
    def std(self) -> float:
        """Population standard deviation over seeds (0 for one seed)."""
        return statistics.pstdev(self.accuracy)


def probe_with(
    probe: MLMHeadProbe,
    tasks: dict[str, tuple[datasets.Dataset, datasets.Dataset]],
    *,
    seeds: Sequence[int],
    progress: bool = True,
    metric=None,
) -> dict[str, TaskScores]:
    """Train a head per (seed, task) on the first dataset of each pair, score the second (`MSTTask.predict`).

    One probe serves every task and seed: a pretrained encoder is encoded once per text; a
    scratch encoder is drawn once per seed. Every (seed, task) starts from `probe.reset(seed)`.
    `metric` is the loaded acc_at_k module (loaded here when None).
    """
    metric = metric or load_accuracy_metric()
    scores = {
        task: TaskScores(task, 1 / len(test[0]["choices"]), train.num_rows, test.num_rows)
        for task, (train, test) in tasks.items()
    }
    runs = [(seed, task) for seed in seeds for task in tasks]
    for (_, task), (accuracy, chosen) in zip(runs, fit_and_score_all(probe, tasks, runs, metric, progress)):
        scores[task].accuracy.append(accuracy)  # runs go seed by seed: each task's list is in seed order
        scores[task].predictions.append(chosen)
    return scores


def fit_and_score_all(
    probe: MLMHeadProbe,
    tasks: dict[str, tuple[datasets.Dataset, datasets.Dataset]],
    runs: list[tuple[int, str]],
    metric,
    progress: bool,
) -> list[tuple[float, list[int]]]:
    """The accuracy of each (seed, task) run and the index of the choice it picked per test item, in the order of `runs`.

    Under a launch (`medprobe.distributed`) each process fits a contiguous share of the runs, each
    Trainer a single-process one (`local_training`), and the accuracies are gathered back in
    order: the same list as one process makes, since a run depends only on its seed and task
    (`probe.reset(seed)` draws the head, and a scratch encoder, from the seed alone; the Trainer
    reseeds with it; the cached encoder states are the same whichever run encoded them).
    """
    probe.trainer_progress = False  # one bar over all fits instead of the Trainer's per fit

    def fit_and_score(run: tuple[int, str]) -> tuple[float, list[int]]:
        seed, task = run
        train, test = tasks[task]
        probe.reset(seed)
        probe.fit(column(train, "text"), column(train, "choices"), column(train, "label"))
        choices = column(test, "choices")  # read once: each pass over a Dataset column formats it row by row
        ranked = rank_choices(probe.score_choices(column(test, "text"), choices), choices)
        gold = [[options[label]] for options, label in zip(choices, column(test, "label"))]
        chosen = [options.index(names[0]) for names, options in zip(ranked, choices)]
        return metric.compute(predictions=ranked, references=gold, k=[1])["acc@1"], chosen

    return distributed.train_in_shares(
        runs, fit_and_score, desc="training heads", unit="head", progress=progress, postfix=lambda run: f"seed {run[0]}, {run[1]}"
    )


def load_accuracy_metric():
    """acc_at_k from its evaluate module: acc@1 of ranked choices against the one gold choice."""
    return MSTTask.metric()


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
    means = {
        name: [statistics.fmean(seed_values) for seed_values in zip(*(s.accuracy for s in run.values()))]
        for name, run in columns.items()
    }
    lines.append(f"{'mean over tasks':<{width}}  {'':>6}  " + "  ".join(f"{show(v):>{cell}}" for v in means.values()))
    return "\n".join(lines)


@dataclass
class MSTOutputs:
    """What `MSTTask.predict` returns: the accuracies per task and seed, and the probe's settings."""

    scores: dict[str, TaskScores]
    seeds: list[int]
    settings: dict


class MSTTask(BenchmarkTask):
    """`medprobe probe --prober mlm-head`: one task (--config) or every task of an MST-format dataset."""

    FIELDS = ITEM_FIELDS
    METRIC = "acc_at_k"
    GROUP_BY = "task"
    plot_metric = "accuracy"
    outcome_unit = "item"
    seed_spread = "population"  # accuracy_std over seeds: the population std (statistics.pstdev)
    outcome_fields = {
        "label": "index of the gold choice",
        "prediction": "index of the choice the trained head ranked first, one per seed (in the order of settings.seeds)",
        "choices": "number of choices (chance = 1 / choices)",
    }

    def __init__(self, train_split: str = "train", seeds: int = 3):
        if seeds < 1:
            raise UserError(f"--seeds must be at least 1, got {seeds}")
        super().__init__()
        self.train_split = train_split
        self.seeds = seeds

    def load(self, dataset: str, config: str | None, split: str) -> dict[str, tuple[datasets.Dataset, datasets.Dataset]]:
        """(train split, evaluated split) per task: `config`, or every config of the dataset, the
        five MST tasks first in their usual order."""
        from medprobe.loading import dataset_config_names

        if config:
            task_names = [config]
        else:
            names = dataset_config_names(dataset)
            task_names = sorted(names, key=lambda n: (MST_TASKS.index(n) if n in MST_TASKS else len(MST_TASKS), n))
        tasks = {}
        for task in task_names:
            tasks[task] = (
                self.read(dataset, task, self.train_split, name_split=True),
                self.read(dataset, task, split, name_split=True),
            )
        return tasks

    def predict(
        self, prober: MLMHeadProbe, data: dict[str, tuple[datasets.Dataset, datasets.Dataset]], seed: int | None
    ) -> MSTOutputs:
        """Seeds `seed`, `seed`+1, ... (`seed` None: 0); a new head per seed and task."""
        first_seed = 0 if seed is None else seed
        seeds = list(range(first_seed, first_seed + self.seeds))
        scores = probe_with(prober, data, seeds=seeds, progress=getattr(prober, "progress", True))
        return MSTOutputs(scores, seeds, {"batch_size": prober.batch_size, **prober.settings})

    def score(self, data: dict, outputs: MSTOutputs) -> Scored:
        scores = outputs.scores
        # the mean over tasks per seed, then the mean and spread of those over seeds
        per_seed_means = [statistics.fmean(values) for values in zip(*(s.accuracy for s in scores.values()))]
        return Scored(
            metrics={"accuracy": statistics.fmean(per_seed_means), "accuracy_std": statistics.pstdev(per_seed_means)},
            per_group={
                task: {"accuracy": s.mean, "accuracy_std": s.std, "accuracy_per_seed": s.accuracy, "chance": s.chance}
                for task, s in scores.items()
            },
            counts={
                "tasks": len(scores),
                **{f"{t}_rows": {"train": s.train_rows, "test": s.test_rows} for t, s in scores.items()},
            },
            settings={"seeds": outputs.seeds, "train_split": self.train_split, **outputs.settings},
            seed=outputs.seeds[0],
            outcomes=item_outcomes(data, scores),
            chance={
                "accuracy": {
                    "value": statistics.fmean(s.chance for s in scores.values()),
                    "method": "1 / number of choices, averaged over the tasks",
                }
            },
        )

    @staticmethod
    def estimators(settings: dict) -> dict[str, Estimator]:
        """Accuracy per task, averaged over tasks, then over seeds; test items resampled within each
        task, every seed on the same resample."""
        return {"accuracy": Estimator(mean_task_accuracy, "item", stratified=True)}

    def table(self, record: RunRecord) -> str:
        """The accuracy table of `format_scores`, rebuilt from the record, and the seconds it took."""
        scores = scores_from_record(record)
        name = f"{Path(record.model or 'model').name}{' (scratch)' if record.settings.get('scratch') else ''}"
        seconds = sum(record.timings.get(phase, 0.0) for phase in ("load_dataset", "load_model", "probe", "score"))
        return "\n".join(
            [
                f"mlm-head probe, {len(record.settings['seeds'])} seed(s), accuracy in % (mean ± std over seeds):",
                format_scores({name: scores}),
                f"probed in {seconds:.0f} s",
            ]
        )


def scores_from_record(record: RunRecord) -> dict[str, TaskScores]:
    """The accuracies per task and seed of a run's record (its rows counted when the record has them)."""
    scores = {}
    for task, values in record.per_group.items():
        rows = record.counts.get(f"{task}_rows", {})
        scores[task] = TaskScores(
            task, values["chance"], rows.get("train", 0), rows.get("test", 0), list(values["accuracy_per_seed"])
        )
    return scores


def item_outcomes(data: dict[str, tuple[datasets.Dataset, datasets.Dataset]], scores: dict[str, TaskScores]) -> Outcomes:
    """One item per test row of every task: its gold choice, the choice picked per seed, its number of choices."""
    ids, groups, labels, predictions, choices, contents = [], [], [], [], [], []
    for task, task_scores in scores.items():
        test = data[task][1]
        contents += row_digests(test, ITEM_FIELDS, None, task)
        for row, (label, options) in enumerate(zip(column(test, "label"), column(test, "choices"))):
            ids.append(f"{task}/{row}")
            groups.append(task)
            labels.append(label)
            predictions.append([seed_predictions[row] for seed_predictions in task_scores.predictions])
            choices.append(len(options))
    return Outcomes.build(ids, groups, {"label": labels, "prediction": predictions, "choices": choices}, contents)


def mean_task_accuracy(sample: Sample) -> np.ndarray:
    correct = sample["prediction"] == sample["label"][..., None]  # (resamples, items, seeds)
    return sample.group_mean(correct).mean(axis=1).mean(axis=1)
