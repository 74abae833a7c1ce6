"""The parts every page of the leaderboard site shares: its page frame and style, a value with its interval,
links, a row's settings in words, and the list of the commands runs were made with.

Built on medprobe.comparison.pages (escaped text, captioned scrolling tables, charts legible on a phone).
"""

from __future__ import annotations

from medprobe.comparison.pages import DASH, Html, esc, page
from medprobe.comparison.report import percent
from medprobe.leaderboard.labels import settings_words
from medprobe.leaderboard.ranks import letters_text

EXTRA_STYLE = """
table.board td.group { text-align: center; font-weight: 600; background: #f3f6fa; }
td.num { white-space: nowrap; }
td.svg { padding: 0 0.4rem; }
span.tied { color: #666; } span.sep { color: #a33; font-weight: 600; }
nav ul { columns: 2; } nav li { break-inside: avoid; }
@media (max-width: 40rem) { nav ul { columns: 1; } }
"""


def site_page(title: str, body: list[str], depth: int = 0) -> str:
    """One page of the site; `depth`: folders below the site's root (for the link home)."""
    return page(title, body, home=("../" * depth + "index.html") if depth else None, style=EXTRA_STYLE)


def value_text(row: dict) -> str:
    if row.get("low") is None or row.get("high") is None:
        return percent(row.get("value"))
    return f"{percent(row['value'])} [{percent(row['low'])}, {percent(row['high'])}]"


def link(href: str, text: str, label: str | None = None) -> Html:
    """A link; `label` names it for a screen reader where its text alone (a number) would not be unique."""
    named = f' aria-label="{esc(label)}"' if label else ""
    return Html(f'<a href="{esc(href)}"{named}>{esc(text)}</a>')


def difference_words(row: dict) -> str:
    return settings_words(row.get("settings_difference") or {}) or DASH


def commands(rows: list[dict], summary: str) -> list[str]:
    """How each run was made: its command, as it recorded it."""
    items = [
        f"<li>{esc(row['run'])} ({esc(row['model'])}): <code>{esc(row.get('command') or 'not recorded')}</code></li>"
        for row in rows
    ]
    return ["<details>", f"<summary>{esc(summary)}</summary>", "<ul>", *items, "</ul>", "</details>"]


def rank_text(row: dict) -> str:
    """`1–3`: the rank interval; `2` where it is one rank."""
    best, worst = row["rank"]["best"], row["rank"]["worst"]
    return str(best) if best == worst else f"{best}–{worst}"


def test_names(tests: list[dict]) -> str:
    """The tests a board's p-values come from, named: `exact McNemar`, or both where its pairs differ."""
    return " or ".join(dict.fromkeys(test["test"] for test in tests)) or "no pair"


def rank_words(row: dict, board: dict) -> str:
    """A row's rank on its board in words (a model's page): `1–2 of 3 (ab)`: its rank interval and letters."""
    letters = letters_text(row["letters"], [other["letters"] for other in board["rows"]])
    return f"{rank_text(row)} of {len(board['rows'])} ({letters})"
