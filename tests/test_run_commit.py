"""A run's files (results JSON, outcomes, predictions) are one unit: after a failure, a signal or a kill at any
rename they are all the previous run's or all the new run's, or the JSON reads as an interrupted write.

Measured before: the files were renamed one at a time with signals live, so a SIGTERM between two renames (made
reproducible by slowing fsync) left the old JSON beside the new outcomes and predictions. Each test here stops the
commit at every rename in turn (a patched os.replace that raises, signals, or ends the process) rather than by
timing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from medprobe.atomic import Terminated, signals_deferred, sigterm_raises
from medprobe.records import RecordError, load_run
from test_probe_outputs import run_lookup

TESTS = Path(__file__).resolve().parent
RENAMES = 3  # outcomes, predictions, then the results JSON


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def previous(synthetic_medlama_hub, tmp_path, monkeypatch) -> Path:
    """A finished run (the first query of each relation) in OUT: the files a failed second run must leave."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    run_lookup(monkeypatch, synthetic_medlama_hub, out_dir, per_relation=1)
    return out_dir


def replaces_counted(monkeypatch, at: int, action) -> None:
    """os.replace calls `action()` instead of its `at`-th rename (1-based), and renames as usual otherwise."""
    real = os.replace
    calls = {"n": 0}

    def replace(source, target):
        calls["n"] += 1
        if calls["n"] == at:
            action()
        return real(source, target)

    monkeypatch.setattr(os, "replace", replace)


@pytest.mark.parametrize("at", range(1, RENAMES + 1))
def test_a_rename_that_fails_puts_back_every_file_of_the_previous_run(synthetic_medlama_hub, previous, monkeypatch, at):
    before = snapshot(previous)

    def fail():
        raise OSError(5, "Input/output error")

    replaces_counted(monkeypatch, at, fail)
    with pytest.raises(OSError):
        run_lookup(monkeypatch, synthetic_medlama_hub, previous, per_relation=2)
    monkeypatch.undo()
    assert snapshot(previous) == before  # byte for byte, and nothing beside them (no temporary, no kept link)
    assert load_run(previous / "results.json").record.subset["options"] == {"per_relation": 1}


@pytest.mark.parametrize("at", range(1, RENAMES + 1))
def test_a_sigterm_during_the_renames_waits_until_every_file_is_the_new_run_then_takes_effect(
    synthetic_medlama_hub, previous, monkeypatch, at
):
    """Measured before: the held SIGTERM was dropped, and the run returned as if none had come."""
    replaces_counted(monkeypatch, at, lambda: os.kill(os.getpid(), signal.SIGTERM))
    with sigterm_raises(), pytest.raises(Terminated):  # as the CLI runs every command: SIGTERM raises, after the commit
        run_lookup(monkeypatch, synthetic_medlama_hub, previous, per_relation=2)
    monkeypatch.undo()
    assert sorted(p.name for p in previous.iterdir()) == ["predictions.jsonl", "results.json", "results.outcomes.jsonl"]
    assert load_run(previous / "results.json").record.subset["options"] == {"per_relation": 2}


KILLED = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, {tests!r})
    import medprobe.run
    from medprobe.run import RunRequest, run
    from test_probe_outputs import LookupProber

    medprobe.run.make_prober = lambda *args, **kwargs: LookupProber()
    real, done = os.replace, [0]

    def replace(source, target):
        if done[0] == {renames}:
            os._exit(137)  # as a SIGKILL: no Python cleanup, no rollback
        real(source, target)
        done[0] += 1

    os.replace = replace
    out = {out!r}
    run(RunRequest(task="medlama", prober="contrastive", dataset={hub!r}, config="full", model="none",
                   task_options={{"per_relation": 2, "predictions": out + "/predictions.jsonl"}}, out=out + "/results.json"))
    """
)


def test_a_run_killed_between_two_renames_reads_as_an_interrupted_write_never_as_a_run(
    synthetic_medlama_hub, tmp_path, monkeypatch
):
    """Killed before the 1st, 2nd or 3rd rename (the JSON, renamed last), each in its own process, all at once."""
    folders = {}
    for renames in range(RENAMES):
        folders[renames] = tmp_path / f"out{renames}"
        folders[renames].mkdir()
        run_lookup(monkeypatch, synthetic_medlama_hub, folders[renames], per_relation=1)
    monkeypatch.undo()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1"}
    children = {
        renames: subprocess.Popen(
            [
                sys.executable,
                "-c",
                KILLED.format(tests=str(TESTS), renames=renames, out=str(out), hub=str(synthetic_medlama_hub)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for renames, out in folders.items()
    }
    for renames, child in children.items():
        _, err = child.communicate(timeout=180)
        assert child.returncode == 137, err[-2000:]
        results = folders[renames] / "results.json"
        if renames == 0:  # killed before any rename: the previous run, whole
            assert load_run(results).record.subset["options"] == {"per_relation": 1}
        else:  # some files are the new run's, the JSON is the old one's: never read as a run
            with pytest.raises(RecordError, match="interrupted write"):
                load_run(results)


@pytest.mark.parametrize("signum, raised", [(signal.SIGTERM, Terminated), (signal.SIGINT, KeyboardInterrupt)])
def test_a_signal_held_by_signals_deferred_is_raised_when_the_block_ends_and_not_before(signum, raised):
    done = []
    with sigterm_raises(), pytest.raises(raised):
        with signals_deferred() as received:
            os.kill(os.getpid(), signum)
            done.append("the rest of the block")  # not cut short
        done.append("after the block")  # never: the signal takes effect as the block ends
    assert done == ["the rest of the block"] and received == [signum]


def test_a_signal_held_by_an_inner_block_waits_for_the_outer_one():
    done = []
    with sigterm_raises(), pytest.raises(Terminated):
        with signals_deferred():
            with signals_deferred():
                os.kill(os.getpid(), signal.SIGTERM)
            done.append("the rest of the outer block")
    assert done == ["the rest of the outer block"]


# --- the command line: a signal during the commit ends the probe with the shell's code, its files complete -------

SIGNALLED = {  # (signal, the file at whose rename the probe signals itself): (exit code, last line of stderr)
    ("SIGTERM", "out.outcomes.jsonl"): (143, "terminated"),  # the 1st rename
    ("SIGTERM", "out.jsonl"): (143, "terminated"),  # the 2nd (the predictions)
    ("SIGTERM", "out.json"): (143, "terminated"),  # the 3rd and last (the results JSON)
    ("SIGINT", "out.outcomes.jsonl"): (130, "interrupted"),
}


def test_a_probe_signalled_during_its_commit_exits_143_or_130_with_every_file_of_the_run_written(tmp_path, synthetic_medlama_hub):
    """Measured before: exit 0, as if no signal had come (atomic.signals_deferred dropped it). The probes run at once,
    each signalling itself (tests/build_pause.py SIGNAL:NAME) just before one rename of its commit."""
    from test_build_atomic import PAUSE, PROBERS_HOME
    from tiny_bert import save_tiny_bert

    model = str(save_tiny_bert(tmp_path / "tiny"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROBERS_HOME), str(TESTS), os.environ.get("PYTHONPATH", "")])}
    children = {}
    for number, (signame, name) in enumerate(SIGNALLED):
        out = tmp_path / f"out{number}"
        args = ["probe", "--prober", "contrastive", "--dataset", str(synthetic_medlama_hub), "--model", model]
        args += ["--device", "cpu", "--no-cache", "--out", str(out / "out.json"), "--predictions", str(out / "out.jsonl")]
        children[(signame, name)] = (
            out,
            subprocess.Popen(
                [sys.executable, str(PAUSE), f"{signame}:{name}", *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as in a terminal
            ),
        )
    for key, (out, child) in children.items():
        _, err = child.communicate(timeout=300)
        assert (child.returncode, err.strip().splitlines()[-1]) == SIGNALLED[key] and "Traceback" not in err, err[-2000:]
        assert sorted(p.name for p in out.iterdir()) == ["out.json", "out.jsonl", "out.outcomes.jsonl"]
        loaded = load_run(out / "out.json")  # every file is the run's: sha256 and numbers checked
        assert loaded.outcomes is not None and loaded.record.prober == "contrastive"
