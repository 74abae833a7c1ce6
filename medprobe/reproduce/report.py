"""The reproduction report: 'paper | measured ± interval | Δ | within tolerance?' per figure, as
OUT/report.json, OUT/report.md and OUT/report.png (the figure needs matplotlib, a dependency of medprobe).

A figure counts as reproduced only when the paper's own model ran (no --model-map), with the
recipe's options (no --set), on the whole data (no subset), and the measured value is within the
tolerance. Otherwise the verdict says why it is not a reproduction: a run on tiny or other models is
a plumbing check of the command and the table, never evidence about the paper.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from medprobe.atomic import write_all_atomically
from medprobe.reproduce.recipe import Cell, Figure, Recipe

PLUMBING_BANNER = (
    "**PLUMBING CHECK, NOT A REPRODUCTION.** Some cells ran other models than the paper's (--model-map){why}. "
    "Their numbers say nothing about the paper's figures; no figure below is claimed reproduced."
)


def build_report(recipe: Recipe, cells: list[Cell], results: dict[str, dict], options: Any) -> dict:
    rows = [figure_row(recipe, cell, figure, results.get(cell.id, {})) for cell in cells for figure in cell.figures]
    mapped = any(r.get("model", {}).get("mapped") for r in results.values())
    overridden = any(r.get("overrides") for r in results.values())
    return {
        "recipe": recipe.id,
        "title": recipe.title,
        "paper": recipe.paper,
        "benchmark": recipe.benchmark,
        "data_dir": options.data_dirs.get(recipe.benchmark),
        "model_mapped": mapped,
        "overridden": overridden,
        "plumbing_check": mapped or overridden,
        "notes": list(recipe.notes),
        "rows": rows,
        "summary": {
            "figures": len(rows),
            "run": sum(r["status"] == "finished" for r in rows),
            "within_tolerance": sum(r["within_tolerance"] is True for r in rows),
            "reproduced": sum(r["reproduced"] for r in rows),
        },
    }


def figure_row(recipe: Recipe, cell: Cell, figure: Figure, result: dict) -> dict:
    row: dict[str, Any] = {
        "cell": cell.id,
        "metric": figure.metric,
        "model": cell.model,
        "hub": recipe.models[cell.model].hub,
        "source": figure.source,
        "paper": figure.paper,
        "paper_std": figure.paper_std,
        "tolerance": figure.tolerance,
        "status": result.get("status", "not run"),
        "reason": result.get("reason", ""),
        "measured": None,
        "delta": None,
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
    row["delta"] = value - figure.paper
    within = abs(row["delta"]) <= figure.tolerance
    not_reproduction = [
        why
        for why, flag in (
            ("model mapped: plumbing check", result["model"]["mapped"]),
            ("a substitute for the paper's checkpoint", result["model"].get("substitute")),
            ("options overridden", bool(result.get("overrides"))),
            ("subset of the data", result.get("subset")),
        )
        if flag
    ]
    row["model_mapped"] = result["model"]["mapped"]
    if not_reproduction:  # Δ is shown for the plumbing; no verdict about the paper
        row["verdict"] = f"n/a ({', '.join(not_reproduction)})"
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


def markdown(report: dict) -> str:
    lines = [f"# Reproduction: {report['title']}", ""]
    if report["plumbing_check"]:
        why = " or other options (--set)" if report["overridden"] else ""
        lines += [PLUMBING_BANNER.format(why=why), ""]
    paper = report["paper"]
    lines += [f"Paper: {paper['citation']} ({paper['version']}). Data: {report['data_dir']}.", ""]
    lines += [
        "| cell | source (table, row, column) | paper | measured (interval) | Δ | within tolerance? |",
        "|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        source = row["source"]
        where = f"{source['table']}, {source['row']}, {source['column']}"
        delta = "—" if row["delta"] is None else f"{row['delta']:+.2f}"
        verdict = row["verdict"] if row["status"] == "finished" else f"{row['verdict']}: {row['reason']}".rstrip(": ")
        tolerance = f" (±{row['tolerance']:g})" if row["within_tolerance"] is not None else ""
        lines.append(f"| {row['cell']} | {where} | {paper_text(row)} | {measured_text(row)} | {delta} | {verdict}{tolerance} |")
    summary = report["summary"]
    lines += [
        "",
        f"{summary['figures']} figures, {summary['run']} measured, {summary['reproduced']} reproduced within tolerance.",
        "Measured: one run's value with its bootstrap interval, or the mean ± std over the cell's runs (e.g. rewiring "
        "corpora), in the paper's unit.",
    ]
    if report["notes"]:
        lines += ["", "Notes:", *[f"- {note}" for note in report["notes"]]]
    return "\n".join(lines) + "\n"


def draw(report: dict, path: Path) -> None:
    """Paper vs measured per figure, with the paper's tolerance as a band and the measured interval or std."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row in report["rows"] if row["measured"] is not None] or report["rows"]
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(rows)), 4))
    xs = list(range(len(rows)))
    ax.errorbar(xs, [r["paper"] for r in rows], yerr=[r["tolerance"] for r in rows], fmt="o", label="paper ± tolerance")
    measured = [(x, r["measured"]) for x, r in zip(xs, rows) if r["measured"] is not None]
    if measured:
        ax.plot([x for x, _ in measured], [m["value"] for _, m in measured], "x", color="C3", label="measured")
    ax.set_xticks(xs, [f"{r['cell']} {r['metric']}" for r in rows], rotation=75, fontsize=6)
    title = report["title"] + (" — PLUMBING CHECK, NOT A REPRODUCTION" if report["plumbing_check"] else "")
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, format="png")
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
