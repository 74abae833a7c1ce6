"""The DisKnE task: a pair classifier fine-tuned and scored disease by disease.

    medprobe probe --prober pair-classifier --dataset out/disknE --config medical_similar --model minilm

For every target disease (of one category, optionally) and every seed: derive Train_X /
validation / Test_X, fine-tune the prober (`PairClassifierProbe`, a `DiseaseClassifier`) on
Train_X and label Test_X; then score each seed with the `disease_f1` metric and report per-disease
F1 and the macro and weighted averages as mean and standard deviation over seeds.

The dataset, its fields and the eligible diseases are checked in `load`, before the model loads.
The splits are derived in `predict`, where the prober is known: its hypothesis-only baseline also
drops training rows that contain a Test_X hypothesis (`exclude_test_hypotheses`).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from medprobe import distributed
from medprobe.contracts import UserError
from medprobe.loading import column, row_digests
from medprobe.registry import parse_diseases
from medprobe.stats import Estimator, Outcomes, Sample, always_positive_f1
from medprobe.tasks import Scored
from medprobe.tasks.base import BenchmarkTask
from medprobe.tasks.disknE_splits import (
    DISKNE_FIELDS,
    DiseaseSplits,
    check_disknE_fields,
    disease_splits,
    eligible_diseases,
    normalised_id,
)

if TYPE_CHECKING:  # imported where used, so that importing the task stays light
    import datasets

    from medprobe.lm.pair_classifier import DiseaseRun
    from medprobe.records.record import RunRecord

DEFAULT_SEED = 42


@dataclass
class DisKnEData:
    """What `load` found: the rows, the diseases to probe, and the targets skipped (and why)."""

    ds: datasets.Dataset
    eligible: list[str]
    skipped: dict[str, str]
    diseases: list[str]


@dataclass
class DisKnEOutputs:
    """What `predict` did: the splits it derived, the seeds it trained with, one run per (seed, disease)."""

    splits: dict[str, DiseaseSplits]
    seeds: list[int]
    runs: list[DiseaseRun]


class DisKnETask(BenchmarkTask):
    """DisKnE (the registry's task `disknE`): per-disease fine-tuning, F1 per disease.

    `category`: test only the rows of one category (medical variants); `diseases`: the first N
    eligible target diseases, or these CUIs (each must be eligible); `seeds`: train with seeds
    --seed, --seed+1, ... (42 when --seed is not given) and report the mean and the sample
    standard deviation over them (see `mean_std`).
    """

    FIELDS = ("pair_id", *DISKNE_FIELDS)
    METRIC = "disease_f1"
    GROUP_BY = "disease"
    plot_metric = "f1"
    outcome_unit = "test pair"
    seed_spread = "sample"  # metrics' *_std over seeds: the sample std (see mean_std)
    outcome_fields = {
        "label": "1 when the premise entails the disease (the gold label)",
        "prediction": "the classifier's 0/1 label, one per seed (in the order of settings.seeds)",
    }

    def __init__(self, category: str | None = None, diseases: int | list[str] | None = None, seeds: int = 1):
        if isinstance(diseases, str):  # as typed on the command line: "3" or "C0020538,C0011849"
            diseases = read_diseases(diseases)
        if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
            raise UserError(f"--seeds needs a positive number of seeds, got {seeds!r}")
        if isinstance(diseases, int) and (isinstance(diseases, bool) or diseases < 1):
            raise UserError(f"--diseases N needs N >= 1, got {diseases!r}")
        super().__init__()
        self.category = category
        self.diseases = diseases
        self.seeds = seeds

    def load(self, dataset: str, config: str | None, split: str) -> DisKnEData:
        """The rows, checked to be DisKnE's, and the target diseases to probe (printed with how many were skipped)."""
        ds = self.read(dataset, config, split)
        eligible, skipped = eligible_diseases(ds, self.category)
        diseases = choose_diseases(eligible, skipped, self.category, self.diseases)
        if self.diseases is not None:
            self.subset_of = {"probed": len(diseases), "total": len(eligible), "unit": "eligible diseases"}
        where = f" in {self.category}" if self.category else ""
        print(
            f"probing {len(diseases)} of the {len(eligible)} target diseases with at least 2 positive test rows{where} "
            f"({len(skipped)} targets have fewer)"
        )
        return DisKnEData(ds=ds, eligible=eligible, skipped=skipped, diseases=diseases)

    def check(self, ds: datasets.Dataset, what: str) -> None:
        check_disknE_fields(ds, what, self.FIELDS)  # says what a DisKnE dataset is

    def predict(self, prober: Any, data: DisKnEData, seed: int | None) -> DisKnEOutputs:
        """Derive each disease's splits, encode every row once, then fine-tune and label per (seed, disease)."""
        # the hypothesis-only baseline also leaves out training rows holding a Test_X hypothesis (as the
        # released code did); a classifier without that mode sees the standard splits
        hypothesis_only = bool(getattr(prober, "hypothesis_only", False))
        start = time.perf_counter()
        splits = {
            cui: disease_splits(data.ds, cui, self.category, exclude_test_hypotheses=hypothesis_only) for cui in data.diseases
        }
        self.timings["split"] = time.perf_counter() - start

        start = time.perf_counter()
        encoded = prober.encode(data.ds)
        self.timings["encode"] = time.perf_counter() - start

        seeds = [(DEFAULT_SEED if seed is None else seed) + i for i in range(self.seeds)]
        jobs = [(run_seed, cui) for run_seed in seeds for cui in data.diseases]
        start = time.perf_counter()
        runs = train_jobs(prober, encoded, splits, jobs)
        elapsed = time.perf_counter() - start
        # under a launch each process trains its share: the run's wall time is the slowest process's;
        # the mean per disease is over the training time of every process (the same as one process's
        # wall time / jobs when there is one)
        self.timings["fine_tune_and_predict"] = max(distributed.gather([elapsed]))
        self.timings["per_disease_mean"] = sum(run.seconds for run in runs) / len(runs)
        return DisKnEOutputs(splits=splits, seeds=seeds, runs=runs)

    def score(self, data: DisKnEData, outputs: DisKnEOutputs) -> Scored:
        metrics, per_group = summarise(outputs.runs, outputs.splits, outputs.seeds)
        return Scored(
            metrics=metrics,
            per_group=per_group,
            counts={
                "rows": data.ds.num_rows,
                "diseases": len(data.diseases),
                "skipped_diseases": len(data.skipped),
                "trainings": len(outputs.runs),
            },
            settings={"category": self.category, "seeds": outputs.seeds},
            seed=outputs.seeds[0],
            outcomes=pair_outcomes(data, outputs),
            chance=always_positive_chance(outputs.splits),
        )

    @staticmethod
    def estimators(settings: dict) -> dict[str, Estimator]:
        """Macro and weighted F1 (per disease, averaged over diseases, then over seeds), resampling the
        test pairs within each disease; every seed sees the same resample."""
        return {
            "macro_f1": Estimator(functools.partial(disease_f1, weighted=False), "test pair", stratified=True),
            "weighted_f1": Estimator(functools.partial(disease_f1, weighted=True), "test pair", stratified=True),
        }

    def table(self, record: RunRecord) -> str:
        return format_disease_table(record)


def train_jobs(prober: Any, encoded: Any, splits: dict[str, DiseaseSplits], jobs: list[tuple[int, str]]) -> list[DiseaseRun]:
    """One `DiseaseRun` per (seed, disease) job, in the order of `jobs`.

    Under a launch (`medprobe.distributed`) each process trains a contiguous share of the jobs as
    whole jobs, each Trainer a single-process one (`local_training`), and the runs are gathered
    back in job order on every process: the same list as one process would make, since each job
    seeds its own model, Trainer and data order and keeps nothing from the job before it.
    """
    return distributed.train_in_shares(
        jobs,
        lambda job: prober.run_disease(encoded, splits[job[1]], job[0]),
        desc="fine-tuning per disease",
        unit="disease",
        postfix=lambda job: f"disease={job[1]}, seed={job[0]}",
    )


def read_diseases(text: str) -> int | list[str]:
    """--diseases as typed (for callers that pass the text, not the parsed value)."""
    try:
        return parse_diseases(text)
    except argparse.ArgumentTypeError as err:
        raise UserError(f"--diseases: {err}") from None


def choose_diseases(
    eligible: list[str], skipped: dict[str, str], category: str | None, wanted: int | list[str] | None
) -> list[str]:
    """The diseases to probe: all eligible ones, the first N, or the CUIs asked for (each must be eligible)."""
    if not eligible:
        raise UserError(f"no target disease has 2 positive test rows{f' in {category}' if category else ''}; nothing to probe")
    if wanted is None:
        return eligible
    if isinstance(wanted, int):
        return eligible[:wanted]
    asked = [normalised_id(cui) for cui in wanted]  # as the ids of the rows are (a CUI pasted with a zero-width space)
    if not all(asked):
        empty = next(cui for cui, found in zip(wanted, asked) if not found)
        raise UserError(f"--diseases: {empty!r} names no disease (empty once white space and format characters are removed)")
    wanted = asked
    unknown = [cui for cui in wanted if cui not in eligible]
    if unknown:
        reasons = "; ".join(f"{cui}: {skipped.get(cui, 'not a target disease of this config')}" for cui in unknown)
        raise UserError(f"--diseases: {reasons}. Eligible: {', '.join(eligible)}")
    return list(wanted)


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (n - 1; 0 for a single seed).

    Which std each seeded task reports, and why: DisKnE (here) reports the sample std (n - 1),
    an estimate of the seed-to-seed spread, beside the DisKnE paper's mean over 3 seeds; MST
    (medprobe/tasks/mst.py, `statistics.pstdev`) reports the population std (n) of the seeds it
    ran, beside the MST paper's mean of 3 seeds. REFERENCE.md does not record which estimator
    either paper used, so each task keeps the one its results were first written with (changing
    it would change recorded numbers). With 3 seeds the sample std is sqrt(3/2) = 1.22x the
    population std.
    """
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def summarise(runs: list[DiseaseRun], splits: dict[str, DiseaseSplits], seeds: list[int]) -> tuple[dict, dict]:
    """(metrics, per_group) from the runs: `disease_f1` per seed, then mean and std over seeds."""
    metric = DisKnETask.metric()
    per_seed = {}
    for seed in seeds:
        seed_runs = [run for run in runs if run.seed == seed]
        per_seed[seed] = metric.compute(
            predictions=[p for run in seed_runs for p in run.predictions],
            references=[r for run in seed_runs for r in run.references],
            diseases=[run.cui for run in seed_runs for _ in run.predictions],
        )
    metrics = {}  # how many diseases and seeds: counts.diseases and settings.seeds (every overall metric is an F1)
    for name in ("macro_f1", "weighted_f1"):
        metrics[name], metrics[f"{name}_std"] = mean_std([per_seed[s][name] for s in seeds])
    per_group = {}
    for cui, split in splits.items():
        scores = [per_seed[s]["per_disease"][cui] for s in seeds]
        cui_runs = [run for run in runs if run.cui == cui]
        f1, f1_std = mean_std([s["f1"] for s in scores])
        per_group[cui] = {
            "name": split.name,
            "f1": f1,
            "f1_std": f1_std,
            "f1_per_seed": [s["f1"] for s in scores],
            "precision": statistics.fmean(s["precision"] for s in scores),
            "recall": statistics.fmean(s["recall"] for s in scores),
            "test_rows": len(split.test),
            "test_positives": split.test_positives,
            "train_rows": len(split.train),
            "validation_rows": len(split.validation),
            "removed_from_training": split.removed,
            "epochs": statistics.fmean(run.epochs for run in cui_runs),
            "seconds": statistics.fmean(run.seconds for run in cui_runs),
        }
    return metrics, per_group


PAIR_CONTENT = ("premise", "hypothesis", "full_hypothesis", "label")  # a test pair's item digest, after its disease


def pair_outcomes(data: DisKnEData, outputs: DisKnEOutputs) -> Outcomes:
    """One item per (disease, Test_X row): its gold label and the prediction of every seed."""
    by_job = {(run.cui, run.seed): run for run in outputs.runs}
    ids, groups, labels, predictions, contents = [], [], [], [], []
    pair_ids = column(data.ds, "pair_id")  # a list: indexing a Dataset column formats a row per access
    for cui, split in outputs.splits.items():
        runs = [by_job[(cui, seed)] for seed in outputs.seeds]
        contents += row_digests(data.ds, PAIR_CONTENT, list(split.test), cui)
        seen: dict[str, int] = {}
        for position, row in enumerate(split.test):
            name = f"{cui}/{pair_ids[row]}"
            seen[name] = seen.get(name, 0) + 1
            ids.append(name if seen[name] == 1 else f"{name}#{seen[name]}")  # a pair can hold two spellings of X
            groups.append(cui)
            labels.append(runs[0].references[position])
            predictions.append([run.predictions[position] for run in runs])
    return Outcomes.build(ids, groups, {"label": labels, "prediction": predictions}, contents)


def disease_f1(sample: Sample, weighted: bool) -> np.ndarray:
    """disease_f1's macro (or positive-weighted) F1 of the positive class, averaged over seeds."""
    label = sample["label"][..., None] == 1  # (resamples, items, 1)
    predicted = sample["prediction"] == 1  # (resamples, items, seeds)
    tp = sample.group_sum(predicted & label)
    fp = sample.group_sum(predicted & ~label)
    fn = sample.group_sum(~predicted & label)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), 0.0)  # (resamples, diseases, seeds)
    if not weighted:
        return f1.mean(axis=1).mean(axis=1)
    positives = sample.group_sum(label)  # (resamples, diseases, 1)
    total = positives.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (f1 * positives).sum(axis=1) / total, 0.0).mean(axis=1)


def always_positive_chance(splits: dict[str, DiseaseSplits]) -> dict[str, dict]:
    """F1 of the classifier that says "entails" for every test pair, per disease, averaged as the metric does."""
    positives = np.array([split.test_positives for split in splits.values()], dtype=np.float64)
    rows = np.array([len(split.test) for split in splits.values()], dtype=np.float64)
    f1 = always_positive_f1(positives, rows)
    method = "F1 of the always-positive classifier (every test pair labelled entails): 2p / (1 + p), p = positive share"
    return {
        "macro_f1": {"value": float(f1.mean()), "method": method},
        "weighted_f1": {"value": float((f1 * positives).sum() / positives.sum()) if positives.sum() else 0.0, "method": method},
    }


def format_disease_table(record: RunRecord) -> str:
    """Per-disease F1 (mean ± std over seeds, in %), then the macro and weighted averages."""
    labels = {cui: f"{values['name']} ({cui})" for cui, values in record.per_group.items()}
    width = max([len("weighted F1 (by positive test rows)"), *map(len, labels.values())])
    header = f"{'disease':<{width}}  {'test':>5}  {'pos':>4}  {'F1 (%)':>14}"
    lines = [header, "-" * len(header)]
    for cui, values in record.per_group.items():
        f1 = f"{100 * values['f1']:6.2f} ± {100 * values['f1_std']:5.2f}"
        lines.append(f"{labels[cui]:<{width}}  {values['test_rows']:>5}  {values['test_positives']:>4}  {f1:>14}")
    lines.append("-" * len(header))
    for name, label in (("macro_f1", "macro F1"), ("weighted_f1", "weighted F1 (by positive test rows)")):
        value = f"{100 * record.metrics[name]:6.2f} ± {100 * record.metrics[f'{name}_std']:5.2f}"
        lines.append(f"{label:<{width}}  {'':>5}  {'':>4}  {value:>14}")
    return "\n".join(lines)
