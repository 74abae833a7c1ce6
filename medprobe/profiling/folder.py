"""The folder `medprobe profile` writes: locked, owned, staged beside OUT and swapped in whole, resumable.

    with open_folder(Path(out), overwrite=False) as folder:   # lock, ownership check, staging folder, resume
        ...                                                  # builds and runs write under folder.staged
        folder.finished(entry, source)                       # after each run: OUT's paths, sha256, journal
        folder.seal(profile)                                 # every path as in OUT, every file's sha256
        write_profile(profile, out, into=folder.staged)
    # leaving the block: the staging folder becomes OUT in one rename (medprobe.atomic_folder.staged_folder)

A profile is written like a `medprobe build`, through the one staged writer: the whole folder (profile.json, profile.md,
profile.png, runs/, the datasets/ it built) goes to `.OUT.medprobe-tmp-<pid>/out` beside OUT and
replaces OUT in one swap, under the lock `.OUT.medprobe-lock` (a second profile or build into OUT
stops at once, naming the process). Chosen over naming every run file by the profile that owns it
because that alone would still leave datasets/ shared (a profile rebuilds datasets/mst under the
runs of the one before), leave the files of killed profiles in OUT, and change profile.json, .md
and .png in three renames: here OUT is always one profile, and a failed or killed one leaves the
previous profile exactly as it was.

The runs write into the staging folder, but what the profile records names the paths as they are
in OUT (the requests, results, predictions, datasets and `medprobe probe` commands): `logical`
replaces the staging folder's path, which is unique (it holds `.medprobe-tmp-` and the pid), by
OUT's, in profile.json and in each run's results JSON.

Ownership: profile.json records the sha256 of every file of the profile (`files`: profile.md,
profile.png, datasets/...; each run's `files`: its results JSON and predictions). A profile
replaces OUT only when OUT is absent, empty, or holds exactly such a profile, unchanged; anything
else is refused unless `--overwrite`. `medprobe publish results OUT` checks the same record
(`disagreement`).

Resume (the run journal, medprobe.journal): `progress.json` in the staging folder (beside `out/`, never
swapped in) lists every finished run with its key, the sha256 of its request (paths as in OUT), its data source, the content of its
dataset folder and medprobe's version. A profile into OUT that finds the staging folder a killed
profile left (SIGKILL, a power cut; Ctrl-C and SIGTERM leave theirs only when it holds finished runs)
takes from it the runs whose key equals its own and whose files are unchanged, and runs the rest. Datasets are rebuilt
(a build of the same data gives the same bytes, hence the same keys).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from medprobe import distributed
from medprobe.atomic import signals_deferred
from medprobe.atomic_folder import StagedFolder, files_under, foreign_files, listing, staged_folder
from medprobe.building.cards import package_version
from medprobe.contracts import UserError
from medprobe.digests import folder_digest, json_digest, sha256_file
from medprobe.journal import JOURNAL, Journal, Journaled, NotReusable, adopt_files, latest

PROFILE_FILES = ("profile.json", "profile.md", "profile.png")


# --- what a folder holds -------------------------------------------------------------------------


def read_profile_json(folder: Path) -> dict | None:
    try:
        data = json.loads((folder / "profile.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def recorded_files(profile: dict | None) -> dict[str, str] | None:
    """Relative path -> sha256 of every file a profile.json records (its own `files` and each run's),
    or None when it records none (not a profile, or one written before profiles recorded their files)."""
    if not profile or not isinstance(profile.get("files"), dict) or not isinstance(profile.get("runs"), list):
        return None
    recorded = dict(profile["files"])
    for run in profile["runs"]:
        if isinstance(run, dict) and isinstance(run.get("files"), dict):
            recorded.update(run["files"])
    return recorded


def check_replaceable(out: Path, overwrite: bool) -> None:
    """A profile may replace OUT: absent, empty, `overwrite`, or exactly the files a medprobe profile recorded."""
    if not os.path.lexists(out) or overwrite:
        return
    if not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder for the profile")
    files = files_under(out)
    if not files:
        return
    recorded = recorded_files(read_profile_json(out))
    if recorded is None:
        found = f"{len(files)} file(s): {listing(files)}"
        what = (
            f"{found}, and no profile.json"
            if "profile.json" not in files
            else f"a profile.json that records no files (not a medprobe profile, or an older medprobe's) ({found})"
        )
        raise UserError(f"{out} already holds {what}; a profile would replace it: pass --overwrite, or choose another --out")
    stray, changed = foreign_files(out, recorded, own=("profile.json",))
    if stray:
        raise UserError(
            f"{out} holds file(s) that are not part of its profile: {listing(stray, 10)}; a new profile would delete "
            "them: move them away, or pass --overwrite"
        )
    if changed:
        raise UserError(
            f"{out} holds file(s) changed since medprobe wrote them: {listing(changed, 10)}; a new profile would "
            "replace them: move them away, or pass --overwrite"
        )


def disagreement(folder: Path, profile: dict) -> str | None:
    """Why a profile folder is not what its profile.json recorded, naming the file (None: it is)."""
    from medprobe.records import load_record_file

    recorded = recorded_files(profile)
    unrecorded = [run.get("label") for run in profile["runs"] if run.get("record") is not None and not run.get("files")]
    if recorded is None or unrecorded:
        return f"{folder / 'profile.json'} records no sha256 of its files (an older medprobe's profile?)"
    for name, digest in recorded.items():
        path = folder / name
        if not path.is_file():
            return f"{path}, which profile.json records, is missing"
        if sha256_file(path) != digest:
            return f"{path} is not the file profile.json recorded (its sha256 differs: changed after the profile was written)"
    for run in profile["runs"]:
        results = [name for name in run.get("files") or {} if name.endswith(".json")]
        if run.get("record") is not None and results and asdict(load_record_file(folder / results[0])) != run["record"]:
            return f"{folder / results[0]} and the record of run {run.get('label')} in profile.json disagree"
    return None


# --- reading a profile back ----------------------------------------------------------------------


def run_results(folder: Path, entry: dict) -> Path:
    """The results JSON of one run of the profile in `folder`.

    profile.json records the path the run wrote at profile time (`results`), relative to the working
    directory of that time or absolute; a folder that was moved or copied holds the file under its own
    runs/. The folder's own copy is preferred (a stale file at the recorded path must not stand in for
    it), then the recorded path; the record is checked against profile.json's either way."""
    recorded = Path(entry.get("results") or f"{entry.get('label', 'run')}.json")
    for candidate in (folder / "runs" / recorded.name, recorded):
        if candidate.is_file():
            return candidate
    raise UserError(
        f"{folder / 'profile.json'} names the results of {entry.get('label')} as {recorded}, "
        f"which is neither there nor in {folder / 'runs'}"
    )


def verified_run(folder: Path, entry: dict) -> Any:
    """The run of a profile.json entry read through medprobe.records (every number recomputed from its
    outcomes), and equal to the record profile.json holds of it."""
    from medprobe.records import RecordError, load_run

    path = run_results(folder, entry)
    loaded = load_run(path)
    if asdict(loaded.record) != entry.get("record"):
        raise RecordError(
            f"{path} is not the run {folder / 'profile.json'} recorded for {entry.get('label')} (the two records differ); "
            "compare or publish the results JSON itself, or run `medprobe profile` again"
        )
    return loaded


# --- moving paths from the staging folder to OUT ---------------------------------------------------


def relocate(value: Any, old: str, new: str) -> Any:
    """`value` with `old` replaced by `new` in every string, through dicts, lists and dataclasses."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {key: relocate(item, old, new) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(relocate(item, old, new) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(
            value, **{f.name: relocate(getattr(value, f.name), old, new) for f in dataclasses.fields(value)}
        )
    return value


def run_key(
    request: dict, source: dict, content: str | None, weights: str | None = None, plugins: dict[str, dict] | None = None
) -> str:
    """What a run's outputs depend on: its request (paths as in OUT), its data source and content, the model's
    weights (a folder retrained in place is another model), medprobe's version and, for a plugin's task or prober,
    its distribution's version (`source.plugins` of the results: a plugin upgraded between two profiles reruns)."""
    source = {key: value for key, value in source.items() if key != "note"}  # the note holds the build's seconds
    payload = {
        "request": request,
        "data": source,
        "content": content,
        "weights": weights,
        "medprobe": package_version("medprobe"),
    }
    if plugins:  # only then: the keys of built-in runs stay those of earlier journals
        payload["plugins"] = {name: used["version"] for name, used in plugins.items()}
    return json_digest(payload)


# --- the folder ------------------------------------------------------------------------------------


@dataclass
class ProfileFolder:
    out: Path  # OUT as given: what profile.json names
    stage: Path  # .OUT.medprobe-tmp-<pid> beside OUT; `staged` (its out/) becomes OUT
    writer: StagedFolder | None = None  # the staged writer (None in a process that does not write, under a launch)
    main: bool = True  # the process that writes (under accelerate launch / torchrun)
    print_fn: Callable[[str], None] = print
    journal: Journal = field(default_factory=Journal)  # the finished runs, by label, for a profile that resumes this one
    contents: dict[str, str | None] = field(default_factory=dict)  # dataset path -> folder_digest
    weights: dict[str, str | None] = field(default_factory=dict)  # model -> the sha256 of its weight files

    @property
    def staged(self) -> Path:
        return self.stage / "out"

    @property
    def previous(self) -> Path | None:
        """The staging folder of a killed profile, to resume from."""
        return self.writer.previous if self.writer is not None else None

    def logical(self, value: Any) -> Any:
        """`value` (a request, an entry, a record...) naming paths as they will be in OUT."""
        return relocate(value, str(self.staged), str(self.out))

    def physical(self, path: str) -> Path:
        """Where a file that profile.json names in OUT is now (in the staging folder)."""
        return self.staged / Path(path).relative_to(self.out)

    def content(self, dataset: str) -> str | None:
        """The digest of a run's dataset folder (None: a Hub id), computed once per folder."""
        if dataset not in self.contents:
            folder = Path(dataset).expanduser()
            self.contents[dataset] = folder_digest(folder) if folder.is_dir() else None
        return self.contents[dataset]

    def model_weights(self, model: str) -> str | None:
        """The weights digest of a run's model (None: not identified, e.g. a Hub id not in the cache), once per model."""
        from medprobe.provenance import model_identity

        if model not in self.weights:
            self.weights[model] = model_identity(model).get("weights_sha256")
        return self.weights[model]

    def key(self, request: Any, source: dict) -> str:
        from medprobe.registry import registry

        plugins = registry().plugins_used(request.task, request.prober)
        dataset, model = self.content(request.dataset), self.model_weights(request.model)
        return run_key(self.logical(asdict(request)), self.logical(source), dataset, model, plugins)

    def reuse(self, runs: list[tuple[str, Any, dict]]) -> dict[str, dict]:
        """The entries of the killed profile's runs that this one takes as they are, by label, out of
        (label, request, data source) of every planned run: the same key, and files unchanged."""
        taken: dict[str, dict] = {}
        if self.main and self.previous is not None:
            before = Journal.read(self.previous / JOURNAL)
            keys = {label: self.key(request, source) for label, request, source in runs}
            resumed = before.resume(keys.items(), self.adopt)
            taken = resumed.taken
            for label, entry in taken.items():  # journaled again: a kill of this profile keeps them too
                self.journal.finished(label, keys[label], entry)
            self.write_journal()
            for run in before.runs:
                if run.name not in resumed.taken_from.values():
                    self.print_fn(
                        f"resume: run {run.name} of the killed profile is run again (its request, data or files differ)"
                    )
            self.writer.drop_previous()
        [taken] = distributed.gather([taken] if self.main else [])  # every process skips the same runs
        return taken

    def adopt(self, label: str, run: Journaled) -> dict:
        """A killed profile's run, its files moved into this staging folder, if every one is unchanged."""
        if not adopt_files(self.previous / "out", self.staged, run.entry.get("files") or {}):
            raise NotReusable(f"the files of run {run.name} changed since it was journaled")
        return run.entry

    def finished(self, entry: dict, request: Any, source: dict) -> None:
        """A run is done: its entry and results JSON name OUT's paths, its files' sha256 go into the
        entry, and it is journaled (with the key of its `request`) for a profile that resumes this one.
        Ctrl-C and SIGTERM wait until it is (milliseconds): a finished run is not lost to the signal."""
        if not self.main:
            return
        with signals_deferred():
            self.journal_finished(entry, request, source)

    def journal_finished(self, entry: dict, request: Any, source: dict) -> None:
        from medprobe.records import load_record_file

        entry.update(self.logical({name: entry[name] for name in ("request", "results", "predictions", "record")}))
        results = self.physical(entry["results"])
        record = load_record_file(results)
        shown = self.logical(record)
        if shown != record:
            shown.save(results)
        # every file of the run: its results JSON and the files written with it (outcomes, predictions, plot)
        paths = [results.resolve(), *((results.parent / name).resolve() for name in shown.files)]
        inside = [path for path in paths if path.is_relative_to(self.staged.resolve())]
        entry["files"] = {path.relative_to(self.staged.resolve()).as_posix(): sha256_file(path) for path in inside}
        self.journal.finished(entry["label"], self.key(request, source), entry)
        self.write_journal()

    def seal(self, profile: Any) -> None:
        """Every path of `profile` as in OUT, and in `profile.files` the sha256 of every file of the staged
        folder that is not profile.json/md/png (write_profile adds those two) nor a run's own."""
        profile.data, profile.runs, profile.failed = self.logical((profile.data, profile.runs, profile.failed))
        own = {name for run in profile.runs for name in run.get("files") or {}}
        profile.files = {
            name: sha256_file(self.staged / name)
            for name in files_under(self.staged)
            if name not in own and name not in PROFILE_FILES
        }

    def write_journal(self) -> None:
        self.journal.write(self.stage / JOURNAL)


@contextmanager
def open_folder(out: Path, overwrite: bool = False, print_fn: Callable[[str], None] = print) -> Iterator[ProfileFolder]:
    """Lock OUT, check it may be replaced, stage the new profile beside it; swap it in when the block ends
    (medprobe.atomic_folder.staged_folder, resuming from the staging folder a killed profile left).

    An error removes the staging folder and leaves OUT as it was; Ctrl-C or SIGTERM too, but for a staging
    folder holding finished runs, which is kept for the next profile into OUT to resume. Under a launch only
    the main process locks, checks and swaps; every process gets the same staging folder.
    """
    if not distributed.is_main_process():
        [stage] = distributed.gather([])
        yield ProfileFolder(out, Path(stage), main=False, print_fn=print_fn)
        return
    ours = partial(check_replaceable, overwrite=False)  # what profile.json records is the profile's
    notes = partial(said, print_fn)
    with staged_folder(out, "profile", refuse=ours, overwrite=overwrite, resume=latest, notes=notes) as writer:
        folder = ProfileFolder(out, writer.stage, writer=writer, print_fn=print_fn)
        if writer.previous is not None:
            print_fn(
                f"resume: {writer.previous.name}, left by a killed profile into {writer.out}, has runs this profile may reuse"
            )
        distributed.gather([str(writer.stage)])
        yield folder


def said(print_fn: Callable[[str], None], note: str) -> None:
    print_fn(f"medprobe: {note}")
