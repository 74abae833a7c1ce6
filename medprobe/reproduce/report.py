"""The reproduction report: 'paper | measured ± interval | Δ | within tolerance?' per figure, as
OUT/report.json, OUT/report.md and OUT/report.png (the figure needs matplotlib, a dependency of medprobe).

The report says what ran: the model of each cell as run (the recipe's Hub id, or the folder --model-map
gave), every --set override (in the report, in each row, and in the recipe's notes that state an option
the override changed). A figure counts as reproduced only when the paper's own model ran (no
--model-map), with the recipe's options (no --set), on the whole data (no subset), and the measured value
is within the tolerance. A cell run with a mapped model, overridden options or a subset gets no Δ and no
verdict, and says why instead: such a run is a plumbing check of the command and the table, never
evidence about the paper. A substitute checkpoint (the recipe's stand-in for one not on the Hub) keeps
its Δ, but no verdict.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from medprobe.atomic import write_all_atomically
from medprobe.marks import figure_metadata
from medprobe.reproduce.recipe import Cell, Figure, Note, Recipe

PLUMBING = "PLUMBING CHECK, NOT A REPRODUCTION"
PLUMBING_BANNER = (
    f"**{PLUMBING}.** Some cells ran {{what}}. Their numbers say nothing about the paper's figures; no figure below "
    "is claimed reproduced."
)


def settings_text(values: dict[str, Any], option: str) -> str:
    """Options as the user typed them: `--set a=1 --set b=2`."""
    return " ".join(
        f"{option} {key}={json.dumps(value) if not isinstance(value, str) else value}" for key, value in values.items()
    )


def build_report(recipe: Recipe, cells: list[Cell], results: dict[str, dict], options: Any) -> dict:
    rows = [figure_row(recipe, cell, figure, results.get(cell.id, {})) for cell in cells for figure in cell.figures]
    ran = [r for r in results.values() if r.get("status") == "finished"]
    mapped = any(r["model"]["mapped"] for r in ran)
    overrides: dict[str, Any] = {}
    for result in ran:
        overrides.update(result.get("overrides") or {})
    return {
        "recipe": recipe.id,
        "title": recipe.title,
        "paper": recipe.paper,
        "benchmark": recipe.benchmark,
        "data_dir": options.data_dirs.get(recipe.benchmark),
        "model_map": dict(options.model_map) if mapped else {},
        "model_mapped": mapped,
        "overrides": overrides,
        "overridden": bool(overrides),
        "plumbing_check": mapped or bool(overrides),
        "notes": [note_text(note, recipe, results) for note in recipe.notes],
        "rows": rows,
        "summary": {
            "figures": len(rows),
            "run": sum(r["status"] == "finished" for r in rows),
            "within_tolerance": sum(r["within_tolerance"] is True for r in rows),
            "reproduced": sum(r["reproduced"] for r in rows),
        },
    }


def note_text(note: Note, recipe: Recipe, results: dict[str, dict]) -> str:
    """The recipe's note, and where a --set ran another value of an option it states, that it did."""
    changed: dict[str, Any] = {}
    for cell_id, result in results.items():
        if result.get("status") == "finished" and note.describes(recipe.cell(cell_id)):
            overrides = result.get("overrides") or {}
            changed.update(
                {key: overrides[key] for key in note.options if key in overrides and overrides[key] != note.options[key]}
            )
    if not changed:
        return note.text
    return f"{note.text} Not as run here: {settings_text(changed, '--set')} (an override)."


def model_as_run(recipe: Recipe, cell: Cell, result: dict) -> str:
    model = recipe.models[cell.model]
    ran = result.get("model")
    if not ran:
        return model.hub or f"{model.name} (not on the Hub)"
    if ran["mapped"]:
        return f"{ran['ran']} (--model-map, for {model.hub or model.name})"
    return ran["ran"] + (" (substitute)" if ran.get("substitute") else "")


def not_comparable(result: dict) -> list[str]:
    """Why a cell's numbers are not the paper's measurement: no Δ and no verdict for them."""
    overrides = result.get("overrides") or {}
    return [
        why
        for why, flag in (
            ("model mapped: plumbing check", result["model"]["mapped"]),
            (f"options overridden: {settings_text(overrides, '--set')}", bool(overrides)),
            ("subset of the data", result.get("subset")),
        )
        if flag
    ]


def figure_row(recipe: Recipe, cell: Cell, figure: Figure, result: dict) -> dict:
    row: dict[str, Any] = {
        "cell": cell.id,
        "metric": figure.metric,
        "model": cell.model,
        "hub": recipe.models[cell.model].hub,
        "model_as_run": model_as_run(recipe, cell, result),
        "model_mapped": bool((result.get("model") or {}).get("mapped")),
        "overrides": result.get("overrides") or {},
        "source": figure.source,
        "paper": figure.paper,
        "paper_std": figure.paper_std,
        "tolerance": figure.tolerance,
        "status": result.get("status", "not run"),
        "reason": result.get("reason", ""),
        "measured": None,
        "delta": None,
        "no_delta": "",
        "within_tolerance": None,
        "reproduced": False,
        "verdict": "not run" if not result else result.get("status", "not run"),
    }
    found = (result.get("measured") or {}).get(figure.metric) if result.get("status") == "finished" else None
    if found is None:
        return row
    value = found["value"] * figure.scale
    row["measured"] = {
        **found,
        "value": value,
        **{key: found[key] * figure.scale for key in ("low", "high", "std") if found.get(key) is not None},
    }
    why = not_comparable(result)
    if why:  # not the paper's measurement: no Δ, no verdict, and the reason in their place
        row["no_delta"] = row["verdict"] = f"n/a ({'; '.join(why)})"
        return row
    row["delta"] = value - figure.paper
    within = abs(row["delta"]) <= figure.tolerance
    if result["model"].get("substitute"):  # the recipe's stand-in: how far it is, but no verdict about the paper
        row["verdict"] = "n/a (a substitute for the paper's checkpoint)"
        return row
    row["within_tolerance"] = within
    row["reproduced"] = within
    row["verdict"] = "yes" if within else "no"
    return row


def measured_text(row: dict) -> str:
    found = row["measured"]
    if found is None:
        return "—"
    if found.get("std") is not None:
        return f"{found['value']:.2f} ± {found['std']:.2f} ({found['runs']} runs)"
    if found.get("low") is not None:
        return f"{found['value']:.2f} ({found['low']:.2f}–{found['high']:.2f})"
    return f"{found['value']:.2f}"


def paper_text(row: dict) -> str:
    return f"{row['paper']:g}" + (f" ± {row['paper_std']:g}" if row["paper_std"] is not None else "")


def plumbing_what(report: dict) -> str:
    """What made the run a plumbing check, as the user typed it."""
    parts = []
    if report["model_mapped"]:
        parts.append(f"other models than the paper's ({settings_text(report['model_map'], '--model-map')})")
    if report["overridden"]:
        parts.append(f"other options than the recipe's ({settings_text(report['overrides'], '--set')})")
    return " and ".join(parts)


def markdown(report: dict) -> str:
    lines = [f"# Reproduction: {report['title']}", ""]
    if report["plumbing_check"]:
        lines += [PLUMBING_BANNER.format(what=plumbing_what(report)), ""]
    paper = report["paper"]
    lines += [f"Paper: {paper['citation']} ({paper['version']}). Data: {report['data_dir']}.", ""]
    lines += [
        "| cell | source (table, row, column) | model as run | paper | measured (interval) | Δ | within tolerance? |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        source = row["source"]
        where = f"{source['table']}, {source['row']}, {source['column']}"
        delta = f"{row['delta']:+.2f}" if row["delta"] is not None else "—"
        verdict = row["verdict"] if row["status"] == "finished" else f"{row['verdict']}: {row['reason']}".rstrip(": ")
        tolerance = f" (±{row['tolerance']:g})" if row["within_tolerance"] is not None else ""
        cells = [row["cell"], where, row["model_as_run"], paper_text(row), measured_text(row), delta, verdict + tolerance]
        lines.append("| " + " | ".join(cells) + " |")
    summary = report["summary"]
    lines += [
        "",
        f"{summary['figures']} figures, {summary['run']} measured, {summary['reproduced']} reproduced within tolerance.",
        "Measured: one run's value with its bootstrap interval, or the mean ± std over the cell's runs (e.g. rewiring "
        "corpora), in the paper's unit. Δ: measured − paper, only where the paper's model ran with the recipe's options "
        "on the whole data.",
    ]
    if report["notes"]:
        lines += ["", "Notes (the recipe's):", *[f"- {note}" for note in report["notes"]]]
    return "\n".join(lines) + "\n"


def fitted(fig: Any, text: str, fontsize: float, weight: str = "normal") -> str:
    """`text` wrapped into lines that each fit the figure's width, measured with its renderer."""
    renderer = fig.canvas.get_renderer()
    width = len(text)
    while True:
        wrapped = textwrap.fill(text, width)
        probe = fig.text(0, 0, wrapped, fontsize=fontsize, fontweight=weight)
        fits = probe.get_window_extent(renderer).width <= 0.94 * fig.bbox.width
        probe.remove()
        if fits or width <= 12:
            return wrapped
        width = max(12, int(width * 0.9))


def figure(report: dict) -> Any:
    """Paper vs measured per figure, with the paper's tolerance as a band and the measured interval or std; the
    title and the plumbing-check banner wrapped to the figure's width, whole."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row in report["rows"] if row["measured"] is not None] or report["rows"]
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(rows)), 4.5), layout="constrained")
    xs = list(range(len(rows)))
    ax.errorbar(xs, [r["paper"] for r in rows], yerr=[r["tolerance"] for r in rows], fmt="o", label="paper ± tolerance")
    measured = [(x, r["measured"]) for x, r in zip(xs, rows) if r["measured"] is not None]
    if measured:
        ax.plot([x for x, _ in measured], [m["value"] for _, m in measured], "x", color="C3", label="measured")
    ax.set_xticks(xs, [f"{r['cell']} {r['metric']}" for r in rows], rotation=75, fontsize=6)
    fig.suptitle(fitted(fig, report["title"], 9), fontsize=9)
    if report["plumbing_check"]:
        banner = f"{PLUMBING}: {plumbing_what(report)}"
        ax.set_title(fitted(fig, banner, 8, "bold"), fontsize=8, color="C3", fontweight="bold")
    ax.legend(fontsize=7)
    return fig


def draw(report: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig = figure(report)
    fig.savefig(path, format="png", metadata=figure_metadata("png"))
    plt.close(fig)


def write_report(report: dict, out: Path) -> list[Path]:
    """report.json and report.md always; report.png when matplotlib is installed (said in the JSON)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        report["figure"] = None
        report["figure_skipped"] = "matplotlib is not installed (pip install matplotlib)"
    else:
        report["figure"] = "report.png"
    text = json.dumps(report, indent=2, sort_keys=True) + "\n"
    writers = [
        (out / "report.json", lambda temp: temp.write_text(text, encoding="utf-8")),
        (out / "report.md", lambda temp: temp.write_text(markdown(report), encoding="utf-8")),
    ]
    if report["figure"]:
        writers.append((out / "report.png", lambda temp: draw(report, temp)))
    return write_all_atomically(writers)
