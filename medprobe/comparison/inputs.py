"""What `medprobe compare` compares: results JSONs and profile folders read as runs (medprobe.comparison pairs them).

    inputs = read_inputs(["out/profile-a", "out/profile-b"])   # one Input per path, its runs by benchmark/config/prober

A results JSON is one run, labelled by its file name; so is a run published to a results repo
(`hub:ORG/NAME/<model>/<benchmark>/<config>/<prober>`, fetched into the Hub cache, or that folder of a
local copy: medprobe.hub.published), labelled by its model; a profile folder (or its profile.json) holds
one run per benchmark/config/prober, labelled by the folder's name. Floors (MST's scratch run) and
failed runs of a profile are left out and listed. Every run is read through medprobe.records (its
numbers recomputed from its outcomes); a profile's run is also checked to be the one profile.json
recorded (medprobe.profiling.folder.verified_run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from medprobe.contracts import UserError
from medprobe.local_paths import MissingPath, missing_message
from medprobe.records import load_run
from medprobe.records.record import RunRecord
from medprobe.stats import Outcomes

Key = tuple[str, str | None, str]  # (benchmark, config, prober): what a profile run is matched by


@dataclass
class Run:
    """One run to compare: its results JSON, the record read from it and its per-item outcomes (medprobe.records:
    every number of the record recomputed from those outcomes)."""

    label: str  # how the tables name it: the input's label, plus the run's label inside a profile
    path: Path  # the results JSON (its outcomes file lies beside it)
    record: RunRecord
    outcomes: Outcomes


@dataclass
class Input:
    """One command-line input: a results JSON (one run) or a profile folder (one run per benchmark/config/prober)."""

    label: str
    path: Path
    kind: str  # "run" or "profile"
    runs: dict[Key, Run] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)  # profile runs not compared, with why


def key_title(key: Key) -> str:
    benchmark, config, prober = key
    return f"{benchmark}/{config or 'all'} {prober}"


# --- reading the inputs ---------------------------------------------------------------------------------


def read_inputs(paths: Sequence[str | Path]) -> list[Input]:
    """Each path as a run or a profile, labelled by its file or folder name (by the path as given when two names clash)."""
    if len(paths) < 2:
        raise UserError("compare needs at least two results JSONs or profile folders")
    names = [input_name(path) for path in paths]
    labels = [name if names.count(name) == 1 else str(path) for name, path in zip(names, paths)]
    labels = [label if labels[:index].count(label) == 0 else f"{label} ({index + 1})" for index, label in enumerate(labels)]
    inputs = [read_input(path, label) for path, label in zip(paths, labels)]
    kinds = {item.kind for item in inputs}
    if len(kinds) > 1:
        raise UserError("compare runs with runs, or profiles with profiles: give a profile's run as DIR/runs/NAME.json")
    return inputs


def input_name(path: Path | str) -> str:
    """A results JSON by its file name, a profile by its folder's name (also when given as DIR/profile.json), a
    published run by its model and repo (`minilm@me/results`) or, in a local copy, by its model's folder."""
    from medprobe.hub.published import HUB, is_run_folder, parse_hub

    if str(path).startswith(HUB):
        repo_id, inside = parse_hub(str(path))
        return f"{inside.split('/')[0]}@{repo_id}" if inside else repo_id
    path = Path(path)
    if path.is_dir() and is_run_folder(path):
        return f"{path.resolve().parents[2].name} ({path.resolve().parents[3].name})"
    return path.resolve().parent.name if path.name == "profile.json" else path.name


def read_input(path: str | Path, label: str | None = None) -> Input:
    from medprobe.hub.published import HUB, fetch_run, is_run_folder, load_published

    label = label or input_name(path)
    if str(path).startswith(HUB) or (Path(path).is_dir() and is_run_folder(Path(path))):
        # a published run (medprobe.hub.published): fetched into the Hub cache, read back through medprobe.records
        folder = fetch_run(str(path)) if str(path).startswith(HUB) else Path(path)
        loaded = load_published(folder)
        run = Run(label, loaded.path, loaded.record, loaded.outcomes)
        return Input(label, Path(str(path)), "run", {record_key(loaded.record): run})
    path = Path(path)
    if path.is_dir() or path.name == "profile.json":
        return read_profile(path if path.is_dir() else path.parent, label)
    if not path.is_file():
        raise MissingPath(missing_message(str(path), "", "give a results JSON or a profile folder"))
    loaded = load_run(path)
    return Input(label, path, "run", {record_key(loaded.record): Run(label, path, loaded.record, loaded.outcomes)})


def record_key(record: RunRecord) -> Key:
    return (record.benchmark, record.config, record.prober)


def read_profile(folder: Path, label: str) -> Input:
    """The runs of a profile folder, by benchmark/config/prober; floors and failed runs are left out (and listed)."""
    from medprobe.profiling.folder import verified_run
    from medprobe.records.verify import read_json_object

    profile_json = folder / "profile.json"
    if not profile_json.is_file():
        raise UserError(f"{folder} is a folder without profile.json: give a results JSON or a `medprobe profile` folder")
    entries = read_json_object(profile_json, "a medprobe profile").get("runs")
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise UserError(f"{profile_json} is not a medprobe profile (no list of runs)")
    found = Input(label, folder, "profile")
    for entry in entries:
        key = (entry.get("benchmark"), entry.get("config"), entry.get("prober"))
        if entry.get("floor_of"):
            found.left_out.append(f"{label}: {key_title(key)} is the floor of {entry['floor_of']}, not compared")
        elif entry.get("record") is None:
            found.left_out.append(f"{label}: {key_title(key)} failed in the profile, not compared")
        elif key in found.runs:
            raise UserError(f"{profile_json} holds two runs of {key_title(key)}; compare their results JSONs instead")
        else:
            loaded = verified_run(folder, entry)
            found.runs[key] = Run(label, loaded.path, loaded.record, loaded.outcomes)
    return found
