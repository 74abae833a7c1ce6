"""`medprobe reproduce`: run a paper's table from its recipe and compare with the paper's figures.

    medprobe reproduce list
    medprobe reproduce medlama-table5 --data-dir medlama=out/medlama --corpus-dir medlama-release --out repro/t5
    medprobe reproduce medlama-table4 --cells mask-average-bert --model-map '*=tiny-mlm' --data-dir medlama=...

Imports nothing heavy until a recipe runs (`medprobe --help` stays fast).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from medprobe.contracts import UserError


def pairs(values: list[str] | None, option: str) -> dict[str, str]:
    """KEY=VALUE arguments as a dict; a malformed one is a UserError naming the option."""
    found: dict[str, str] = {}
    for value in values or []:
        key, sep, rest = value.partition("=")
        if not sep or not key or not rest:
            raise UserError(f"{option} expects KEY=VALUE, got {value!r}")
        found[key] = rest
    return found


def option_value(text: str) -> Any:
    """--set values as JSON when they parse (numbers, true, lists), else as text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def list_recipes() -> int:
    """A line per recipe (its cells, how many run, its figures), the reason of cells that cannot run, and a line
    per benchmark that has no recipe, with why (the same words as docs/reproducing-recipes.md)."""
    from medprobe.registry import benchmarks
    from medprobe.reproduce.recipe import NO_RECIPE, load_recipe, recipe_paths

    covered = set()
    for name in recipe_paths():
        recipe = load_recipe(name)
        covered.add(recipe.benchmark)
        figures = sum(len(cell.figures) for cell in recipe.cells)
        print(f"{name:28} {recipe.title} [{recipe.benchmark}: {cells_text(recipe.cells)}, {plural(figures, 'figure')}]")
        for reason in dict.fromkeys(cell.reason for cell in recipe.cells if not cell.runnable):
            print(f"{'':28}   not runnable: {reason}")
    for benchmark in benchmarks():
        if benchmark not in covered:
            print(f"{benchmark:28} no recipe: {NO_RECIPE.get(benchmark, 'none written yet')}")
    return 0


def plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def cells_text(cells: list) -> str:
    """`33 cells, all runnable`, `1 cell, not runnable`, `18 cells, 12 runnable`."""
    runnable = sum(cell.runnable for cell in cells)
    if runnable == len(cells):
        return f"{plural(len(cells), 'cell')}, {'all runnable' if len(cells) > 1 else 'runnable'}"
    if runnable == 0:
        return f"{plural(len(cells), 'cell')}, {'none runnable' if len(cells) > 1 else 'not runnable'}"
    return f"{plural(len(cells), 'cell')}, {runnable} runnable"


def reproduce_command(args: argparse.Namespace) -> int:
    if args.recipe == "list":
        return list_recipes()
    from medprobe.reproduce.runner import ReproduceOptions, reproduce

    cells = [cell for value in args.cells or [] for cell in value.split(",") if cell]
    options = ReproduceOptions(
        recipe=args.recipe,
        out=args.out or f"reproduce-{args.recipe.rsplit('/', 1)[-1].removesuffix('.json')}",
        cells=cells or None,
        model_map=pairs(args.model_map, "--model-map"),
        data_dirs=pairs(args.data_dir, "--data-dir"),
        corpus_dir=args.corpus_dir,
        overrides={key: option_value(value) for key, value in pairs(args.set, "--set").items()},
        device=args.device,
        overwrite=args.overwrite,
    )
    report = reproduce(options)
    summary = report["summary"]
    print(f"{summary['figures']} figures, {summary['run']} measured, {summary['reproduced']} reproduced within tolerance")
    if report["plumbing_check"]:
        from medprobe.reproduce.report import PLUMBING, plumbing_what

        print(f"{PLUMBING}: it ran {plumbing_what(report)}")
    failed = [row["cell"] for row in report["rows"] if row["status"] == "failed"]
    if failed:
        print(f"failed cells (see report.md): {', '.join(dict.fromkeys(failed))}")
        return 1
    return 0


def add_reproduce_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "reproduce",
        help="run a paper's table from its recipe and compare with the paper's figures",
        description="Run the cells of a reproduction recipe (a paper's table as data: models, prober, task, options, "
        "the paper's figures with their source and a tolerance) through the run loop, and write "
        "'paper | measured ± interval | Δ | within tolerance?' as report.json, report.md and report.png under --out. "
        "Resumable: a run of the same request whose results verify is not rerun, inside a cell too (each rewiring "
        "corpus). `medprobe reproduce list` lists the recipes.",
    )
    parser.add_argument("recipe", metavar="RECIPE", help="a recipe name (see `medprobe reproduce list`) or a recipe file; 'list'")
    parser.add_argument("--cells", action="append", metavar="ID,...", help="run only these cells (repeatable)")
    parser.add_argument(
        "--model-map",
        action="append",
        metavar="ID=PATH",
        help="load PATH instead of a recipe model (by its recipe name or Hub id; '*' = every model); the report then "
        "says it is a plumbing check, not a reproduction",
    )
    parser.add_argument(
        "--data-dir", action="append", metavar="BENCHMARK=PATH", help="the folder built by `medprobe build BENCHMARK`"
    )
    parser.add_argument(
        "--corpus-dir",
        metavar="DIR",
        help="a release folder holding the rewiring corpora a recipe names (elicit_corpora/): read from it, else downloaded",
    )
    parser.add_argument(
        "--set",
        action="append",
        metavar="OPTION=VALUE",
        help="change a prober or task option (by its keyword, e.g. rewire_steps=2) in every cell that has it; "
        "the report then says it is not a reproduction",
    )
    parser.add_argument("--out", metavar="DIR", help="output folder (default: reproduce-RECIPE)")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="write into --out even when it holds files reproduce did not write (they stay; its own are replaced)",
    )
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default: auto)")
    parser.set_defaults(func=reproduce_command)
