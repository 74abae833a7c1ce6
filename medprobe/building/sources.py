"""The source folders a build reads, checked on disk before anything heavy loads (datasets takes a second to
import): `medprobe build` calls this first, and `build()` again for Python callers."""

from __future__ import annotations

from pathlib import Path

from medprobe.local_paths import check_local_path

FOLDER_METAVARS = ("DIR", "META", "FILE", "PATH")  # build options that name a source on disk


def check_source_folders(benchmark: str, data_dir: str | Path | None, params: dict) -> None:
    """--data-dir and the folders of a benchmark's own build options (MedLAMA's --umls-dir) exist: a typo is one
    line naming it and the nearest folder that exists (or a close match), before the lock and the builder."""
    from medprobe.registry import registry

    if data_dir:
        check_local_path(str(data_dir), "--data-dir", f"give a folder with the {benchmark} source files in the release layout")
    for entry in registry().tasks.values():
        for option in entry.build_options if entry.benchmark == benchmark else ():
            value = params.get(option.dest)
            if option.metavar in FOLDER_METAVARS and isinstance(value, (str, Path)):
                check_local_path(str(value), option.flag)
