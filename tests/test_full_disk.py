"""A full disk is one line naming the folder that filled and which it is (an output folder, the Hugging Face
datasets cache, the embedding cache), exit 2, the outputs there before byte for byte, nothing written into the
installed package.

The commands run in subprocesses on a disk that fills (tests/full_disk.py: writes under a folder refused after N
bytes, or the kernel's own file size limit, `ulimit -f`), as a user meets it. Measured before, each case:
- build, output disk full: "cannot write the outputs: no space left on the device" (no path);
- build, disk full while the staged build is loaded back: "the staged build of config 'full' does not load
  (DatasetGenerationError: An error occurred while generating the dataset)", no word of space;
- profile, output disk full: "cannot write the outputs: ..." (no path);
- probe under `ulimit -f 10`: a traceback (EFBIG from the Arrow cache file evaluate writes while scoring);
- probe, datasets cache full: the shipped sample "is not a readable Parquet file ... Rebuild it: medprobe build
  ... --out <the installed package's demo_data/medlama_sample>", a built folder "An error occurred while
  generating the dataset";
- probe, embedding cache full: a warning naming a space's folder, not the cache.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import medprobe
from medprobe.building.build import build
from medprobe.cli import disk_error_text, main
from medprobe.contracts import UserError
from synthetic_medlama import BUILD_PARAMS, CLI_PARAMS, write_release
from test_build_atomic import PROBERS_HOME, leftovers
from tiny_bert import save_tiny_bert

TESTS = Path(__file__).resolve().parent
FULL_DISK = TESTS / "full_disk.py"
SAMPLE = Path(medprobe.__file__).resolve().parent / "demo_data" / "medlama_sample"
NO_SPACE = "no space left on the device"


def hashes(folder: Path) -> dict[str, str]:
    """Every file under `folder`: relative path -> sha256."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def on_a_full_disk(disk: list[str], argv: list[str], **env: str) -> subprocess.CompletedProcess:
    """`medprobe ARGV` in a subprocess whose disk is `disk` (tests/full_disk.py's options)."""
    paths = [str(PROBERS_HOME), str(TESTS), os.environ.get("PYTHONPATH", "")]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), **env}
    return subprocess.run(
        [sys.executable, str(FULL_DISK), *disk, "--", *argv], capture_output=True, text=True, env=environment, timeout=300
    )


def one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    # a probe over an earlier run of its own says first that it will replace it (a note, not an error)
    lines = [line for line in done.stderr.strip().splitlines() if "holds an earlier run" not in line]
    assert len(lines) == 1, done.stderr[-3000:]
    return lines[0]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    return str(save_tiny_bert(tmp_path_factory.mktemp("tiny")))


# --- output folders ---------------------------------------------------------------------------------


@pytest.fixture
def built(tmp_path) -> tuple[Path, Path]:
    """(release, OUT): a good build of the synthetic release in OUT, alone in its folder (the disk)."""
    release = write_release(tmp_path / "release")
    out = tmp_path / "disk" / "OUT"
    build("medlama", out, data_dir=str(release), params=BUILD_PARAMS)
    return release, out


@pytest.mark.parametrize(
    "part, where",
    [
        ("disk", "the disk of OUT"),  # the disk of OUT and its staging folder: the first write (the lock) fails
        ("/cache/check/", "the cache of the check that the staged build loads"),  # (the disk of OUT, 20 MB free)
        ("/cache/build/", "the cache of the builder"),  # the builder's own, before any data file is written
    ],
)
def test_a_build_on_a_full_disk_is_one_line_naming_the_output_folder_and_out_stays(built, part, where):
    release, out = built
    before = hashes(out)
    disk = str(out.parent) if part == "disk" else part
    done = on_a_full_disk([disk, "0"], ["build", "medlama", *CLI_PARAMS, "--data-dir", str(release), "--out", str(out)])
    assert one_error_line(done) == (
        f"medprobe: error: cannot write the output folder {out}: {NO_SPACE}; the outputs there before are as they were: "
        "free space, or choose another --out"
    ), where
    assert hashes(out) == before and leftovers(out) == []


def test_a_profile_on_a_full_disk_is_one_line_naming_the_output_folder_and_the_previous_profile_stays(
    tmp_path, tiny_model, monkeypatch
):
    import fake_runs
    import medprobe.run

    monkeypatch.setattr(medprobe.run, "run", fake_runs.fake_run)
    out = tmp_path / "disk" / "P"
    args = ["profile", "--model", tiny_model, "--out", str(out), "--benchmarks", "medlama"]
    assert main([*args, "--seed", "1"]) == 0
    before = hashes(out)
    done = on_a_full_disk(["--fake-runs", str(out.parent), "0"], [*args, "--seed", "2"])
    assert one_error_line(done) == (
        f"medprobe: error: cannot write the output folder {out}: {NO_SPACE}; the outputs there before are as they were: "
        "free space, or choose another --out"
    )
    assert hashes(out) == before and leftovers(out) == []


def probe_args(dataset: str | Path, model: str, out: Path, *more: str) -> list[str]:
    """A probe without progress on stderr (its one line is the error)."""
    return ["--quiet", "probe", "--prober", "contrastive", "--dataset", str(dataset), "--model", model, "--device", "cpu", *more]


def test_a_probe_under_a_file_size_limit_is_one_line_naming_the_output_and_the_previous_outputs_stay(tmp_path, tiny_model):
    """`ulimit -f 10`: every file of the process stops at 10 KiB (EFBIG, the kernel's). The score is computed in
    memory (evaluate's transient cache file was the traceback), so the first file to pass the limit is an output."""
    out = tmp_path / "runs"
    args = [*probe_args(SAMPLE, tiny_model, out, "--config", "hard", "--no-cache"), "--out", str(out / "results.json")]
    assert main(args) == 0  # the previous outputs (and a warm datasets cache: the limit is for this probe's writes)
    before = hashes(out)
    line = one_error_line(on_a_full_disk(["--fsize", str(10 * 1024)], args))
    assert line.startswith(f"medprobe: error: cannot write the output {out}/") and line.endswith(
        ": a file would pass the file size limit (ulimit -f); the outputs there before are as they were: raise the limit, "
        "or choose another --out"
    )
    assert hashes(out) == before


# --- the Hugging Face datasets cache ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "which, room",
    [
        ("the shipped sample", 0),  # no room: datasets refuses before it writes ("Not enough disk space", no errno)
        ("a built folder", 1),  # a byte of room: datasets starts writing, and the write fails (ENOSPC)
    ],
)
def test_a_full_datasets_cache_is_one_line_naming_it_never_the_data_nor_the_package(
    tmp_path, tiny_model, synthetic_medlama_hub, which, room
):
    dataset, config = (SAMPLE, "hard") if which == "the shipped sample" else (synthetic_medlama_hub, "full")
    out = tmp_path / "runs"
    args = [*probe_args(dataset, tiny_model, out, "--config", config, "--no-cache"), "--out", str(out / "results.json")]
    assert main(args) == 0  # the previous outputs (this process's datasets cache is another)
    before, package = hashes(out), hashes(SAMPLE)
    cache = tmp_path / "datasets-cache"  # empty: the dataset is prepared into it, and it fills
    line = one_error_line(on_a_full_disk([str(cache), str(room)], args, HF_DATASETS_CACHE=str(cache)))
    assert line == (
        f"medprobe: error: cannot write the Hugging Face datasets cache {cache}: {NO_SPACE}; the outputs are as they "
        "were: free space there, or set HF_DATASETS_CACHE to a folder on a disk with room"
    )
    assert hashes(out) == before and hashes(SAMPLE) == package


def test_a_damaged_shipped_sample_says_reinstall_never_to_build_into_the_package(tmp_path, capsys, monkeypatch):
    """The advice to rebuild a folder names it as --out: for the sample inside the installed package that would
    write into the package."""
    import medprobe.loading as loading

    assert loading.inside_the_package(SAMPLE) and not loading.inside_the_package(tmp_path)
    damaged = tmp_path / "medlama_sample"
    shutil.copytree(SAMPLE, damaged)
    (damaged / "hard" / "test.jsonl").unlink()
    monkeypatch.setattr(loading, "inside_the_package", lambda folder: Path(folder) == damaged)  # stands for the sample
    with pytest.raises(UserError) as raised:
        loading.load_probe_dataset(str(damaged), "hard", "test")
    message = str(raised.value)
    assert "reinstall medprobe (pip install --force-reinstall medprobe)" in message and "--out" not in message


# --- the embedding cache, and the one message ---------------------------------------------------------------


def test_a_full_embedding_cache_is_one_warning_naming_it_and_the_probe_goes_on(tmp_path, tiny_model):
    """A cache: the run goes on without storing, saying so once, naming the cache and what to do."""
    cache = tmp_path / "embeddings"
    out = tmp_path / "runs"
    args = [*probe_args(SAMPLE, tiny_model, out, "--config", "hard"), "--out", str(out / "results.json")]
    done = on_a_full_disk([str(cache), "0"], args, MEDPROBE_EMBEDDING_CACHE=str(cache))
    assert done.returncode == 0, done.stderr[-3000:]
    warning = (
        f"embedding cache {cache}: cannot write in it ({NO_SPACE}); going on without storing: free space there, set "
        "MEDPROBE_EMBEDDING_CACHE to a folder on a disk with room, or pass --no-cache"
    )
    assert done.stdout.splitlines().count(warning) == 1


def full(path: str | Path | None, code: int = errno.ENOSPC) -> OSError:
    return OSError(code, os.strerror(code), None if path is None else str(path))


def test_the_one_message_says_which_folder_filled(tmp_path, monkeypatch):
    import datasets

    monkeypatch.setenv("MEDPROBE_EMBEDDING_CACHE", str(tmp_path / "embeddings"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    out = tmp_path / "OUT"
    staged = tmp_path / f".OUT.medprobe-tmp-{os.getpid()}"
    said = {
        "embedding": disk_error_text(full(tmp_path / "embeddings" / "abc" / ".x-tmp-1.npz")),
        "datasets": disk_error_text(full(tmp_path / "datasets" / "medlama" / "x.arrow", errno.EDQUOT)),
        "a staged file": disk_error_text(full(staged / "out" / "runs" / "a.json")),
        "the staging folder's cache": disk_error_text(full(staged / "cache" / "check" / "x.arrow")),
        "a file": disk_error_text(full(out / f".results-tmp-{os.getpid()}.json", errno.EFBIG)),
        "no file": disk_error_text(full(None)),
    }
    assert said == {
        "embedding": f"cannot write the embedding cache {tmp_path / 'embeddings'}: {NO_SPACE}; the outputs are as they "
        "were: free space there, or set MEDPROBE_EMBEDDING_CACHE to a folder on a disk with room, or pass --no-cache",
        "datasets": f"cannot write the Hugging Face datasets cache {tmp_path / 'datasets'}: the disk quota is exceeded; "
        "the outputs are as they were: free space there, or set HF_DATASETS_CACHE to a folder on a disk with room",
        "a staged file": f"cannot write the output {out / 'runs' / 'a.json'}: {NO_SPACE}; the outputs there before are "
        "as they were: free space, or choose another --out",
        "the staging folder's cache": f"cannot write the output folder {out}: {NO_SPACE}; the outputs there before are "
        "as they were: free space, or choose another --out",
        "a file": f"cannot write the output {out / 'results.json'}: a file would pass the file size limit (ulimit -f); "
        "the outputs there before are as they were: raise the limit, or choose another --out",
        "no file": f"cannot write the outputs: {NO_SPACE}; the outputs there before are as they were: free space, or "
        "choose another --out",
    }


def test_a_full_disk_is_found_however_a_library_wrapped_it():
    from datasets.exceptions import DatasetGenerationError

    from medprobe.atomic import disk_error

    cause = full(None)
    try:
        try:
            raise cause
        except OSError as err:
            raise DatasetGenerationError("An error occurred while generating the dataset") from err
    except DatasetGenerationError as wrapped:
        assert disk_error(wrapped) is cause
    try:
        try:
            raise cause
        except OSError:
            raise ValueError("another error, said on purpose") from None  # the disk is not its story
    except ValueError as hidden:
        assert disk_error(hidden) is None
    assert disk_error(full(None, errno.EIO)) is not None and disk_error(ValueError("x")) is None
    checked = OSError("Not enough disk space. Needed: Unknown size (download: Unknown size, generated: Unknown size")
    assert disk_error(checked) is checked and checked.errno == errno.ENOSPC  # datasets' check before it writes
