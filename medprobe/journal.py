"""The one run journal for resuming: the finished runs of a command that runs many (profile, reproduce), so
that a later command into the same OUT takes again exactly the runs it would run the same.

    journal = Journal.read(stage / JOURNAL)                     # profile: progress.json in its staging folder
    journal = Journal.of(cell["runs"], name="file", key="run_key")   # reproduce: the runs of a cell file
    resumed = journal.resume([(name, key), ...], verify)        # each run asked for now, with its key
    resumed.taken                                               # name -> what `verify` gave back
    resumed.refused                                             # (journaled name, why it is run again), in order
    journal.finished(name, key, entry)                          # after each run (profile writes it at once)

A run is journaled under its name with its key: the digest (medprobe.digests.json_digest) of what decides
its result, as the command describes its request (profile: the request, the data's source and content, the
model's weights and medprobe's version; reproduce: the request and the model's revision). A later command
takes a journaled run only when it asks for a run of the same key and `verify` accepts the run's files:
profile's `verify` moves them into its new staging folder when their sha256 are those journaled
(`adopt_files`), reproduce's reads the results JSON back through medprobe.records.load_run. Every other
run is run again; `verify` says why by raising NotReusable, and the command says it as it always has.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from medprobe.atomic import write_text_atomically
from medprobe.digests import sha256_file

JOURNAL = "progress.json"  # a resumable writer's journal, in its staging folder beside out/ (never swapped in)


class NotReusable(Exception):
    """A journaled run of the same key whose files do not verify; the message says why (or is empty)."""


@dataclass
class Journaled:
    """One finished run: its name (profile: the run's label; reproduce: its results JSON under OUT), its key and
    what the command keeps of it (profile: the profile.json entry; reproduce: the cell file's run entry)."""

    name: str
    key: str
    entry: dict


@dataclass
class Resumed:
    taken: dict[str, dict] = field(default_factory=dict)  # name asked for -> the verified entry
    taken_from: dict[str, str] = field(default_factory=dict)  # name asked for -> the journaled name it was taken from
    refused: list[tuple[str, str]] = field(default_factory=list)  # (journaled name, why its files did not verify)


Verify = Callable[[str, Journaled], dict]  # (name asked for, journaled run) -> the entry to take, or NotReusable


@dataclass
class Journal:
    runs: list[Journaled] = field(default_factory=list)

    @classmethod
    def read(cls, path: Path) -> Journal:
        """A journal file `write` wrote; empty when it is missing or not one (a resume then runs everything)."""
        try:
            runs = json.loads(path.read_text(encoding="utf-8"))["runs"]
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
            return cls()
        if not isinstance(runs, dict):
            return cls()
        return cls(
            [
                Journaled(name, run.get("key"), run["entry"])
                for name, run in runs.items()
                if isinstance(run, dict) and isinstance(run.get("entry"), dict)
            ]
        )

    @classmethod
    def of(cls, entries: Iterable[object], *, name: str, key: str) -> Journal:
        """The runs of entries that carry their own name and key (a reproduce cell file's `runs`)."""
        return cls([Journaled(e.get(name), e.get(key), e) for e in entries if isinstance(e, dict)])

    def write(self, path: Path) -> None:
        """name -> {"key", "entry"} as JSON, renamed into place whole (a kill leaves the previous journal)."""
        runs = {run.name: {"key": run.key, "entry": run.entry} for run in self.runs}
        write_text_atomically(path, json.dumps({"runs": runs}, indent=1, ensure_ascii=False) + "\n")

    def finished(self, name: str, key: str, entry: dict) -> None:
        self.runs = [run for run in self.runs if run.name != name] + [Journaled(name, key, entry)]

    def resume(self, wanted: Iterable[tuple[str, str]], verify: Verify) -> Resumed:
        """For each (name, key) asked for now, in order: the journaled run of that key when `verify` accepts it."""
        by_key = {run.key: run for run in self.runs}  # a key journaled twice: the later run
        resumed = Resumed()
        for name, key in wanted:
            run = by_key.get(key)
            if run is None:
                continue
            try:
                resumed.taken[name] = verify(name, run)
                resumed.taken_from[name] = run.name
            except NotReusable as err:
                resumed.refused.append((run.name, str(err)))
        return resumed


def latest(stages: list[Path]) -> Path | None:
    """The staging folder (of those killed writers left) with the most recent journal and a staged OUT, if any."""
    journaled = [stage for stage in stages if Journal.read(stage / JOURNAL).runs and (stage / "out").is_dir()]
    return max(journaled, key=lambda stage: (stage / JOURNAL).stat().st_mtime_ns, default=None)


def adopt_files(source: Path, target: Path, files: dict[str, str]) -> bool:
    """Move a journaled run's files (relative path -> sha256) from `source` to `target`, if every one is unchanged."""
    paths = {name: source / name for name in files}
    if not files or any(not path.is_file() or sha256_file(path) != files[name] for name, path in paths.items()):
        return False
    for name, path in paths.items():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target / name)
    return True
