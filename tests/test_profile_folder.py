"""The folder `medprobe profile` writes (medprobe/profiling/folder.py): one profile or the one before, never a mix.

A user's files are refused unless --overwrite; a killed, interrupted or terminated profile leaves the
previous profile byte for byte; a second profile into the same folder stops at once naming the first;
a profile resumes what a killed one left, reusing only the runs whose request and data are its own.

The kill and concurrency tests run the real command line in subprocesses (tests/build_pause.py pauses
it after a run), with medprobe.run.run stood in for (tests/fake_runs.py: the model is not the point).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from transformers import BertConfig

import fake_runs
import medprobe.run
from medprobe.cli import main
from medprobe.profiling.folder import disagreement, verified_run
from medprobe.records import load_run
from test_build_atomic import PAUSE, PROBERS_HOME, leftovers, signal_and_wait, snapshot, start_paused

SMALL = {"vocab_size": 40, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32}


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> str:
    """A model folder that is only a config: enough for the profile's plan (the runs are stood in for)."""
    folder = tmp_path_factory.mktemp("encoder")
    config = BertConfig(**SMALL)
    config.architectures = ["BertModel"]
    config.save_pretrained(folder)
    return str(folder)


@pytest.fixture
def fake_run(monkeypatch) -> list:
    monkeypatch.setattr(medprobe.run, "run", fake_runs.fake_run)
    monkeypatch.setattr(fake_runs, "CALLS", [])
    return fake_runs.CALLS


def profile_args(encoder: str, out: Path, *extra: str) -> list[str]:
    return ["profile", "--model", encoder, "--out", str(out), "--benchmarks", "medlama", *extra]


def values(out: Path) -> dict[str, float]:
    return {
        run["label"]: next(iter(run["record"]["metrics"].values()))
        for run in json.loads((out / "profile.json").read_text())["runs"]
    }


def start_paused_profile(step: str, args: list[str]) -> subprocess.Popen:
    """`medprobe ARGS` (a profile, its runs stood in for) in a subprocess, paused after `step`."""
    return start_paused(step, args, "--fake-runs")


# --- what OUT may hold ------------------------------------------------------------------------------


def test_a_folder_with_files_medprobe_did_not_write_is_refused_unless_overwrite(tmp_path, encoder, fake_run, capsys):
    """Measured before: `profile --out f2` replaced a user's profile.md and runs/*.json silently, exit 0."""
    out = tmp_path / "f2"
    (out / "runs").mkdir(parents=True)
    (out / "profile.md").write_text("my table\n")
    (out / "runs" / "medlama-full-contrastive.json").write_text('{"mine":1}\n')
    before = snapshot(out)
    assert main(profile_args(encoder, out)) == 2
    err = capsys.readouterr().err
    assert err == (
        f"medprobe: error: {out} already holds 2 file(s): profile.md, runs/medlama-full-contrastive.json, and no "
        "profile.json; a profile would replace it: pass --overwrite, or choose another --out\n"
    )
    assert snapshot(out) == before and fake_run == [] and leftovers(out) == []
    assert main([*profile_args(encoder, out), "--overwrite"]) == 0
    assert (out / "profile.md").read_text() != "my table\n" and disagreement(
        out, json.loads((out / "profile.json").read_text())
    ) is None


def test_a_profile_replaces_its_own_profile_but_not_files_added_or_changed_since(tmp_path, encoder, fake_run, capsys):
    out = tmp_path / "p"
    assert main(profile_args(encoder, out, "--seed", "1")) == 0
    assert main(profile_args(encoder, out, "--seed", "2")) == 0  # a profile medprobe wrote: replaced
    assert set(values(out).values()) == {0.252}
    (out / "runs" / "notes.txt").write_text("mine")
    before = snapshot(out)
    assert main(profile_args(encoder, out)) == 2
    assert "holds file(s) that are not part of its profile: runs/notes.txt" in capsys.readouterr().err
    assert snapshot(out) == before
    (out / "runs" / "notes.txt").unlink()
    (out / "profile.md").write_text("edited\n")
    before = snapshot(out)
    assert main(profile_args(encoder, out)) == 2
    assert "holds file(s) changed since medprobe wrote them: profile.md" in capsys.readouterr().err
    assert snapshot(out) == before


# --- kills, interruptions and a second profile: real command lines ------------------------------------


@pytest.fixture
def previous(tmp_path, encoder, fake_run) -> Path:
    """A complete profile (seed 1) in P, the one a killed profile must leave as it was."""
    out = tmp_path / "P"
    assert main(profile_args(encoder, out, "--seed", "1")) == 0
    return out


def test_sigkill_leaves_the_previous_profile_byte_identical_and_publishable(previous, encoder):
    """Measured before: a --seed 5 profile killed at its last run left profile.json of seed 1 naming run files of seed 5."""
    before = snapshot(previous)
    process = start_paused_profile("medprobe.run:run", profile_args(encoder, previous, "--seed", "5"))
    assert any(name.startswith(".P.medprobe-tmp-") for name in leftovers(previous)), "the profile was staging"
    signal_and_wait(process, signal.SIGKILL)
    assert snapshot(previous) == before and set(values(previous).values()) == {0.251}
    assert disagreement(previous, json.loads((previous / "profile.json").read_text())) is None


@pytest.mark.parametrize("signum, code, line", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_ctrl_c_and_sigterm_before_any_run_is_written_leave_the_previous_profile_and_nothing_beside_it(
    previous, encoder, signum, code, line
):
    before = snapshot(previous)
    # paused as the first run's files, all written under temporary names, are about to be renamed into place
    process = start_paused_profile("before:medprobe.atomic:signals_deferred", profile_args(encoder, previous, "--seed", "5"))
    returned, err = signal_and_wait(process, signum)
    assert (returned, err.splitlines()[-1]) == (code, line) and "Traceback" not in err
    assert snapshot(previous) == before and leftovers(previous) == []


@pytest.mark.parametrize("signame, code, line", [("SIGTERM", 143, "terminated"), ("SIGINT", 130, "interrupted")])
def test_a_signal_during_a_runs_commit_stops_the_profile_after_it_and_a_rerun_resumes(
    previous, encoder, fake_run, capsys, signame, code, line
):
    """Measured before: the held signal was dropped: the profile ran every other run and exited 0, its folder
    written. Now the signal takes effect once the run's files are all renamed into place: the run is kept
    (journaled, in the staging folder left beside OUT), the next is not started, and a rerun resumes."""
    before = snapshot(previous)
    args = profile_args(encoder, previous, "--seed", "5")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROBERS_HOME), str(PAUSE.parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(  # signals itself just before renaming the first run's results JSON (its last rename)
        [sys.executable, str(PAUSE), "--fake-runs", f"{signame}:medlama-full-contrastive.json", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as in a terminal
    )
    assert (done.returncode, done.stderr.splitlines()[-1]) == (code, line) and "Traceback" not in done.stderr
    assert "run 2/2" not in done.stdout  # the next run was not started
    assert snapshot(previous) == before  # OUT is the previous profile until a profile finishes
    (stage,) = [previous.parent / name for name in leftovers(previous) if ".medprobe-tmp-" in name]
    assert f"kept {stage.name} beside P" in done.stdout
    journaled = json.loads((stage / "progress.json").read_text())["runs"]
    assert list(journaled) == ["medlama-full-contrastive"]
    assert load_run(stage / "out" / "runs" / "medlama-full-contrastive.json").outcomes is not None  # complete, verifying
    assert sorted(p.name for p in (stage / "out" / "runs").iterdir()) == [
        "medlama-full-contrastive.json",
        "medlama-full-contrastive.outcomes.jsonl",
        "medlama-full-contrastive.predictions.jsonl",
    ]

    fake_run.clear()  # (the previous profile's runs)
    capsys.readouterr()
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert printed.count("reused from the killed profile") == 1 and [r.config for r in fake_run] == ["hard"]
    assert set(values(previous).values()) == {0.255} and leftovers(previous) == []
    assert disagreement(previous, json.loads((previous / "profile.json").read_text())) is None


def test_a_second_profile_into_the_same_folder_stops_at_once_naming_the_first(previous, encoder):
    """Measured before: two concurrent profiles both exited 0 with mismatched records (or a FolderLocked traceback)."""
    first = start_paused_profile("before:medprobe.atomic:signals_deferred", profile_args(encoder, previous, "--seed", "2"))
    try:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROBERS_HOME), os.environ.get("PYTHONPATH", "")])}
        start = time.perf_counter()
        second = subprocess.run(
            [sys.executable, "-m", "medprobe.cli", *profile_args(encoder, previous, "--seed", "3")],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        seconds = time.perf_counter() - start
    finally:
        signal_and_wait(first, signal.SIGTERM)
    assert second.returncode == 2 and second.stdout == "" and seconds < 15  # (the interpreter's start included)
    assert second.stderr == (
        f"medprobe: error: {previous.absolute()}: another `medprobe profile` (pid {first.pid}) is writing "
        "this folder (lock .P.medprobe-lock beside it); wait for it to finish, or choose another --out\n"
    )
    assert set(values(previous).values()) == {0.251} and leftovers(previous) == []


# --- resuming what a killed profile left --------------------------------------------------------------


def test_a_profile_resumes_a_killed_one_reusing_only_runs_of_the_same_request(tmp_path, encoder, fake_run, capsys):
    out = tmp_path / "P"
    # MST is built into the staging folder (--quick sizes), and built again, to the same bytes, by the resumed profile
    args = ["profile", "--model", encoder, "--out", str(out), "--benchmarks", "medlama", "mst", "--seed", "5", "--quick"]
    process = start_paused_profile("medprobe.run:run@4", args)
    signal_and_wait(process, signal.SIGKILL)  # runs 1-3 done and journaled (medlama full, hard, mst), 4 (mst scratch) not
    assert not out.exists() and len([name for name in leftovers(out) if ".medprobe-tmp-" in name]) == 1
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert printed.count("reused from the killed profile") == 3 and [r.prober_options for r in fake_run] == [{"scratch": True}]
    profile = json.loads((out / "profile.json").read_text())
    assert disagreement(out, profile) is None and leftovers(out) == []
    assert [run["label"] for run in profile["runs"]] == [
        "medlama-full-contrastive",
        "medlama-hard-contrastive",
        "mst-mlm-head",
        "mst-mlm-head-scratch",
    ]
    assert ".medprobe-tmp-" not in (out / "profile.json").read_text() + (out / "runs" / "mst-mlm-head.json").read_text()
    # measured before: the reused runs came without their .outcomes.jsonl (only the JSON and predictions were moved),
    # and `compare` of the resumed profile exited 2
    for run in profile["runs"]:
        assert verified_run(out, run).outcomes is not None and f"runs/{run['label']}.outcomes.jsonl" in run["files"]
    assert main(["compare", str(out), str(out)]) == 0


def test_a_resumed_profile_runs_again_what_another_request_or_changed_files_made(tmp_path, encoder, fake_run, capsys):
    out = tmp_path / "P"
    process = start_paused_profile("medprobe.profiling.run:headline_rows", profile_args(encoder, out, "--seed", "5"))
    signal_and_wait(process, signal.SIGKILL)  # both runs done and journaled, profile.json not written
    (stage,) = [out.parent / name for name in leftovers(out) if ".medprobe-tmp-" in name]
    (stage / "out" / "runs" / "medlama-hard-contrastive.json").write_text("{}")  # changed since it was journaled
    assert main(profile_args(encoder, out, "--seed", "5")) == 0
    printed = capsys.readouterr().out
    assert printed.count("reused from the killed profile") == 1 and [r.config for r in fake_run] == ["hard"]
    assert "run medlama-hard-contrastive of the killed profile is run again" in printed

    process = start_paused_profile("medprobe.profiling.run:headline_rows", profile_args(encoder, out, "--seed", "5"))
    signal_and_wait(process, signal.SIGKILL)
    fake_run.clear()
    assert main(profile_args(encoder, out, "--seed", "6")) == 0  # another request: nothing is reused
    assert "reused" not in capsys.readouterr().out and [r.seed for r in fake_run] == [6, 6]
    assert set(values(out).values()) == {0.256} and leftovers(out) == []


def test_a_resumed_profile_runs_again_what_a_model_retrained_in_place_made(tmp_path, encoder, fake_run, capsys):
    """The model's weights are part of a run's key: the same folder holding other weights is another model."""
    import shutil

    model = tmp_path / "model"
    shutil.copytree(encoder, model)
    (model / "model.safetensors").write_bytes(b"weights before the kill")
    out = tmp_path / "P"
    process = start_paused_profile("medprobe.profiling.run:headline_rows", profile_args(str(model), out, "--seed", "5"))
    signal_and_wait(process, signal.SIGKILL)  # both runs done and journaled
    (model / "model.safetensors").write_bytes(b"weights retrained in place")
    assert main(profile_args(str(model), out, "--seed", "5")) == 0
    printed = capsys.readouterr().out
    assert "reused" not in printed and len(fake_run) == 2


def test_a_run_of_a_plugin_is_keyed_by_the_plugins_version_and_a_builtin_run_as_before():
    from medprobe.profiling.folder import run_key

    request, source = {"task": "toy", "prober": "toy_order"}, {"dataset": "data"}
    builtin = run_key(request, source, "c" * 64, "w" * 64)
    assert run_key(request, source, "c" * 64, "w" * 64, {}) == builtin  # no plugin: the key of earlier journals
    used = {"medprobe-toy": {"version": "0.1.0", "entries": ["task toy"]}}
    upgraded = {"medprobe-toy": {"version": "0.2.0", "entries": ["task toy"]}}
    first = run_key(request, source, "c" * 64, "w" * 64, used)
    assert first != builtin and first == run_key(request, source, "c" * 64, "w" * 64, used)
    assert run_key(request, source, "c" * 64, "w" * 64, upgraded) != first  # an upgraded plugin's run is not reused
