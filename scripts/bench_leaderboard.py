"""How long `medprobe leaderboard` takes: 100 made-up models on MedLAMA hard's shape (issues 33, 38: <= 30 s on 2 cores).

    python scripts/bench_leaderboard.py [--models 100] [--queries 15329] [--runs DIR] [--repeats 1]

Writes --models runs of MedLAMA hard's shape (15,329 queries over 19 relations, acc@1 and acc@10 micro and
macro with their 1,000-resample intervals, as `medprobe probe` writes them: medprobe.records.write.save_run),
their hit rates spread so that neighbours differ by a fraction of a point (most adjacent pairs tie, some do
not), then times the whole command: every run read back through medprobe.records (its numbers and intervals
recomputed), every one of the 4,950 pairs tested (exact McNemar, Holm over all of them: rank intervals and
letters), the 99 adjacent pairs in full with their per-relation differences, a page per model and pair, and the
folder written. It then times the test of all pairs alone (the discordant counts of every pair from one matrix
product, the exact p of each, Holm, letters) and prints its share of the whole build. --runs keeps the made-up
runs for the next call (writing them takes a minute; it is not timed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RELATIONS = 19


def write_runs(folder: Path, models: int, queries: int) -> list[Path]:
    """`models` runs of one made-up data set (one fingerprint), as the real writer writes them."""
    from medprobe.provenance import items_digest
    from medprobe.records.outcomes import outcomes_entry, outcomes_jsonl, outcomes_path
    from medprobe.records.record import RunRecord
    from medprobe.records.write import save_run
    from medprobe.stats import Outcomes, estimate, intervals, item_digest
    from medprobe.tasks.medlama import MedLAMATask

    folder.mkdir(parents=True, exist_ok=True)
    ids = [f"r{i % RELATIONS}-{i:05d}" for i in range(queries)]
    groups = [f"r{i % RELATIONS}" for i in range(queries)]
    contents = [item_digest("bench", item) for item in ids]
    settings = {"k": [1, 10], "candidates": "set", "exclude_head": False, "per_relation": None}
    estimators = MedLAMATask.estimators(settings)
    skill = np.random.default_rng(0).random(queries)  # how hard each query is: models agree on the easy ones
    paths = []
    for model in range(models):
        path = folder / f"model{model:03d}.json"
        paths.append(path)
        if path.is_file():
            continue
        share = 0.20 + 0.25 * model / max(models - 1, 1)
        noise = np.random.default_rng(model + 1).random(queries) * 0.2
        ranks = np.where(skill + noise < share + 0.1, np.random.default_rng(model).integers(1, 11, queries), np.nan)
        outcomes = Outcomes.build(ids, groups, {"rank": ranks}, contents)
        record = RunRecord("medlama", "made-up", "hard", "test", "contrastive", f"model{model:03d}", None, settings=settings)
        record.task = "medlama"
        record.metrics = {name: estimate(outcomes, e) for name, e in estimators.items()}
        record.intervals = intervals(outcomes, estimators)
        record.data_fingerprint = {"sha256": "b" * 64, "files": {"hard/test/made-up.parquet": "b" * 64}}
        record.subset = {"subset": False, "options": {}, "items": queries, "item_ids_sha256": items_digest(outcomes.ids)}
        text = outcomes_jsonl(outcomes)
        record.outcomes = outcomes_entry(text, path, outcomes, "query", {})
        save_run(record, path, more=[(outcomes_path(path), lambda temp, text=text: temp.write_text(text, encoding="utf-8"))])
    return paths


def time_all_pairs(paths: list[Path]) -> float:
    """Seconds to test every pair of the runs' board and give its ranks and letters (the runs read first, not timed)."""
    from medprobe.leaderboard.boards import aligned_pair, ranks
    from medprobe.leaderboard.pairs import scored
    from medprobe.leaderboard.ranks import all_pairs
    from medprobe.leaderboard.sources import read_sources
    from medprobe.tasks.medlama import MedLAMATask

    runs, _ = read_sources([str(path) for path in paths], include_samples=False)
    estimator = MedLAMATask.estimators(runs[0].record.settings)["acc@10"]
    scores = [scored(aligned_pair(runs[0].outcomes, run.outcomes)[1], estimator) for run in runs]
    values = [float(found.scores.mean()) for found in scores]
    order = sorted(range(len(runs)), key=lambda index: -values[index])
    started = time.perf_counter()
    ranks(all_pairs([scores[i] for i in order], [values[i] for i in order], estimator, 1000, 0))
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--queries", type=int, default=15329)
    parser.add_argument("--runs", help="keep the made-up runs in DIR (and reuse them)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--cpu", action="store_true", help="also build once in one process and report its CPU time")
    args = parser.parse_args(argv)
    from medprobe.leaderboard.build import build_leaderboard

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.runs) if args.runs else Path(tmp) / "runs"
        started = time.perf_counter()
        with open(os.devnull, "w") as quiet:  # save_run prints each path it writes
            stdout, sys.stdout = sys.stdout, quiet
            try:
                paths = write_runs(folder, args.models, args.queries)
            finally:
                sys.stdout = stdout
        print(
            f"{len(paths)} runs of {args.queries:,} queries in {folder} ({time.perf_counter() - started:.0f} s to write, not timed)"
        )
        times = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            data = build_leaderboard(paths, Path(tmp) / "site", overwrite=True, print_fn=lambda line: None)
            times.append(time.perf_counter() - started)
        board = data["boards"][0]
        separated = sum(test["separated"] for test in board["tests"])
        names = {name for row in board["rows"] for name in row["letters"]}
        widest = max(row["rank"]["worst"] - row["rank"]["best"] + 1 for row in board["rows"])
        print(
            f"{len(board['rows'])} models, {len(board['tests']):,} pairs tested, {separated:,} separated, {len(names)} letters, "
            f"widest rank interval {widest}; cpus {os.cpu_count()}"
        )
        print(f"medprobe leaderboard: best {min(times):.1f} s, median {statistics.median(times):.1f} s over {len(times)} run(s)")
        pairs_time = time_all_pairs(paths)
        print(f"all pairs alone: {pairs_time:.2f} s, {pairs_time / min(times):.1%} of the best build")
        print(f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (other work slows the wall time)")
        if args.cpu:  # all in this process: its CPU time over the cores is the wall time an idle machine would take
            started, used = time.perf_counter(), time.process_time()
            build_leaderboard(paths, Path(tmp) / "site", overwrite=True, workers=1, print_fn=lambda line: None)
            cpu = time.process_time() - used
            print(
                f"in one process: {time.perf_counter() - started:.1f} s wall, {cpu:.1f} s CPU, so about "
                f"{cpu / (os.cpu_count() or 1):.1f} s on {os.cpu_count()} idle cores"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
