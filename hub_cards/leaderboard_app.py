"""The app of a medprobe leaderboard Space (gradio SDK), shared by every leaderboard.

`medprobe publish leaderboard --results-repo ORG/NAME --space ORG/SPACE` uploads this file as `app.py`
beside `space.json` (which results repo, the title), `requirements.txt` (medprobe) and the Space card.
When the Space starts, and again on request (the page's button, or `POST /rebuild`), the app builds the
leaderboard from the results dataset exactly as `medprobe leaderboard hub:ORG/NAME --out site` does on a
laptop: every run read back through medprobe's records loader, every number recomputed from its
per-item outcomes, the same static pages. It serves those pages as they are under /board/ (no script
in them: they work in any browser) and shows them below a gradio header with the rebuild button.

Run it locally: `python app.py` in a folder laid out like the Space (MEDPROBE_RESULTS=PATH builds from a
local copy of the results repo instead of the Hub; HOST and PORT choose where it listens). It was
checked with gradio 6.31.0, the Space card's `sdk_version`: change both together.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
SITE = Path(os.environ.get("MEDPROBE_SITE", HERE / "site"))
REBUILDING = threading.Lock()  # one build at a time: a second request waits for the first


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
        lines: list[str] = []
        data = build_leaderboard(
            [source()], SITE, overwrite=True, include_samples=bool(settings().get("include_samples")), print_fn=lines.append
        )
    runs = sum(len(board["rows"]) for board in data["boards"])
    return f"Built from `{source()}`: {runs} run(s) on {len(data['boards'])} board(s), {len(data['excluded'])} left out."


def build_app():
    """The web app: the site's files under /board/, a gradio page at / with the rebuild button and the board."""
    import gradio as gr
    from fastapi import FastAPI
    from fastapi.staticfiles import StaticFiles

    status = rebuild()  # at start
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
        shown = gr.Markdown(status)
        gr.Button("Rebuild from the results dataset").click(rebuild, outputs=shown)
        gr.HTML('<iframe src="/board/index.html" title="leaderboard" style="width:100%;height:80vh;border:0"></iframe>')
    return gr.mount_gradio_app(app, demo, path="/")


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(build_app(), host=os.environ.get("HOST", "0.0.0.0"), port=int(os.environ.get("PORT", "7860")))
