"""The app of a medprobe leaderboard Space (gradio SDK), shared by every leaderboard.

`medprobe publish leaderboard --results-repo ORG/NAME --space ORG/SPACE` uploads this file as `app.py`
beside `space.json` (which results repo, the title), the wheel of the medprobe that published it,
`requirements.txt` (that wheel's dependencies) and the Space card. When the Space starts, and again on
request (the page's button, or `POST /rebuild`), the app builds the leaderboard from the results dataset
exactly as `medprobe leaderboard hub:ORG/NAME --out site` does on a laptop: every run read back through
medprobe's records loader, every number recomputed from its per-item outcomes, the same static pages. It
serves those pages as they are under /board/ (no script in them: they work in any browser) and shows
them below a gradio header with the rebuild button. The header's status line is read from the build on
disk whenever the page is opened, and the board's frame is reloaded after each rebuild, so neither shows
an older build than the other.

Run it locally: `python app.py` in a folder laid out like the Space (MEDPROBE_RESULTS=PATH builds from a
local copy of the results repo instead of the Hub; HOST and PORT choose where it listens). It was
checked with gradio 6.31.0 (`pip install "medprobe[space]"`), the Space card's `sdk_version`: change
both together. It sends nothing to gradio's analytics (GRADIO_ANALYTICS_ENABLED=False: otherwise gradio
calls api.gradio.app at start), and its page loads everything from the Space itself (gradio 6 serves its
fonts): tests/test_leaderboard_space.py checks both.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import shutil
import sys
import tempfile
import threading
import zipfile
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # before gradio is imported: no usage reports to gradio's servers

HERE = Path(__file__).resolve().parent
SITE = Path(os.environ.get("MEDPROBE_SITE", HERE / "site"))
REBUILDING = threading.Lock()  # one build at a time: a second request waits for the first


def use_shipped_wheel() -> Path | None:
    """The medprobe wheel uploaded beside this file (medprobe is not on PyPI), unpacked once into
    .medprobe/<wheel name>/ and put first on the path; None where there is none (the installed medprobe runs)."""
    wheels = sorted(HERE.glob("medprobe-*.whl"))
    if not wheels:
        return None
    target = HERE / ".medprobe" / wheels[-1].stem
    if not target.is_dir():  # unpacked beside it, then renamed: a killed start leaves no half-unpacked medprobe
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = tempfile.mkdtemp(dir=target.parent)
        try:
            with zipfile.ZipFile(wheels[-1]) as archive:
                archive.extractall(scratch)
            os.replace(scratch, target)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)  # gone after the rename; left only when it failed
    sys.path.insert(0, str(target))
    return wheels[-1]


WHEEL = use_shipped_wheel()


def settings() -> dict:
    """space.json: {"results_repo": "ORG/NAME", "title": ..., "include_samples": false}."""
    return json.loads((HERE / "space.json").read_text(encoding="utf-8"))


def source() -> str:
    """What the board is built from: MEDPROBE_RESULTS (a local copy), else the results repo on the Hub."""
    return os.environ.get("MEDPROBE_RESULTS") or f"hub:{settings()['results_repo']}"


def rebuild() -> str:
    """Build the site from the results dataset again (its latest commit) and say what it holds."""
    from medprobe.leaderboard.build import build_leaderboard

    with REBUILDING:
        include_samples = bool(settings().get("include_samples"))
        build_leaderboard([source()], SITE, overwrite=True, include_samples=include_samples, print_fn=lambda _: None)
        return status()


def status() -> str:
    """What the build on disk holds, read from its leaderboard.json: the line above the board."""
    import medprobe

    try:
        data = json.loads((SITE / "leaderboard.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "No board has been built yet: press Rebuild."
    runs = sum(len(board["rows"]) for board in data["boards"])
    sources = ", ".join(f"`{name}`" for name in data.get("sources", [])) or "no source"
    origin = f" ({WHEEL.name})" if WHEEL else ""
    return (
        f"Built from {sources}: {runs} run(s) on {len(data['boards'])} board(s), {len(data['excluded'])} left out. "
        f"medprobe {medprobe.__version__}{origin}."
    )


def board_frame() -> str:
    """The frame of the board, its address naming the build (a digest of leaderboard.json): a new build is a
    new address, which the browser loads, never an older page from its cache."""
    try:
        build = hashlib.sha256((SITE / "leaderboard.json").read_bytes()).hexdigest()[:12]
    except OSError:
        build = "none"
    src = html.escape(f"/board/index.html?build={build}")
    return f'<iframe src="{src}" title="leaderboard" style="width:100%;height:80vh;border:0"></iframe>'


def current() -> tuple[str, str]:
    """The status line and the frame of the build on disk (each page load, and after each rebuild)."""
    with REBUILDING:  # not half-way through a build
        return status(), board_frame()


def rebuild_and_show() -> tuple[str, str]:
    rebuild()
    return current()


def build_app():
    """The web app: the site's files under /board/, a gradio page at / with the rebuild button and the board."""
    import gradio as gr
    from fastapi import FastAPI
    from fastapi.staticfiles import StaticFiles

    rebuild()  # at start
    app = FastAPI()

    @app.post("/rebuild")
    def rebuild_now() -> dict:
        return {"status": rebuild()}

    app.mount("/board", StaticFiles(directory=SITE, html=True), name="board")
    title = settings().get("title") or "medprobe leaderboard"
    with gr.Blocks(title=title) as demo:
        gr.Markdown(
            f"# {title}\nEvery number is recomputed from the per-item outcomes of the results dataset; two models share a "
            "letter only when no paired test separates them. [Open the board alone](/board/index.html)."
        )
        shown = gr.Markdown("Reading the board…", elem_id="status")
        button = gr.Button("Rebuild from the results dataset", elem_id="rebuild")
        frame = gr.HTML(elem_id="board")
        demo.load(current, outputs=[shown, frame])
        button.click(rebuild_and_show, outputs=[shown, frame])
    return gr.mount_gradio_app(app, demo, path="/", ssr_mode=False)  # no Node server: the page is rendered in the browser


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(build_app(), host=os.environ.get("HOST", "0.0.0.0"), port=int(os.environ.get("PORT", "7860")))
