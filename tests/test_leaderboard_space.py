"""`medprobe publish leaderboard`: the Space's files on a fake Hub (with the wheel of the medprobe that publishes it,
built from this checkout or packed again from an installed wheel), its app rebuilding the same site as `medprobe
leaderboard` from a local copy of a results repo, and the app run from its own wheel on 127.0.0.1 in headless Chromium:
the board renders, Rebuild updates the status and the board, no console error, no request leaves the machine (browser
or server). The browser test needs gradio (`pip install ".[space]"`, as .ci/run does; MEDPROBE_SPACE_PYTHON names
another Python with it) and Chromium; it skips, saying why, without them, except that under CI a missing gradio fails."""

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
import zipfile
from pathlib import Path

import pytest
import yaml

from headless_chromium import chromium_binary, render_all
from hub_mock import serving
from medprobe.cli import main
from medprobe.hub.published import outcomes_parquet, run_folder
from medprobe.hub.wheel import running_wheel, source_tree
from medprobe.leaderboard.build import build_leaderboard
from medprobe.leaderboard.space import SDK_VERSION, stage_space
from medprobe.records import load_run
from medprobe.resources import card_template
from synthetic_runs import write_medlama_run

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def hub(monkeypatch, tmp_path):
    with serving(monkeypatch, tmp_path, "hf_SpaceTokenNeverPrinted0123456789") as fake:
        yield fake


def add_run(root: Path, name: str, share: float, index: int) -> Path:
    """A made-up MedLAMA hard run of model `name` in the results repo's local copy `root`, as publish results lays it out."""
    path = write_medlama_run(root.parent / f"{root.name}-runs" / f"{name}.json", share, index, 40, model=name)
    run = load_run(path)
    folder = root / run_folder(name, run.record)
    folder.mkdir(parents=True)
    shutil.copyfile(path, folder / "results.json")
    (folder / "outcomes.parquet").write_bytes(outcomes_parquet(run.outcomes, run.record.prober))
    return folder


@pytest.fixture(scope="module")
def local_copy(tmp_path_factory) -> Path:
    """A results repo's local copy: three models' runs on one made-up MedLAMA hard."""
    root = tmp_path_factory.mktemp("results_copy")
    for index, (name, share) in enumerate((("alpha", 0.62), ("beta", 0.55), ("gamma", 0.3))):
        add_run(root, name, share, index)
    return root


WHEEL = "medprobe-0.1.0-py3-none-any.whl"


def test_a_dry_run_lists_the_space_files_and_calls(capsys):
    assert main(["publish", "leaderboard", "--results-repo", "me/results", "--space", "me/board", "--dry-run"]) == 0
    plan = capsys.readouterr().out
    for line in ("me/board (space)", "app.py", "space.json", "requirements.txt", "README.md", "space_sdk='gradio'", WHEEL):
        assert line in plan
    assert "gradio, not a static Space" in plan and "dry run: nothing was sent" in plan
    assert f"{WHEEL} is the medprobe running this command" in plan


def wheel_members(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_the_space_holds_the_wheel_of_this_medprobe_and_its_requirements_are_the_wheels(tmp_path):
    """medprobe is not on PyPI: the Space gets the running medprobe as a wheel, built from this checkout, and the
    dependencies its metadata names (a requirements line naming the wheel's path would fail the Space's build)."""
    # a checkout on the path (PYTHONPATH, editable install) builds the wheel from the tree; CI installs medprobe
    # into its venv, and the installed files are packed again: either way the wheel holds this checkout's bytes
    assert source_tree() in (REPO_ROOT, None)
    stage_space(tmp_path, "me/results", "board", False)
    members = wheel_members(tmp_path / WHEEL)
    for module in ("medprobe/leaderboard/space.py", "medprobe/hub/wheel.py", "medprobe/_resources/hub_cards/leaderboard_app.py"):
        source = module.replace("medprobe/_resources/", "")
        assert members[module] == (REPO_ROOT / source).read_bytes(), module
    metadata = members["medprobe-0.1.0.dist-info/METADATA"].decode()
    needed = [
        line.split(": ", 1)[1] for line in metadata.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]
    lines = (tmp_path / "requirements.txt").read_text().splitlines()
    assert [line for line in lines if not line.startswith("#")] == needed and "torch>=2.4" in needed
    assert any(WHEEL in line for line in lines if line.startswith("#"))


def test_an_installed_medprobe_packs_its_own_wheel_again(tmp_path):
    """Running from an installed wheel (no source tree), the wheel is packed again from the installed files: the same
    members with the same bytes as the wheel that was installed, but RECORD (written anew, with the same hashes)."""
    built = running_wheel(tmp_path / "built")
    site = tmp_path / "site-packages"
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", str(site), str(built)]
    subprocess.run(install, check=True, capture_output=True)
    script = (
        "import sys; from pathlib import Path; from medprobe.hub.wheel import running_wheel, source_tree\n"
        "assert source_tree() is None, source_tree()\n"
        "print(running_wheel(Path(sys.argv[1])))"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "again")], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    again = Path(done.stdout.strip())
    assert again.name == WHEEL and again.parent == tmp_path / "again"
    before, after = wheel_members(built), wheel_members(again)
    record = "medprobe-0.1.0.dist-info/RECORD"
    assert {k: v for k, v in before.items() if k != record} == {k: v for k, v in after.items() if k != record}
    assert sorted(before[record].decode().splitlines()) == sorted(after[record].decode().splitlines())


def test_the_space_extra_is_the_gradio_the_space_runs():
    """`pip install "medprobe[space]"` installs the gradio of the Space card's sdk_version (and no gradio_leaderboard,
    which needs gradio < 6 and made pip backtrack for minutes)."""
    text = (REPO_ROOT / "pyproject.toml").read_text()
    extra = next(line for line in text.splitlines() if line.startswith("space = "))
    major, minor, _ = SDK_VERSION.split(".")
    assert f'"gradio=={major}.{minor}.*"' in extra and "gradio_leaderboard" not in extra and "gradio-leaderboard" not in extra


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
    assert app.rebuild() == f"Built from `{local_copy}`: 3 run(s) on 1 board(s), 0 left out. medprobe 0.1.0."
    build_leaderboard([str(local_copy)], tmp_path / "local", print_fn=lambda _: None)
    for name in ("leaderboard.json", "index.html"):
        assert (tmp_path / "served" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()


def test_the_status_and_the_frame_are_those_of_the_build_on_disk(local_copy, tmp_path, monkeypatch):
    """A page opened after a rebuild (POST /rebuild, or another process) says what that build holds, and its frame's
    address names that build: the status line was once computed at start, and said "0 left out" above a board that
    listed 1."""
    copy = tmp_path / "copy"
    shutil.copytree(local_copy, copy)
    monkeypatch.setenv("MEDPROBE_RESULTS", str(copy))
    monkeypatch.setenv("MEDPROBE_SITE", str(tmp_path / "served"))
    app = load_app(stage(tmp_path / "space"))
    app.rebuild()
    status, frame = app.current()
    assert "3 run(s) on 1 board(s), 0 left out" in status
    delta = add_run(copy, "delta", 0.45, 3)
    broken = add_run(copy, "epsilon", 0.4, 4)  # another run's outcomes: left out, failed verification
    shutil.copyfile(delta / "outcomes.parquet", broken / "outcomes.parquet")
    build_leaderboard([str(copy)], tmp_path / "served", overwrite=True, print_fn=lambda _: None)  # not through the app
    status_after, frame_after = app.current()
    assert "4 run(s) on 1 board(s), 1 left out" in status_after
    assert frame_after != frame and 'src="/board/index.html?build=' in frame_after


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


# Run in the page once it has loaded: wait for the status line and the board, click Rebuild, wait for both to change.
PAGE_PROBE = """(async () => {
  const sleep = ms => new Promise(done => setTimeout(done, ms));
  const until = async (ready, ms) => { const end = Date.now() + ms; while (Date.now() < end && !ready()) await sleep(100); };
  const status = () => (document.querySelector('#status') || {}).innerText || '';
  const frame = () => {
    const body = ((document.querySelector('#board iframe') || {}).contentDocument || {}).body;
    return body ? body.innerText : '';
  };
  await until(() => status().includes('run(s)') && frame().includes('alpha'), 60000);
  const before = {status: status(), frame: frame()};
  document.querySelector('#rebuild').click();
  await until(() => status() !== before.status && frame().includes('zeta'), 60000);
  return {before, after: {status: status(), frame: frame()}};
})()"""


def test_the_space_runs_from_its_wheel_and_rebuild_updates_status_and_board_in_chromium(local_copy, tmp_path):
    python = python_with_gradio()
    if python is None:
        why = 'gradio is not installed here: pip install ".[space]" (or set MEDPROBE_SPACE_PYTHON to a Python with gradio 6)'
        if os.environ.get("CI"):
            pytest.fail(f"{why}; .ci/run installs it, so CI runs this test")
        pytest.skip(why)
    if chromium_binary() is None:
        pytest.skip("headless Chromium is not installed (apt-get install -y chromium)")
    copy, space, port = tmp_path / "copy", tmp_path / "space", free_port()
    shutil.copytree(local_copy, copy)
    space.mkdir()
    stage_space(space, "me/results", "test board", False)  # the Space as published: app.py runs the wheel beside it
    network_log = tmp_path / "network.log"
    env = {**os.environ, "MEDPROBE_RESULTS": str(copy), "HOST": "127.0.0.1", "PORT": str(port)}
    env.pop("GRADIO_ANALYTICS_ENABLED", None)  # the app must turn gradio's analytics off itself
    # not this checkout: medprobe comes from the Space's wheel; every connection leaving the machine is refused and logged
    env.update(PYTHONPATH=str(REPO_ROOT / "tests" / "no_network"), MEDPROBE_NETWORK_LOG=str(network_log))
    log = (tmp_path / "server.log").open("wb")
    server = subprocess.Popen(
        [python, "app.py"], cwd=space, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        board = wait_for(f"http://127.0.0.1:{port}/board/index.html", 120)
        assert board == (space / "site" / "index.html").read_bytes() and b"alpha" in board
        delta = add_run(copy, "delta", 0.45, 3)
        broken = add_run(copy, "epsilon", 0.4, 4)  # another run's outcomes: left out, failed verification
        shutil.copyfile(delta / "outcomes.parquet", broken / "outcomes.parquet")
        request = urllib.request.Request(f"http://127.0.0.1:{port}/rebuild", method="POST")
        with urllib.request.urlopen(request, timeout=120) as answer:  # a rebuild the page did not ask for
            assert "4 run(s) on 1 board(s), 1 left out" in json.loads(answer.read())["status"]
        add_run(copy, "zeta", 0.35, 5)  # published since: the page's Rebuild shows it
        [page] = render_all([f"http://127.0.0.1:{port}/"], timeout=240, probe=PAGE_PROBE)
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=20)
        log.close()
    before, after = page.probe["before"], page.probe["after"]
    assert "4 run(s) on 1 board(s), 1 left out" in before["status"] and f"({WHEEL})" in before["status"], before["status"]
    assert "delta" in before["frame"] and "zeta" not in before["frame"]
    assert "5 run(s) on 1 board(s), 1 left out" in after["status"], after["status"]
    assert "zeta" in after["frame"], "the board's frame still shows the build before Rebuild"
    assert page.errors == []
    local = f"http://127.0.0.1:{port}/"
    assert [url for url in page.requests if not url.startswith((local, "data:", "blob:"))] == []
    assert not network_log.exists(), network_log.read_text()
