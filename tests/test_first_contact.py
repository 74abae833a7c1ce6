"""First contact, as a new user tries it: the documented commands run as written, a second demo replaces the
first whole or not at all, a MedLAMA folder given to mlm-head says what mlm-head runs, and a profile of the
shipped sample says so in its figure as in its table.

Measured before: `probe --dataset out/medlama` failed (no documented command made the folder); a second `demo`
interrupted mid-way left its new untuned runs beside the first demo's rewired ones; `--prober mlm-head --dataset
out/medlama` said `Unknown split "train"`; profile.png of a sample run had no sample mark.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from medprobe.demo import SAMPLE_DATASET
from medprobe.profiling.profile import Profile, profile_figure
from medprobe.registry import task_entry
from test_docs_code_blocks import PAGES, ROOT, blocks_of

USES = re.compile(r"out/medlama(?![\w-])")  # the folder itself, not out/medlama-2025AA
MAKES = re.compile(r"medprobe build medlama[^`\n]*--out out/medlama(?![\w-])")


def medprobe_cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "medprobe.cli", *argv], cwd=cwd, capture_output=True, text=True, env=env, timeout=300
    )


def one_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("medprobe: error: "), result.stderr
    return result.stderr


# --- out/medlama ------------------------------------------------------------------------------------------


def test_every_page_that_probes_out_medlama_says_how_to_make_it():
    """A page whose code uses out/medlama gives the command that makes it: the release's build or the sample's."""
    lacking = []
    for page in PAGES:
        uses = any(USES.search(block.code) for block in blocks_of(page) if block.language in ("bash", "python"))
        if uses and not MAKES.search(page.read_text(encoding="utf-8")):
            lacking.append(str(page.relative_to(ROOT)))
    assert lacking == []


def test_build_sample_makes_out_medlama_and_refuses_a_user_s_folder(tmp_path):
    made = medprobe_cli("build", "medlama", "--sample", "--out", "out/medlama", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "NOT MedLAMA" in made.stdout
    copied = sorted(p.relative_to(tmp_path / "out" / "medlama").as_posix() for p in (tmp_path / "out" / "medlama").rglob("*"))
    assert copied == sorted(p.relative_to(SAMPLE_DATASET).as_posix() for p in SAMPLE_DATASET.rglob("*"))
    assert medprobe_cli("build", "medlama", "--sample", "--out", "out/medlama", cwd=tmp_path).returncode == 0  # its own copy
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "README.md").write_text("my notes\n")
    line = one_line(medprobe_cli("build", "medlama", "--sample", "--out", "mine", cwd=tmp_path))
    assert "holds files it did not write (README.md)" in line and "--overwrite" in line
    assert (mine / "README.md").read_bytes() == b"my notes\n" and os.listdir(mine) == ["README.md"]


def test_build_sample_of_a_benchmark_without_one_names_those_that_have_one(tmp_path):
    line = one_line(medprobe_cli("build", "mst", "--sample", "--out", "out/mst", cwd=tmp_path))
    assert "no sample of mst ships with medprobe (samples: medlama)" in line and not (tmp_path / "out").exists()


# --- mlm-head on a MedLAMA folder ---------------------------------------------------------------------------


@pytest.mark.parametrize("task", [[], ["--task", "medlama"]], ids=["default task", "--task medlama"])
def test_mlm_head_on_a_medlama_folder_says_it_runs_only_mst(tmp_path, task):
    dataset = tmp_path / "out" / "medlama"
    shutil.copytree(SAMPLE_DATASET, dataset)  # as `medprobe build medlama --sample --out out/medlama` makes it
    line = one_line(
        medprobe_cli("probe", "--prober", "mlm-head", *task, "--dataset", str(dataset), "--model", "minilm", cwd=tmp_path)
    )
    assert (
        "--prober mlm-head cannot run the medlama task: it needs a prober that does ranking (the tasks mlm-head can run: mst)"
        in line
    )
    assert "split" not in line and not (tmp_path / "results.json").exists()


# --- the demo folder ------------------------------------------------------------------------------------------

DEMO = textwrap.dedent(
    """
    import os, signal, sys
    from medprobe.cli import demo, main

    text, mode, out = sys.argv[1:4]

    def untuned(ctx):
        (ctx.out / "untuned.json").write_text(text)

    def rewired(ctx):
        if mode == "interrupt":
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C between the two steps
        (ctx.out / "rewired.json").write_text(text)

    demo.DEMO_STEPS[:] = [demo.DemoStep("untuned", "untuned", untuned), demo.DemoStep("rewired", "rewired", rewired)]
    sys.exit(main(["demo", "--sample", "--skip-mst", "--out", out]))
    """
)


def run_demo(tmp_path: Path, text: str, mode: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    return subprocess.run(
        [sys.executable, "-c", DEMO, text, mode, "out/demo"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300
    )


def test_a_second_demo_says_it_replaces_the_first_and_an_interrupted_one_leaves_it_whole(tmp_path):
    first = run_demo(tmp_path, "first", "finish")
    assert first.returncode == 0, first.stderr
    out = tmp_path / "out" / "demo"
    before = {name: (out / name).read_bytes() for name in os.listdir(out)}
    assert {"untuned.json", "rewired.json", "demo.json", "demo.log"} <= set(before)
    interrupted = run_demo(tmp_path, "second", "interrupt")
    assert interrupted.returncode == 130, interrupted.stderr
    assert {name: (out / name).read_bytes() for name in os.listdir(out)} == before  # no new untuned beside old rewired
    assert sorted(os.listdir(tmp_path / "out")) == ["demo"]  # no staging folder or lock left beside it
    assert "out/demo holds an earlier demo; this one replaces it when it finishes" in interrupted.stdout
    second = run_demo(tmp_path, "second", "finish")
    assert second.returncode == 0, second.stderr
    assert (out / "untuned.json").read_text() == (out / "rewired.json").read_text() == "second"


# --- profile.png of the shipped sample -------------------------------------------------------------------------


def test_the_profile_figure_of_a_sample_run_says_it_is_not_medlama():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from figure_overlaps import overlaps
    from test_figures import ROWS

    plan = task_entry("medlama").profile
    data = {"medlama": {"benchmark": "medlama", "dataset": "x", "source": plan.data_text, "note": "", "sample": True}}
    profile = Profile(model="minilm", kind="encoder", kind_reason="", settings={}, headline=ROWS, data=data)
    fig = profile_figure(profile)
    try:
        texts = [text.get_text() for text in fig.texts]
        labels = [label.get_text() for label in fig.axes[0].get_yticklabels()]
        assert any("this is NOT MedLAMA" in text for text in texts)
        assert sum("(sample*)" in label for label in labels) == 2  # medlama full and hard; mst and context variance not
        assert overlaps(fig) == []
    finally:
        plt.close(fig)
