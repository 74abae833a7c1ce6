"""One progress policy (medprobe.progress): a bar on a terminal, a plain line every few seconds otherwise, nothing
when quiet; the libraries' bars (datasets, transformers) included.

Measured before (issue 34): `medprobe probe` redirected to a file wrote 22 KB of tqdm frames (carriage returns),
`medprobe.probe(..., quiet=True)` still printed "Generating test split: 106 examples", and `publish dataset
--dry-run` printed datasets' bars.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from medprobe import progress
from synthetic_runs import write_medlama_run
from tiny_bert import save_tiny_bert

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_redirected_progress_is_plain_lines_every_interval_and_one_at_the_end(capsys, monkeypatch):
    monkeypatch.setenv("MEDPROBE_PROGRESS", "lines")
    monkeypatch.setattr(progress, "INTERVAL", 0.0)  # a line at every update
    with progress.progress_bar(total=3, desc="encoding", unit="text") as bar:
        for _ in range(3):
            bar.update(1)
    err = capsys.readouterr().err
    assert "\r" not in err and err.splitlines()[0].startswith("encoding: 1/3 texts (33%), ")
    assert err.splitlines()[-1].startswith("encoding: done, 3/3 texts (100%), ") and len(err.splitlines()) == 4
    monkeypatch.setattr(progress, "INTERVAL", 3600.0)  # a long run: only the last line
    assert list(progress.progress_bar(range(5), desc="scoring", unit="batch")) == list(range(5))
    assert capsys.readouterr().err.count("\n") == 1


def test_quiet_shows_nothing_and_puts_the_library_bars_back(capsys, monkeypatch):
    import datasets
    from transformers.utils import logging as transformers_logging

    monkeypatch.setenv("MEDPROBE_PROGRESS", "lines")
    # from the libraries' bars on, whatever an earlier test in this process left (lm-eval switches datasets' off)
    was = (datasets.are_progress_bars_disabled(), transformers_logging.is_progress_bar_enabled())
    datasets.enable_progress_bars()
    transformers_logging.enable_progress_bar()
    try:
        with progress.quiet():
            assert datasets.are_progress_bars_disabled() and not transformers_logging.is_progress_bar_enabled()
            for _ in progress.progress_bar(range(3), desc="x"):
                pass
        assert capsys.readouterr().err == ""
        assert not datasets.are_progress_bars_disabled() and transformers_logging.is_progress_bar_enabled()
    finally:
        (datasets.disable_progress_bars if was[0] else datasets.enable_progress_bars)()
        (transformers_logging.enable_progress_bar if was[1] else transformers_logging.disable_progress_bar)()


COMMANDS = """
import json, sys
from medprobe.cli import run_command
logs = {}
for name, argv in json.loads(sys.argv[1]).items():
    with open(sys.argv[2] + "/" + name + ".log", "w") as log:
        sys.stderr = log  # a file: not a terminal
        code = run_command(argv, whole_process=True)
        sys.stderr = sys.__stderr__
    assert code == 0, (name, code, open(sys.argv[2] + "/" + name + ".log").read()[-2000:])
"""


def test_every_command_redirected_to_a_file_writes_no_carriage_return_and_a_small_log(synthetic_medlama_hub, tmp_path):
    """The `medprobe` program's policy (libraries' bars switched off through their environment, medprobe's own as
    plain lines), for a build, a probe that loads and encodes, a comparison and an lm-eval export, in one process."""
    model = save_tiny_bert(tmp_path / "tiny")
    runs = [str(write_medlama_run(tmp_path / f"{n}.json", 0.5, seed=n)) for n in (1, 2)]
    mst = str(tmp_path / "mst")
    commands = {
        "build": ["build", "mst", "--config", "comparison", "--out", mst]
        + ["--set", "train_size=30", "--set", "validation_size=6", "--set", "test_size=12"],
        "probe": ["probe", "--prober", "contrastive", "--dataset", str(synthetic_medlama_hub), "--model", str(model)]
        + ["--device", "cpu", "--no-cache", "--out", str(tmp_path / "probe.json")],
        "compare": ["compare", *runs],
        "export": ["export", "lm-eval", "mst", "--dataset", mst, "--out", str(tmp_path / "tasks")],
    }
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("MEDPROBE_PROGRESS", None)
    done = subprocess.run(
        [sys.executable, "-c", COMMANDS, json.dumps(commands), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for name in commands:
        log = (tmp_path / f"{name}.log").read_text()
        assert "\r" not in log, f"{name}: carriage-return frames in a log: {log[:500]!r}"
        assert len(log) < 4000, f"{name}: {len(log)} characters of progress in a log"
    assert "encoding names: done, " in (tmp_path / "probe.log").read_text()  # medprobe's own progress, as one line


@pytest.mark.slow
def test_the_python_api_quiet_prints_nothing_at_all(synthetic_medlama_hub, tmp_path, capfd):
    import medprobe

    model = save_tiny_bert(tmp_path / "tiny")
    capfd.readouterr()
    record = medprobe.probe(
        "contrastive", dataset=str(synthetic_medlama_hub), config="hard", model=str(model), device="cpu", cache=False, quiet=True
    )
    out, err = capfd.readouterr()
    assert record.metrics and out == "" and err == ""


FRESH_PROBE = """
import sys
import medprobe
assert "datasets" not in sys.modules  # a fresh interpreter: datasets is imported by the call
medprobe.probe("contrastive", dataset=medprobe.sample("medlama"), config="hard", model=sys.argv[1], device="cpu", quiet=True)
"""


def test_the_python_api_quiet_prints_nothing_on_a_fresh_datasets_cache(tmp_path):
    """Measured before (issue 37): in a fresh interpreter with an empty Hugging Face cache, quiet=True still printed
    "Generating test split: 106 examples" and transformers' "Loading weights" bars: the libraries were switched off
    only if imported before the call, and the test above runs where they are (and the sample is in the cache)."""
    model = save_tiny_bert(tmp_path / "tiny")
    env = {
        **os.environ,
        "HF_HOME": str(tmp_path / "hf"),  # empty: the sample is generated into the datasets cache
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
        "PYTHONWARNINGS": "default",
    }
    for name in ("MEDPROBE_PROGRESS", "HF_DATASETS_CACHE", "HF_HUB_CACHE", "HF_DATASETS_DISABLE_PROGRESS_BARS"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", FRESH_PROBE, str(model)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (done.stdout, done.stderr) == ("", "")
    assert any((tmp_path / "hf").rglob("*.arrow"))  # the split was generated, not found in a warm cache


def test_an_mlm_head_probe_asks_for_no_bar_the_policy_switched_off(tmp_path):
    """Measured before (issue 37): `medprobe probe --prober mlm-head` (and `medprobe demo`'s MST step) warned
    "UserWarning: Cannot enable progress bars: environment variable HF_HUB_DISABLE_PROGRESS_BARS=1 is set": the
    program's policy sets the variable, and the prober switched transformers' bars (and with them huggingface_hub's)
    back on after each from_pretrained. With warnings shown, nothing warns (the Trainer's scratch folder included)."""
    from medprobe.building.build import build
    from test_mlm_head import save_tiny_bert as save_tiny_masked_lm

    model = save_tiny_masked_lm(tmp_path / "mlm", with_head=True)
    mst = tmp_path / "mst"
    build("mst", mst, configs=["comparison"], params={"train_size": 12, "validation_size": 3, "test_size": 6})
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
        "PYTHONWARNINGS": "default",
    }
    for name in ("MEDPROBE_PROGRESS", "HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS"):
        env.pop(name, None)
    argv = ["probe", "--prober", "mlm-head", "--dataset", str(mst), "--model", model, "--seeds", "1", "--epochs", "1"]
    argv += ["--device", "cpu", "--out", str(tmp_path / "run.json")]
    done = subprocess.run([sys.executable, "-m", "medprobe", *argv], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Warning" not in done.stderr, done.stderr
