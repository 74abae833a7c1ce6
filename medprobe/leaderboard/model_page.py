"""A model's page of the leaderboard site: every run of the model, and its runs side by side per group.

    model_page("minilm", data)   # models/minilm.html: "minilm on medlama and mst"

Titled by the model and the benchmarks it is on. Its profile table lists every run with its board, its
settings against the board's and its rank; per board, one chart puts the model's runs side by side for
each group (relation, disease, task) on one axis with the chance line, each run its own marker shape,
every label whole; then the values as a table, and how each run was made.
"""

from __future__ import annotations

from medprobe.comparison.pages import SHAPES, ChartRow, Mark, chart, esc, table
from medprobe.comparison.pages import value_axis as chart_axis
from medprobe.comparison.report import percent
from medprobe.leaderboard.parts import commands, difference_words, link, rank_words, site_page, value_text
from medprobe.stats import plural

MARK_COLOURS = {"dark blue": "#12324f", "orange": "#b05a1e", "green": "#2f7d4f", "purple": "#6b3fa0"}  # after SHAPES


def model_title(model: str, data: dict) -> str:
    """`minilm on medlama and mst`: the model and the benchmarks it is on."""
    found = list(dict.fromkeys(b["benchmark"] for b in data["boards"] if any(r["model"] == model for r in b["rows"])))
    named = found[0] if len(found) == 1 else ", ".join(found[:-1]) + f" and {found[-1]}"
    return f"{model} on {named}"


def groups_chart(board: dict, runs: list[dict]) -> list[str]:
    """The model's runs side by side per group (and over all the board's items first): one shape per run, on one
    axis with the chance line."""
    chances = {row["chance"] for row in runs if row.get("chance") is not None}
    chance = next(iter(chances)) if len(chances) == 1 else None
    colours = list(MARK_COLOURS)
    marks = [(SHAPES[i % len(SHAPES)], colours[(i // len(SHAPES)) % len(colours)]) for i in range(len(runs))]

    def chart_row(label: str, found: list[dict], strong: bool = False) -> ChartRow:
        words = "; ".join(
            f"{run['run']}: {value_text(value)}" if len(runs) > 1 else value_text(value) for run, value in zip(runs, found)
        )
        drawn = [
            Mark(v["value"], v.get("low"), v.get("high"), shape, True, MARK_COLOURS[colour])
            for v, (shape, colour) in zip(found, marks)
        ]
        return ChartRow(label, words, drawn, strong)

    rows = [chart_row(f"all {plural(board['unit'])}", runs, strong=True)]
    names = [group["group"] for group in runs[0]["groups"]]
    for name in names:
        rows.append(chart_row(name, [next(g for g in run["groups"] if g["group"] == name) for run in runs]))
    values = [v for row in rows for mark in row.marks for v in (mark.value, mark.high)]
    axis = chart_axis(
        values, f"{board['metric']} (%); dashed: chance" if chance is not None else f"{board['metric']} (%)", chance
    )
    named = [f"{shape}{'' if len(runs) <= len(SHAPES) else ', ' + colour}" for shape, colour in marks]
    legend = "; ".join(f"{mark}: {run['run']}" for mark, run in zip(named, runs)) if len(runs) > 1 else ""
    caption = f"{board['metric']} per {board['group_by']} with 95% intervals (bootstrap within the {board['group_by']})"
    return chart(rows, axis, caption + (f". Runs: {legend}" if legend else "") + ".")


def model_page(model: str, data: dict) -> str:
    profile, sections = [], []
    for board in data["boards"]:
        runs = [row for row in board["rows"] if row["model"] == model]
        if not runs:
            continue
        for row in runs:
            profile.append(
                [
                    row["run"],
                    link(f"../index.html#{board['id']}", board["title"]),
                    difference_words(row),
                    board["metric"],
                    value_text(row),
                    f"{row['n']:,}",
                    rank_words(row, board),
                    percent(row["chance"]),
                ]
            )
        header = [board["group_by"], "n", *(f"{run['run']}: {board['metric']} [95% interval]" for run in runs)]
        rows = [
            [group["group"], f"{group['n']:,}", *(value_text(run["groups"][i]) for run in runs)]
            for i, group in enumerate(runs[0]["groups"])
        ]
        sections += [
            f"<h2>{esc(board['title'])}</h2>",
            *groups_chart(board, runs),
            *table(
                f"{board['metric']} per {board['group_by']}, {model}'s runs on {board['title']}",
                header,
                rows,
                set(range(1, len(header))),
            ),
            *commands(runs, "How each run was made (its command)"),
        ]
    header = ["run", "board", "settings (vs the board)", "metric", "value [95% interval]", "n", "rank (letters)", "chance"]
    body = [
        '<p class="intro">Its knowledge profile: every board it is on, with its headline, 95% interval, rank interval and letters; '
        "where it has several runs on a board, how their settings differ.</p>",
        *table(f"Every run of {model}", header, profile, {4, 5, 6, 7}),
        *sections,
    ]
    return site_page(model_title(model, data), body, depth=1)
