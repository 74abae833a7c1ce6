"""How long reading a run back costs: medprobe.records.load_run on a MedLAMA-full-sized record (issues 31 and 39:
<= 0.5 s on 2 idle cores, with every validity facet).

    python scripts/bench_verify.py [--results RUN.json] [--queries 19000] [--repeats 5] [--plain]

Every reader of a results JSON (compare, publish, review, reproduce, profile, the Python API) reads it through
`load_run`, which checks the files the JSON names (outcomes, predictions) against their sha256 and recomputes
every overall metric, per-group value and 95% interval (and clustered interval) from the per-item outcomes.
Without --results a made-up run of MedLAMA full's shape (19,000 queries over 19 relations, 1,000 resamples, a
predictions file of 10 names a query) is written through the real writer first: with every facet of
medprobe.tasks.facets (acc@1 and acc@10 micro and macro; the prompt-bias and shuffled controls at both k; AURC, its
oracle and random; ECE and Brier; intervals clustered by subject, 15,000 subjects), the variants' columns of
--variants all (consistency@k, consistency_top1, robust_acc@k: medprobe.tasks.variants) and the memorisation
signal's (mink_pp: acc@k per tertile, medprobe.tasks.memorisation), or with --plain only acc@k, as a run before
issue 39. Prints the best and median of --repeats wall times of the whole load and of each step, and
the CPU seconds of the whole load (on a shared machine the wall time also counts the other processes' turns).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from medprobe.records.verify import (
    check_written_together,
    estimators_of,
    load_record_file,
    load_run,
    read_run_outcomes,
    task_of,
    verify_intervals,
    verify_numbers,
    verify_per_group,
)

RELATIONS = 19


def made_up_run(folder: Path, queries: int, facets: bool = True) -> Path:
    """A MedLAMA-full-shaped run written as `medprobe probe` writes one (medprobe.records.write.save_run)."""
    from medprobe.provenance import items_digest
    from medprobe.records.outcomes import outcomes_entry, outcomes_jsonl, outcomes_path
    from medprobe.records.record import RunRecord
    from medprobe.records.write import save_run
    from medprobe.stats import Outcomes, estimate, item_digest
    from medprobe.tasks.medlama import MedLAMATask
    from medprobe.validity import intervals

    rng = np.random.default_rng(0)
    ids = [f"r{i % RELATIONS}-{i:05d}" for i in range(queries)]
    groups = [f"r{i % RELATIONS}" for i in range(queries)]
    ranks = np.where(rng.random(queries) < 0.4, rng.integers(1, 11, queries), np.nan)
    settings = {"k": [1, 10], "candidates": "set", "exclude_head": False, "per_relation": None}
    columns = {"rank": ranks}
    clusters = None
    if facets:
        columns["control_rank"] = np.where(rng.random(queries) < 0.1, rng.integers(1, 11, queries), np.nan)
        columns["shuffled_rank"] = np.where(rng.random(queries) < 0.15, rng.integers(1, 11, queries), np.nan)
        columns["margin"] = np.round(rng.exponential(0.05, queries), 6)  # ties, as float32 scores give
        columns["confidence"] = np.array([float(f"{p:.8g}") for p in rng.beta(2, 5, queries)])  # as the facets write it
        clusters = [f"C{int(c):07d}" for c in rng.integers(0, 15_000, queries)]
        # --variants all: the other template for 18,000 of 19,000 items and up to 2 synonyms for some
        slots = np.where(rng.random((queries, 3)) < 0.4, rng.integers(1, 11, (queries, 3)), 0.0)
        slots[rng.random(queries) < 1_000 / 19_000, 0] = np.nan
        slots[:, 1:][rng.random((queries, 2)) < 0.5] = np.nan
        columns["variant_ranks"] = slots
        columns["variant_top1_same"] = np.where(np.isnan(slots).all(axis=1), np.nan, rng.random(queries) < 0.6)
        columns["mink_pp"] = np.round(rng.normal(0.0, 1.0, queries), 6)  # --memorisation (causal LM)
        settings.update(
            {
                "confidence": "margin and probability",
                "ece_bins": 10,
                "control_placeholder": "X",
                "shuffled_control_seed": 0,
                "variants": "all",
                "variant_slots": ["default_prompt", "synonym_1", "synonym_2"],
                "mink_percent": 20.0,
            }
        )
    outcomes = Outcomes.build(ids, groups, columns, [item_digest(i) for i in ids], clusters)
    estimators = MedLAMATask.estimators(settings)
    record = RunRecord("medlama", "made-up", "full", "test", "contrastive", "minilm", None, settings=settings, task="medlama")
    record.metrics = {name: estimate(outcomes, e) for name, e in estimators.items()}
    record.per_group = {
        group: {name: estimate(outcomes.group(group), e) for name, e in estimators.items() if not e.stratified}
        for group in outcomes.group_names
    }
    record.intervals = intervals(outcomes, estimators)
    record.subset = {"subset": False, "options": {}, "items": queries, "item_ids_sha256": items_digest(ids)}
    out = folder / "results.json"
    text = outcomes_jsonl(outcomes)
    record.outcomes = outcomes_entry(text, out, outcomes, "query", {})
    names = "\n".join(f'{{"id": "{i}", "predictions": {[f"name {n}" for n in range(10)]}}}' for i in ids).replace("'", '"')
    more = [
        (outcomes_path(out), lambda temp: temp.write_text(text, encoding="utf-8")),
        (folder / "predictions.jsonl", lambda temp: temp.write_text(names + "\n", encoding="utf-8")),
    ]
    save_run(record, out, more=more)
    return out


def timed(repeats: int, work) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", help="a results JSON to read back (default: a made-up MedLAMA-full-sized run)")
    parser.add_argument("--queries", type=int, default=19_000, help="items of the made-up run (default: 19,000)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--plain", action="store_true", help="the made-up run has acc@k only (a run before issue 39)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(args.results) if args.results else made_up_run(Path(scratch), args.queries, facets=not args.plain)
        record = load_record_file(path)
        outcomes = read_run_outcomes(record, path)
        estimators = estimators_of(record, task_of(record, path), path)
        unit = "query"
        steps = {
            "read the JSON": lambda: load_record_file(path),
            "hash the files it names": lambda: check_written_together(record, path),
            "hash and parse the outcomes": lambda: read_run_outcomes(record, path),
            "per-group values": lambda: verify_per_group(record, outcomes, estimators, path, unit),
            "intervals (the bootstrap again)": lambda: verify_intervals(record, outcomes, estimators, path, unit),
            "every number": lambda: verify_numbers(record, outcomes, path),
            "load_run, whole": lambda: load_run(path),
        }
        print(
            f"{path}: {len(outcomes):,} items, {len(record.intervals)} intervals of {next(iter(record.intervals.values()))['resamples']:,} resamples"
        )
        for name, work in steps.items():
            times = timed(args.repeats, work)
            print(f"  {name:<34} best {min(times):6.3f} s   median {statistics.median(times):6.3f} s")
        cpu = []
        for _ in range(args.repeats):
            start = time.process_time()
            load_run(path)
            cpu.append(time.process_time() - start)
        print(f"  {'load_run, CPU seconds':<34} best {min(cpu):6.3f} s   median {statistics.median(cpu):6.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
