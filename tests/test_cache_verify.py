"""`medprobe cache verify` (medprobe.contrastive.cache_verify): re-encoding a sample of the embedding cache catches
what no checksum can, a chunk forged with a valid one, and drops it whole, all bad chunks or none.

Plumbing tests on a tiny random BERT saved as a model folder (each test has its own cache folder: conftest points
MEDPROBE_EMBEDDING_CACHE at it); one test with the packaged MiniLM checks that a real cache verifies clean.
"""

import os
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from medprobe import digests
from medprobe.cli import main
from medprobe.contrastive import ContrastiveProbe
from medprobe.contrastive import embedding_cache as ec
from medprobe.contrastive.cache_verify import choose_keys
from tiny_bert import save_tiny_bert

NAMES = ["fever", "pain", "aspirin", "heart failure", "lung", "acute kidney disease", "blood"]
QUERIES = ["aspirin may treat [Y] .", "the gene might cause [Y] in the lung .", "[Y] is a disease of the heart ."]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("MEDPROBE_EMBEDDING_CACHE", str(root))
    return root


@pytest.fixture
def model_dir(tmp_path) -> Path:
    return save_tiny_bert(tmp_path / "tiny")


def load(model: str | Path, **kwargs) -> ContrastiveProbe:
    return ContrastiveProbe.from_pretrained(str(model), device="cpu", show_progress=False, **{"batch_size": 3, **kwargs})


def fill(model: str | Path) -> tuple[torch.Tensor, torch.Tensor]:
    """A cache of a real encoding: the names' chunk, then the queries' (batches of 3: verify re-encodes in others)."""
    probe = load(model)
    return probe.encode_names(NAMES), probe.encode_queries(QUERIES)


def chunks(root: Path) -> list[Path]:
    return sorted(path for path in root.glob("*/*.npz") if path.parent.name != ec.TOKENS)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the cache, hidden ones included, by relative path."""
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def forge(chunk: Path) -> Path:
    """Rewrite a chunk whole with other vectors under the same keys, checksum and digests computed anew: every check
    a probe makes on reading passes. Returns the forged chunk's path (its name is its new checksum)."""
    keys, embeddings = ec.read_chunk(chunk)
    chunk.unlink()
    forged = embeddings[::-1].copy() * 0.5 + 1.0  # plausible floats of the right width and dtype, wrong for each key
    return ec.write_chunk(chunk.parent, keys, forged)


def verify(*extra: str) -> int:
    return main(["cache", "verify", "--no-progress", *extra])


def test_an_untouched_cache_passes_with_exit_0_plumbing_tiny_random_bert(cache_dir, model_dir, capsys):
    fill(model_dir)
    before = snapshot(cache_dir)
    capsys.readouterr()
    assert verify("--sample", "all") == 0
    out = capsys.readouterr().out
    assert "cache verify: 1 model checked (1 space), 10 texts re-encoded, 0 chunks dropped, 0 skipped" in out
    assert "dropped " not in out.replace("0 chunks dropped", "")
    after = snapshot(cache_dir)
    assert {name: after[name] for name in before if name.endswith(".npz")} == {
        n: b for n, b in before.items() if n.endswith(".npz")
    }
    (space,) = {chunk.parent for chunk in chunks(cache_dir)}
    assert ec.model_sources(space) == [str(model_dir.resolve())]  # what verify loaded, recorded by the probe


def test_a_chunk_forged_with_a_valid_checksum_is_dropped_and_a_later_probe_re_encodes_it_plumbing_tiny_random_bert(
    cache_dir, model_dir, capsys
):
    names, queries = fill(model_dir)
    names_chunk, queries_chunk = sorted(chunks(cache_dir), key=lambda path: len(ec.read_chunk(path)[0]), reverse=True)
    forged = forge(names_chunk)
    fooled = load(model_dir)  # the trust boundary: a probe reads the forged vectors as hits
    assert not torch.equal(fooled.encode_names(NAMES), names) and fooled.timings["embedding_cache_misses"] == 0
    capsys.readouterr()
    assert verify("--sample", "all") == 1
    out = capsys.readouterr().out.splitlines()
    dropped = [line for line in out if line.startswith("dropped ")]
    assert dropped == [
        f"dropped {forged.relative_to(cache_dir)} ({model_dir.resolve()}): 7 of 7 re-encoded vectors disagree "
        + dropped[0].split("disagree ")[1]
    ]
    assert "tolerance 1e-04" in dropped[0] and "1 chunk dropped (a probe encodes their texts again)" in out[-1]
    assert chunks(cache_dir) == [queries_chunk] and not list(cache_dir.rglob(".*dropped*"))
    again = load(model_dir)
    assert torch.allclose(again.encode_names(NAMES), names, atol=1e-6) and again.timings["embedding_cache_misses"] == 7
    assert torch.equal(again.encode_queries(QUERIES), queries)  # the untouched chunk is read as it was
    assert verify("--sample", "all") == 0


def test_the_default_sample_draws_from_every_chunk_and_is_seeded():
    chunk_keys = [[(1, i) for i in range(100)], [(2, 0)], [(3, i) for i in range(5)] + [(1, 0)]]
    drawn = choose_keys(chunk_keys, 3, random.Random("0|space"))
    assert {key[0] for key in drawn} == {1, 2, 3} and len(set(drawn)) == 3
    assert choose_keys(chunk_keys, 3, random.Random("0|space")) == drawn
    everything = choose_keys(chunk_keys, None, random.Random(0))  # (1, 0) is in two chunks: drawn once
    assert len(everything) == 106 and sorted(choose_keys(chunk_keys, 1000, random.Random(0))) == sorted(everything)


def test_a_failure_during_the_drop_leaves_the_cache_as_it_was_plumbing_tiny_random_bert(
    cache_dir, model_dir, monkeypatch, capsys
):
    fill(model_dir)
    assert verify() == 0  # once clean, so that what loading the model records (digests, spaces) is there already
    for chunk in chunks(cache_dir):
        forge(chunk)
    before = snapshot(cache_dir)
    real_replace, renames = os.replace, []

    def failing(source, target):  # the second chunk's rename fails: the first is renamed already
        if str(target).endswith("-dropped.npz"):
            renames.append(target)
            if len(renames) == 2:
                raise OSError(13, "Permission denied", str(source))
        return real_replace(source, target)

    monkeypatch.setattr(os, "replace", failing)
    capsys.readouterr()
    assert verify("--sample", "all") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "could not drop" in err[0] and "the cache is as it was" in err[0], err
    assert snapshot(cache_dir) == before and len(renames) == 2


def test_an_interrupted_verify_leaves_the_cache_as_it_was_plumbing_tiny_random_bert(cache_dir, model_dir, monkeypatch, capsys):
    fill(model_dir)
    assert verify() == 0  # once clean, so that what loading the model records (digests, spaces) is there already
    forge(chunks(cache_dir)[0])
    before = snapshot(cache_dir)

    def interrupted(self, sequences, desc):
        raise KeyboardInterrupt

    monkeypatch.setattr(ContrastiveProbe, "_encode_all", interrupted)
    assert verify("--sample", "all") == 130
    assert snapshot(cache_dir) == before


def test_only_the_given_model_is_checked_plumbing_tiny_random_bert(cache_dir, model_dir, tmp_path, capsys):
    fill(model_dir)
    other = save_tiny_bert(tmp_path / "other", layers=2)
    fill(other)
    forge(next(chunk for chunk in chunks(cache_dir) if ec.model_sources(chunk.parent) == [str(other.resolve())]))
    capsys.readouterr()
    assert verify("--sample", "all", "--model", str(model_dir)) == 0
    assert "1 model checked (1 space), 10 texts re-encoded, 0 chunks dropped" in capsys.readouterr().out
    assert verify("--sample", "all") == 1
    assert "2 models checked (2 spaces), 20 texts re-encoded, 1 chunk dropped" in capsys.readouterr().out


def test_a_space_whose_model_folder_is_gone_is_skipped_with_one_line_plumbing_tiny_random_bert(cache_dir, model_dir, capsys):
    fill(model_dir)
    shutil.rmtree(model_dir)
    capsys.readouterr()
    assert verify() == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and out[0].startswith("skipped space ") and f"its model folder {model_dir.resolve()} is gone" in out[0]
    assert "0 models checked (0 spaces), 0 texts re-encoded, 0 chunks dropped, 1 skipped" in out[1]


def test_a_cache_written_before_spaces_recorded_their_models_finds_the_folder_by_its_weights_plumbing_tiny_random_bert(
    cache_dir, model_dir, monkeypatch, capsys
):
    monkeypatch.setattr(digests, "RACY_SECONDS", -1.0)  # the weights were just written: remember their digest anyway
    fill(model_dir)
    forge(chunks(cache_dir)[0])
    (space,) = {chunk.parent for chunk in chunks(cache_dir)}
    (space / ec.MODEL_SOURCES).unlink()
    capsys.readouterr()
    assert verify("--sample", "all") == 1
    assert "1 model checked (1 space), 10 texts re-encoded, 1 chunk dropped" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "no embedding cache at"),
        (["--model", "org/no-such-model"], "is not a model folder, a packaged model or a Hub id in the local Hub cache"),
        (["--model", "/no/such/folder"], "does not exist"),
        (["--model", "TINY_OTHER"], "holds no vectors of"),
    ],
)
def test_user_errors_are_one_line_with_exit_2_plumbing_tiny_random_bert(args, message, cache_dir, model_dir, tmp_path, capsys):
    if args != []:
        fill(model_dir)
    args = [str(save_tiny_bert(tmp_path / "other", layers=2)) if arg == "TINY_OTHER" else arg for arg in args]
    capsys.readouterr()
    assert verify(*args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("medprobe: error: ") and message in err[0], err


def test_a_forged_chunk_of_float_garbage_is_dropped_even_when_it_holds_nan_plumbing_tiny_random_bert(
    cache_dir, model_dir, capsys
):
    fill(model_dir)
    chunk = chunks(cache_dir)[0]
    keys, embeddings = ec.read_chunk(chunk)
    chunk.unlink()
    ec.write_chunk(chunk.parent, keys, np.full_like(embeddings, np.nan))
    assert verify("--sample", "all") == 1
    assert "relative difference up to inf" in capsys.readouterr().out


def test_a_real_minilm_cache_verifies_clean(cache_dir, capsys):
    """MiniLM's real vectors, stored in batches of 3 and re-encoded in one batch, agree within the float32 tolerance
    (about a second: not marked slow)."""
    fill("minilm")
    (space,) = {chunk.parent for chunk in chunks(cache_dir)}
    assert ec.model_sources(space) == ["minilm"]  # the packaged name, not its folder in this environment
    capsys.readouterr()
    assert verify("--sample", "all") == 0
    assert "1 model checked (1 space), 10 texts re-encoded, 0 chunks dropped, 0 skipped" in capsys.readouterr().out
