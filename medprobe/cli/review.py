"""`medprobe review export|import`: expert rating of a ranking run's predictions (medprobe.review)."""

from __future__ import annotations

import argparse

from medprobe.options import RESAMPLES_OPTION, SEED_OPTION, add
from medprobe.registry import positive_int
from medprobe.review.scale import SCALE

SCALE_TEXT = "; ".join(f"{value} {text}" for value, text in SCALE.items())


def run_export(args: argparse.Namespace) -> int:
    from medprobe.review.sheets import export, rater_names

    raters = rater_names(args.raters)
    files = export(
        args.run,
        args.out,
        sample=args.sample,
        top_k=args.top_k,
        raters=raters,
        seed=args.seed,
        show_gold=args.show_gold,
        predictions=args.predictions,
        dataset=args.dataset,
    )
    print(f"wrote {args.out}: {len(files)} files; hand each rater raters/<name>.csv (or the Label Studio tasks) and scale.md")
    print("keep manifest.json to yourself: it holds the gold answers")
    return 0


def run_import(args: argparse.Namespace) -> int:
    from medprobe.review.report import import_ratings, summary_line

    record = import_ratings(
        args.folder,
        args.ratings,
        accept=args.accept,
        out=args.out,
        resamples=args.resamples,
        seed=args.seed,
        overwrite=args.overwrite,
    )
    print(summary_line(record))
    return 0


def add_review_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "review",
        help="expert review of a ranking run: blinded rating sheets out, ratings in (acc@k under gold and experts)",
        description=f"Clinicians rate a run's top predictions on the 1-5 scale of the Contrastive-Probe paper (§5.3): {SCALE_TEXT}.",
    )
    commands = parser.add_subparsers(title="step", metavar="STEP", required=True)

    export = commands.add_parser(
        "export",
        help="rating sheets (CSV and Label Studio) for a seeded sample of a run's queries",
        description=(
            "Sample queries of a ranking run (results JSON with its outcomes and predictions beside it), shuffle "
            "and blind each query's top-K predictions, and write DIR: raters/<rater>.csv (fill the rating column), "
            "raters/<rater>.label-studio.json (Label Studio tasks) with label-studio-config.xml, scale.md, and "
            "manifest.json (gold answers and sha256 of every file and of the run: keep it from the raters)."
        ),
    )
    export.add_argument("run", help="results JSON of a ranking run (medprobe probe --task TASK --out ... --predictions ...)")
    export.add_argument("--sample", type=positive_int, required=True, metavar="N", help="queries to rate")
    export.add_argument("--top-k", type=positive_int, required=True, metavar="K", help="predictions per query to rate")
    export.add_argument("--raters", required=True, metavar="R", help="a number of raters (rater1..R) or their names, a,b,c")
    add(export, SEED_OPTION, "seed of the sample and the shuffles (default: %(default)s)")
    export.add_argument("--out", required=True, metavar="DIR", help="a new (or empty) folder for the sheets")
    export.add_argument("--show-gold", action="store_true", help="show raters whether each prediction is a UMLS gold answer")
    export.add_argument("--predictions", metavar="JSONL", help="the run's predictions (default: the file beside the run)")
    export.add_argument("--dataset", help="the run's data, when it moved (default: the dataset the run records)")
    export.set_defaults(func=run_export)

    imports = commands.add_parser(
        "import",
        help="check filled sheets or Label Studio exports and write the review record",
        description=(
            "Check every ratings file (each item rated once per rater, values on the scale, ids in the manifest; "
            "sheets of another export are refused by their export id; the first problem is one error naming the file "
            "and row, and nothing is written), then write the "
            "review: acc@k under gold, expert acceptance and both with 95% intervals, the rating x in-gold table "
            "and heatmap, agreement between raters, and erratum candidates. Written as RESULTS.review.json beside "
            "the run's results JSON (--out), `medprobe compare` and `medprobe publish results` show it."
        ),
    )
    imports.add_argument("folder", metavar="DIR", help="the folder `medprobe review export` wrote")
    imports.add_argument("ratings", nargs="+", metavar="RATINGS", help="filled CSV sheets and/or Label Studio JSON exports")
    imports.add_argument(
        "--accept", type=int, default=max(SCALE), help="median rating a prediction needs to count as right (default: 5)"
    )
    imports.add_argument(
        "--out", metavar="FILE", help="the review JSON (default: DIR/review.json; .md and .heatmap.svg beside it)"
    )
    imports.add_argument(
        "--overwrite",
        action="store_true",
        help="replace files at --out (and its .md and .heatmap.svg) that an earlier `review import` did not write",
    )
    add(imports, RESAMPLES_OPTION, "bootstrap resamples (default: %(default)s)")
    add(imports, SEED_OPTION, "seed of the bootstrap (default: %(default)s)")
    imports.set_defaults(func=run_import)
