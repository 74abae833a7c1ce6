"""The `medprobe` command line: `medprobe build`, `medprobe probe`, and the subcommands that later parts add.

Every subcommand is a function `add_<name>_command(subparsers)` that registers its parser and
sets `func`; errors a user can fix (missing files, bad arguments, malformed data) are printed
as one message without a traceback (set MEDPROBE_DEBUG=1 to see it).
"""

from __future__ import annotations

import argparse
import os
import sys

from probers.api import UserError
from probers.hub.resources import available


# Errors raised on purpose with a message for the user (UserError, and the OS's own errors about files and the
# network); anything else, a bare ValueError included, is a bug and keeps its traceback.
USER_ERRORS = (UserError, FileNotFoundError, NotADirectoryError, ConnectionError, PermissionError)


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
        "--out", required=True,
        help="output folder: built beside it and replaced in one rename; the configs not rebuilt are kept",
    )  # fmt: skip
    parser.add_argument("--data-dir", help="folder with the source files in the release layout (default: download)")
    parser.add_argument(  # reaches the builder as the parameter umls_dir, like --set umls_dir=META
        "--umls-dir", dest="params", action="append", default=[], type=lambda path: ("umls_dir", path), metavar="META",
        help="medlama: regenerate it from your own UMLS release, this META folder (MRCONSO.RRF, MRREL.RRF); "
        "--data-dir then only supplies prompts.csv (see the MedLAMA card and README)",
    )  # fmt: skip
    parser.add_argument(
        "--config", dest="configs", action="append", metavar="NAME", help="build only this config (repeatable; default: all)"
    )
    parser.add_argument(
        "--set", dest="params", action="append", type=parse_param, default=[], metavar="KEY=VALUE",
        help="builder parameter, e.g. --set seed=7 (repeatable; see the benchmark's card)",
    )  # fmt: skip
    parser.add_argument(
        "--overwrite", action="store_true",
        help="replace OUT even when it is not a medprobe build of this benchmark, and rebuild it whole",
    )  # fmt: skip
    parser.set_defaults(func=run_build)


def run_build(args: argparse.Namespace) -> int:
    from probers.hub.build import build

    report = build(
        args.benchmark, args.out, data_dir=args.data_dir, configs=args.configs, params=dict(args.params),
        overwrite=args.overwrite,
    )  # fmt: skip
    for note in report.notes:
        print(f"medprobe: {note}", file=sys.stderr)
    for config, splits in report.rows.items():
        sizes = ", ".join(f"{split} {rows:,} rows" for split, rows in splits.items())
        print(f"{args.benchmark}/{config}: {sizes} ({report.seconds[config]:.1f} s)")
    for config in report.kept:
        print(f"{args.benchmark}/{config}: kept as it was")
    print(f"wrote {report.out}/README.md and the Parquet files; load with load_dataset({str(report.out)!r}, config)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    # Imported here, not at the top, so that Ctrl-C while they load is caught by `main` too.
    from probers import __version__
    from probers.cli.demo import add_demo_command
    from probers.probe import add_probe_command
    from probers.hub.publish import add_publish_command
    from probers.hub.umls_names import add_umls_names_command

    parser = argparse.ArgumentParser(
        prog="medprobe",
        description="Probe what pre-trained language models know about biomedicine.",
    )
    parser.add_argument("--version", action="version", version=f"medprobe {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    add_build_command(subparsers)
    add_probe_command(subparsers)
    add_publish_command(subparsers)
    add_umls_names_command(subparsers)
    add_demo_command(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; Ctrl-C anywhere prints `interrupted` and exits 130, the shell's code for SIGINT."""
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except KeyboardInterrupt:  # also SIGTERM during a build (probers.hub.atomic_folder.Terminated)
        if os.environ.get("MEDPROBE_DEBUG"):
            raise
        print("interrupted", file=sys.stderr)
        return 130
    except USER_ERRORS as err:
        if os.environ.get("MEDPROBE_DEBUG"):
            raise
        print(f"medprobe: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
