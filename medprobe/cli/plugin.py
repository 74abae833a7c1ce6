"""`medprobe plugin init NAME` writes a working plugin distribution; `medprobe plugin check DIST` runs the
conformance rules on an installed distribution's entries (medprobe.cli.plugin_kit)."""

from __future__ import annotations

import argparse
import sys

INIT = """\
Write a plugin distribution into DIR (default: ./medprobe-NAME): a benchmark and task NAME (builder, card,
task with its own evaluate metric, lm-eval export hook), a prober NAME_order, their registry entries and
BibTeX, the entry points in pyproject.toml, and tests. `pip install -e DIR` installs it; it passes
`medprobe plugin check medprobe-NAME` as written. docs/plugins.md is the contract it keeps."""
CHECK = """\
Run medprobe's conformance rules (medprobe.cli.plugin_kit.conformance, those its own tests run on the built-in
entries) on every task and prober the installed distribution DIST declares, with the built-ins and DIST's
entries only: classes, options and their defaults, the Task contract, the metric, the builder's fields, a
run on tiny random models with intervals and chance, the CLI's help, the BibTeX. Prints one line per broken
rule (entry, rule, what is wrong); exits 0 when every rule is kept, 1 when one is broken, 2 when DIST is
not an installed medprobe plugin."""


def add_plugin_command(subparsers: argparse._SubParsersAction) -> None:
    """`plugin` in `medprobe --help`; `main` hands `medprobe plugin ...` to `run_plugin_command` directly."""
    add_steps(subparsers.add_parser("plugin", help="write a plugin distribution, or check an installed one"))


def add_steps(parser: argparse.ArgumentParser) -> None:
    steps = parser.add_subparsers(title="step", metavar="STEP", required=True)
    init = steps.add_parser("init", help="write a working plugin distribution", description=INIT)
    init.add_argument("name", metavar="NAME", help="the benchmark's name: lower-case letters, digits and _ (e.g. drug_class)")
    init.add_argument("--out", metavar="DIR", help="a new or empty folder (default: ./medprobe-NAME)")
    init.set_defaults(func=run_init)
    check = steps.add_parser("check", help="run the conformance rules on an installed plugin's entries", description=CHECK)
    check.add_argument("dist", metavar="DIST", help="the plugin's distribution name, as pip knows it (e.g. medprobe-toy)")
    check.add_argument("--verbose", action="store_true", help="also print each rule kept")
    check.set_defaults(func=run_check)


def run_plugin_command(argv: list[str]) -> int:
    """`medprobe plugin ARGV`, parsed without the other commands' parsers: they read the installed plugins, and a
    plugin that does not register must reach `plugin check` as its finding, not stop the parsing."""
    parser = argparse.ArgumentParser(prog="medprobe plugin", description="write a plugin distribution, or check an installed one")
    add_steps(parser)
    args = parser.parse_args(argv)
    return args.func(args)


def run_init(args: argparse.Namespace) -> int:
    from medprobe.cli.plugin_kit.skeleton import write_skeleton

    out, names = write_skeleton(args.name, args.out)
    print(f"wrote {names.dist} into {out}: the task {names.name} and the prober {names.prober}")
    print(f"next: pip install -e {out} && medprobe plugin check {names.dist}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    from medprobe.cli.plugin_kit.check import check_distribution, plugin_distribution

    found = plugin_distribution(args.dist)  # an unknown distribution: a user error (exit 2) before any rule
    shown = (lambda line: print(line, flush=True)) if args.verbose else (lambda line: None)
    failures = check_distribution(args.dist, on_each=shown)
    for failure in failures if not args.verbose else ():
        print(failure.line(), file=sys.stderr)
    name = f"{found.metadata['Name']} {found.version}"
    if failures:
        print(f"{name}: {len(failures)} rule(s) broken", file=sys.stderr)
        return 1
    print(f"{name}: every conformance rule kept")
    return 0
