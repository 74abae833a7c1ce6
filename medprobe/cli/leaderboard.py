"""`medprobe leaderboard SOURCE... --out SITE`: a static leaderboard whose ranks say which differences are real
(medprobe.leaderboard). Nothing heavy is imported until the command runs."""

from __future__ import annotations

import argparse

from medprobe.registry import positive_int

DESCRIPTION = """\
Build a static, self-contained site (it loads nothing from the network; open SITE/index.html from
disk, on a desk or a phone) from SOURCEs: results JSONs, `medprobe profile` folders, a folder of them
(runs/), a results repo (hub:ORG/NAME, fetched into the Hub cache) or its local copy. Every run is read through medprobe's records loader (every
number recomputed from its per-item outcomes). Per benchmark/config/prober and data fingerprint, a
board ranks the runs by the headline metric with n, 95% interval and chance; every pair of runs is
tested on their common items (exact McNemar for acc@k, else a paired permutation test; Holm over all
of the board's pairs), and each run gets a rank interval (1 + the runs significantly better, to the
runs minus those significantly worse) and letters (two runs share one only when they do not differ
significantly). A page per model (its profile across benchmarks, per-group bars with intervals) and
per adjacent pair (difference, interval, p and its test, per-group differences, the smallest
difference the test detects at 80% power). Runs left out (failed verification, subsets, shipped samples, mismatched data) are listed with
the reason, once. SITE/leaderboard.json holds the same data; SITE/site-files.json the sha256 of every
file written, so a later build refuses a file it did not write or a page edited since (--overwrite)."""


def add_leaderboard_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "leaderboard",
        help="a static leaderboard of runs: values with intervals, rank intervals and letters from paired tests",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "sources", nargs="+", metavar="SOURCE", help="results JSONs, profile folders, hub:ORG/NAME or a local copy"
    )
    parser.add_argument(
        "--out",
        required=True,
        metavar="SITE",
        help="the site's folder (replaced whole: refused if it holds files it did not write)",
    )
    parser.add_argument(
        "--include-samples",
        action="store_true",
        help="rank runs on a sample shipped with medprobe on a board of their own, labelled as not the benchmark "
        "(to try the leaderboard; default: left out)",
    )
    parser.add_argument(
        "--resamples", type=positive_int, default=1000, metavar="N", help="bootstrap resamples and permutations (default: 1000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling (default: 0; same seed, same site)")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace SITE even when it holds files a leaderboard did not write, or its pages were edited since",
    )
    parser.set_defaults(func=run_leaderboard_command)


def run_leaderboard_command(args: argparse.Namespace) -> int:
    from medprobe.leaderboard.build import build_leaderboard

    build_leaderboard(
        args.sources,
        args.out,
        include_samples=args.include_samples,
        resamples=args.resamples,
        seed=args.seed,
        overwrite=args.overwrite,
    )
    return 0
