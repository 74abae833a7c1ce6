"""The `medprobe compare --html` report, opened in headless Chromium as a reader would: its tables show,
nothing logs an error, and nothing is fetched but the file itself (the forest plot is inline text and SVG).

Skipped where Chromium is absent (.ci/run installs it from the system package registry). A control
page with a deliberate console.error, and one with a missing image, prove the check can fail.
"""

from __future__ import annotations

import html
import json

import pytest

from headless_chromium import chromium_binary, render
from medprobe.cli import main
from synthetic_runs import write_medlama_run

needs_chromium = pytest.mark.skipif(
    chromium_binary() is None,
    reason="headless Chromium is not installed (Debian: apt-get install -y chromium; .ci/run installs it where apt is available)",
)


@needs_chromium
def test_the_html_report_shows_its_tables_and_logs_no_error(tmp_path):
    a = write_medlama_run(tmp_path / "a.json", 0.6, seed=1)
    b = write_medlama_run(tmp_path / "b.json", 0.3, seed=2)
    report = tmp_path / "report.html"
    assert main(["compare", str(a), str(b), "--html", str(report), "--out", str(tmp_path / "cmp")]) == 0
    page = render(report)
    assert page.errors == []
    assert all(url == report.as_uri() or url.startswith("data:") for url in page.requests), page.requests
    found = json.loads((tmp_path / "cmp" / "compare.json").read_text())["comparisons"][0]
    headline = found["differences"]["acc@10"]
    assert '<th scope="row">b.json - a.json</th><td>medlama/hard</td><td>acc@10</td><td class="num">60</td>' in page.dom
    assert f'<td class="num">{100 * headline["difference"]:+.2f}</td>' in page.dom
    for row in found["groups"]:  # every relation's row is in the rendered table
        assert f'<tr><th scope="row">{html.escape(row["group"])}</th><td class="num">{row["n"]}</td>' in page.dom
    assert page.dom.count("<table>") == 4 and page.dom.count('<ul class="chart">') == 1  # the forest plot: text and SVG


@needs_chromium
def test_the_check_fails_on_a_console_error_and_on_a_missing_file(tmp_path):
    control = tmp_path / "control.html"
    control.write_text(
        "<!DOCTYPE html><html><body><table><tr><td>row</td></tr></table>"
        '<script>console.log("fine"); console.error("deliberate failure")</script></body></html>'
    )
    page = render(control)
    assert "<td>row</td>" in page.dom
    assert page.errors == ["console.error: deliberate failure"]
    missing = tmp_path / "missing.html"
    missing.write_text('<!DOCTYPE html><html><body><img src="nowhere.png"></body></html>')
    page = render(missing)
    assert page.errors and any("nowhere.png" in url for url in page.requests)
