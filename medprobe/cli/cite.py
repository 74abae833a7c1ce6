"""`medprobe cite [NAME ...]`: the BibTeX of what a run used (benchmarks, probers) and of medprobe."""

from __future__ import annotations

import argparse
import sys

from medprobe.registry import BUILTIN_PROBERS, BUILTIN_TASKS

DESCRIPTION = f"""\
Print the BibTeX entries to cite for the benchmarks and probers named (e.g. `medprobe cite {BUILTIN_TASKS[0].name}
{BUILTIN_PROBERS[0].name}`): each benchmark's paper and the papers of the sources its rows come from, each
prober's method, and medprobe itself. Without a name: medprobe's own entry, and the names accepted
(on stderr, so that stdout stays BibTeX). The entries are in hub_cards/citations.bib, and a plugin's in
the BibTeX file its entries name (`bibtex`)."""


def add_cite_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "cite",
        help="print the BibTeX of benchmarks and probers, and of medprobe",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="a benchmark or prober name (medprobe cite lists them)")
    parser.set_defaults(func=run_cite)


def run_cite(args: argparse.Namespace) -> int:
    from medprobe.citations import bibtex, citable_names, keys_for_names

    print(bibtex(keys_for_names(args.names)))
    if not args.names:
        print(f"medprobe cite NAME ...: also the papers of {', '.join(citable_names())}", file=sys.stderr)
    return 0
