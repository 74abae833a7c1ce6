"""Whether a run read its benchmark's official data, in words, for the results repo and the leaderboard.

    status = data_status(record)      # DataStatus(kind="official", text="official data, verified (...)", ...)

A run's record names the sha256 of every data file it read (medprobe.provenance.dataset_fingerprint);
the registry names the files of each benchmark's official build (medprobe.official_data). The kinds:
- "official": every file the run read is a file of the official build, byte for byte;
- "sample": the run read a sample shipped with medprobe (medprobe.hub.data_check), not the benchmark;
- "hub": the run read a Hub dataset's files, which it records by repo and revision, not by their bytes;
- "other": other files (another release, another build, edited data): the text names the files that differ;
- "unknown": the record holds no data fingerprint (a medprobe before 0.2).
A board ranks only runs on one fingerprint (`DataStatus.fingerprint`) and lists the others under theirs.
"""

from __future__ import annotations

from dataclasses import dataclass

from medprobe.records.record import RunRecord
from medprobe.registry import benchmark_entry, task_entry


@dataclass(frozen=True)
class DataStatus:
    kind: str  # official, sample, hub, other or unknown
    text: str  # what a reader is told, e.g. "official data, verified (MedLAMA 2021AA, ...; fingerprint 1a2b3c4d5e6f)"
    fingerprint: str | None  # the record's data fingerprint (sha256), what runs are grouped by

    @property
    def official(self) -> bool:
        return self.kind == "official"


def short(digest: str | None) -> str:
    return digest[:12] if digest else "none"


def data_status(record: RunRecord) -> DataStatus:
    """The data a run read, compared with its benchmark's official build."""
    from medprobe.hub.data_check import sample_read, sample_words

    fingerprint = record.data_fingerprint or {}
    digest, files = fingerprint.get("sha256"), fingerprint.get("files") or {}
    if not digest:
        return DataStatus("unknown", "no data fingerprint recorded (a results file of a medprobe before 0.2)", None)
    found = sample_read(record)
    if found is not None:
        return DataStatus("sample", f"{sample_words(found[0])}: not the benchmark", digest)
    if fingerprint.get("hub"):
        return DataStatus(
            "hub",
            f"read from the Hub dataset {fingerprint['hub']} at {str(fingerprint.get('revision', ''))[:12]} (files not "
            f"hashed, so not compared with the official build; fingerprint {short(digest)})",
            digest,
        )
    official = official_files(record)
    if official is None:
        return DataStatus("other", f"no official build is known for {record.benchmark} (fingerprint {short(digest)})", digest)
    source, known = official
    differing = [name for name, sha in sorted(files.items()) if known.get(name) != sha]
    if files and not differing:
        return DataStatus("official", f"official data, verified ({source}; fingerprint {short(digest)})", digest)
    return DataStatus("other", f"other data than the official build ({difference_text(differing, files, known)})", digest)


def official_files(record: RunRecord) -> tuple[str, dict[str, str]] | None:
    """(the source in words, {file: sha256}) of the record's benchmark's official build, or None."""
    try:
        entry = task_entry(record.task) if record.task else benchmark_entry(record.benchmark)
    except KeyError:  # a task or benchmark not installed here: nothing is known of its official build
        return None
    if entry.official_data is None:
        return None
    return entry.official_data.source, entry.official_data.files


def difference_text(differing: list[str], files: dict[str, str], known: dict[str, str]) -> str:
    """`hard/test/test-….parquet has sha256 …, the official file …` / `... is not an official file (official hard/test:
    test-….parquet)`, for the first file that differs, and how many more do."""
    if not files:
        return "the record names no data files"
    parts = []
    for name in differing[:1]:
        folder = name.rsplit("/", 1)[0]
        if name in known:
            parts.append(f"{name} has sha256 {short(files[name])}, the official file {short(known[name])}")
            continue
        expected = [other.rsplit("/", 1)[1] for other in known if other.startswith(folder + "/")]
        shown = f"official {folder}: {', '.join(expected)}" if expected else f"no official {folder}"
        parts.append(f"{name} is not an official file ({shown})")
    more = f"; {len(differing) - 1} more file(s) differ" if len(differing) > 1 else ""
    return "; ".join(parts) + more
