"""The ruff configuration of pyproject.toml holds for the whole repository (ruff is in the test extra)."""

import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_ruff_check_finds_nothing():
    ruff = pytest.importorskip("ruff.__main__", reason="ruff is in the test extra: pip install -e '.[test]'")
    done = subprocess.run(
        [ruff.find_ruff_bin(), "check", "--no-cache", "--output-format", "concise", "."],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"ruff check . (ruff check --fix . fixes the [*] ones):\n{done.stdout}{done.stderr}"


def test_ruff_format_changes_nothing():
    ruff = pytest.importorskip("ruff.__main__", reason="ruff is in the test extra: pip install -e '.[test]'")
    done = subprocess.run(
        [ruff.find_ruff_bin(), "format", "--check", "--no-cache", "."], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"ruff format --check . (ruff format . formats them):\n{done.stdout}{done.stderr}"
