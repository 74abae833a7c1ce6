"""The leaderboard's pages say what differs and read anywhere (issue 38 §4), and its folder is the user's too (§5).

Every page is read with a strict parser (tests/strict_html.py: what a browser would silently repair fails),
boards that differ only in a setting are titled apart, each row says how its run differs from the board's
and how it was made, a run left out is listed once, and at 390 px (a phone, in headless Chromium) no page
of the site or the compare report scrolls sideways. A site is refused when it holds a user's file or a
page edited since it was written; a folder of results files is a source.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from headless_chromium import chromium_binary, render_all
from medprobe.cli import main
from medprobe.leaderboard.build import build_leaderboard
from strict_html import html_problems
from synthetic_runs import MEDLAMA_SETTINGS, write_medlama_run, write_profile, write_run

VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1">'
LONG = "gene_product_plays_role_in_biological_process"  # MedLAMA's longest relation name: it must wrap, never be cut
needs_chromium = pytest.mark.skipif(
    chromium_binary() is None,
    reason="headless Chromium is not installed (Debian: apt-get install -y chromium; .ci/run installs it where apt is available)",
)


def quiet(*args, **kwargs) -> dict:
    return build_leaderboard(*args, print_fn=lambda line: None, **kwargs)


def run(path: Path, share: float, seed: int, queries: int = 30, **options) -> Path:
    """A made-up MedLAMA hard run over three relations, one of them MedLAMA's longest name."""
    ids, groups, ranks = [], [], []
    draw = __import__("numpy").random.default_rng(seed)
    for relation in ("may_treat", "occurs_after", LONG):
        for row in range(queries):
            ids.append(f"{relation}-{row:04d}")
            groups.append(relation)
            ranks.append(float(draw.integers(1, 11)) if draw.random() < share else float("nan"))
    chance = {"acc@10": {"value": 0.05, "method": "expected acc@k of a uniformly random order of each query's candidates"}}
    return write_run(path, ids, groups, {"rank": ranks}, chance=chance, **options)


def settings(**changed) -> dict:
    return {**MEDLAMA_SETTINGS, **changed}


@pytest.fixture
def runs(tmp_path) -> dict[str, Path]:
    """MiniLM with all layers and with --layers 3 and another model on one board (the top pair differs at p < 0.001);
    MiniLM with --exclude-head and with --candidates relation, each on a board of its own."""
    folder = tmp_path / "runs"
    return {
        "all": run(folder / "all.json", 0.9, 1, model="minilm"),
        "layers3": run(folder / "layers3.json", 0.1, 2, model="minilm", settings=settings(layers=3)),
        "sapbert": run(folder / "sapbert.json", 0.05, 3, model="sapbert"),
        "no_head": run(folder / "no_head.json", 0.5, 4, model="minilm", settings=settings(exclude_head=True)),
        "relation": run(folder / "relation.json", 0.6, 5, model="minilm", settings=settings(candidates="relation")),
    }


class Links(HTMLParser):
    """Each link's accessible name (its aria-label, else its text) and target."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self.current: list | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            found = dict(attrs)
            self.current = [found.get("href"), found.get("aria-label"), ""]

    def handle_data(self, data):
        if self.current is not None:
            self.current[2] += data

    def handle_endtag(self, tag):
        if tag == "a" and self.current is not None:
            href, label, text = self.current
            self.links.append(((label or text).strip(), href))
            self.current = None


def links(text: str) -> list[tuple[str, str]]:
    parser = Links()
    parser.feed(text)
    return parser.links


def section(index: str, board_id: str) -> str:
    return index.split(f'<section id="{board_id}">', 1)[1].split("</section>", 1)[0]


# --- every page parses --------------------------------------------------------------------------------------


def test_every_page_of_the_site_and_the_compare_report_parses_strictly(runs, tmp_path):
    site = tmp_path / "site"
    data = quiet(list(runs.values()), site)
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= 5 and any(pair["p_holm"] < 0.001 for b in data["boards"] for pair in b["pairs"])
    report = tmp_path / "compare.html"
    assert main(["compare", str(runs["all"]), str(runs["layers3"]), "--html", str(report)]) == 0
    for path in [*pages, report]:
        assert html_problems(path.read_text()) == [], (path.name, html_problems(path.read_text())[:5])
    assert "&lt;0.001" in (site / "index.html").read_text() and "&lt;0.001" in report.read_text()
    for control, expected in (("<p>p <0.001</p>", "a raw '<'"), ("<div><p>x</div>", "</div> while <p> is open")):
        assert any(expected in line for line in html_problems(f"<!DOCTYPE html><html><body>{control}</body></html>"))


# --- titles, settings, commands -----------------------------------------------------------------------------


def test_boards_that_differ_in_a_setting_are_titled_by_it_and_every_link_text_is_unique(runs, tmp_path, capsys):
    assert main(["leaderboard", *map(str, runs.values()), "--out", str(tmp_path / "site")]) == 0
    printed = capsys.readouterr().out
    data = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    titles = [board["title"] for board in data["boards"]]
    assert len(set(titles)) == len(titles) == 3, titles
    assert any("exclude_head on" in title for title in titles) and any("candidates relation" in title for title in titles)
    lines = [line.split(":")[0] for line in printed.splitlines() if "pair(s) separated" in line]
    assert sorted(lines) == sorted(titles)
    for path in (tmp_path / "site").rglob("*.html"):  # one accessible name, one destination
        found: dict[str, set] = {}
        for name, href in links(path.read_text()):
            found.setdefault(name, set()).add(href)
        assert all(len(targets) == 1 for targets in found.values()), (path.name, found)
    nav = (tmp_path / "site" / "index.html").read_text().split("<nav", 1)[1].split("</nav>", 1)[0]
    assert [name for name, _ in links(nav)] == titles


def test_each_row_says_how_its_run_differs_from_the_board_and_how_it_was_made(runs, tmp_path):
    site = tmp_path / "site"
    data = quiet([runs["all"], runs["layers3"], runs["sapbert"]], site)
    (board,) = data["boards"]
    differences = {row["run"]: row["settings_difference"] for row in board["rows"]}
    assert differences == {"all": {}, "layers3": {"layers": 3}, "sapbert": {}}
    assert board["settings_shared"] == {"layers": None}
    index = (site / "index.html").read_text()
    assert "<td>layers 3</td>" in index and "layers not given" in index  # the row, and the board's setting
    for row in board["rows"]:  # each run's command, on the index, its model's page and its pairs' pages
        assert json.loads(Path(row["source"]).read_text())["command"] == row["command"]
        assert f"<code>{row['command']}</code>" in index
        assert f"<code>{row['command']}</code>" in (site / "models" / f"{row['model']}.html").read_text()
    pair = (site / f"pairs/{board['id']}-1.html").read_text()
    assert "What differs: layers 3 in layers3, not given in all" in pair  # as `medprobe compare layers3 all` says it
    model = (site / "models/minilm.html").read_text()
    assert "<title>minilm on medlama</title>" in model and "<h1>minilm on medlama</h1>" in model
    chart = model.split('<figure class="chart">', 1)[1].split("</figure>", 1)[0]
    assert chart.count('stroke-dasharray="3,2"') == 4  # the chance line on every row: all queries and 3 relations
    assert chart.count("<circle") == 4 and chart.count("<rect") == 4  # each row: both runs, each its own shape
    assert f'<span class="label">{LONG}</span>' in chart and "…" not in model  # labels whole
    assert re.search(r'<text x="0.00%"[^>]*>0</text>', chart)  # an axis from 0


def test_a_run_left_out_is_listed_once_under_the_board_it_would_have_joined(runs, tmp_path):
    mismatched = run(tmp_path / "other_items.json", 0.5, 9, queries=10, model="biobert")  # same fingerprint, other items
    sample = write_medlama_run(tmp_path / "sample.json", 0.5, seed=1, data_fingerprint={})  # no fingerprint
    data = quiet([runs["all"], runs["layers3"], runs["no_head"], runs["relation"], mismatched, sample], tmp_path / "site")
    main_board = next(board for board in data["boards"] if len(board["rows"]) == 2)
    assert [item["run"] for item in main_board["excluded"]] == ["other_items"]
    assert all(board["excluded"] == [] for board in data["boards"] if board is not main_board)
    assert {item["run"]: item["board"] for item in data["excluded"]} == {"other_items": main_board["id"], "sample": None}
    index = (tmp_path / "site" / "index.html").read_text()
    assert index.count('<th scope="row">other_items</th>') == 1 and "other_items" in section(index, main_board["id"])
    assert index.count('<th scope="row">sample</th>') == 1 and "sample" in index.split('id="left-out"', 1)[1]


# --- phones -------------------------------------------------------------------------------------------------

LABELS = "[...document.querySelectorAll('ul.chart span.label')].map(e => parseFloat(getComputedStyle(e).fontSize))"
SPLIT = "[...document.querySelectorAll('nav li')].filter(e => e.getClientRects().length > 1).length"  # across columns
WIDTHS = f"JSON.stringify([document.documentElement.scrollWidth, Math.min(...{LABELS}), {SPLIT}])"


@needs_chromium
def test_at_390_px_no_page_scrolls_sideways_and_the_forest_plot_reads(runs, tmp_path):
    site = tmp_path / "site"
    data = quiet(list(runs.values()), site)
    report = tmp_path / "compare.html"
    assert main(["compare", str(runs["all"]), str(runs["layers3"]), str(runs["sapbert"]), "--html", str(report)]) == 0
    board = data["boards"][0]
    pages = [site / "index.html", site / "models/minilm.html", site / f"pairs/{board['id']}-1.html", report]
    control = tmp_path / "control.html"  # the nav as it was (two columns, links free to break): the probe sees a split
    items = "".join(f'<li><a href="#{b["id"]}">{b["title"]}</a></li>' for b in data["boards"])
    control.write_text(
        f"<!DOCTYPE html><html><head>{VIEWPORT}<style>nav ul {{ columns: 2; }}</style></head><body><nav><ul>{items}</ul></nav>"
    )
    *shown, old = render_all([*pages, control], width=390, mobile=True, probe=WIDTHS)
    assert json.loads(old.probe)[2] >= 1
    for page, found in zip(pages, shown):
        width, smallest_label, split_links = json.loads(found.probe)  # the page's width, its smallest chart label
        assert found.errors == [] and width <= 390 and split_links == 0, (page.name, width, split_links)
        if page in (pages[1], report):  # the model's per-relation chart, the compare forest plot: text at 11 px or more
            assert smallest_label >= 11, (page.name, smallest_label)
    text = report.read_text()
    assert "<img" not in text and "filled where the Holm-adjusted p &lt; 0.05 (the row also says so)" in text
    for table in re.findall(r"<table.*?</table>", "".join(p.read_text() for p in pages), flags=re.S):
        assert "<caption>" in table and '<th scope="col">' in table  # every table captioned, its headers scoped


# --- the site's folder --------------------------------------------------------------------------------------


def test_a_site_holding_a_users_file_or_an_edited_page_is_refused_unless_overwrite(runs, tmp_path, capsys):
    site = tmp_path / "site"
    args = ["leaderboard", str(runs["all"]), str(runs["layers3"]), "--out", str(site)]
    assert main(args) == 0 and main(args) == 0  # its own site, as written: replaced
    (site / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert main(args) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "holds files a leaderboard did not write (notes.txt)" in error, error
    assert (site / "notes.txt").read_text() == "mine"
    (site / "notes.txt").unlink()
    edited = (site / "index.html").read_text().replace("medprobe leaderboard", "our leaderboard")
    (site / "index.html").write_text(edited)
    assert main(args) == 2
    error = capsys.readouterr().err
    assert "holds files changed since the leaderboard wrote them (index.html)" in error and error.count("\n") == 1
    assert (site / "index.html").read_text() == edited
    assert main([*args, "--overwrite"]) == 0 and "our leaderboard" not in (site / "index.html").read_text()
    (site / "site-files.json").unlink()  # a site of an older medprobe: nothing says which files are its own
    assert main(args) == 2 and "a site of an older medprobe" in capsys.readouterr().err


def test_a_folder_of_results_files_and_profile_folders_is_a_source(runs, tmp_path, capsys):
    folder = runs["all"].parent
    spec = {
        "benchmark": "medlama",
        "config": "hard",
        "prober": "contrastive",
        "writer": lambda p: run(p, 0.4, 7, model="biobert"),
    }
    profile = write_profile(folder / "profile-b", {"hard": spec})
    (folder / "notes.json").write_text("{}")
    data = quiet([str(folder)], tmp_path / "site")
    ranked = sorted(row["run"] for board in data["boards"] for row in board["rows"])
    assert ranked == ["all", "layers3", "no_head", "profile-b", "relation", "sapbert"] and profile.is_dir()
    (left,) = data["excluded"]
    assert left["run"] == "notes" and "no notes.outcomes.jsonl beside it" in left["reason"]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "other.json").write_text("{}")
    capsys.readouterr()
    assert main(["leaderboard", str(empty), "--out", str(tmp_path / "s")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "holds no run" in error and "*.json results files" in error and "other.json" in error
