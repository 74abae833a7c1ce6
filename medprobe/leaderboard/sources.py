"""What a leaderboard is built from: results files, profile folders and results repos, read as checked runs.

    runs, excluded = read_sources(["runs/a.json", "profiles/minilm", "hub:me/results"])

A SOURCE is a results JSON (one run, named by its file's stem), a `medprobe profile` folder (its runs,
named by the folder), a results repo (`hub:ORG/NAME`, fetched into the Hub cache) or its local copy (a
folder of `<model>/<benchmark>/<config>/<prober>/` runs, each named by its model), one published run
(`hub:ORG/NAME/<model>/<benchmark>/<config>/<prober>` or that folder), or a folder of runs (the results
JSONs and profile folders in it: `medprobe leaderboard runs/`). Every run is read through
medprobe.records (every number recomputed from its outcomes); many runs are read in worker processes.

A run is left out, with the reason, when it fails that check, when it is a subset of its benchmark
(medprobe.hub.subsets), a shipped sample (unless asked: `include_samples`, and then on a board of its own
that says so), a floor or a failed run of a profile, a run with no data fingerprint (nothing says which
data it measured), or the same run given twice.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medprobe.contracts import UserError
from medprobe.hub.official import DataStatus, data_status
from medprobe.hub.published import HUB, fetch_repo, fetch_run, is_run_folder, parse_hub, published_runs

PARALLEL_FROM = 8  # fewer runs are read in this process: starting workers costs more than it saves


@dataclass
class Entry:
    """One run to read: where it is and how it is named on the board."""

    label: str  # the row's name
    source: str  # how `medprobe compare` is given it (a path, or hub:...)
    kind: str  # results, profile or published
    path: Path  # the results JSON, the profile folder or the published run's folder
    profile_entry: dict | None = None  # a profile run: its profile.json entry
    quick: dict | None = None  # a profile --quick run: the quick settings of its benchmark


@dataclass
class BoardRun:
    """A run that may go on a board: checked, with its data status."""

    label: str
    source: str
    record: Any  # medprobe.records.record.RunRecord
    outcomes: Any  # medprobe.stats.Outcomes
    status: DataStatus


@dataclass
class Excluded:
    """A run left out, and why (`where`: its benchmark/config/prober, when known)."""

    label: str
    source: str
    reason: str
    where: str = ""

    def as_dict(self) -> dict:
        return {"run": self.label, "source": self.source, "where": self.where, "reason": self.reason}


@dataclass
class Expanded:
    entries: list[Entry] = field(default_factory=list)
    excluded: list[Excluded] = field(default_factory=list)


def where_of(benchmark: Any, config: Any, prober: Any) -> str:
    return f"{benchmark}/{config or 'all'} {prober}"


# --- what each source holds ----------------------------------------------------------------------------


def expand(source: str) -> Expanded:
    """The runs a SOURCE holds (not read yet), and the profile runs left out before reading (floors, failures)."""
    if source.startswith(HUB):
        repo_id, inside = parse_hub(source)
        if inside:
            return Expanded([Entry(inside.split("/")[0], source, "published", fetch_run(source))])
        return repo_entries(fetch_repo(source), f"{HUB}{repo_id}")
    path = Path(source)
    if path.is_file():
        return Expanded([Entry(path.name.removesuffix(".json"), source, "results", path)])
    if not path.is_dir():
        raise UserError(f"{source}: no such results JSON, profile folder or results repo")
    if (path / "profile.json").is_file():
        return profile_entries(path)
    if is_run_folder(path):
        return Expanded([Entry(path.resolve().parents[2].name, source, "published", path)])
    found = repo_entries(path, str(path))
    if not found.entries:
        found = folder_entries(path, source)
    if not found.entries and all(item.reason.startswith("not read:") for item in found.excluded):
        lone = [item.source.rsplit("/", 1)[-1] for item in found.excluded]
        raise UserError(
            f"{source} holds no run: a folder is read as a results repo's local copy (<model>/<benchmark>/<config>/"
            "<prober>/results.json with outcomes.parquet), else as a folder of runs: its *.json results files (each with "
            "its .outcomes.jsonl beside it) and `medprobe profile` folders (with a profile.json), one level down"
            + (f"; its JSON files {', '.join(lone[:5])} have no outcomes file beside them" if lone else "")
        )
    return found


def folder_entries(folder: Path, source: str) -> Expanded:
    """A folder of runs: each results JSON in it (its stem names the row), each profile folder in it (its runs named
    by the folder). A JSON without its outcomes file beside it is listed as left out, not dropped: it may be a run
    whose outcomes were moved (or another tool's JSON)."""
    from medprobe.records.outcomes import outcomes_path

    found = Expanded()
    for path in sorted(folder.iterdir()):
        shown = f"{source.rstrip('/')}/{path.name}"
        if path.is_dir() and (path / "profile.json").is_file():
            inner = profile_entries(path)
            found.entries += inner.entries
            found.excluded += inner.excluded
        elif path.is_file() and path.suffix == ".json":
            if outcomes_path(path).is_file():
                found.entries.append(Entry(path.name.removesuffix(".json"), shown, "results", path))
            else:
                reason = f"not read: no {outcomes_path(path).name} beside it (a results JSON's per-item outcomes)"
                found.excluded.append(Excluded(path.name.removesuffix(".json"), shown, reason))
    return found


def repo_entries(root: Path, prefix: str) -> Expanded:
    """Each run folder of a results repo's local copy, named by its model."""
    entries = []
    for folder in published_runs(root):
        inside = folder.relative_to(root).as_posix()
        entries.append(Entry(inside.split("/")[0], f"{prefix}/{inside}", "published", folder))
    return Expanded(entries)


def profile_entries(folder: Path) -> Expanded:
    """The runs of a profile folder, named by the folder; floors and failed runs left out with the reason."""
    from medprobe.records.verify import read_json_object

    profile = read_json_object(folder / "profile.json", "a medprobe profile")
    runs = profile.get("runs")
    if not isinstance(runs, list) or not all(isinstance(run, dict) for run in runs):
        raise UserError(f"{folder / 'profile.json'} is not a medprobe profile (no list of runs)")
    settings = profile.get("settings") or {}
    quick = (settings.get("quick_settings") or {}) if settings.get("quick") else None
    found = Expanded()
    for run in runs:
        where = where_of(run.get("benchmark"), run.get("config"), run.get("prober"))
        if run.get("floor_of"):
            found.excluded.append(Excluded(folder.name, str(folder), f"a floor of {run['floor_of']} (random weights)", where))
        elif run.get("record") is None:
            found.excluded.append(Excluded(folder.name, str(folder), "the run failed in the profile", where))
        else:
            task_quick = None if quick is None else quick.get(run["record"].get("task") or run.get("benchmark"), {})
            found.entries.append(Entry(folder.name, f"{folder}/runs/{run.get('label')}.json", "profile", folder, run, task_quick))
    return found


# --- reading and sorting out ---------------------------------------------------------------------------


def load_entry(entry: Entry) -> tuple[Any, str | None]:
    """(the run read through medprobe.records, None) or (None, why it failed): runs in a worker process."""
    from medprobe.hub.published import load_published
    from medprobe.profiling.folder import verified_run
    from medprobe.records import load_run

    try:
        if entry.kind == "profile":
            return verified_run(entry.path, entry.profile_entry or {}), None
        if entry.kind == "published":
            return load_published(entry.path), None
        return load_run(entry.path), None
    except UserError as err:
        return None, str(err)


WORKER_DRAWS = ExitStack()  # a worker process keeps shared draws for its whole life


def share_draws() -> None:
    """A worker's initializer: its runs of one data set reuse one set of bootstrap draws (medprobe.stats.shared_draws)."""
    from medprobe.stats import shared_draws

    WORKER_DRAWS.enter_context(shared_draws())


def load_all(entries: list[Entry], workers: int | None) -> list[tuple[Any, str | None]]:
    """Every entry read, in order; in worker processes when there are many (each run's check is a bootstrap). Runs of
    one data set draw their bootstrap resamples once per process (they are the same rows for each)."""
    from medprobe.stats import shared_draws

    workers = workers if workers is not None else min(os.cpu_count() or 1, 4)
    if len(entries) < PARALLEL_FROM or workers < 2:
        with shared_draws():
            return [load_entry(entry) for entry in entries]
    import multiprocessing

    # forkserver: a clean process forks the workers (forking this one, which may hold threads, is unsafe)
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=share_draws) as pool:
        return list(pool.map(load_entry, entries, chunksize=max(1, len(entries) // (4 * workers))))


def left_out(entry: Entry, record: Any, status: DataStatus, include_samples: bool) -> str | None:
    """Why a checked run stays off the boards, or None."""
    from medprobe.hub.subsets import subset_phrase

    subset = subset_phrase(record, entry.quick) if entry.kind == "profile" and entry.quick is not None else subset_phrase(record)
    if subset:
        return f"a subset of its benchmark ({subset})"
    if status.kind == "sample" and not include_samples:
        return f"{status.text} (--include-samples puts it on a board of its own)"
    if status.kind == "unknown":
        return f"mismatched data: {status.text}, so nothing says which data it measured"
    return None


def run_identity(record: Any) -> tuple:
    return (record.model, record.created, (record.outcomes or {}).get("sha256"), record.prober, record.config)


def read_sources(
    sources: Sequence[str], *, include_samples: bool = False, workers: int | None = None
) -> tuple[list[BoardRun], list[Excluded]]:
    """The runs of every SOURCE that may go on a board, and the ones left out with the reason."""
    if not sources:
        raise UserError("leaderboard needs at least one SOURCE: results JSONs, profile folders or a results repo")
    entries, excluded = [], []
    for source in sources:
        found = expand(str(source))
        entries += found.entries
        excluded += found.excluded
    runs: list[BoardRun] = []
    seen: dict[tuple, str] = {}
    for entry, (loaded, error) in zip(entries, load_all(entries, workers)):
        if loaded is None:
            excluded.append(Excluded(entry.label, entry.source, f"failed verification: {error}"))
            continue
        record = loaded.record
        where = where_of(record.benchmark, record.config, record.prober)
        status = data_status(record)
        reason = left_out(entry, record, status, include_samples)
        identity = run_identity(record)
        if reason is None and identity in seen:
            reason = f"the same run as {seen[identity]}"
        if reason:
            excluded.append(Excluded(entry.label, entry.source, reason, where))
            continue
        seen[identity] = entry.source
        runs.append(BoardRun(entry.label, entry.source, record, loaded.outcomes, status))
    return runs, excluded
