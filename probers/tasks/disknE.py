"""`medprobe probe --prober pair-classifier`: DisKnE, fine-tuned and scored disease by disease.

For every target disease (of one category, optionally) and every seed: derive Train_X /
validation / Test_X, fine-tune `PairClassifierProbe`, label Test_X; then score each seed with
the `disease_f1` metric and report per-disease F1 and the macro and weighted averages as mean
and standard deviation over seeds (a table and a results JSON).
"""

from __future__ import annotations

import argparse
import statistics
import time

from tqdm.auto import tqdm

from probers.tasks.disknE_splits import DiseaseSplits, check_disknE_fields, disease_splits, eligible_diseases
from probers.results import RunRecord, save_run
from probers.api import UserError

PAIR_CLASSIFIER = "pair-classifier"
DEFAULT_SEED = 42


def parse_diseases(text: str) -> int | list[str]:
    """`N` (the first N eligible diseases) or a comma-separated list of CUIs."""
    if text.isdigit():
        if int(text) < 1:
            raise argparse.ArgumentTypeError("--diseases N needs N >= 1")
        return int(text)
    cuis = [part.strip() for part in text.split(",") if part.strip()]
    if not cuis:
        raise argparse.ArgumentTypeError(f"expected a number or comma-separated CUIs, got {text!r}")
    return cuis


def add_pair_classifier_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(f"{PAIR_CLASSIFIER} (DisKnE: a sequence-pair classifier fine-tuned per disease)")
    group.add_argument(
        "--category",
        help="medical variants: test one category (symptoms_diseases, treatments_diseases, tests_diseases, procedure_diseases)",
    )
    group.add_argument(
        "--patience", type=int, default=2, help="epochs without a better validation loss before stopping (default: 2)"
    )
    group.add_argument(
        "--diseases",
        type=parse_diseases,
        metavar="N|CUI,...",
        help="only the first N eligible target diseases, or these CUIs (default: all)",
    )
    group.add_argument(
        "--hypothesis",
        choices=["canonical", "full"],
        default="canonical",
        help="the disease name (default) or the full MedNLI hypothesis",
    )
    group.add_argument("--hypothesis-only", action="store_true", help="baseline: classify the hypothesis without the premise")
    group.add_argument(
        "--train-batch-size", type=int, default=8, help="training batch size (default: 8); --batch-size is for evaluation"
    )
    group.add_argument("--max-length", type=int, default=256, help="tokens per (premise, hypothesis) pair (default: 256)")


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
    unknown = [cui for cui in wanted if cui not in eligible]
    if unknown:
        reasons = "; ".join(f"{cui}: {skipped.get(cui, 'not a target disease of this config')}" for cui in unknown)
        raise UserError(f"--diseases: {reasons}. Eligible: {', '.join(eligible)}")
    return list(wanted)


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (n - 1; 0 for a single seed)."""
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def summarise(runs: list, splits: dict[str, DiseaseSplits], seeds: list[int]) -> tuple[dict, dict]:
    """(metrics, per_group) from the runs: `disease_f1` per seed, then mean and std over seeds."""
    import evaluate

    from probers.hub.resources import metric_path

    metric = evaluate.load(metric_path("disease_f1"))
    per_seed = {}
    for seed in seeds:
        seed_runs = [run for run in runs if run.seed == seed]
        per_seed[seed] = metric.compute(
            predictions=[p for run in seed_runs for p in run.predictions],
            references=[r for run in seed_runs for r in run.references],
            diseases=[run.cui for run in seed_runs for _ in run.predictions],
        )
    metrics = {"diseases": len(splits), "seeds": len(seeds)}
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


def run_pair_classifier(args: argparse.Namespace) -> int:
    from probers.lm.pair_classifier import PairClassifierProbe
    from probers.probe import apply_training_defaults, load_probe_dataset

    if not args.model:
        raise UserError(f"--prober {PAIR_CLASSIFIER} needs --model (a folder, a Hub id, or minilm)")
    apply_training_defaults(args, seeds=1, epochs=8, learning_rate=2e-5)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    ds = load_probe_dataset(args.dataset, args.config, args.split)
    check_disknE_fields(ds, f"dataset {args.dataset!r} (config {args.config!r})")
    eligible, skipped = eligible_diseases(ds, args.category)
    diseases = choose_diseases(eligible, skipped, args.category, args.diseases)
    splits = {cui: disease_splits(ds, cui, args.category, exclude_test_hypotheses=args.hypothesis_only) for cui in diseases}
    timings["load_and_split"] = time.perf_counter() - start
    where = f" in {args.category}" if args.category else ""
    print(
        f"probing {len(diseases)} of the {len(eligible)} target diseases with at least 2 positive test rows{where} "
        f"({len(skipped)} targets have fewer)"
    )

    start = time.perf_counter()
    prober = PairClassifierProbe(
        args.model,
        hypothesis=args.hypothesis,
        hypothesis_only=args.hypothesis_only,
        learning_rate=args.learning_rate,
        train_batch_size=args.train_batch_size,
        eval_batch_size=args.batch_size,
        epochs=args.epochs,
        patience=args.patience,
        max_length=args.max_length,
        device=args.device,
    )
    encoded = prober.encode(ds)
    timings["load_model_and_encode"] = time.perf_counter() - start

    seeds = [(DEFAULT_SEED if args.seed is None else args.seed) + i for i in range(args.seeds)]
    runs = []
    start = time.perf_counter()
    with tqdm(total=len(seeds) * len(diseases), desc="fine-tuning per disease", unit="disease") as bar:
        for seed in seeds:
            for cui in diseases:
                bar.set_postfix(disease=cui, seed=seed)
                runs.append(prober.run_disease(encoded, splits[cui], seed))
                bar.update()
    timings["fine_tune_and_predict"] = time.perf_counter() - start
    timings["per_disease_mean"] = timings["fine_tune_and_predict"] / len(runs)

    metrics, per_group = summarise(runs, splits, seeds)
    record = RunRecord(
        benchmark="disknE",
        dataset=args.dataset,
        config=args.config,
        split=args.split,
        prober=args.prober,
        model=args.model,
        seed=seeds[0],
        settings={**prober.settings, "category": args.category, "seeds": seeds, "eval_batch_size": args.batch_size},
        metrics=metrics,
        per_group=per_group,
        timings={phase: round(seconds, 3) for phase, seconds in timings.items()},
        counts={"rows": ds.num_rows, "diseases": len(diseases), "skipped_diseases": len(skipped), "trainings": len(runs)},
    )
    print(format_disease_table(record))
    save_run(record, args.out, plot=args.plot, plot_metric="f1")
    return 0
