"""The leaderboard as a static site, drawn from the data of SITE/leaderboard.json only: the index and the pair
pages here, a model's page in medprobe.leaderboard.model_page.

    files = site_files(data)     # {"index.html": ..., "models/<model>.html": ..., "pairs/<board>-<n>.html": ..., "leaderboard.json": ...}

Pages load nothing: no script, no external style, font or image; intervals and per-group charts are
inline SVG, and each page's Content-Security-Policy forbids any other load, so the folder opens from
disk, offline, and the Space serves the same files. Pages are made of medprobe.comparison.pages (the
compare report's parts): every text escaped, tables captioned and scrolling in their own box, charts
legible on a phone. Values are in % (differences in percentage points): every headline medprobe ranks
by is a share. Each row says how its run differs from the board's (medprobe.leaderboard.labels) and
how it was made (its command).
"""

from __future__ import annotations

import json
import math

from medprobe.comparison.pages import DASH, TABLE_END, Html, esc, table, table_start
from medprobe.comparison.report import differing_text, interval, p_text, percent, signed
from medprobe.hub.published import name_part
from medprobe.leaderboard.labels import settings_words
from medprobe.leaderboard.model_page import model_page
from medprobe.leaderboard.parts import commands, difference_words, link, rank_text, site_page, test_names, value_text
from medprobe.leaderboard.ranks import letters_text
from medprobe.mcnemar import not_detectable_text
from medprobe.stats import plural

BAR_WIDTH = 220


def x_of(value: float | None) -> float:
    return max(0.0, min(1.0, value if isinstance(value, (int, float)) and math.isfinite(value) else 0.0)) * BAR_WIDTH


def interval_svg(row: dict) -> Html:
    """The value and its 95% interval on a 0-100% line, chance as a grey tick."""
    if row.get("value") is None:
        return Html("")
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
    return Html("".join(parts))


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


RANK_HEADER = ["rank", "letters"]  # the board table's rank columns, filled by rank_cells


def rank_cells(board: dict, index: int) -> list[str]:
    """Row `index`'s rank columns: its rank interval and its letters (from the board's tests of all pairs)."""
    row = board["rows"][index]
    letters = letters_text(row["letters"], [other["letters"] for other in board["rows"]])
    return [f'<td class="num">{esc(rank_text(row))}</td>', f'<td class="group">{esc(letters)}</td>']


def detectable_text(found: dict, units: str) -> str:
    """The smallest difference the pair's test detects (points), or why there is none: too few discordant items."""
    if found.get("mde") is not None:
        return signed(found["mde"]).lstrip("+")
    if found.get("better") is not None:
        return not_detectable_text(found["n"], found["better"] + found["worse"])
    return f"not detectable at n={found['n']:,} (the runs agree on every {units[:-1] if units.endswith('s') else units})"


def facet_cell(row: dict, name: str) -> str:
    """A validity facet's cell: its value and 95% interval in %, empty where the run did not measure it (not 0)."""
    found = (row.get("facets") or {}).get(name)
    return f'<td class="num">{esc(value_text(found))}</td>' if found else "<td></td>"


def board_rows(board: dict, models: dict[str, str]) -> list[str]:
    """The board's table: each row's rank (rank_cells), its run (the row's header), its model's page, how its settings
    differ from the board's, its value with interval, n and chance, and its pair with the next."""
    header = [*RANK_HEADER, "#", "run", "model", "settings (vs the board)", f"{board['metric']} [95% interval]"]
    header += [
        "interval (0–100%)",
        "n",
        "chance",
        *board.get("facet_columns", []),  # the validity facets some run of the board has (issue 39)
        "vs next: difference",
        f"p ({test_names(board['tests'])}, Holm over all pairs)",
    ]
    caption = f"{board['title']}: runs ranked by {board['metric']}, with n, 95% interval, chance and the pair with the next"
    lines = table_start(caption, header, "board")
    for index, row in enumerate(board["rows"]):
        cells = [
            *rank_cells(board, index),
            f'<td class="num">{row["position"]}</td>',
            f'<th scope="row">{esc(row["run"])}</th>',
            f"<td>{link(models[row['model']], row['model'])}</td>",
            f"<td>{esc(difference_words(row))}</td>",
            f'<td class="num">{esc(value_text(row))}</td>',
            f'<td class="svg">{interval_svg(row)}</td>',
            f'<td class="num">{row["n"]:,}</td>',
            f'<td class="num">{esc(percent(row["chance"]))}</td>',
            *(facet_cell(row, name) for name in board.get("facet_columns", [])),
        ]
        if index < len(board["pairs"]):
            pair = board["pairs"][index]
            mark = '<span class="sep">separated</span>' if pair["separated"] else '<span class="tied">not separated</span>'
            named = f"{pair['upper']} vs {pair['lower']}: {signed(pair['difference'])}"
            cells += [
                f'<td class="num">{link(pair_page(board, index), signed(pair["difference"]), named)}</td>',
                f'<td class="num">{esc(p_text(pair["p_holm"]))} {mark}</td>',
            ]
        else:
            cells += [f"<td>{DASH}</td>", f"<td>{DASH}</td>"]
        lines.append("<tr>" + "".join(cells) + "</tr>")
    return lines + TABLE_END


def excluded_table(items: list[dict], caption: str) -> list[str]:
    rows = [[item["run"], item["where"] or DASH, item["reason"], Html(f"<code>{esc(item['source'])}</code>")] for item in items]
    return table(caption, ["run", "benchmark/config prober", "why it is left out", "source"], rows)


def board_intro(board: dict) -> str:
    nulls = sorted({row["chance_null"] for row in board["rows"] if row.get("chance_null")})
    settings = settings_words(board["settings"])
    shared = settings_words(board.get("settings_shared") or {})
    return (
        f"Data: {board['data']['text']}. Ranked by {board['metric']} (% of {plural(board['unit'])})"
        + (f"; {settings}" if settings else "")
        + (f"; other settings as on most rows ({shared}) unless the row says" if shared else "")
        + ". Chance: "
        + ("; ".join(nulls) if nulls else "not recorded")
        + "."
        + (FACETS_NOTE.format(", ".join(board["facet_columns"])) if board.get("facet_columns") else "")
    )


FACETS_NOTE = (
    " Is it knowledge? {} as each run recorded them, with 95% intervals (in %): above_bias = the headline minus the "
    "prompt-bias control's (the subject replaced by a placeholder), robust_acc = right under every template, "
    "consistency = the same hit under every template, aurc = the area under the risk-coverage curve of top-1 answers "
    "by margin (lower is better); empty where a run did not measure it. The ranks are by the headline alone."
)


def board_section(board: dict, models: dict[str, str]) -> list[str]:
    lines = [
        f'<section id="{esc(board["id"])}">',
        f"<h2>{esc(board['title'])}</h2>",
        f'<p class="intro">{esc(board_intro(board))}</p>',
        *board_rows(board, models),
        f'<p class="intro">{esc(group_note(board))}</p>',
        *commands(board["rows"], "How each run was made (its command)"),
    ]
    if board["excluded"]:
        lines += ["<h3>Left out of this board</h3>", *excluded_table(board["excluded"], f"Runs left out of {board['title']}")]
    return lines + ["</section>"]


def index_page(data: dict, models: dict[str, str]) -> str:
    runs = sum(len(board["rows"]) for board in data["boards"])
    elsewhere = [item for item in data["excluded"] if not item.get("board")]
    body = [
        f'<p class="intro">{runs} run(s) on {len(data["boards"])} board(s); {len(data["excluded"])} left out (listed under '
        "the board each would have joined, else at the end). "
        f"Every number is recomputed from the runs' per-item outcomes ({data['resamples']:,} resamples, seed {data['seed']}); "
        "a rank is an interval and two runs share a letter unless a paired test of the two separates them "
        '(<a href="#how">how to read it</a>); '
        f'the same data is in <a href="leaderboard.json">leaderboard.json</a>. medprobe {esc(data["medprobe"])}.</p>',
        '<nav aria-label="boards"><ul>'
        + "".join(f"<li>{link('#' + board['id'], board['title'])}</li>" for board in data["boards"])
        + "</ul></nav>",
    ]
    for board in data["boards"]:
        body += board_section(board, models)
    body.append('<h2 id="left-out">Left out</h2>')
    body += (
        excluded_table(elsewhere, "Runs on no board, and why")
        if elsewhere
        else ["<p>None besides those listed under a board.</p>"]
    )
    body += [
        '<h2 id="how">How to read it</h2>',
        f'<p class="intro">{esc(data["rule"])}</p>',
        f'<p class="intro">{esc(data["method"])}</p>',
    ]
    return site_page("medprobe leaderboard", body)


# --- a pair ----------------------------------------------------------------------------------


def pair_differing(upper: dict, lower: dict) -> str:
    """`What differs: layers not given in layers3, 3 in all`, as `medprobe compare lower upper` says it."""
    a, b = lower.get("settings") or {}, upper.get("settings") or {}
    names = dict.fromkeys([*a, *b])
    differing = {name: [a.get(name), b.get(name)] for name in names if a.get(name) != b.get(name)}
    if not differing:
        return "The runs' prober and settings are the same."
    return "What differs: " + differing_text({"differing": differing, "reference": lower["run"], "run": upper["run"]}) + "."


def pair_page_html(board: dict, index: int) -> str:
    pair = board["pairs"][index]
    upper, lower = pair["upper"], pair["lower"]
    discordant = (
        ""
        if pair["better"] is None
        else f" ({pair['better']:,} {plural(board['unit'])} only {upper} gets, {pair['worse']:,} only {lower})"
    )
    overall = [
        [
            board["metric"],
            percent(pair["upper_value"]),
            percent(pair["lower_value"]),
            signed(pair["difference"]),
            interval(pair["low"], pair["high"]),
            p_text(pair["p_value"]),
            p_text(pair["p_holm"]),
            detectable_text(pair, plural(board["unit"])),
            f"{pair['n']:,}",
        ]
    ]
    groups = [
        [
            g["group"],
            f"{g['n']:,}",
            percent(g["upper_value"]),
            percent(g["lower_value"]),
            signed(g["difference"]),
            interval(g["low"], g["high"]),
            p_text(g["p_value"]),
            p_text(g["p_holm"]),
            detectable_text(g, plural(board["unit"])),
        ]
        for g in pair["groups"]
    ]
    verdict = "separated" if pair["separated"] else "not separated"
    tested = f"{pair['test']}, Holm over the board's {len(board['tests'])} pairs"
    rows = board["rows"][index : index + 2]
    board_link = link(f"../index.html#{board['id']}", board["title"])
    body = [
        f'<p class="intro">{board_link}: {esc(upper)} (#{index + 1}) against {esc(lower)} (#{index + 2}) on their '
        f"{pair['n']:,} common {esc(plural(board['unit']))}{esc(discordant)}: {esc(verdict)} ({esc(tested)}). "
        f"{esc(pair_differing(*rows))}</p>",
        *table(
            f"{board['metric']} of {upper} and {lower}: the paired difference and its tests",
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
            f"{board['metric']} per {board['group_by']}: {upper} against {lower}",
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
        *commands(rows, "How each run was made (its command)"),
    ]
    return site_page(f"{upper} vs {lower}", body, depth=1)


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
