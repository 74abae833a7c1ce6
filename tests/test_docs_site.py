"""The documentation site builds with `mkdocs build --strict` (a broken link, nav entry or API reference
fails), and every page renders as written in headless Chromium, in a 1400 px window: no console error, no
failed load, nothing fetched from the network (the theme's fonts are off: the site works offline), no
literal `\\|` (a table cell's escaped pipe shown as typed), no code block wider than its box that neither
wraps nor scrolls, and no shell command hidden behind a scroll. Search works when the site is served as
docs/contributing.md says (opened from disk, a browser runs no search worker)."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from headless_chromium import chromium_binary, render, render_all

ROOT = Path(__file__).resolve().parents[1]
needs_mkdocs = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
    reason="mkdocs-material is not installed (pip install '.[docs]')",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env["NO_MKDOCS_2_WARNING"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return out


@needs_mkdocs
def test_the_site_builds_strict_with_every_page(site: Path):
    pages = {path.relative_to(site).as_posix() for path in site.rglob("*.html")}
    for page in ("index.html", "benchmarks/medlama.html", "probers/contrastive.html", "api.html", "reproducing.html"):
        assert page in pages, sorted(pages)
    api = (site / "api.html").read_text(encoding="utf-8")
    for name in ("medprobe.python_api.probe", "medprobe.python_api.compare", "medprobe.stats", "medprobe.contracts"):
        assert name in api, f"{name} is not documented on the API page"


@needs_mkdocs
@pytest.mark.skipif(chromium_binary() is None, reason="chromium is not installed (.ci/run installs it with apt-get)")
@pytest.mark.parametrize("page", ["index.html", "benchmarks/medlama.html"])
def test_page_opens_without_errors_or_missing_assets(site: Path, page: str):
    shown = render(site / page)
    assert not shown.errors, shown.errors
    remote = [url for url in shown.requests if not url.startswith(("file://", "data:"))]
    assert not remote, f"the page fetched from the network: {remote}"
    assert any(url.endswith(".css") for url in shown.requests), "the theme's stylesheet was not loaded"
    assert "MedLAMA" in shown.dom


needs_chromium = pytest.mark.skipif(
    chromium_binary() is None, reason="chromium is not installed (.ci/run installs it with apt-get)"
)

# What a reader would see wrong on a page: text shown with a literal backslash-pipe, and code blocks that hide part of
# their lines (wider than their box, and neither wrapping nor scrolling with a scrollbar), or shell commands that
# do not wrap (the stylesheet wraps them: a command must never look shorter than it is).
PAGE_PROBLEMS = r"""(() => {
  const article = document.querySelector("article") || document.body;
  const problems = article.innerText.split("\n").filter(line => line.includes("\\|")).map(line => "literal \\| in: " + line.slice(0, 120));
  for (const code of article.querySelectorAll("pre > code")) {
    const style = getComputedStyle(code);
    const wraps = !["pre", "nowrap"].includes(style.whiteSpace);
    const scrollbar = ["auto", "scroll"].includes(style.overflowX) && code.offsetHeight - code.clientHeight > 0;
    const first = code.innerText.split("\n")[0].slice(0, 80);
    if (code.scrollWidth > code.clientWidth + 1 && !wraps && !scrollbar) problems.push("code cut at the box: " + first);
    if (code.closest(".language-bash") && code.scrollWidth > code.clientWidth + 1) problems.push("a command scrolls: " + first);
  }
  return problems;
})()"""


def site_pages(site: Path) -> list[Path]:
    return sorted(path for path in site.rglob("*.html") if path.name != "404.html")


@needs_mkdocs
@needs_chromium
@pytest.mark.parametrize("half", [0, 1], ids=["first-half", "second-half"])  # two browsers: each test stays short
def test_every_page_renders_as_written(site: Path, half: int):
    pages = site_pages(site)[half::2]
    problems = []
    for page, shown in zip(pages, render_all(pages, width=1400, probe=PAGE_PROBLEMS)):
        remote = [url for url in shown.requests if not url.startswith(("file://", "data:"))]
        found = [*shown.errors, *shown.probe, *(f"fetched {url}" for url in remote)]
        problems += [f"{page.relative_to(site)}: {problem}" for problem in found]
    assert not problems, "\n".join(problems)


@pytest.fixture
def served(site: Path) -> Iterator[str]:
    """The site served over HTTP on this machine (as `python -m http.server -d site` serves it): its address."""
    handler = functools.partial(QuietHandler, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.server_address[1]}"
        server.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the signature of the method it replaces
        pass


SEARCH = """(async () => {
  const input = document.querySelector("input.md-search__input");
  input.focus();
  input.value = "rewiring";
  input.dispatchEvent(new Event("focus"));
  input.dispatchEvent(new Event("input"));
  for (let tries = 0; tries < 100; tries++) {
    await new Promise(done => setTimeout(done, 100));
    const results = document.querySelectorAll(".md-search-result__item");
    if (results.length) return results.length;
  }
  return 0;
})()"""


@needs_mkdocs
@needs_chromium
def test_search_finds_pages_when_the_site_is_served_as_the_docs_say(site: Path, served: str):
    contributing = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    assert "python -m http.server -d site 8000" in contributing and "search does not" in contributing
    shown = render_all([f"{served}/index.html"], probe=SEARCH)[0]
    assert not shown.errors, shown.errors
    assert shown.probe > 0, "searching the served site for 'rewiring' found nothing"
