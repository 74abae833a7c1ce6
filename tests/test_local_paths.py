"""Path-like arguments are checked on disk first: a typo'd folder or file is one line naming it and the nearest
folder that exists (or a close match), exit 2, in well under a second, with no network call, online or offline;
a Hub id is only tried when the argument cannot be a local path, and offline it fails at once saying what to do."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from medprobe.cli import main
from medprobe.local_paths import MissingPath, check_local_path, could_be_local, missing_message

HANG_S = 5.0  # how long a network call would block: a test that made one takes this long and fails


@pytest.fixture
def hanging_network(monkeypatch) -> list[str]:
    """Every way out to the network blocks (as a black-holed connection does) and is recorded."""
    calls: list[str] = []
    release = threading.Event()

    def hang(name: str):
        def blocked(*args, **kwargs):
            calls.append(f"{name}{args[:2]}")
            release.wait(HANG_S)
            raise OSError(f"{name}: the test's network hangs")

        return blocked

    monkeypatch.setattr(socket, "getaddrinfo", hang("getaddrinfo"))
    monkeypatch.setattr(socket, "create_connection", hang("create_connection"))
    monkeypatch.setattr(socket.socket, "connect", hang("connect"))
    from medprobe.local_paths import host_reachable

    host_reachable.cache_clear()  # an answer cached by an earlier test would hide a call
    yield calls
    host_reachable.cache_clear()


@pytest.fixture(params=["online", "offline"])
def hub_mode(request, monkeypatch) -> str:
    """The Hub libraries told they are online (the environment variables unset) or offline."""
    from huggingface_hub import constants

    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
        if request.param == "offline":
            monkeypatch.setenv(name, "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", request.param == "offline")
    return request.param


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A working folder with out/medlama (a folder) and runs/a.json, as a user's would have."""
    (tmp_path / "out" / "medlama").mkdir(parents=True)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    return tmp_path


TYPOS = {
    "probe --dataset": (
        ["probe", "--prober", "contrastive", "--dataset", "out/medlamma", "--model", "minilm", "--out", "r.json"],
        "--dataset out/medlamma does not exist; did you mean out/medlama?",
    ),
    "probe --model": (
        ["probe", "--prober", "contrastive", "--dataset", "out/medlama", "--model", "out/minilm", "--out", "r.json"],
        "--model out/minilm does not exist (the nearest folder that exists is out: it holds medlama/)",
    ),
    "probe --rerank": (
        ["probe", "--prober", "contrastive", "--dataset", "out/medlama", "--model", "minilm", "--rerank", "runs/top10.jsonl"],
        "--rerank runs/top10.jsonl does not exist (the nearest folder that exists is runs: it holds a.json)",
    ),
    "build --data-dir": (
        ["build", "medlama", "--data-dir", "out/medlamma", "--out", "out/built"],
        "--data-dir out/medlamma does not exist; did you mean out/medlama?",
    ),
    "profile --data-dir": (
        ["profile", "--model", "minilm", "--out", "out/profile", "--data-dir", "medlama=out/medlamma"],
        "--data-dir medlama=out/medlamma does not exist; did you mean out/medlama?",
    ),
    "compare": (["compare", "runs/aa.json", "runs/a.json"], "runs/aa.json does not exist; did you mean runs/a.json?"),
    "publish results": (
        ["publish", "results", "runs/minilm.json", "--model-repo", "org/model", "--dry-run"],
        "runs/minilm.json does not exist (the nearest folder that exists is runs: it holds a.json)",
    ),
    "publish dataset": (
        ["publish", "dataset", "out/medlamma", "--repo", "org/medlama", "--dry-run"],
        "out/medlamma does not exist; did you mean out/medlama?",
    ),
    "review export": (
        ["review", "export", "runs/aa.json", "--sample", "1", "--top-k", "1", "--raters", "2", "--out", "review"],
        "runs/aa.json does not exist; did you mean runs/a.json?",
    ),
    "profile --model": (
        ["profile", "--model", "out/minilm", "--out", "out/profile"],
        "--model out/minilm does not exist (the nearest folder that exists is out: it holds medlama/)",
    ),
    "cache verify --model": (["cache", "verify", "--model", "out/minilm"], "--model out/minilm does not exist"),
    "review import": (
        ["review", "import", "reviews", "sheet.csv"],
        "reviews does not exist (the nearest folder that exists is .: it holds out/, runs/)",
    ),
    "reproduce": (["reproduce", "runs/recipe.yaml"], "runs/recipe.yaml does not exist (the nearest folder that exists is runs"),
    "export lm-eval --dataset": (
        ["export", "lm-eval", "mst", "--dataset", "out/mstt", "--out", "out/export"],
        "--dataset out/mstt does not exist (the nearest folder that exists is out: it holds medlama/)",
    ),
}


@pytest.mark.parametrize("command", list(TYPOS))
def test_a_typod_local_path_is_one_line_at_once_without_the_network(command, workspace, hanging_network, hub_mode, capsys):
    argv, expected = TYPOS[command]
    start = time.perf_counter()
    code = main(argv)
    seconds = time.perf_counter() - start
    err = capsys.readouterr().err
    assert code == 2 and err == f"medprobe: error: {err.removeprefix('medprobe: error: ').strip()}\n", err
    assert expected in err, err
    assert not hanging_network, f"asked the network: {hanging_network}"
    assert seconds < 1.0, f"{command}: {seconds:.2f} s"


def test_a_hub_dataset_id_offline_and_uncached_fails_at_once_saying_what_to_do(workspace, hanging_network, monkeypatch, capsys):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(workspace / "hub-cache"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(workspace / "datasets-cache"))
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)  # datasets' own switch would be named instead
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    start = time.perf_counter()
    code = main(["probe", "--prober", "contrastive", "--dataset", "some-org/medlama", "--model", "minilm", "--out", "r.json"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and time.perf_counter() - start < 1.0
    assert "--dataset some-org/medlama is not a local folder" in err and "(HF_HUB_OFFLINE is set)" in err
    assert "medprobe build BENCHMARK --out DIR" in err and "hf download --repo-type dataset some-org/medlama" in err
    assert not hanging_network


def test_a_hub_dataset_id_with_no_network_fails_at_once(workspace, monkeypatch, capsys):
    """No network and no offline switch: the name lookup fails in milliseconds, and so does the command."""
    from huggingface_hub import constants

    from medprobe.local_paths import host_reachable

    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(workspace / "hub-cache"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(workspace / "datasets-cache"))
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: (_ for _ in ()).throw(OSError("Name or service not known")))
    host_reachable.cache_clear()
    try:
        code = main(["probe", "--prober", "contrastive", "--dataset", "some-org/medlama", "--model", "minilm", "--out", "r.json"])
    finally:
        host_reachable.cache_clear()
    err = capsys.readouterr().err
    assert code == 2 and "(huggingface.co cannot be reached from here)" in err


def test_a_cached_hub_dataset_id_is_left_to_datasets(workspace, monkeypatch):
    from huggingface_hub import constants

    from medprobe.local_paths import dataset_source

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(workspace / "hub-cache"))
    (workspace / "hub-cache" / "datasets--some-org--medlama" / "snapshots" / "abc").mkdir(parents=True)
    assert dataset_source("some-org/medlama") is None


@pytest.mark.parametrize(
    "value, local",
    [
        ("out/medlamma", True),  # out/ exists
        ("some-org/medlama", False),  # a Hub id: ./some-org does not exist
        ("medlama", False),  # a bare name: a Hub id (or a packaged name), never a folder guess
        ("./medlama", True),
        ("~/medlama", True),
        ("/abs/medlama", True),
        ("a/b/c", True),  # more slashes than a Hub id has
        ("runs/a.json/x", True),  # exists in part (a file on the way)
        ("hf://datasets/some-org/medlama", False),  # a URL is the reading library's
    ],
)
def test_what_can_be_a_local_path(value, local, workspace):
    assert could_be_local(value) is local


def test_the_message_names_the_nearest_folder_and_what_it_holds(workspace):
    for name in ("b", "c", "d", "e", "f", "g"):
        (workspace / "runs" / name).mkdir()
    message = missing_message("runs/zzz/x.json", "--rerank", "give a --predictions file")
    assert message == (
        "--rerank runs/zzz/x.json does not exist (the nearest folder that exists is runs: it holds a.json, b/, c/, d/, e/ "
        "and 2 more); give a --predictions file"
    )


def test_a_close_match_keeps_the_rest_of_the_path_when_it_exists(workspace):
    (workspace / "out" / "medlama" / "hard").mkdir()
    assert (
        missing_message("out/medlamma/hard", "--dataset")
        == "--dataset out/medlamma/hard does not exist; did you mean out/medlama/hard?"
    )
    assert (
        missing_message("out/medlamma/nope", "--dataset")
        == "--dataset out/medlamma/nope does not exist; did you mean out/medlama?"
    )


def test_a_file_on_the_way_and_the_home_folder_are_named_as_written(workspace, monkeypatch):
    assert "(runs/a.json is a file, not a folder)" in missing_message("runs/a.json/x", "")
    monkeypatch.setenv("HOME", str(workspace / "out"))
    assert missing_message("~/nothing/here", "").startswith("~/nothing/here does not exist (the nearest folder that exists is ~:")


def test_missing_path_is_a_user_error_and_a_file_not_found_error(workspace):
    with pytest.raises(FileNotFoundError) as raised:
        check_local_path("out/nothing", "--model")
    assert isinstance(raised.value, MissingPath) and isinstance(raised.value, ValueError)
