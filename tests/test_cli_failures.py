"""The command line's last failure paths end in one line: exit 2 for an output folder that cannot be
written, 130 for Ctrl-C and 143 for SIGTERM for every command, leaving no temporary file behind.

The signal tests run the real command line in a subprocess (tests/build_pause.py pauses it at a named
step); `build` and `profile` have their own (tests/test_build_atomic.py, tests/test_profile_folder.py).
"""

from __future__ import annotations

import errno
import os
import signal
from pathlib import Path

import pytest

from medprobe.building.build import build
from medprobe.cli import main
from test_build_atomic import leftovers, signal_and_wait, start_paused
from tiny_bert import save_tiny_bert

SMALL_MST = ["--set", "train_size=30", "--set", "validation_size=6", "--set", "test_size=12"]


@pytest.fixture(scope="module")
def built_mst(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mst") / "mst"
    build("mst", out, configs=["comparison"], params={"train_size": 30, "validation_size": 6, "test_size": 12})
    return out


def command(name: str, out: Path, built_mst: Path) -> list[str]:
    return {
        "build": ["build", "mst", "--config", "comparison", *SMALL_MST, "--out", str(out)],
        "export": ["export", "lm-eval", "mst", "--dataset", str(built_mst), "--out", str(out)],
        "profile": ["profile", "--model", "minilm", "--out", str(out)],
    }[name]


@pytest.mark.parametrize("name", ["build", "export", "profile"])
def test_an_out_under_a_file_is_one_line(tmp_path, built_mst, name, capsys):
    """Measured before: build and export lm-eval ended in `FileExistsError: [Errno 17] File exists`, exit 1."""
    (tmp_path / "exfile").write_text("")
    out = tmp_path / "exfile" / "sub"
    assert main(command(name, out, built_mst)) == 2
    assert capsys.readouterr().err == f"medprobe: error: --out {out}: cannot create its folder, {tmp_path / 'exfile'} is a file\n"


@pytest.fixture
def read_only(tmp_path, monkeypatch) -> Path:
    """A folder in which creating a file fails as on a read-only mount (EROFS), for root too (chmod does not stop root)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    real_open = os.open

    def refusing(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and Path(os.fsdecode(path)).parent == folder:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing)
    return folder


@pytest.mark.parametrize("name", ["build", "export", "profile"])
def test_a_read_only_parent_folder_is_one_line(read_only, built_mst, name, capsys):
    """Measured before: build and export ended in `OSError: [Errno 30] Read-only file system` on the lock file."""
    out = read_only / "OUT"
    assert main(command(name, out, built_mst)) == 2
    err = capsys.readouterr().err
    assert err == f"medprobe: error: --out {out}: cannot write in {read_only} (Read-only file system); choose another path\n"
    assert list(read_only.iterdir()) == []


@pytest.mark.parametrize("signum, code, line", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_a_probe_stopped_while_writing_its_results_exits_130_or_143_and_leaves_no_temporary_file(
    tmp_path, synthetic_medlama_hub, signum, code, line
):
    """Measured before: SIGTERM left `.out-tmp-PID.json` beside --out for good (probe did not handle SIGTERM)."""
    out = tmp_path / "results"
    out.mkdir()
    args = [
        "probe",
        "--prober",
        "contrastive",
        "--dataset",
        str(synthetic_medlama_hub),
        "--model",
        str(save_tiny_bert(tmp_path / "tiny")),
        "--device",
        "cpu",
        "--no-cache",
        "--out",
        str(out / "out.json"),
        "--predictions",
        str(out / "out.jsonl"),
    ]
    # paused before the renames begin: every file (results, per-item outcomes, predictions) is written under its
    # temporary name beside its target (a signal during the renames waits for them: tests/test_run_commit.py)
    process = start_paused("before:medprobe.atomic:signals_deferred", args)
    pid = process.pid
    assert sorted(path.name for path in out.iterdir()) == [
        f".out-tmp-{pid}.json",
        f".out-tmp-{pid}.jsonl",
        f".out.outcomes-tmp-{pid}.jsonl",
    ]
    returned, err = signal_and_wait(process, signum)
    assert (returned, err.splitlines()[-1]) == (code, line) and "Traceback" not in err
    assert list(out.iterdir()) == []


def test_an_export_stopped_by_sigterm_exits_143_and_leaves_nothing_beside_out(tmp_path, built_mst):
    out = tmp_path / "tasks"
    process = start_paused("medprobe.export.lm_eval:readme", command("export", out, built_mst))
    code, err = signal_and_wait(process, signal.SIGTERM)
    assert (code, err.splitlines()[-1]) == (143, "terminated") and "Traceback" not in err
    assert not out.exists() and leftovers(out) == []
