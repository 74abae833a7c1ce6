"""How long the intervals of a run take: the bootstrap of MedLAMA full's 19,000 queries x 1,000 resamples.

    python scripts/bench_stats.py [--queries 19000] [--resamples 1000] [--repeats 3]

Every `medprobe probe` bootstraps its overall metrics (medprobe/stats.py); the issue's bound is 2 s for
MedLAMA full (acc@1, acc@10 micro and macro over 19 relations) and the paired comparison that
`medprobe compare` adds on top. Made-up ranks with MedLAMA's shape stand in for a run (the time does
not depend on the values). Prints the best of --repeats wall times per step, resamples per second, and
the interval width next to the normal approximation's as a sanity check.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from phases import Phases  # noqa: E402

from medprobe.stats import Outcomes, estimate, intervals, paired  # noqa: E402
from medprobe.tasks.medlama import MedLAMATask  # noqa: E402

RELATIONS = 19


def made_up_run(queries: int, hit_rate: float, seed: int) -> Outcomes:
    rng = np.random.default_rng(seed)
    ranks = np.where(rng.random(queries) < hit_rate, rng.integers(1, 11, queries), np.nan)
    return Outcomes.build([f"q{i}" for i in range(queries)], [f"r{i % RELATIONS}" for i in range(queries)], {"rank": ranks})


def best_of(repeats: int, work) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=19_000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    estimators = MedLAMATask.estimators({"k": [1, 10]})
    a, b = made_up_run(args.queries, 0.25, seed=1), made_up_run(args.queries, 0.27, seed=2)
    seconds, found = best_of(args.repeats, lambda: intervals(a, estimators, resamples=args.resamples))
    interval_seconds = seconds
    print(
        f"intervals of {len(estimators)} metrics, {args.queries:,} queries x {args.resamples:,} resamples: "
        f"{seconds:.2f} s ({args.resamples / seconds:,.0f} resamples/s; bound 2 s)"
    )
    p = estimate(a, estimators["acc@10"])
    normal = 2 * 1.96 * math.sqrt(p * (1 - p) / args.queries)
    width = found["acc@10"]["high"] - found["acc@10"]["low"]
    print(
        f"  acc@10 {100 * p:.2f}: interval width {100 * width:.2f} pt, normal approximation {100 * normal:.2f} pt "
        f"(ratio {width / normal:.2f})"
    )
    seconds, compared = best_of(args.repeats, lambda: paired(a, b, estimators, resamples=args.resamples))
    print(f"paired comparison (bootstrap + permutation), same sizes: {seconds:.2f} s")
    diff = compared["acc@10"]
    print(
        f"  acc@10 difference {100 * diff['difference']:+.2f} pt [{100 * diff['low']:+.2f}, {100 * diff['high']:+.2f}], "
        f"p = {diff['p_value']:.3f}"
    )
    phases = Phases()
    phases.add("intervals (bootstrap)", interval_seconds, args.resamples, "resample")
    phases.add("paired comparison", seconds, args.resamples, "resample")
    print(phases.report(f"best of {args.repeats}"))


if __name__ == "__main__":
    main()
