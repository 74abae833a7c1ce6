"""Which existing files at a run's output paths medprobe wrote: what `medprobe probe` replaces without a word, and
what it refuses, naming it, unless --overwrite (medprobe.atomic.refuse_foreign_files).

    refuse_foreign_outputs({"--out": out, "--out's outcomes file": ..., "--plot": ...}, out)   # before any model loads
    earlier = earlier_run(out)           # the run this one replaces: said on the terminal, by `describe_run`

- The results JSON (--out) is medprobe's when it reads as a run record (`load_record_file`: its fields, not its
  numbers). Not its numbers: a record whose files a killed write left half replaced does not verify, and is still
  an earlier run of medprobe, which the next run may replace.
- A file written with it (the outcomes beside --out, --predictions, --plot) is medprobe's when a record beside it
  names it with its sha256: the record at --out, or the one a run killed between its renames left under its
  temporary name (`.NAME-tmp-PID.json`, complete before the first rename), which names the files already renamed.
- A plot is medprobe's, too, when it carries medprobe's name (medprobe.marks), whichever run drew it.

Anything else (a user's notes.json at --out, their notes.outcomes.jsonl beside it) is the user's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from medprobe.atomic import TEMPORARY_FILE, refuse_foreign_files
from medprobe.digests import sha256_file
from medprobe.marks import carries_mark
from medprobe.records.record import RunRecord


def read_record(path: Path) -> RunRecord | None:
    """The record of the results JSON at `path`, None when it is none (absent, not JSON, not a record)."""
    from medprobe.records.verify import RecordError, load_record_file

    if not path.is_file():
        return None
    try:
        return load_record_file(path)
    except RecordError:
        return None


def earlier_run(out: str | Path) -> RunRecord | None:
    """The run of medprobe whose results JSON is at `out` (the run a new one there replaces), or None."""
    return read_record(Path(out).expanduser())


def killed_writes(out: Path) -> list[Path]:
    """The results JSONs that runs killed between their renames left beside `out` under their temporary names."""
    if not out.parent.is_dir():
        return []
    found = []
    for path in out.parent.glob(f".{out.stem}-tmp-*{out.suffix}"):
        named = TEMPORARY_FILE.match(path.name)
        if named and named["stem"] == out.stem and (named["suffix"] or "") == out.suffix:
            found.append(path)
    return sorted(found)


def recorded_files(out: Path) -> dict[Path, set[str]]:
    """Every file the records at and beside `out` name, resolved, with the sha256s they name it with."""
    recorded: dict[Path, set[str]] = {}
    for path in (out, *killed_writes(out)):
        record = read_record(path)
        if record is None:
            continue
        files = dict(record.files) if isinstance(record.files, dict) else {}
        entry = record.outcomes if isinstance(record.outcomes, dict) else {}
        if isinstance(entry.get("file"), str) and isinstance(entry.get("sha256"), str):
            files.setdefault(entry["file"], entry["sha256"])  # named in `files` too, by every run since 0.2
        for name, digest in files.items():
            recorded.setdefault((out.parent / name).resolve(), set()).add(digest)
    return recorded


def ours_beside(out: str | Path) -> Callable[[str, Path], bool]:
    """The test `refuse_foreign_files` asks of each output of a run writing its results JSON to `out`."""
    out = Path(out).expanduser()
    recorded: dict[Path, set[str]] | None = None

    def ours(option: str, path: Path) -> bool:
        nonlocal recorded
        if path.expanduser().resolve() == out.resolve():
            return read_record(out) is not None
        if option == "--plot" and carries_mark(path):
            return True
        if recorded is None:
            recorded = recorded_files(out)
        digests = recorded.get(path.expanduser().resolve())
        return bool(digests) and sha256_file(path) in digests

    return ours


def refuse_foreign_outputs(outputs: dict[str, str | Path | None], out: str | Path | None, command: str = "probe") -> None:
    """Refuse, with one line naming it, an output path holding a file medprobe did not write (see the module);
    `out`: the run's results JSON, whose record says which files beside it are medprobe's."""
    if out:
        refuse_foreign_files(outputs, ours_beside(out), command=command)


def describe_run(record: RunRecord) -> str:
    """`medlama/hard, contrastive on minilm, written 2025-05-01T10:00:00+00:00`: a run in a few words."""
    data = f"{record.benchmark}/{record.config}" if record.config else record.benchmark
    model = Path(str(record.model)).name if record.model else "no model"
    return f"{data}, {record.prober} on {model}, written {record.created or 'at an unknown time'}"
