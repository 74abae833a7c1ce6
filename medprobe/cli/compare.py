"""`medprobe compare RUN_OR_PROFILE RUN_OR_PROFILE [...]`: runs side by side, paired on identical items (medprobe.comparison)."""

from __future__ import annotations

import argparse

from medprobe.options import RESAMPLES_OPTION, SEED_OPTION, add
from medprobe.registry import registry

DESCRIPTION = """\
Compare runs of one benchmark item by item: results JSONs written by `medprobe probe` (with the
.outcomes.jsonl file beside each), runs published to a results repo (hub:ORG/NAME/<model>/<benchmark>/
<config>/<prober>, fetched once into the Hub cache, or that folder of a local copy) or `medprobe profile` folders (compared benchmark/config/prober
by benchmark/config/prober; floors and failed runs left out). The first input is the reference:
each other input is compared with it, and a difference is run - reference. Printed (and written
with --out): each run's metrics with their 95% intervals; the difference of every metric both
runs report, with a 95% paired-bootstrap interval and a two-sided p, its test named beside it
(exact McNemar where both runs score each item 0 or 1, as acc@k; else a paired permutation test);
the headline metric's difference per group (relation, disease, task) with Holm-adjusted p-values.

Refused (exit 2, saying what differs): runs of different tasks or splits; runs of different data
(config or content fingerprint) or different items (e.g. --per-relation) unless --intersect; runs
whose settings change what a metric means: {settings}."""


def meaning_settings() -> str:
    """`--task medlama: --candidates, --exclude-head`, from the registry."""
    parts = []
    for name, entry in registry().tasks.items():
        flags = [option.flag for option in entry.options if option.dest in entry.paired_settings]
        if flags:
            parts.append(f"--task {name}: {', '.join(flags)}")
    return "; ".join(parts) or "none"


def add_compare_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare runs or profiles item by item: differences, intervals, p-values",
        description=DESCRIPTION.format(settings=meaning_settings()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="RUN_OR_PROFILE",
        help="a results JSON, a published run (hub:ORG/NAME/<model>/<benchmark>/<config>/<prober>) or a profile folder; "
        "two or more, the first is the reference",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="also write DIR/compare.json (every number) and DIR/compare.md (the tables); default: print only",
    )
    parser.add_argument("--plot", metavar="FILE", help="a forest plot of the differences, e.g. forest.png (matplotlib)")
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="a self-contained HTML report: the tables and the forest plot inline; loads nothing from the network",
    )
    parser.add_argument(
        "--intersect",
        action="store_true",
        help="pair the items whose ids both runs hold, when their data or subsets differ (says how many)",
    )
    parser.add_argument(
        "--allow-different-candidates",
        action="store_true",
        help="with --intersect: compare runs that ranked among different candidates (e.g. MedLAMA full vs hard: each "
        "set's own answer space); the report then says the difference measures the data, not the model",
    )
    add(
        parser,
        RESAMPLES_OPTION,
        "bootstrap resamples and permutations per test (default: %(default)s; a p-value is at least 1/(N+1))",
    )
    add(parser, SEED_OPTION, "seed of the resampling (default: %(default)s; same seed, same numbers)")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace files medprobe did not write: a compare.json or compare.md in --out that an earlier `medprobe "
        "compare` did not write, a file at --plot or --html without medprobe's name in it (default: refused, naming it, "
        "before any run is read)",
    )
    parser.set_defaults(func=run_compare_command)


def run_compare_command(args: argparse.Namespace) -> int:
    from medprobe.comparison.outputs import Outputs, run_compare
    from medprobe.contracts import UserError

    if len(args.inputs) < 2:
        raise UserError("compare needs at least two results JSONs or profile folders")
    outputs = Outputs(out=args.out, plot=args.plot, html=args.html, overwrite=args.overwrite)
    run_compare(
        args.inputs,
        outputs,
        intersect=args.intersect,
        resamples=args.resamples,
        seed=args.seed,
        allow_different_candidates=args.allow_different_candidates,
    )
    return 0
