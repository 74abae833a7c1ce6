"""The builder's default route: the official release at the pinned commit, through the download manager.

The Hub and GitHub are unreachable in tests, so the download manager is patched to serve a
synthetic release from disk under the official URLs; the offline failure is tested as it is.
"""

from pathlib import Path

import datasets
import pytest
from datasets import load_dataset

from medprobe.building.build import build
from medprobe.resources import load_builder_module
from synthetic_medlama import BUILD_PARAMS, write_release

medlama = load_builder_module("medlama")


@pytest.fixture
def release_under_official_names(tmp_path) -> Path:
    root = write_release(tmp_path / "release")
    for relation, size in medlama.HARD_SIZES.items():
        (hard,) = (root / "2021AA").glob(f"{relation}_*_hard.csv")
        hard.rename(root / "2021AA" / f"{relation}_{size}_hard.csv")
    return root


def serve_release_locally(monkeypatch, release: Path) -> list[str]:
    """Patch the download manager: release URLs are served from `release`, local paths pass through.

    Local paths go through `download` too (`load_dataset` on a built folder downloads its Parquet
    files); with an empty Hugging Face cache they must reach the real function. Any other URL is
    a bug: the builder may fetch only the pinned release.
    """
    requested: list[str] = []
    original = datasets.DownloadManager.download

    def serve_locally(self, url_or_urls):
        def local(url: str) -> str:
            if not url.startswith(("http://", "https://")):
                return original(self, url)
            assert url.startswith(medlama.RELEASE_URL + "/"), url
            assert medlama.RELEASE_COMMIT in url
            requested.append(url)
            return str(release / url[len(medlama.RELEASE_URL) + 1 :])

        return datasets.utils.py_utils.map_nested(local, url_or_urls)

    monkeypatch.setattr(datasets.DownloadManager, "download", serve_locally)
    return requested


def test_without_data_dir_the_pinned_release_urls_are_downloaded(release_under_official_names, tmp_path, monkeypatch):
    requested = serve_release_locally(monkeypatch, release_under_official_names)
    report = build("medlama", tmp_path / "hub", params=BUILD_PARAMS)
    assert report.rows == {"full": {"test": 57}, "hard": {"test": 38}, "variants": {"test": 57}}
    assert sum(u.endswith("_1000.csv") for u in requested) == 3 * 19  # once per config that reads them (full, variants)
    assert sum(u.endswith("_hard.csv") for u in requested) == 19  # only the hard config needs them
    assert load_dataset(str(tmp_path / "hub"), "hard", split="test").num_rows == 38


def test_offline_without_data_dir_says_to_pass_a_data_dir(tmp_path, monkeypatch):
    def unreachable(self, url_or_urls):
        raise ConnectionError("Couldn't reach raw.githubusercontent.com")

    monkeypatch.setattr(datasets.DownloadManager, "download", unreachable)
    with pytest.raises(ConnectionError, match="--data-dir") as err:
        build("medlama", tmp_path / "hub", configs=["full"])
    assert medlama.RELEASE_COMMIT in str(err.value)


def test_no_network_is_named_as_such_not_as_a_missing_file(tmp_path, monkeypatch, capsys):
    """datasets reports an unreachable host as FileNotFoundError(url): the message says the host cannot be reached."""
    import socket

    from medprobe.cli import main

    def not_found(self, url_or_urls):
        raise FileNotFoundError(f"{medlama.RELEASE_URL}/prompts.csv")

    def no_network(*args, **kwargs):
        raise OSError("[Errno -2] Name or service not known")

    monkeypatch.setattr(datasets.DownloadManager, "download", not_found)
    monkeypatch.setattr(socket, "create_connection", no_network)
    assert main(["build", "medlama", "--out", str(tmp_path / "hub"), "--config", "full"]) == 2
    err = capsys.readouterr().err.strip()
    assert "FileNotFoundError" not in err and len(err.splitlines()) == 1, err
    assert "raw.githubusercontent.com cannot be reached from here" in err and "--data-dir DIR" in err
