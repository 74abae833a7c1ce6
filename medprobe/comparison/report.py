"""What `medprobe compare` prints and writes from a comparison (medprobe.comparison): tables, a forest plot, an HTML page.

    markdown(comparison)                      # compare.md, also printed
    draw_forest(comparison, "forest.png")     # --plot: every difference with its 95% interval
    html_page(comparison)                     # --html: the same tables and the plot, one self-contained file

The tables are built once (`tables`) and rendered as Markdown or HTML. Values and differences
are in % (percentage points for differences) for the metrics that are shares (acc@k, UCM shares, F1,
accuracy, most validity facets); a facet that is a count (answerable_from_template@k) reads whole, one
that is a score (AURC, ECE, Brier) to four decimals, and neither goes into the forest plot of points.
The metrics table groups a ranking run's validity facets under their facet's name (prompt bias,
consistency, ...), after the task's own metrics. The HTML page loads nothing: no script, no external style or font, the
forest plot inline as text and SVG (medprobe.comparison.pages: legible on a phone), and a
Content-Security-Policy that forbids any other load.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

from medprobe.comparison import pages
from medprobe.comparison.pages import DASH, esc
from medprobe.marks import figure_metadata


@dataclass
class Table:
    title: str
    intro: str
    header: list[str]
    rows: list[list[str]]
    numeric: set[int]  # the columns that hold numbers (right-aligned)


def percent(value: float | None) -> str:
    return DASH if value is None or not math.isfinite(value) else f"{100 * value:.2f}"


def signed(value: float | None) -> str:
    return DASH if value is None or not math.isfinite(value) else f"{100 * value:+.2f}"


def interval(low: float | None, high: float | None) -> str:
    return DASH if low is None or high is None else f"[{signed(low)}, {signed(high)}]"


def scaled(value: float | None, scale: str = "", sign: bool = False) -> str:
    """A value as its metric reads: a share in % (a difference in points), a count whole, a score to 4 decimals."""
    if value is None or not math.isfinite(value):
        return DASH
    plus = "+" if sign else ""
    if scale == "count":
        return f"{value:{plus},.0f}"
    return f"{value:{plus}.4f}" if scale == "score" else f"{100 * value:{plus}.2f}"


def value_text(found: dict, scale: str = "") -> str:
    """`41.51 [32.08, 50.94]`: a run's value with its 95% interval, in % (a count whole, a score as it is)."""
    if found.get("low") is None or found.get("high") is None:
        return scaled(found.get("value"), scale)
    return f"{scaled(found['value'], scale)} [{scaled(found['low'], scale)}, {scaled(found['high'], scale)}]"


def p_text(p: float | None) -> str:
    if p is None:
        return DASH
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def model_label(model: str | None) -> str:
    """A local model folder by its name only (the report may be shared), else the Hub id or packaged name."""
    if not model:
        return DASH
    return Path(model).name if Path(model).expanduser().exists() else model


def versus(found: dict) -> str:
    return f"{found['run']} - {found['reference']}"


def dataset_text(run: dict) -> str:
    """`medlama_sample test, data sha256 1a2b3c4d5e6f…`: a local folder by its name (the report may be shared), a Hub
    dataset with the commit it was read at."""
    if not run.get("dataset"):
        return DASH
    name = model_label(run["dataset"]) + (f"@{run['data_revision'][:12]}" if run.get("data_revision") else "")
    digest = f", data sha256 {run['data_sha256'][:12]}…" if run.get("data_sha256") else ""
    return f"{name} {run.get('split') or ''}{digest}".replace(" ,", ",")


def provenance(comparison: dict, made: str | None = None) -> str:
    """When and on what data: `Made 2026-11-25 14:03 UTC by medprobe 0.1.0 from 2 runs made 2026-11-24 to 2026-11-25, on
    medlama_sample test, data sha256 …`. `made` (the time the page was written) only where the output need not be the
    same bytes for the same runs (the HTML page; compare.json records compare.md's sha256)."""
    runs = [run for item in comparison["inputs"] for run in item["runs"].values()]
    dates = sorted({str(run["created"])[:10] for run in runs if run.get("created")})
    when = f" made {dates[0]}" + (f" to {dates[-1]}" if dates[-1] != dates[0] else "") if dates else ""
    data = "; ".join(dict.fromkeys(dataset_text(run) for run in runs))
    start = f"Made {made} by medprobe {comparison['medprobe']}" if made else f"Made by medprobe {comparison['medprobe']}"
    return f"{start} from {len(runs)} run{'s' if len(runs) != 1 else ''}{when}, on {data}."


def summary_table(comparison: dict) -> Table:
    rows = []
    for found in comparison["comparisons"]:
        metric = found["headline"]
        diff = found["differences"][metric]
        rows.append(
            [
                versus(found),
                found["title"],
                metric,
                f"{found['items']['compared']:,}",
                value_text(found["values"][found["reference"]][metric]),
                value_text(found["values"][found["run"]][metric]),
                signed(diff["difference"]),
                interval(diff["low"], diff["high"]),
                p_text(diff["p_value"]),
                test_text(diff),
            ]
        )
    return Table(
        "Headline differences",
        f"Each run minus the reference ({comparison['reference']}), paired on identical items; values in % with their "
        f"95% intervals, differences in percentage points with a 95% paired-bootstrap interval ({comparison['resamples']:,} "
        f"resamples, seed {comparison['seed']}) and a two-sided p: the exact McNemar test where both runs score each item "
        "0 or 1, else a paired permutation test (named beside each p).",
        ["comparison", "data", "metric", "n", "reference", "run", "difference", "95% interval", "p", "test"],
        rows,
        set(range(3, 9)),
    )


def test_text(found: dict) -> str:
    """The test a p comes from, as printed beside it: `exact McNemar (12 vs 3 discordant)` with the items only the run
    gets against those only the reference gets, or `paired permutation`."""
    if found.get("better") is None:
        return found.get("test") or DASH
    return f"{found['test']} ({found['better']:,} vs {found['worse']:,} discordant)"


def runs_table(comparison: dict) -> Table:
    rows = []
    for item in comparison["inputs"]:
        for run in item["runs"].values():
            items = f"{run['items']:,}" if isinstance(run.get("items"), int) else DASH
            data = f"{run['benchmark']}/{run['config'] or 'all'}"
            made = str(run.get("created") or DASH)[:10]
            rows.append(
                [
                    item["label"],
                    data,
                    dataset_text(run),
                    made,
                    run["prober"],
                    model_label(run["model"]),
                    items,
                    run["command"] or DASH,
                ]
            )
    return Table("Runs", "", ["run", "data", "dataset", "made", "prober", "model", "items", "command"], rows, {6})


def setting_text(name: str, value: object) -> str:
    """A setting as a user types it: a model by its folder name, a list as 1,10, an option left out as `not given`,
    a switch as on/off, a digest by its first 12 digits."""
    if value is None:
        return "not given"
    if isinstance(value, bool):
        return "on" if value else "off"
    if name == "model":
        return model_label(str(value))
    if name == "weights sha256":
        return f"{str(value)[:12]}…"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def differing_text(found: dict) -> str:
    """`layers not given in r1.json, 3 in r2.json`; model paths by their folder name."""
    parts = []
    for name, (first, second) in found["differing"].items():
        first, second = setting_text(name, first), setting_text(name, second)
        parts.append(f"{name} {first} in {found['reference']}, {second} in {found['run']}")
    return "; ".join(parts)


def sameness_text(found: dict) -> str:
    """What the comparison checked to be the same, and only that: prober and settings always (they are compared);
    the model by its weights digest when both runs recorded it, else said to be unchecked."""
    if found["differing"]:
        said = f"What differs: {differing_text(found)}"
    else:
        said = "The runs' prober and settings are the same"
    if found.get("different_candidates"):
        said += f"; they ranked among different candidates ({found['different_candidates']}): the difference measures the data"
    if "model" in found["differing"] or "weights sha256" in found["differing"]:
        return said
    if found.get("same_weights"):
        return said + f"; the same model weights (sha256 {found['same_weights'][:12]}…)"
    return said + "; the model has one name in both, but not both runs recorded its weights: not checked to be the same"


def metrics_table(found: dict) -> Table:
    ref, run = found["reference"], found["run"]
    facets, scales = found.get("facets") or {}, found.get("scales") or {}
    rows, shown = [], set()
    for metric, diff in facet_order(found["differences"], facets):
        facet, scale = facets.get(metric) or TASK_METRICS, scales.get(metric, "")
        rows.append(
            [
                "" if facet in shown else facet,  # the facet's name on its first row: its rows read as one group
                metric,
                value_text(found["values"][ref][metric], scale),
                value_text(found["values"][run][metric], scale),
                scaled(diff["difference"], scale, sign=True),
                DASH if diff["low"] is None else f"[{scaled(diff['low'], scale, True)}, {scaled(diff['high'], scale, True)}]",
                p_text(diff["p_value"]),
                test_text(diff),
            ]
        )
        shown.add(facet)
    items = found["items"]
    intro = f"{items['compared']:,} {found['units']} paired"
    if found["intersected"]:
        intro += f" (--intersect: of {ref}'s {items[ref]:,} and {run}'s {items[run]:,}; intervals recomputed on them)"
    intro += f". {sameness_text(found)}"
    return Table(
        f"{versus(found)}: {found['title']}",
        intro + ".",
        ["facet", "metric", ref, run, "difference", "95% interval", "p", "test"],
        rows,
        set(range(2, 7)),
    )


TASK_METRICS = "task"  # the facet column of the task's own metrics (acc@k, macro_acc@k, ...)


def facet_order(differences: dict, facets: dict) -> list[tuple[str, dict]]:
    """The differences with the task's own metrics first, then each facet's together, in the order facets first
    appear (a stable sort: within a group the record's order)."""
    first = {facet: index for index, facet in enumerate(dict.fromkeys(facets.get(name) for name in differences))}
    return sorted(differences.items(), key=lambda item: (facets.get(item[0]) is not None, first[facets.get(item[0])]))


def groups_table(found: dict) -> Table:
    ref, run = found["reference"], found["run"]
    rows = [
        [
            row["group"],
            f"{row['n']:,}",
            percent(row["reference"]),
            percent(row["run"]),
            signed(row["difference"]),
            interval(row["low"], row["high"]),
            p_text(row["p_value"]),
            p_text(row["p_holm"]),
            test_text(row),
        ]
        for row in found["groups"]
    ]
    tested = sum(row["p_holm"] is not None for row in found["groups"])
    return Table(
        f"{versus(found)}: {found['headline']} per {found['group_by']}",
        f"The {found['headline']} of each {found['group_by']}'s {found['units']} alone; p from the test named beside it "
        f"(exact McNemar: {found['units']} only the run gets vs only the reference gets); p (Holm) adjusted over the "
        f"{tested} {found['group_by']} tests of this comparison.",
        [found["group_by"], "n", ref, run, "difference", "95% interval", "p", "p (Holm)", "test"],
        rows,
        set(range(1, 8)),
    )


def tables(comparison: dict) -> list[Table]:
    found = [summary_table(comparison), runs_table(comparison)]
    for item in comparison["comparisons"]:
        found += [metrics_table(item), groups_table(item)]
    return found


# --- Markdown ---------------------------------------------------------------------------------------------


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(table: Table) -> list[str]:
    lines = [f"## {table.title}", ""]
    if table.intro:
        lines += [table.intro, ""]
    lines.append("| " + " | ".join(map(cell, table.header)) + " |")
    lines.append("|" + "|".join("---:" if index in table.numeric else "---" for index in range(len(table.header))) + "|")
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in table.rows]
    return lines + [""]


def markdown(comparison: dict) -> str:
    lines = ["# medprobe compare", "", provenance(comparison), ""]
    for table in tables(comparison):
        lines += markdown_table(table)
    if comparison["notes"]:
        lines += ["## Notes", ""] + [f"- {note}" for note in comparison["notes"]] + [""]
    return "\n".join(lines)


# --- the forest plot --------------------------------------------------------------------------------------


def forest_rows(comparison: dict) -> list[dict]:
    """One row per difference: each comparison's overall metrics, then its headline per group. Rows name
    the run only when there are several (the title says run - reference)."""
    rows = []
    several = len({found["run"] for found in comparison["comparisons"]}) > 1
    for found in comparison["comparisons"]:
        prefix = f"{found['run']} · " if several else ""
        for metric, diff in found["differences"].items():
            if (found.get("scales") or {}).get(metric, "") in ("count", "score"):
                continue  # not percentage points: the metrics table gives them
            rows.append({"label": f"{prefix}{found['title']} · {metric}", "overall": True, **diff})
        for row in found["groups"]:
            significant = row["p_holm"] is not None and row["p_holm"] < 0.05
            label = f"{found['group_by']} {row['group']}"
            rows.append({"label": label, "overall": False, "significant": significant, **row})
    return [row for row in rows if row["difference"] is not None]


def draw_forest(comparison: dict, path: str | Path | io.BytesIO, fmt: str = "png") -> None:
    """Every difference (percentage points) with its 95% paired-bootstrap interval, zero marked."""
    from medprobe.records.tables import require_matplotlib

    plt = require_matplotlib()
    rows = forest_rows(comparison)
    fig, ax = plt.subplots(figsize=(10, 0.26 * max(len(rows), 1) + 1.5))
    positions = list(range(len(rows)))[::-1]
    for y, row in zip(positions, rows):
        color = "#1f1f1f" if row["overall"] else ("#c44e52" if row["significant"] else "#7f7f7f")
        low = row["difference"] if row["low"] is None else row["low"]
        high = row["difference"] if row["high"] is None else row["high"]
        ax.plot([100 * low, 100 * high], [y, y], color=color, linewidth=1.4 if row["overall"] else 1.0)
        filled = row["overall"] or row["significant"]  # the fill tells significance, not the colour alone
        ax.plot(
            [100 * row["difference"]],
            [y],
            marker="s" if row["overall"] else "o",
            color=color,
            markerfacecolor=color if filled else "white",
            markersize=6 if row["overall"] else 5,
        )
    ax.axvline(0, color="#3b75af", linestyle="--", linewidth=1)
    ax.set_yticks(positions, [row["label"] for row in rows], fontsize=7)
    ax.set_ylim(-1, max(len(rows), 1))
    ax.set_xlabel("difference, run - reference (percentage points), with its 95% paired-bootstrap interval")
    ax.set_title(
        f"run - reference ({comparison['reference']}); per-group rows filled (red): Holm p < 0.05, open: not", fontsize=9
    )
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110, format=fmt, metadata=figure_metadata(fmt))  # a later --plot may replace it
    finally:
        plt.close(fig)


# --- the HTML page ---------------------------------------------------------------------------------------


def now_utc() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def html_table(table: Table) -> list[str]:
    """The table under its title, captioned by what it shows."""
    return [f"<h2>{esc(table.title)}</h2>", *pages.table(table.intro or table.title, table.header, table.rows, table.numeric)]


def forest_chart(comparison: dict) -> list[str]:
    """The forest plot for the page: the rows of `draw_forest`, as text over inline SVG marks, legible at any width.
    A per-group difference with Holm p < 0.05 is a filled circle and says so in words; colour is never the only cue."""
    rows = []
    for row in forest_rows(comparison):
        significant = not row["overall"] and row["significant"]
        words = f"{signed(row['difference'])} {interval(row['low'], row['high'])}"
        if not row["overall"] and row.get("p_holm") is not None:
            words += f", p (Holm) {p_text(row['p_holm'])}" + (": significant" if significant else "")
        colour = "#12324f" if row["overall"] else "#b03a3e" if significant else "#6f6f6f"
        shape = "square" if row["overall"] else "circle"
        mark = pages.Mark(row["difference"], row["low"], row["high"], shape, row["overall"] or significant, colour)
        rows.append(pages.ChartRow(row["label"], words, [mark], strong=row["overall"]))
    axis = pages.difference_axis(
        [v for row in forest_rows(comparison) for v in (row["low"], row["high"], row["difference"])],
        "difference, run - reference (percentage points); dashed: no difference",
    )
    caption = (
        f"Each difference (run - reference, {comparison['reference']}) with its 95% paired-bootstrap interval. "
        "Squares: a comparison's overall metrics; circles: its headline per group, filled where the Holm-adjusted "
        "p < 0.05 (the row also says so), open where not."
    )
    return pages.chart(rows, axis, caption)


def html_page(comparison: dict, made: str | None = None) -> str:
    """One self-contained page: when and on what data it was made, the tables, the forest plot inline, the notes.
    `made`: when the page is written (default: now, UTC)."""
    found = tables(comparison)
    body = [f'<p class="intro">{esc(provenance(comparison, made or now_utc()))}</p>', *html_table(found[0])]
    body += ["<h2>Forest plot</h2>", *forest_chart(comparison)]
    for table in found[1:]:
        body += html_table(table)
    if comparison["notes"]:
        body += ["<h2>Notes</h2>", "<ul>", *(f"<li>{esc(note)}</li>" for note in comparison["notes"]), "</ul>"]
    body.append(f'<p class="intro">medprobe {esc(str(comparison["medprobe"]))}; {esc(comparison["method"])}.</p>')
    return pages.page("medprobe compare", body) + "\n"
