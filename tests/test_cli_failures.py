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


# --- an OUT that cannot be replaced, and a full disk: one line, before the work or with the old outputs intact ---

FOLDER_COMMANDS = ["build", "export", "profile", "demo", "compare"]


def folder_command(name: str, out: Path, built_mst: Path, tmp_path: Path) -> list[str]:
    if name == "demo":
        return ["demo", "--out", str(out), "--sample", "--skip-mst"]
    if name == "compare":
        from synthetic_runs import write_medlama_run

        runs = [str(write_medlama_run(tmp_path / f"{n}.json", 0.5, seed=n)) for n in (1, 2)]
        return ["compare", *runs, "--out", str(out)]
    return command(name, out, built_mst)


@pytest.mark.parametrize("name", FOLDER_COMMANDS)
def test_an_out_that_is_a_mount_point_is_one_line_before_any_work_simulated(tmp_path, built_mst, name, capsys, monkeypatch):
    """Measured before: build and profile ended in an EBUSY traceback after the whole run (the swap renames OUT)."""
    out = tmp_path / "mnt"
    out.mkdir()
    real = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda path: Path(path) == out or real(path))
    assert main(folder_command(name, out, built_mst, tmp_path)) == 2
    err = capsys.readouterr().err
    assert err == (
        f"medprobe: error: --out {out} is a mount point, which cannot be replaced by a rename as medprobe replaces an output "
        f"folder; give a folder inside it, e.g. {out / 'out'}\n"
    )
    assert list(out.iterdir()) == [] and leftovers(out) == []


@pytest.mark.parametrize("name", FOLDER_COMMANDS)
def test_an_immutable_out_is_one_line_before_any_work_simulated(tmp_path, built_mst, name, capsys, monkeypatch):
    """A folder nothing can be created in (chattr +i gives EPERM, for root too). Measured before: a raw errno line
    after the whole run."""
    out = tmp_path / "locked"
    out.mkdir()
    real_open = os.open

    def refusing(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and Path(os.fsdecode(path)).parent == out:
            raise OSError(errno.EPERM, os.strerror(errno.EPERM), path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing)
    assert main(folder_command(name, out, built_mst, tmp_path)) == 2
    assert capsys.readouterr().err == (
        f"medprobe: error: --out {out}: cannot write in it (Operation not permitted: read-only or immutable); "
        "choose another folder\n"
    )


def no_space(path: str) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)


def test_a_full_disk_during_a_build_is_one_line_naming_the_card_and_out_stays(tmp_path, built_mst, capsys, monkeypatch):
    """Measured before: an OSError 28 traceback (the previous build was left intact)."""
    import medprobe.building.build as building

    out = tmp_path / "mst"
    assert main(command("build", out, built_mst)) == 0
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def full(benchmark, folder, *args, **kwargs):
        raise no_space(str(folder / "README.md"))

    monkeypatch.setattr(building, "write_card", full)
    assert main([*command("build", out, built_mst), "--set", "seed=3"]) == 2
    assert capsys.readouterr().err.endswith(
        f"medprobe: error: cannot write the output {out / 'README.md'}: no space left on the device; the outputs there before "
        "are as they were: free space, or choose another --out\n"
    )
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before and leftovers(out) == []


def test_a_full_disk_while_a_probe_writes_is_one_line_naming_its_results_and_they_stay(
    synthetic_medlama_hub, tmp_path, capsys, monkeypatch
):
    """Measured before: an OSError 28 traceback (the previous outputs were left intact)."""
    import medprobe.run
    from test_probe_outputs import LookupProber

    out = tmp_path / "runs"
    monkeypatch.setattr(medprobe.run, "make_prober", lambda *args, **kwargs: LookupProber())
    model = str(save_tiny_bert(tmp_path / "tiny"))  # checked to be a model folder; the stand-in prober ranks
    args = ["probe", "--prober", "contrastive", "--dataset", str(synthetic_medlama_hub), "--model", model]
    args += ["--per-relation", "1", "--out", str(out / "results.json")]
    assert main(args) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real_write_text = Path.write_text

    def full(self, text, *more, **kwargs):
        if self.name.startswith(".results-tmp-"):
            raise no_space(None)  # as a write() on a full disk: no file named
        return real_write_text(self, text, *more, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)
    capsys.readouterr()
    assert main([*args[:-4], "--per-relation", "2", "--out", str(out / "results.json")]) == 2
    assert capsys.readouterr().err.endswith(
        f"medprobe: error: cannot write the output {out / 'results.json'}: no space left on the device; the outputs there "
        "before are as they were: free space, or choose another --out\n"
    )
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_full_disk_during_a_profile_is_one_line_and_the_previous_profile_stays(tmp_path, capsys, monkeypatch):
    """Measured before: an OSError 28 traceback (the previous profile was left intact)."""
    import fake_runs
    import medprobe.run
    from test_profile_folder import profile_args, snapshot

    encoder = tmp_path / "encoder"
    save_tiny_bert(encoder)
    monkeypatch.setattr(medprobe.run, "run", fake_runs.fake_run)
    out = tmp_path / "P"
    assert main(profile_args(str(encoder), out, "--seed", "1")) == 0
    before = snapshot(out)

    def full(request, print_fn=print, entries=None):
        raise no_space(str(Path(request.out).with_name(f".{Path(request.out).stem}-tmp-1.json")))

    monkeypatch.setattr(medprobe.run, "run", full)
    capsys.readouterr()
    assert main(profile_args(str(encoder), out, "--seed", "2")) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith(f"medprobe: error: cannot write the output {out}/runs/") and "no space left on the device" in err
    assert snapshot(out) == before and leftovers(out) == []
