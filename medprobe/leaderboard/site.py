"""The leaderboard as a static site, drawn from the data of SITE/leaderboard.json only.

    files = site_files(data)     # {"index.html": ..., "models/<model>.html": ..., "pairs/<board>-<n>.html": ..., "leaderboard.json": ...}

Pages load nothing: no script, no external style, font or image; intervals and per-group bars are
inline SVG, and each page's Content-Security-Policy forbids any other load, so the folder opens from
disk, offline, and the Space serves the same files. Values are in % (differences in percentage points):
every headline medprobe ranks by is a share.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any

from medprobe.comparison.report import DASH, POLICY, STYLE, interval, p_text, percent, signed
from medprobe.hub.published import name_part
from medprobe.leaderboard.ranks import letters_text
from medprobe.mcnemar import not_detectable_text
from medprobe.stats import plural

EXTRA_STYLE = """
table.board td.group { text-align: center; font-weight: 600; background: #f3f6fa; }
td.num { white-space: nowrap; }
tr.tint td { background: #fafbfd; }
td.svg { padding: 0 0.4rem; }
span.tied { color: #666; } span.sep { color: #a33; font-weight: 600; }
nav ul { columns: 2; } code { background: #f3f3f3; padding: 0 0.2rem; }
"""
BAR_WIDTH = 220


def esc(value: Any) -> str:
    return html.escape(str(value))


def page(title: str, body: list[str], depth: int = 0) -> str:
    """One self-contained page; `depth`: folders below the site's root (for the link home)."""
    home = "../" * depth + "index.html"
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
            f"<title>{esc(title)}</title>",
            f"<style>{STYLE}{EXTRA_STYLE}</style>",
            "</head>",
            "<body>",
            f'<p><a href="{home}">medprobe leaderboard</a></p>' if depth else "",
            f"<h1>{esc(title)}</h1>",
            *body,
            "</body>",
            "</html>",
        ]
    )


def value_text(row: dict) -> str:
    if row.get("low") is None or row.get("high") is None:
        return percent(row.get("value"))
    return f"{percent(row['value'])} [{percent(row['low'])}, {percent(row['high'])}]"


def x_of(value: float | None) -> float:
    return max(0.0, min(1.0, value if isinstance(value, (int, float)) and math.isfinite(value) else 0.0)) * BAR_WIDTH


def interval_svg(row: dict) -> str:
    """The value and its 95% interval on a 0-100% line, chance as a grey tick."""
    if row.get("value") is None:
        return ""
    parts = [f'<svg width="{BAR_WIDTH}" height="14" role="img" aria-label="{esc(value_text(row))}">']
    parts.append(f'<line x1="0" y1="7" x2="{BAR_WIDTH}" y2="7" stroke="#e2e2e2"/>')
    if row.get("chance") is not None:
        x = x_of(row["chance"])
        parts.append(f'<line x1="{x:.1f}" y1="1" x2="{x:.1f}" y2="13" stroke="#999" stroke-dasharray="2,1"/>')
    if row.get("low") is not None and row.get("high") is not None:
        parts.append(
            f'<line x1="{x_of(row["low"]):.1f}" y1="7" x2="{x_of(row["high"]):.1f}" y2="7" stroke="#2b5d8a" stroke-width="3"/>'
        )
    parts.append(f'<circle cx="{x_of(row["value"]):.1f}" cy="7" r="3.5" fill="#12324f"/></svg>')
    return "".join(parts)


def group_bars_svg(groups: list[dict]) -> str:
    """One bar per group (value) with its 95% interval as a whisker, the group named on its left."""
    label_width, height = 230, 18
    width = label_width + BAR_WIDTH + 70
    parts = [f'<svg width="{width}" height="{height * len(groups) + 4}" role="img" aria-label="per-group values">']
    for index, row in enumerate(groups):
        y = index * height + 2
        name = row["group"] if len(row["group"]) <= 34 else row["group"][:33] + "…"
        parts.append(f'<text x="0" y="{y + 12}" font-size="11">{esc(name)}</text>')
        parts.append(f'<rect x="{label_width}" y="{y + 3}" width="{x_of(row["value"]):.1f}" height="10" fill="#9cc0e0"/>')
        if row.get("low") is not None and row.get("high") is not None:
            x1, x2 = label_width + x_of(row["low"]), label_width + x_of(row["high"])
            parts.append(f'<line x1="{x1:.1f}" y1="{y + 8}" x2="{x2:.1f}" y2="{y + 8}" stroke="#12324f" stroke-width="1.5"/>')
        parts.append(f'<text x="{label_width + BAR_WIDTH + 6}" y="{y + 12}" font-size="11">{percent(row["value"])}</text>')
    return "".join(parts) + "</svg>"


def table(header: list[str], rows: list[list[str]], numeric: set[int], css: str = "") -> list[str]:
    """A table whose cells are already HTML."""
    lines = [
        f'<table class="{css}">' if css else "<table>",
        "<thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr></thead>",
        "<tbody>",
    ]
    for row in rows:
        lines.append(
            "<tr>"
            + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
            + "</tr>"
        )
    return lines + ["</tbody>", "</table>"]


# --- pages' names --------------------------------------------------------------------------------------


def model_pages(data: dict) -> dict[str, str]:
    """model -> its page's path (models/<name>.html), unique."""
    pages: dict[str, str] = {}
    for board in data["boards"]:
        for row in board["rows"]:
            if row["model"] not in pages:
                base, number = name_part(row["model"]).lower(), 1
                while f"models/{base}{'_' + str(number) if number > 1 else ''}.html" in pages.values():
                    number += 1
                pages[row["model"]] = f"models/{base}{'_' + str(number) if number > 1 else ''}.html"
    return pages


def pair_page(board: dict, index: int) -> str:
    return f"pairs/{board['id']}-{index + 1}.html"


# --- the index -------------------------------------------------------------------------------------------


def group_note(board: dict) -> str:
    """The board's rule in one line, with how many of its pairs the tests separate."""
    tests = board["tests"]
    separated = sum(test["separated"] for test in tests)
    return (
        f"{len(board['rows'])} runs, {len(tests)} pair(s) tested on their common {plural(board['unit'])}, {separated} "
        f"separated. Rank: from 1 + the runs significantly better to the runs minus those significantly worse; two runs "
        f"share a letter only when their difference is not significant ({test_names(tests)}; Holm over all {len(tests)} "
        "pairs, α 0.05)."
    )


def test_names(tests: list[dict]) -> str:
    """The tests a board's p-values come from, named: `exact McNemar`, or both where its pairs differ."""
    return " or ".join(dict.fromkeys(test["test"] for test in tests)) or "no pair"


def rank_text(row: dict) -> str:
    """`1–3`: the rank interval; `2` where it is one rank."""
    best, worst = row["rank"]["best"], row["rank"]["worst"]
    return str(best) if best == worst else f"{best}–{worst}"


def letters_of(row: dict, board: dict) -> str:
    return letters_text(row["letters"], [other["letters"] for other in board["rows"]])


def detectable_text(found: dict, units: str) -> str:
    """The smallest difference the pair's test detects (points), or why there is none: too few discordant items."""
    if found.get("mde") is not None:
        return signed(found["mde"]).lstrip("+")
    if found.get("better") is not None:
        return not_detectable_text(found["n"], found["better"] + found["worse"])
    return f"not detectable at n={found['n']:,} (the runs agree on every {units[:-1] if units.endswith('s') else units})"


def board_rows(board: dict, models: dict[str, str]) -> list[str]:
    """The board's table: each row's rank interval and letters; each row links its model's page and its pair with the next."""
    rows = board["rows"]
    tests = test_names(board["tests"])
    lines = [
        '<table class="board">',
        "<thead><tr><th>rank</th><th>letters</th><th>#</th><th>run</th><th>model</th>"
        f"<th>{esc(board['metric'])} [95% interval]</th><th>interval (0–100%)</th><th>n</th><th>chance</th>"
        f"<th>vs next: difference</th><th>p ({esc(tests)}, Holm over all pairs)</th></tr></thead>",
        "<tbody>",
    ]
    for index, row in enumerate(rows):
        cells = [
            f'<td class="num">{rank_text(row)}</td>',
            f'<td class="group">{esc(letters_of(row, board))}</td>',
            f'<td class="num">{row["position"]}</td>',
            f"<td>{esc(row['run'])}</td>",
            f'<td><a href="{models[row["model"]]}">{esc(row["model"])}</a></td>',
            f'<td class="num">{value_text(row)}</td>',
            f'<td class="svg">{interval_svg(row)}</td>',
            f'<td class="num">{row["n"]:,}</td>',
            f'<td class="num">{percent(row["chance"])}</td>',
        ]
        if index < len(board["pairs"]):
            pair = board["pairs"][index]
            mark = '<span class="sep">separated</span>' if pair["separated"] else '<span class="tied">not separated</span>'
            cells += [
                f'<td class="num"><a href="{pair_page(board, index)}">{signed(pair["difference"])}</a></td>',
                f'<td class="num">{p_text(pair["p_holm"])} {mark}</td>',
            ]
        else:
            cells += [f"<td>{DASH}</td>", f"<td>{DASH}</td>"]
        lines.append("<tr>" + "".join(cells) + "</tr>")
    return lines + ["</tbody>", "</table>"]


def excluded_table(items: list[dict]) -> list[str]:
    rows = [
        [esc(item["run"]), esc(item["where"] or DASH), esc(item["reason"]), f"<code>{esc(item['source'])}</code>"]
        for item in items
    ]
    return table(["run", "benchmark/config prober", "why it is left out", "source"], rows, set())


def board_section(board: dict, models: dict[str, str]) -> list[str]:
    nulls = sorted({row["chance_null"] for row in board["rows"] if row.get("chance_null")})
    settings = ", ".join(f"{name} {value}" for name, value in board["settings"].items())
    lines = [
        f'<section id="{esc(board["id"])}">',
        f"<h2>{esc(board['title'])}</h2>",
        f'<p class="intro">Data: {esc(board["data"]["text"])}. Ranked by {esc(board["metric"])} (% of {esc(plural(board["unit"]))})'
        + (f"; {esc(settings)}" if settings else "")
        + ". Chance: "
        + (esc("; ".join(nulls)) if nulls else "not recorded")
        + ".</p>",
        *board_rows(board, models),
        f'<p class="intro">{esc(group_note(board))}</p>',
    ]
    if board["excluded"]:
        lines += ["<h3>Left out of this board</h3>", *excluded_table(board["excluded"])]
    return lines + ["</section>"]


def index_page(data: dict, models: dict[str, str]) -> str:
    runs = sum(len(board["rows"]) for board in data["boards"])
    body = [
        f'<p class="intro">{runs} run(s) on {len(data["boards"])} board(s); {len(data["excluded"])} left out (listed at the end). '
        f"Every number is recomputed from the runs' per-item outcomes ({data['resamples']:,} resamples, seed {data['seed']}); "
        "a rank is an interval and two runs share a letter unless a paired test of the two separates them "
        '(<a href="#how">how to read it</a>); '
        f'the same data is in <a href="leaderboard.json">leaderboard.json</a>. medprobe {esc(data["medprobe"])}.</p>',
        "<nav><ul>"
        + "".join(f'<li><a href="#{esc(b["id"])}">{esc(b["title"])}</a></li>' for b in data["boards"])
        + "</ul></nav>",
    ]
    for board in data["boards"]:
        body += board_section(board, models)
    body += ["<h2>Left out</h2>", *(excluded_table(data["excluded"]) if data["excluded"] else ["<p>None.</p>"])]
    body += [
        '<h2 id="how">How to read it</h2>',
        f'<p class="intro">{esc(data["rule"])}</p>',
        f'<p class="intro">{esc(data["method"])}</p>',
    ]
    return page("medprobe leaderboard", body)


# --- a model and a pair ----------------------------------------------------------------------------------


def model_page(model: str, data: dict) -> str:
    profile, sections = [], []
    for board in data["boards"]:
        for row in board["rows"]:
            if row["model"] != model:
                continue
            link = f'<a href="../index.html#{esc(board["id"])}">{esc(board["title"])}</a>'
            profile.append(
                [
                    link,
                    esc(row["run"]),
                    esc(board["metric"]),
                    value_text(row),
                    f"{row['n']:,}",
                    f"{rank_text(row)} of {len(board['rows'])} ({esc(letters_of(row, board))})",
                    percent(row["chance"]),
                ]
            )
            sections += [
                f"<h2>{esc(board['title'])}: {esc(row['run'])}</h2>",
                f'<p class="intro">{esc(board["metric"])} per {esc(board["group_by"])}, with 95% intervals (bootstrap within the '
                f"{esc(board['group_by'])}).</p>",
                group_bars_svg(row["groups"]),
                *table(
                    [board["group_by"], "n", f"{board['metric']} [95% interval]"],
                    [[esc(g["group"]), f"{g['n']:,}", value_text(g)] for g in row["groups"]],
                    {1, 2},
                ),
            ]
    body = [
        '<p class="intro">Its knowledge profile: every board it is on, with its headline, 95% interval, rank interval and '
        "letters (from paired tests of every pair of the board).</p>",
        *table(["board", "run", "metric", "value [95% interval]", "n", "rank (letters)", "chance"], profile, {3, 4, 5, 6}),
        *sections,
    ]
    return page(f"{model}", body, depth=1)


def pair_page_html(board: dict, index: int) -> str:
    pair = board["pairs"][index]
    upper, lower = pair["upper"], pair["lower"]
    discordant = (
        ""
        if pair["better"] is None
        else f" ({pair['better']:,} {plural(board['unit'])} only {esc(upper)} gets, {pair['worse']:,} only {esc(lower)})"
    )
    overall = [
        [
            esc(board["metric"]),
            percent(pair["upper_value"]),
            percent(pair["lower_value"]),
            signed(pair["difference"]),
            interval(pair["low"], pair["high"]),
            p_text(pair["p_value"]),
            p_text(pair["p_holm"]),
            esc(detectable_text(pair, plural(board["unit"]))),
            f"{pair['n']:,}",
        ]
    ]
    groups = [
        [
            esc(g["group"]),
            f"{g['n']:,}",
            percent(g["upper_value"]),
            percent(g["lower_value"]),
            signed(g["difference"]),
            interval(g["low"], g["high"]),
            p_text(g["p_value"]),
            p_text(g["p_holm"]),
            esc(detectable_text(g, plural(board["unit"]))),
        ]
        for g in pair["groups"]
    ]
    verdict = "separated" if pair["separated"] else "not separated"
    tested = f"Holm over the board's {len(board['tests'])} pairs"
    body = [
        f'<p class="intro"><a href="../index.html#{esc(board["id"])}">{esc(board["title"])}</a>: {esc(upper)} (#{index + 1}) '
        f"against {esc(lower)} (#{index + 2}) on their {pair['n']:,} common {esc(plural(board['unit']))}{discordant}: "
        f"{verdict} ({esc(pair['test'])}, {tested}).</p>",
        *table(
            [
                "metric",
                upper,
                lower,
                "difference",
                "95% interval",
                f"p ({pair['test']})",
                f"p (Holm, all {len(board['tests'])} pairs)",
                "detectable (80% power)",
                "n",
            ],
            overall,
            set(range(1, 9)),
        ),
        f'<p class="intro">{esc(pair["method"])}. Detectable: the smallest difference (percentage points) that test finds '
        f"with 80% power at two-sided α 0.05, {esc(pair['mde_method'])}.</p>",
        f"<h2>{esc(board['metric'])} per {esc(board['group_by'])}</h2>",
        *table(
            [
                board["group_by"],
                "n",
                upper,
                lower,
                "difference",
                "95% interval",
                f"p ({test_names(pair['groups'])})",
                "p (Holm)",
                "detectable (80% power)",
            ],
            groups,
            set(range(1, 9)),
        ),
        f'<p class="intro">p: the exact McNemar test where the items score 0 or 1, else the paired permutation test, as '
        f"<code>medprobe compare</code> has it; Holm over this pair's {len(pair['groups'])} {esc(board['group_by'])} tests. "
        f"Every metric of both runs, with the same tests: <code>{esc(pair['compare'])}</code></p>",
    ]
    return page(f"{upper} vs {lower}", body, depth=1)


def site_files(data: dict) -> dict[str, str]:
    """Every file of the site: the pages and leaderboard.json."""
    models = model_pages(data)
    files = {
        "index.html": index_page(data, models),
        "leaderboard.json": json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
    }
    for model, path in models.items():
        files[path] = model_page(model, data)
    for board in data["boards"]:
        for index in range(len(board["pairs"])):
            files[pair_page(board, index)] = pair_page_html(board, index)
    return files
