"""`--rewire-corpus` takes a file, or a MedLAMA release corpus by name: from a release folder, the
medprobe cache, or downloaded once at the pinned commit (offline: one error naming the URL)."""

import io
import os
import urllib.request
from pathlib import Path

import pytest

import medprobe.models
from medprobe.contracts import UserError
from medprobe.contrastive.rewiring import corpora_named, corpus_cache, corpus_path, release_corpora
from medprobe.resources import load_builder_module

NAME = "pubmed_sents_no_punkt_10k_0"
SENTENCES = "aspirin may treat fever in adults\nthe gene is expressed in the liver\n"


@pytest.fixture(autouse=True)
def empty_cache(tmp_path, monkeypatch):
    """A fresh medprobe cache, and no download unless a test allows one."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: pytest.fail("downloaded"))


def fake_release(root: Path, layout: str) -> Path:
    """A MedLAMA release folder with one rewiring corpus, laid out as the repository or as ../shared/data/medlama;
    returns the folder a user would name (the builder's --data-dir)."""
    data_dir = root / "data" / "medlama"
    corpora = root / "data" / "elicit_corpora" if layout == "repository" else data_dir / "elicit_corpora"
    (data_dir / "2021AA").mkdir(parents=True)
    (data_dir / "prompts.csv").write_text("pid,default_prompt,human_prompt\n")
    corpora.mkdir(parents=True, exist_ok=True)
    (corpora / NAME).write_text(SENTENCES)
    return data_dir


def medlama_corpora():
    """The MedLAMA release's rewiring corpora, as rewiring finds them through the registry."""
    corpora = corpora_named(NAME)
    assert corpora is not None
    return corpora


def test_the_release_corpora_are_the_ones_the_medlama_builder_declares_at_its_pinned_commit():
    [corpora] = release_corpora()  # no other benchmark's release ships rewiring corpora
    assert corpora == medlama_corpora() and corpora.benchmark == "medlama"
    assert corpora.commit == load_builder_module("medlama").RELEASE_COMMIT and corpora.commit in corpora.url
    assert len(corpora.names) == 11 and NAME in corpora.names
    assert corpora_named("mine.txt") is None


def test_a_file_is_used_as_it_is_and_a_missing_one_is_the_old_error(tmp_path):
    corpus = tmp_path / "mine.txt"
    corpus.write_text(SENTENCES)
    assert corpus_path(str(corpus)) == corpus
    with pytest.raises(
        FileNotFoundError, match=r"does not exist \(the nearest .*\); expected a text file with one sentence a line"
    ):
        corpus_path(str(tmp_path / "missing.txt"))


@pytest.mark.parametrize("layout", ["repository", "shared copy"])
def test_dir_slash_name_reads_the_release_folder(tmp_path, layout):
    data_dir = fake_release(tmp_path, layout)
    for folder in (data_dir, tmp_path) if layout == "repository" else (data_dir,):  # data/medlama, or the clone's root
        path = corpus_path(f"{folder}/{NAME}")
        assert path.read_text() == SENTENCES and path.name == NAME


def test_a_release_folder_without_the_corpus_says_where_it_looked(tmp_path):
    (tmp_path / "release").mkdir()
    with pytest.raises(UserError) as raised:
        corpus_path(f"{tmp_path / 'release'}/{NAME}")
    message = str(raised.value)
    assert f"holds no {NAME}" in message and "elicit_corpora" in message and f"{medlama_corpora().url}/{NAME}" in message


def test_a_bare_name_offline_is_one_error_naming_the_url_and_how_to_pass_a_file(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(UserError) as raised:
        corpus_path(NAME)
    message = str(raised.value)
    assert "HF_DATASETS_OFFLINE set" in message and f"{medlama_corpora().url}/{NAME}" in message
    assert "--rewire-corpus FILE" in message and f"--rewire-corpus DIR/{NAME}" in message


def test_a_bare_name_without_a_network_does_not_try(monkeypatch):
    for flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(flag, raising=False)
    monkeypatch.setattr(medprobe.models, "host_reachable", lambda host: False)
    with pytest.raises(UserError, match="raw.githubusercontent.com cannot be reached from here"):
        corpus_path(NAME)


def test_a_bare_name_is_downloaded_once_at_the_pinned_commit_then_read_from_the_cache(monkeypatch, capsys):
    for flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(flag, raising=False)
    monkeypatch.setattr(medprobe.models, "host_reachable", lambda host: True)
    asked = []

    def fake_urlopen(url, timeout):
        asked.append(url)
        return io.BytesIO(SENTENCES.encode())

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    path = corpus_path(NAME)
    assert asked == [
        f"https://raw.githubusercontent.com/cambridgeltl/medlama/{medlama_corpora().commit}/data/elicit_corpora/{NAME}"
    ]
    assert path == corpus_cache(medlama_corpora()) / NAME and path.read_text() == SENTENCES
    # the cache folder a download before the corpora moved to the builder's declaration used, so none is fetched twice
    assert (
        path.parent
        == Path(os.environ["XDG_CACHE_HOME"]) / "medprobe" / f"medlama-{medlama_corpora().commit[:12]}" / "elicit_corpora"
    )
    assert corpus_path(NAME) == path and len(asked) == 1  # the second time from the cache
    assert "downloading the rewiring corpus" in capsys.readouterr().out


def test_a_failed_download_leaves_no_file(monkeypatch):
    for flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(flag, raising=False)
    monkeypatch.setattr(medprobe.models, "host_reachable", lambda host: True)

    def refused(url, timeout):
        raise urllib.error.HTTPError(url, 404, "Not Found", None, None)

    monkeypatch.setattr(urllib.request, "urlopen", refused)
    with pytest.raises(UserError, match="could not download --rewire-corpus"):
        corpus_path(NAME)
    assert not corpus_cache(medlama_corpora()).exists() or not any(corpus_cache(medlama_corpora()).iterdir())


def test_the_contrastive_cli_rewires_on_a_release_corpus_by_name(synthetic_medlama_hub, tmp_path, capsys):
    """Through `medprobe probe`: the corpus is found in the release folder before the model loads."""
    from medprobe.cli import main
    from tiny_bert import save_tiny_bert

    data_dir = fake_release(tmp_path / "clone", "repository")
    model = save_tiny_bert(tmp_path / "tiny_bert")
    argv = [
        "probe",
        "--prober",
        "contrastive",
        "--dataset",
        str(synthetic_medlama_hub),
        "--model",
        str(model),
        "--rewire-corpus",
        f"{data_dir}/{NAME}",
        "--rewire-steps",
        "1",
        "--rewire-batch-size",
        "2",
        "--out",
        str(tmp_path / "r.json"),
    ]
    assert main(argv) == 0
    assert "2 lines -> 2 pairs" in capsys.readouterr().out


def test_rewire_in_python_takes_a_release_corpus_by_name_too(tmp_path, monkeypatch, capsys):
    from medprobe.contrastive import ContrastiveProbe, rewiring_arguments
    from tiny_bert import save_tiny_bert

    cached = corpus_cache(medlama_corpora()) / NAME  # as a first download would have left it
    cached.parent.mkdir(parents=True)
    cached.write_text(SENTENCES)
    probe = ContrastiveProbe.from_pretrained(str(save_tiny_bert(tmp_path / "tiny_bert")), device="cpu")
    report = probe.rewire(
        NAME, rewiring_arguments(str(tmp_path / "out"), max_steps=1, per_device_train_batch_size=2, use_cpu=True)
    )
    assert report.corpus.pairs == 2 and f"{cached}: 2 lines -> 2 pairs" in capsys.readouterr().out
