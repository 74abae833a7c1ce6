"""`medprobe build BENCHMARK --out DIR`: a benchmark as a Hub-ready folder (Parquet + card), built atomically."""

from __future__ import annotations

import argparse
import sys

from medprobe.contracts import UserError
from medprobe.registry import Option, benchmarks, registry


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


def build_options() -> list[tuple[str, Option]]:
    """(benchmark, option) of every extra build option the registry's entries declare (`TaskEntry.build_options`)."""
    found: dict[str, tuple[str, Option]] = {}
    for entry in registry().tasks.values():
        for option in entry.build_options:
            found.setdefault(option.flag, (entry.benchmark, option))
    return list(found.values())


def add_build_option(parser: argparse.ArgumentParser, benchmark: str, option: Option) -> None:
    """An option of one benchmark's builder; it reaches the builder as the parameter `option.dest`, like
    --set DEST=VALUE (`run_build` refuses it for another benchmark)."""
    common = {"dest": "params", "default": [], "help": f"{benchmark}: {option.help}"}
    if option.switch:
        parser.add_argument(option.flag, action="append_const", const=(option.dest, not option.invert), **common)
    else:
        convert = option.type or str
        parser.add_argument(
            option.flag, action="append", type=lambda text: (option.dest, convert(text)), metavar=option.metavar, **common
        )


def add_build_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "build",
        help="build a benchmark into a Hub-ready folder (Parquet + card)",
        description=(
            "Build a benchmark into OUT: one Parquet file per config and split, and a README.md "
            "card whose YAML makes load_dataset(OUT, config) work offline. Licensed sources are read from "
            "--data-dir or downloaded from their official release (each benchmark's card says which)."
        ),
    )
    parser.add_argument("benchmark", choices=benchmarks(), help="which benchmark")
    parser.add_argument(
        "--out",
        required=True,
        help="output folder: built beside it and replaced in one rename; the configs not rebuilt are kept",
    )
    parser.add_argument("--data-dir", help="folder with the source files in the release layout (default: download)")
    parser.add_argument(
        "--sample",
        action="store_true",
        help="copy the sample shipped with medprobe instead of building (offline; medlama: 108 textbook facts in "
        "MedLAMA's format, NOT MedLAMA), e.g. medprobe build medlama --sample --out out/medlama",
    )
    for benchmark, option in build_options():
        add_build_option(parser, benchmark, option)
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


def check_build_options(benchmark: str, params: dict) -> None:
    """A benchmark's own build option given for another benchmark is a user error naming its owner."""
    for owner, option in build_options():
        if option.dest in params and owner != benchmark:
            raise UserError(f"{option.flag} is an option of `medprobe build {owner}`, not of {benchmark}")


def run_build(args: argparse.Namespace) -> int:
    from medprobe.building.sources import check_source_folders

    if args.sample:
        return copy_sample(args)
    check_build_options(args.benchmark, dict(args.params))
    check_source_folders(args.benchmark, args.data_dir, dict(args.params))  # a typo'd folder: before datasets loads
    from medprobe.building.build import build

    def built(config: str, splits: dict[str, int], seconds: float) -> None:  # one line per config, as it is done
        sizes = ", ".join(f"{split} {rows:,} rows" for split, rows in splits.items())
        print(f"{args.benchmark}/{config}: {sizes} ({seconds:.1f} s)", flush=True)

    report = build(
        args.benchmark,
        args.out,
        data_dir=args.data_dir,
        configs=args.configs,
        params=dict(args.params),
        overwrite=args.overwrite,
        progress=built,
    )
    for note in report.notes:
        print(f"medprobe: {note}", file=sys.stderr)
    for config in report.kept:
        print(f"{args.benchmark}/{config}: kept as it was")
    print(f"wrote {report.out}/README.md and the Parquet files; load with load_dataset({str(report.out)!r}, config)")
    return 0


def copy_sample(args: argparse.Namespace) -> int:
    """`build BENCHMARK --sample`: the shipped sample copied to --out (medprobe.building.sample); what builds it
    (--data-dir, --config, --set, a builder's options) has nothing to do there."""
    from medprobe.building.sample import write_sample

    given = [flag for flag, value in (("--data-dir", args.data_dir), ("--config", args.configs)) if value]
    if given or args.params:
        raise UserError(f"--sample copies the shipped sample whole; leave out {', '.join(given) or 'the build options'}")
    out, what = write_sample(args.benchmark, args.out, overwrite=args.overwrite)
    print(f"wrote {out}: {what}")
    print(f"load with load_dataset({str(out)!r}, config), or probe it: medprobe probe --dataset {out} ...")
    return 0
