"""The output folder of `medprobe export eee`: refused when it holds what the command did not write, staged, checked
with every-eval-ever's validator in the staging folder, and swapped in whole (medprobe.atomic_folder.staged_folder).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from medprobe.atomic import UnwritableOutput
from medprobe.contracts import UserError
from medprobe.eee.export import (
    FILES_RECORD,
    WRITTEN_BY,
    Report,
    aggregate_text,
    check_text_allowed,
    export_run,
    read_runs,
    require_package,
)
from medprobe.eee.records import Options


def recorded_files(out: Path) -> dict[str, str] | None:
    """Relative path -> sha256 of each file an export wrote in OUT (None: OUT holds no record of them)."""
    from medprobe.records.verify import RecordError, read_json_object

    try:
        data = read_json_object(out / FILES_RECORD, "the record of an Every Eval Ever export")
    except RecordError:
        return None
    files = data.get("files")
    if data.get("written_by") != WRITTEN_BY or not isinstance(files, dict):
        return None
    return {str(name): str(digest) for name, digest in files.items()}


def check_out(out: Path, overwrite: bool) -> None:
    """OUT can be replaced whole: absent, empty, or holding only the files an export wrote there, unchanged."""
    from medprobe.atomic_folder import check_output_folder, files_under, foreign_files, listing

    check_output_folder(out)
    if overwrite or not out.is_dir() or not files_under(out):
        return
    recorded = recorded_files(out)
    if recorded is None:
        raise UnwritableOutput(
            f"--out {out} holds files an export did not write ({listing(files_under(out))}); it is replaced whole: give a "
            "new or empty folder, or pass --overwrite"
        )
    stray, changed = foreign_files(out, recorded, own=(FILES_RECORD,))
    if stray:
        raise UnwritableOutput(
            f"--out {out} holds files an export did not write ({listing(stray, 10)}); a new export would delete them: "
            "move them away, or pass --overwrite"
        )
    if changed:
        raise UnwritableOutput(
            f"--out {out} holds files changed since the export wrote them ({listing(changed, 10)}); a new export would "
            "replace them: move your edits away, or pass --overwrite"
        )


def validate_staged(folder: Path, names: list[str]) -> list[str]:
    """Every file through every-eval-ever's validator with its repository checks (paths, companions, bounds, model
    identity): UserError naming the file and its first errors; the warnings, to print."""
    from every_eval_ever.validator.validation_core import format_error, format_warning, validate_file

    available = frozenset(names)
    warnings = []
    for name in names:
        report = validate_file(
            folder / name,
            repo_path=name,
            available_files=available,
            read_repo_file=lambda path: (folder / path).read_text(encoding="utf-8"),
            run_semantic_checks=True,
        )
        if not report.valid:
            errors = "; ".join(format_error(error) for error in report.errors[:3])
            raise UserError(f"every-eval-ever's validator refuses {name} ({errors}); nothing was written")
        warnings += [f"{name}: {format_warning(warning)}" for warning in report.warnings]
    return warnings


def export_eee(
    paths: list[str],
    out: str | Path,
    *,
    model_id: str | None = None,
    options: Options | None = None,
    predictions: bool = False,
    gated: bool = False,
    private: bool = False,
    overwrite: bool = False,
) -> Report:
    """Export every run of `paths` into OUT (see medprobe.eee.export); the report says what was written."""
    version = require_package()  # before the package's modules are imported: one line when it is missing
    from every_eval_ever.converters.common.utils import get_current_unix_timestamp
    from pydantic import ValidationError

    from medprobe.atomic_folder import staged_folder
    from medprobe.digests import sha256_file

    out = Path(out)
    check_out(out, overwrite)  # before any run is read; again under the lock
    runs, notes = read_runs(paths)
    if predictions:
        check_text_allowed(runs, gated, private)
    retrieved = get_current_unix_timestamp()
    report = Report(out.absolute(), notes=notes, version=version)
    files: dict[str, str] = {}
    for run in runs:
        try:
            exported, samples = export_run(run, model_id, options or Options(), retrieved, predictions)
        except ValidationError as err:  # a record the schema's models refuse: nothing is written
            first = err.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise UserError(f"{run.path}: its record does not fit the Every Eval Ever schema ({where}: {first['msg']})") from None
        for path in (exported.aggregate_path, exported.samples_path):
            if path in files:
                raise UserError(f"{run.path}: exports to {path} as another run does; give each run once")
        files[exported.aggregate_path] = aggregate_text(exported.aggregate)
        if exported.instances:
            files[exported.samples_path] = samples
        report.exported.append(exported)
        report.notes += exported.notes
    started = time.perf_counter()
    with staged_folder(out, "export eee", refuse=lambda folder: check_out(folder, False), overwrite=overwrite) as folder:
        folder.write_texts(files)
        report.notes += validate_staged(folder.staged, sorted(files))
        record = {"written_by": WRITTEN_BY, "files": {name: sha256_file(folder.staged / name) for name in sorted(files)}}
        (folder.staged / FILES_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    report.notes.append(
        f"wrote and validated {len(files)} file(s) with every-eval-ever {version} in {time.perf_counter() - started:.1f} s"
    )
    return report
