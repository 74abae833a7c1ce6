"""`medprobe publish leaderboard`: the Space's files on a fake Hub, its app rebuilding the same site as `medprobe
leaderboard` from a local copy of a results repo, and the app run on 127.0.0.1 with a screenshot in headless Chromium
(skipped where no Python with gradio is at hand: gradio is not a test dependency; MEDPROBE_SPACE_PYTHON names one)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from headless_chromium import chromium_binary
from hub_mock import serving
from medprobe.cli import main
from medprobe.hub.published import outcomes_parquet, run_folder
from medprobe.leaderboard.build import build_leaderboard
from medprobe.records import load_run
from medprobe.resources import card_template
from synthetic_runs import write_medlama_run

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def hub(monkeypatch, tmp_path):
    with serving(monkeypatch, tmp_path, "hf_SpaceTokenNeverPrinted0123456789") as fake:
        yield fake


@pytest.fixture(scope="module")
def local_copy(tmp_path_factory) -> Path:
    """A results repo's local copy: three models' runs on one made-up MedLAMA hard."""
    root = tmp_path_factory.mktemp("results_copy")
    for index, (name, share) in enumerate((("alpha", 0.62), ("beta", 0.55), ("gamma", 0.3))):
        path = write_medlama_run(root.parent / f"{root.name}-runs" / f"{name}.json", share, index, 40, model=name)
        run = load_run(path)
        folder = root / run_folder(name, run.record)
        folder.mkdir(parents=True)
        shutil.copyfile(path, folder / "results.json")
        (folder / "outcomes.parquet").write_bytes(outcomes_parquet(run.outcomes, run.record.prober))
    return root


def test_a_dry_run_lists_the_space_files_and_calls(capsys):
    assert main(["publish", "leaderboard", "--results-repo", "me/results", "--space", "me/board", "--dry-run"]) == 0
    plan = capsys.readouterr().out
    for line in ("me/board (space)", "app.py", "space.json", "requirements.txt", "README.md", "space_sdk='gradio'"):
        assert line in plan
    assert "gradio, not a static Space" in plan and "dry run: nothing was sent" in plan


def test_the_space_is_uploaded_after_the_board_builds_from_the_results_repo(hub, local_copy, capsys):
    assert main(["publish", "leaderboard", "--results-repo", "me/results", "--space", "me/board"]) == 2  # nothing to build from
    assert "no such dataset repo" in capsys.readouterr().err and ("space", "me/board") not in hub.repos
    repo = hub.add_repo("dataset", "me/results")
    repo.files = {path.relative_to(local_copy).as_posix(): path.read_bytes() for path in local_copy.rglob("*") if path.is_file()}
    assert (
        main(["publish", "leaderboard", "--results-repo", "me/results", "--space", "me/board", "--title", "MedLAMA board"]) == 0
    )
    assert "checked: hub:me/results builds 1 board(s) of 3 run(s)" in capsys.readouterr().out
    space = hub.repos[("space", "me/board")]
    assert space.sdk == "gradio" and space.files["app.py"] == card_template("leaderboard_app.py").read_bytes()
    assert json.loads(space.files["space.json"]) == {
        "results_repo": "me/results",
        "title": "MedLAMA board",
        "include_samples": False,
    }
    card = yaml.safe_load(space.files["README.md"].decode().split("---\n")[1])
    assert (card["sdk"], card["app_file"], card["datasets"]) == ("gradio", "app.py", ["me/results"])


def load_app(folder: Path):
    spec = importlib.util.spec_from_file_location("leaderboard_app", folder / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stage(folder: Path) -> Path:
    folder.mkdir()
    shutil.copyfile(card_template("leaderboard_app.py"), folder / "app.py")
    (folder / "space.json").write_text(json.dumps({"results_repo": "me/results", "title": "test board"}))
    return folder


def test_the_app_rebuilds_the_site_medprobe_leaderboard_writes(local_copy, tmp_path, monkeypatch):
    space = stage(tmp_path / "space")
    monkeypatch.setenv("MEDPROBE_RESULTS", str(local_copy))
    monkeypatch.setenv("MEDPROBE_SITE", str(tmp_path / "served"))
    app = load_app(space)
    assert app.rebuild() == f"Built from `{local_copy}`: 3 run(s) on 1 board(s), 0 left out."
    build_leaderboard([str(local_copy)], tmp_path / "local", print_fn=lambda _: None)
    for name in ("leaderboard.json", "index.html"):
        assert (tmp_path / "served" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()


def python_with_gradio() -> str | None:
    for python in (os.environ.get("MEDPROBE_SPACE_PYTHON"), sys.executable):
        if python and subprocess.run([python, "-c", "import gradio, uvicorn"], capture_output=True).returncode == 0:
            return python
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url: str, seconds: float) -> bytes:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                return answer.read()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_the_space_app_serves_the_board_on_localhost_and_a_screenshot_shows_it(local_copy, tmp_path):
    python = python_with_gradio()
    if python is None:
        pytest.skip(
            "gradio is not installed here (not a test dependency; the Space installs it): set MEDPROBE_SPACE_PYTHON to a "
            "Python with gradio 6 to run this"
        )
    if chromium_binary() is None:
        pytest.skip("headless Chromium is not installed (apt-get install -y chromium)")
    space, port = stage(tmp_path / "space"), free_port()
    env = {
        **os.environ,
        "MEDPROBE_RESULTS": str(local_copy),
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "GRADIO_ANALYTICS_ENABLED": "False",
    }
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    server = subprocess.Popen(
        [python, "app.py"], cwd=space, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        board = wait_for(f"http://127.0.0.1:{port}/board/index.html", 60)
        assert board == (space / "site" / "index.html").read_bytes() and b"alpha" in board
        request = urllib.request.Request(f"http://127.0.0.1:{port}/rebuild", method="POST")
        with urllib.request.urlopen(request, timeout=60) as answer:
            assert "3 run(s) on 1 board(s)" in json.loads(answer.read())["status"]
        shot = tmp_path / "space.png"
        command = [
            chromium_binary(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1200,900",
        ]
        command += ["--virtual-time-budget=10000", f"--screenshot={shot}", f"http://127.0.0.1:{port}/"]
        subprocess.run(command, capture_output=True, timeout=90, check=False)
        assert shot.is_file() and shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=20)
