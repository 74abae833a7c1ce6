"""The real MedLAMA the benchmark scripts probe: a built folder given, or the release in ../shared/data
built once into /tmp/medlama_full (the release files are never copied into the repository)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

RELEASE = Path(__file__).resolve().parents[2] / "shared" / "data" / "medlama"
BUILT = Path("/tmp/medlama_full")


def built_medlama(dataset: str | None = None, env: dict[str, str] | None = None) -> str:
    """`dataset` when given; else the release built into BUILT (once: a later call reuses it)."""
    if dataset:
        return dataset
    if not BUILT.exists():
        subprocess.run(
            [sys.executable, "-m", "medprobe.cli", "build", "medlama", "--data-dir", str(RELEASE), "--out", str(BUILT)],
            check=True,
            env=env,
        )
    return str(BUILT)
