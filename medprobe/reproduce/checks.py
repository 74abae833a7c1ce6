"""What `medprobe reproduce` checks before anything runs, each failure one line (a UserError, exit 2):

- every `--model-map` id is a model of the recipe (its name or Hub id) or '*';
- every `--data-dir` and `--corpus-dir` folder exists, and the recipe's benchmark has one when a cell runs;
- every `--set` option is an option of a chosen cell (an option no cell has would be ignored without a word);
- OUT holds only what reproduce writes (report.json, report.md, report.png, cells/, runs/), unless `--overwrite`.

OUT itself (a file, a mount point, read-only) goes through medprobe.atomic_folder.check_output_folder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from medprobe.atomic import nearest_existing
from medprobe.contracts import UserError
from medprobe.reproduce.recipe import Cell, Recipe

REPORT_FILES = ("report.json", "report.md", "report.png")
OWN_FOLDERS = ("cells", "runs")
# what a killed write of the report leaves (medprobe.atomic: temporary files and the previous file's hard link)
REPORT_LEFTOVER = re.compile(r"\.report-(tmp|old)-\d+\.(json|md|png)")


def check_model_map(recipe: Recipe, model_map: dict[str, str]) -> None:
    """A --model-map id that names no model of the recipe would be ignored: the paper's model would run instead."""
    known = {"*"} | set(recipe.models) | {model.hub for model in recipe.models.values() if model.hub}
    for key, value in model_map.items():
        if key not in known:
            raise UserError(
                f"--model-map {key}={value}: {key!r} is not a model of recipe {recipe.id}; its models: "
                f"{', '.join(recipe.models)} (or their Hub ids, or '*' for every model)"
            )


def check_folder(option: str, shown: str, path: str) -> None:
    folder = Path(path).expanduser()
    if folder.is_dir():
        return
    if folder.exists():
        raise UserError(f"{option} {shown}: {path} is a file; give a folder")
    nearest = nearest_existing(folder)
    where = "the current folder" if str(nearest) == "." else str(nearest)
    raise UserError(f"{option} {shown}: {path} does not exist (the nearest existing folder is {where})")


def check_data(recipe: Recipe, cells: list[Cell], data_dirs: dict[str, str], corpus_dir: str | None) -> None:
    for benchmark, path in data_dirs.items():
        check_folder("--data-dir", f"{benchmark}={path}", path)
    if corpus_dir:
        check_folder("--corpus-dir", corpus_dir, corpus_dir)
    if any(cell.runnable for cell in cells) and not data_dirs.get(recipe.benchmark):
        raise UserError(f"recipe {recipe.id} needs --data-dir {recipe.benchmark}=PATH: {recipe.data}")


def settable(cell: Cell) -> set[str]:
    """The options --set can change in a cell: its prober's and task's, but the one its repeat sets per run."""
    from medprobe.registry import prober_entry, task_entry

    dests = {o.dest for o in prober_entry(cell.prober).options} | {o.dest for o in task_entry(cell.task).options}
    return dests - ({cell.repeat["option"]} if cell.repeat else set())


def check_overrides(cells: list[Cell], overrides: dict[str, Any]) -> None:
    runnable = [cell for cell in cells if cell.runnable]
    if not runnable or not overrides:
        return
    known = set().union(*(settable(cell) for cell in runnable))
    unknown = [key for key in overrides if key not in known]
    if unknown:
        raise UserError(
            f"--set {unknown[0]}: no chosen cell has the option {unknown[0]!r}, so it would change nothing; "
            f"their options: {', '.join(sorted(known))}"
        )


def is_report(path: Path) -> bool:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(value, dict) and {"recipe", "rows"} <= set(value)


def foreign_entries(out: Path) -> list[str]:
    """What OUT holds that reproduce did not write: names other than its own, its folders as files, and
    report.md/.png beside no reproduce report.json (a user's own report)."""
    if not out.is_dir():
        return []
    foreign = []
    for entry in sorted(out.iterdir()):
        name, real = entry.name, not entry.is_symlink()
        if (name in OWN_FOLDERS and real and entry.is_dir()) or (name in REPORT_FILES and real and entry.is_file()):
            continue
        if REPORT_LEFTOVER.fullmatch(name):
            continue
        foreign.append(name + ("/" if entry.is_dir() else ""))
    reports = [name for name in REPORT_FILES if (out / name).is_file() and name not in foreign]
    if reports and not is_report(out / "report.json"):
        foreign += reports
    return foreign


def check_ours(out: Path, overwrite: bool) -> None:
    foreign = foreign_entries(out)
    if foreign and not overwrite:
        shown = ", ".join(foreign[:10]) + (f" and {len(foreign) - 10} more" if len(foreign) > 10 else "")
        raise UserError(
            f"--out {out} holds files `medprobe reproduce` did not write: {shown}; move them away, choose another "
            "--out, or pass --overwrite to write beside them (report.json, report.md, report.png, cells/ and runs/ "
            "are replaced)"
        )
