"""`medprobe build BENCHMARK --out DIR`: a benchmark as a Hub-ready folder (Parquet + card), built atomically."""

from __future__ import annotations

import argparse
import sys

from medprobe.resources import available


def parse_param(text: str) -> tuple[str, object]:
    """`key=value` with value read as int, float, true/false or text."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    for cast in (int, float):
        try:
            return key, cast(value)
        except ValueError:
            pass
    if value.lower() in ("true", "false"):
        return key, value.lower() == "true"
    return key, value


def add_build_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "build",
        help="build a benchmark into a Hub-ready folder (Parquet + card)",
        description=(
            "Build a benchmark into OUT: one Parquet file per config and split, and a README.md "
            "card whose YAML makes load_dataset(OUT, config) work offline. Licensed sources "
            "(MedLAMA, DisKnE) are read from --data-dir or downloaded from their official release."
        ),
    )
    parser.add_argument("benchmark", choices=available("datasets"), help="which benchmark")
    parser.add_argument(
        "--out",
        required=True,
        help="output folder: built beside it and replaced in one rename; the configs not rebuilt are kept",
    )
    parser.add_argument("--data-dir", help="folder with the source files in the release layout (default: download)")
    parser.add_argument(  # reaches the builder as the parameter umls_dir, like --set umls_dir=META
        "--umls-dir",
        dest="params",
        action="append",
        default=[],
        type=lambda path: ("umls_dir", path),
        metavar="META",
        help="medlama: regenerate it from your own UMLS release, this META folder (MRCONSO.RRF, MRREL.RRF); "
        "--data-dir then only supplies prompts.csv (see the MedLAMA card and README)",
    )
    parser.add_argument(
        "--config", dest="configs", action="append", metavar="NAME", help="build only this config (repeatable; default: all)"
    )
    parser.add_argument(
        "--set",
        dest="params",
        action="append",
        type=parse_param,
        default=[],
        metavar="KEY=VALUE",
        help="builder parameter, e.g. --set seed=7 (repeatable; see the benchmark's card)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace OUT even when it is not a medprobe build of this benchmark, and rebuild it whole",
    )
    parser.set_defaults(func=run_build)


def run_build(args: argparse.Namespace) -> int:
    from medprobe.building.build import build

    report = build(
        args.benchmark,
        args.out,
        data_dir=args.data_dir,
        configs=args.configs,
        params=dict(args.params),
        overwrite=args.overwrite,
    )
    for note in report.notes:
        print(f"medprobe: {note}", file=sys.stderr)
    for config, splits in report.rows.items():
        sizes = ", ".join(f"{split} {rows:,} rows" for split, rows in splits.items())
        print(f"{args.benchmark}/{config}: {sizes} ({report.seconds[config]:.1f} s)")
    for config in report.kept:
        print(f"{args.benchmark}/{config}: kept as it was")
    print(f"wrote {report.out}/README.md and the Parquet files; load with load_dataset({str(report.out)!r}, config)")
    return 0
