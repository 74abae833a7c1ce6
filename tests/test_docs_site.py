"""The documentation site builds with `mkdocs build --strict` (a broken link, nav entry or API reference
fails), and its index and a benchmark page open in headless Chromium with no console error, no failed
load and nothing fetched from the network (the theme's fonts are off: the site works offline)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from headless_chromium import chromium_binary, render

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
