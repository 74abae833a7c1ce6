"""The data files of a folder written by `medprobe build`, found the way the folder states them.

A data file is named by its content (`<config>/<split>-00000-of-00001-<sha256[:16]>.parquet`,
medprobe/building/build.py), so tests never spell a name: they read it from the card's build record.
"""

from __future__ import annotations

from pathlib import Path

from medprobe.building.build import card_meta, split_of
from medprobe.building.cards import RECORD_KEY


def recorded_files(out: Path) -> dict[str, str]:
    """Every data file the card's `medprobe_build:` record lists: relative path -> sha256."""
    configs = card_meta(out / "README.md")[RECORD_KEY]["configs"]
    return {path: digest for config in configs.values() for path, digest in config["files"].items()}


def data_file(out: Path, config: str, split: str = "test") -> Path:
    """The Parquet file of `config`/`split` in `out`, as the card's build record names it."""
    configs = card_meta(out / "README.md")[RECORD_KEY]["configs"]
    [path] = [path for path in configs[config]["files"] if split_of(path) == split]
    return out / path
