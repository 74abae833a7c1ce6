"""The recipe schema and its loader: a paper's table as data, checked against the registry.

    recipe = load_recipe("medlama-table5")      # a shipped recipe by name, or a path to a JSON file
    for cell in recipe.cells: ...

A recipe file is JSON (no new dependency; the standard library reads it):

    {"id", "title", "paper": {"key", "citation", "version"}, "benchmark", "data": "what --data-dir must be",
     "notes": [text, or {"text", "options": {dest: value}, "prober"} for a note that states option values],
     "models": {NAME: {"hub": Hub id or null, "revision": "main", "revision_pinned": false, "paper_name", "note",
                     "substitute": true when the id is not the paper's exact checkpoint}},
     "cells": [{"id", "model", "prober", "task", "config", "split", "options": {dest: value},
                "repeat": {"option": dest, "values": [...]}       (optional: runs averaged, mean ± std)
                "runnable": true, "reason": "why not, when false",
                "figures": [{"metric", "scale", "paper", "paper_std", "tolerance",
                             "source": {"paper", "table", "row", "column"}, "note"}]}]}

A figure is the paper's number for one table cell; `scale` turns medprobe's metric into the paper's
unit (100: a fraction reported in %); `tolerance` is in the paper's unit. Nothing here imports torch
or datasets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medprobe.contracts import UserError
from medprobe.local_paths import MissingPath, could_be_local, missing_message

RECIPES_DIR = Path(__file__).resolve().parent / "recipes"
SOURCE_FIELDS = ("paper", "table", "row", "column")


@dataclass(frozen=True)
class Note:
    text: str
    # the option values the text states (e.g. rewire_steps: 150): checked against the cells' options, and
    # marked in the report where --set ran other values, so a note never describes what did not run
    options: dict[str, Any] = field(default_factory=dict)
    prober: str | None = None  # the options are those of this prober's cells (None: of every cell that has them)

    def describes(self, cell: Cell) -> bool:
        return self.prober in (None, cell.prober)


@dataclass(frozen=True)
class Figure:
    metric: str  # the RunRecord metric (e.g. acc@10, macro_f1, understand)
    paper: float  # the paper's figure, in its own unit
    tolerance: float  # |measured - paper| within this counts as agreeing (paper's unit)
    source: dict[str, str]  # paper, table, row, column
    scale: float = 1.0  # measured * scale is in the paper's unit
    paper_std: float | None = None  # the paper's ± (e.g. over rewiring sets or seeds)
    note: str = ""


@dataclass(frozen=True)
class Cell:
    id: str
    model: str  # a key of Recipe.models
    prober: str
    task: str
    config: str | None
    figures: tuple[Figure, ...]
    split: str = "test"
    options: dict[str, Any] = field(default_factory=dict)
    repeat: dict[str, Any] | None = None  # {"option": dest, "values": [...]}: one run per value, averaged
    runnable: bool = True
    reason: str = ""  # why the cell cannot be run (runnable false)


@dataclass(frozen=True)
class Model:
    name: str
    hub: str | None  # None: not on the Hub; only --model-map can run it
    revision: str = "main"
    revision_pinned: bool = False
    paper_name: str = ""
    note: str = ""
    substitute: bool = False  # the Hub id is not the exact checkpoint the paper used (see note): never "reproduced"


@dataclass(frozen=True)
class Recipe:
    id: str
    title: str
    paper: dict[str, str]
    benchmark: str
    data: str
    models: dict[str, Model]
    cells: tuple[Cell, ...]
    notes: tuple[Note, ...] = ()
    path: str = ""

    def cell(self, cell_id: str) -> Cell:
        for cell in self.cells:
            if cell.id == cell_id:
                return cell
        raise UserError(f"recipe {self.id} has no cell {cell_id!r}; its cells: {', '.join(c.id for c in self.cells)}")


def recipe_paths() -> dict[str, Path]:
    return {path.stem: path for path in sorted(RECIPES_DIR.glob("*.json"))}


# Benchmarks without a recipe, and why (`medprobe reproduce list` prints it; docs/reproducing-recipes.md says the same)
NO_RECIPE = {
    "mst": "our copy of the MST paper (an excerpt) has no results table, and medprobe's MST generator uses unit, range "
    "and reference tables of its own, so no MST figure can be compared with the paper's",
}


def resolve(name_or_path: str) -> Path:
    """A shipped recipe by name, or a recipe file by path."""
    shipped = recipe_paths()
    if name_or_path in shipped:
        return shipped[name_or_path]
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return path
    if could_be_local(name_or_path):
        raise MissingPath(missing_message(name_or_path, "", f"give a recipe file or one of {', '.join(shipped)}"))
    raise UserError(f"no recipe {name_or_path!r}: give a file or one of {', '.join(shipped)} (`medprobe reproduce list`)")


def load_recipe(name_or_path: str) -> Recipe:
    path = resolve(name_or_path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise UserError(f"{path} is not valid JSON ({err})") from None
    try:
        recipe = parse_recipe(raw, str(path))
    except (KeyError, TypeError) as err:
        raise UserError(f"{path} is not a medprobe recipe (missing or malformed {err})") from None
    check_recipe(recipe)
    return recipe


def parse_recipe(raw: dict, path: str = "") -> Recipe:
    models = {name: Model(name=name, **spec) for name, spec in raw["models"].items()}
    cells = tuple(parse_cell(cell) for cell in raw["cells"])
    return Recipe(
        id=raw["id"],
        title=raw["title"],
        paper=raw["paper"],
        benchmark=raw["benchmark"],
        data=raw["data"],
        models=models,
        cells=cells,
        notes=tuple(parse_note(note) for note in raw.get("notes", ())),
        path=path,
    )


def parse_note(raw: str | dict) -> Note:
    if isinstance(raw, str):
        return Note(raw)
    extra = sorted(set(raw) - {"text", "options", "prober"})
    if extra or not isinstance(raw.get("text"), str) or not isinstance(raw.get("options", {}), dict):
        raise TypeError(f"note {raw!r}: expected text, or an object with text, options and prober")
    return Note(raw["text"], dict(raw.get("options", {})), raw.get("prober"))


def parse_cell(raw: dict) -> Cell:
    figures = tuple(Figure(**figure) for figure in raw["figures"])
    known = {"id", "model", "prober", "task", "config", "split", "options", "repeat", "runnable", "reason", "figures"}
    extra = sorted(set(raw) - known)
    if extra:
        raise TypeError(f"cell {raw.get('id')}: unknown fields {', '.join(extra)}")
    return Cell(**{**raw, "figures": figures})


def check_recipe(recipe: Recipe) -> None:
    """Every cell names a known model, prober, task and options, and every figure a full source and a
    positive tolerance; the configs are checked in the tests (knowing them imports the builders)."""
    from medprobe.python_api import split_options
    from medprobe.registry import registry

    problems: list[str] = []
    ids = [cell.id for cell in recipe.cells]
    problems += [f"cell id {cell_id!r} is used twice" for cell_id in sorted({i for i in ids if ids.count(i) > 1})]
    for cell in recipe.cells:
        where = f"cell {cell.id}"
        if cell.model not in recipe.models:
            problems.append(f"{where}: model {cell.model!r} is not in the recipe's models")
        if cell.prober not in registry().probers or cell.task not in registry().tasks:
            problems.append(f"{where}: unknown prober {cell.prober!r} or task {cell.task!r}")
            continue
        benchmark = registry().tasks[cell.task].benchmark
        if benchmark != recipe.benchmark:
            problems.append(f"{where}: task {cell.task} reads {benchmark}, the recipe is {recipe.benchmark}")
        options = dict(cell.options)
        if cell.repeat:
            options[cell.repeat["option"]] = cell.repeat["values"][0]
        try:
            split_options(cell.prober, cell.task, options)
        except UserError as err:
            problems.append(f"{where}: {err}")
        if not cell.runnable and not cell.reason:
            problems.append(f"{where}: not runnable, and no reason given")
        if not cell.figures:
            problems.append(f"{where}: no paper figure")
        for figure in cell.figures:
            missing = [name for name in SOURCE_FIELDS if not figure.source.get(name)]
            if missing:
                problems.append(f"{where} {figure.metric}: its source lacks {', '.join(missing)}")
            if not figure.tolerance > 0:
                problems.append(f"{where} {figure.metric}: tolerance must be positive")
    problems += note_problems(recipe)
    if problems:
        raise UserError(f"recipe {recipe.path or recipe.id}: " + "; ".join(problems))


def option_values(cell: Cell) -> dict[str, Any]:
    """Every option of the cell's prober and task as the cell runs it: its own value, else the registry's default."""
    from medprobe.registry import prober_entry, task_entry

    specs = [*prober_entry(cell.prober).options, *task_entry(cell.task).options]
    return {spec.dest: cell.options.get(spec.dest, spec.default) for spec in specs}


def note_problems(recipe: Recipe) -> list[str]:
    """A note that states an option value states the value every cell with that option runs."""
    from medprobe.registry import registry

    known = [cell for cell in recipe.cells if cell.prober in registry().probers and cell.task in registry().tasks]
    problems = []
    for note in recipe.notes:
        cells = [cell for cell in known if note.describes(cell)]
        for dest, stated in note.options.items():
            runs = {cell.id: values[dest] for cell in cells if dest in (values := option_values(cell))}
            if not runs:
                problems.append(f"a note states {dest}={stated!r}, an option no cell has")
            problems += [
                f"a note states {dest}={stated!r}, cell {cell_id} runs {value!r}"
                for cell_id, value in runs.items()
                if value != stated
            ]
    return problems
