"""Files the user named, and files the user did not: `probe` and `compare` replace a file only when medprobe wrote
it (a results JSON, the files its record names by sha256, a plot or page with medprobe's name in it) and refuse
anything else, naming it, in one line, before any model loads, unless --overwrite (medprobe.records.owned,
medprobe.marks). Measured before: `probe --out uf/notes.json` replaced a user's notes.json and their
notes.outcomes.jsonl, and `compare --html C2/report.html --plot C2/forest.png` replaced the user's files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from medprobe.atomic import UnwritableOutput
from medprobe.cli import main
from medprobe.marks import carries_mark, figure_metadata
from medprobe.records.outcomes import outcomes_path
from medprobe.records.owned import refuse_foreign_outputs
from synthetic_runs import write_medlama_run

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DATASET = REPO_ROOT / "medprobe" / "demo_data" / "medlama_sample"  # the shipped MedLAMA-format sample
PROBE = ["probe", "--prober", "contrastive", "--dataset", str(SAMPLE_DATASET), "--config", "hard", "--model", "minilm"]


def medprobe_cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "medprobe.cli", *argv], cwd=cwd, capture_output=True, text=True, env=env, timeout=300
    )


def one_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("medprobe: error: "), result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return result.stderr


# --- probe ----------------------------------------------------------------------------------------------


def test_probe_refuses_a_user_s_json_at_out_and_leaves_it_byte_identical(tmp_path):
    (tmp_path / "uf").mkdir()
    notes = tmp_path / "uf" / "notes.json"
    notes.write_text('{"my": "notes"}\n')
    line = one_line(medprobe_cli(*PROBE, "--out", "uf/notes.json", cwd=tmp_path))
    assert "--out uf/notes.json is a file medprobe did not write" in line and "--overwrite" in line
    assert notes.read_bytes() == b'{"my": "notes"}\n' and os.listdir(tmp_path / "uf") == ["notes.json"]


def test_probe_refuses_a_user_s_file_under_the_outcomes_name_the_command_line_never_gave(tmp_path):
    (tmp_path / "uf").mkdir()
    mine = tmp_path / "uf" / "notes.outcomes.jsonl"
    mine.write_text("my own lines\n")
    line = one_line(medprobe_cli(*PROBE, "--out", "uf/notes.json", cwd=tmp_path))
    assert "--out's outcomes file uf/notes.outcomes.jsonl is a file medprobe did not write" in line
    assert "choose another --out" in line
    assert mine.read_bytes() == b"my own lines\n" and os.listdir(tmp_path / "uf") == ["notes.outcomes.jsonl"]


def test_probe_refuses_a_user_s_image_at_plot(tmp_path):
    figure = tmp_path / "figure.png"
    figure.write_bytes(b"\x89PNG\r\n\x1a\n not medprobe's")
    line = one_line(medprobe_cli(*PROBE, "--out", "r.json", "--plot", "figure.png", cwd=tmp_path))
    assert "--plot figure.png is a file medprobe did not write" in line and "choose another --plot" in line
    assert figure.read_bytes() == b"\x89PNG\r\n\x1a\n not medprobe's" and not (tmp_path / "r.json").exists()


def test_probe_says_which_earlier_run_it_replaces(tmp_path):
    """The default --out, results.json, held an earlier run that a second probe replaced without a word. Now the
    command names it before anything loads (here the model then fails: the earlier run stays as it was)."""
    earlier = write_medlama_run(tmp_path / "results.json", 0.5, seed=1)
    before = earlier.read_bytes()
    result = medprobe_cli(*PROBE[:-1], "no-such-model-folder/", cwd=tmp_path)
    created = json.loads(before)["created"]
    assert result.returncode == 2
    said, error = result.stderr.splitlines()[:2]
    assert said == (
        f"medprobe: --out results.json holds an earlier run (medlama/hard, contrastive on minilm, written {created}); "
        "this run replaces it when it finishes (give another --out to keep it)"
    )
    assert error.startswith("medprobe: error: ") and earlier.read_bytes() == before


@pytest.mark.slow
def test_overwrite_replaces_a_user_s_files_and_a_run_s_own_files_need_none(tmp_path):
    (tmp_path / "notes.json").write_text("mine\n")
    (tmp_path / "notes.outcomes.jsonl").write_text("mine too\n")
    argv = [*PROBE, "--per-relation", "1", "--out", "notes.json", "--plot", "notes.png"]
    assert medprobe_cli(*argv, "--overwrite", cwd=tmp_path).returncode == 0
    assert json.loads((tmp_path / "notes.json").read_text())["benchmark"] == "medlama"
    assert carries_mark(tmp_path / "notes.png")  # the plot says it is medprobe's
    again = medprobe_cli(*argv, cwd=tmp_path)  # its own files: replaced, saying so
    assert again.returncode == 0, again.stderr
    assert "--out notes.json holds an earlier run (medlama/hard, contrastive on minilm" in again.stderr


def test_a_file_a_killed_write_renamed_is_still_the_run_s(tmp_path):
    """A run killed between its renames leaves the new outcomes beside the old JSON (whose sha256 no longer matches)
    and the new JSON under its temporary name: the next run may replace them; a file no record names may not."""
    out = write_medlama_run(tmp_path / "run.json", 0.5, seed=1)
    outputs = {"--out": out, "--out's outcomes file": outcomes_path(out)}
    refuse_foreign_outputs(outputs, out)  # unchanged: ours
    newer = write_medlama_run(tmp_path / "newer" / "run.json", 0.3, seed=2)
    outcomes_path(out).write_bytes(outcomes_path(newer).read_bytes())  # renamed before the kill
    with pytest.raises(UnwritableOutput, match="outcomes file .* is a file medprobe did not write"):
        refuse_foreign_outputs(outputs, out)
    (tmp_path / f".run-tmp-{os.getpid() + 1}.json").write_bytes(newer.read_bytes())  # the JSON it did not rename
    refuse_foreign_outputs(outputs, out)


# --- compare ----------------------------------------------------------------------------------------------


@pytest.fixture
def two_runs(tmp_path) -> list[str]:
    return [str(write_medlama_run(tmp_path / "a.json", 0.5, seed=1)), str(write_medlama_run(tmp_path / "b.json", 0.3, seed=2))]


@pytest.mark.parametrize(
    "option, name, content", [("--html", "report.html", b"<p>my report</p>\n"), ("--plot", "forest.png", b"mine")]
)
def test_compare_refuses_a_user_s_page_or_plot(tmp_path, two_runs, option, name, content):
    (tmp_path / "C2").mkdir()
    (tmp_path / "C2" / name).write_bytes(content)
    line = one_line(medprobe_cli("compare", *two_runs, option, f"C2/{name}", cwd=tmp_path))
    assert f"{option} C2/{name} is a file medprobe did not write" in line and "--overwrite" in line
    assert (tmp_path / "C2" / name).read_bytes() == content and os.listdir(tmp_path / "C2") == [name]


def test_compare_replaces_its_own_page_and_plot_and_a_user_s_with_overwrite(tmp_path, two_runs, capsys):
    page, plot = tmp_path / "report.html", tmp_path / "forest.pdf"
    page.write_text("mine\n")
    plot.write_text("mine\n")
    argv = ["compare", *two_runs, "--html", str(page), "--plot", str(plot)]
    assert main([*argv, "--overwrite"]) == 0
    assert carries_mark(page) and carries_mark(plot)
    assert main(argv) == 0  # its own: replaced without --overwrite
    assert f"wrote {page}" in capsys.readouterr().out


# --- the mark ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["png", "pdf", "svg", "svgz", "eps", "ps"])
def test_every_format_that_keeps_a_creator_carries_medprobe_s_name(tmp_path, fmt):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1])
    mine, ours = tmp_path / f"mine.{fmt}", tmp_path / f"ours.{fmt}"
    fig.savefig(mine, format=fmt)
    fig.savefig(ours, format=fmt, metadata=figure_metadata(fmt))
    plt.close(fig)
    assert carries_mark(ours) and not carries_mark(mine)


def test_formats_without_a_creator_are_never_taken_for_medprobe_s(tmp_path):
    (tmp_path / "a.jpg").write_bytes(b"tEXtSoftware\x00medprobe")
    assert figure_metadata("jpg") is None and not carries_mark(tmp_path / "a.jpg")
