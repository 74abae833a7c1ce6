"""Loading a benchmark the way a Hub user does (`load_dataset`), with one-line errors that say what
is wrong with the folder or Hub id and how to fix it."""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from medprobe.atomic import disk_error, naming_the_output
from medprobe.contracts import UserError
from medprobe.local_paths import dataset_source

if TYPE_CHECKING:  # imported where used, so that `medprobe --help` stays fast
    import datasets


def load_probe_dataset(dataset: str, config: str | None, split: str) -> datasets.Dataset:
    """`load_dataset(dataset, config, split=split)`, or one line naming the path, what is wrong and what to do."""
    import datasets

    dataset_source(dataset)
    refuse_dataset_script(dataset)
    with naming_the_output(datasets.config.HF_DATASETS_CACHE):  # a full disk there: its folder, not the data's fault
        try:
            return datasets.load_dataset(dataset, config, split=split)
        except load_errors() as err:  # evaluated only when something was raised
            if disk_error(err) is not None:
                raise  # (naming_the_output raises it as the OSError of the disk)
            raise UserError(explain_load_failure(dataset, config, split, err)) from err


def column(ds: datasets.Dataset, name: str) -> list:
    """A column as a plain list (a new list each call), read once per dataset object and format.

    `ds[name]` is a lazy `datasets.Column` whose iteration formats one row at a time: 150 ms per pass
    over MedLAMA's 19,000 rows, against 8 ms for the slice; a task that walks its columns a dozen
    times lost seconds to it. Even the slice converts Arrow to Python again each time (MedLAMA's
    load, predict, score and chance read 17 columns, 0.3 s of a warm run), so the lists are kept
    while the dataset object lives. A `datasets.Dataset` is immutable but for its format, which is
    part of the key."""
    columns = _COLUMNS.setdefault(ds, {})
    key = (name, repr(sorted(ds.format.items())))
    if key not in columns:
        columns[key] = ds[name][:]
    return list(columns[key])


_COLUMNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # dataset -> {(column, format): values}


def row_digests(ds: datasets.Dataset, fields: tuple[str, ...], rows: list[int] | None = None, *prefix: object) -> list[str]:
    """The content digest (`medprobe.stats.item_digest`) of each row (of `rows`, default all): its `fields`
    after `prefix`. What two runs' outcomes pair on beside the item id: the same id with another digest
    is another question."""
    from medprobe.stats import item_digest

    values = [column(ds, name) for name in fields]
    return [item_digest(*prefix, *(value[row] for value in values)) for row in (range(ds.num_rows) if rows is None else rows)]


def dataset_config_names(dataset: str) -> list[str]:
    """The configs of --dataset (for probers that run every config), with the errors of `load_probe_dataset`."""
    import datasets

    dataset_source(dataset)
    refuse_dataset_script(dataset)
    with naming_the_output(datasets.config.HF_DATASETS_CACHE):
        try:
            return datasets.get_dataset_config_names(dataset)
        except load_errors() as err:  # evaluated only when something was raised
            if disk_error(err) is not None:
                raise  # (naming_the_output raises it as the OSError of the disk)
            raise UserError(explain_load_failure(dataset, None, None, err)) from err


def load_errors() -> tuple[type[BaseException], ...]:
    """What `load_dataset` raises for data that does not load: datasets' own errors, pyarrow's (a
    truncated Parquet file), I/O and value errors. Anything else is a bug and keeps its traceback."""
    import pyarrow
    from datasets.exceptions import DatasetsError

    return (DatasetsError, pyarrow.ArrowException, OSError, ValueError)


def refuse_dataset_script(dataset: str) -> None:
    """datasets >= 4 refuses a folder holding `<folder name>.py` (a loading script) with a RuntimeError."""
    path = Path(dataset)
    script = path if path.suffix == ".py" else path / f"{path.name}.py"
    if script.is_file():
        raise UserError(
            f"--dataset {dataset}: {script} is a dataset script, which datasets >= 4 no longer runs; "
            f"build a Parquet folder with `medprobe build <benchmark> --out DIR` and pass --dataset DIR"
        )


def explain_load_failure(dataset: str, config: str | None, split: str | None, err: BaseException) -> str:
    """One line: the path, what is wrong with it (diagnosed from the folder where possible), what to do."""
    from medprobe.resources import available

    where = (f"config {config!r}" if config else "the default config") + (f", split {split!r}" if split else "")
    folder = Path(dataset).expanduser()
    if not folder.exists():
        return (
            f"could not load dataset {dataset} ({where}): {first_line(err)}. Build a local folder first "
            "(medprobe build ... --out DIR) and pass it as --dataset DIR"
        )
    if not folder.is_dir():
        return f"--dataset {dataset} is a file; expected a folder written by `medprobe build` (README.md + Parquet files)"
    if not (folder / "README.md").is_file():
        found = ", ".join(sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())[:6]) or "nothing"
        return (
            f"--dataset {dataset} has no README.md card, so it is not a folder written by `medprobe build` "
            f"(it holds {found}: a raw release folder?). Build it first: medprobe build <benchmark> --data-dir "
            f"{dataset} --out DIR (benchmarks: {', '.join(available('datasets'))}), then pass --dataset DIR"
        )
    problem = folder_problem(folder, config, split)
    if problem is None:  # e.g. an unknown config or split: datasets' message lists the ones there are
        return f"--dataset {dataset} does not load ({where}): {first_line(err)}"
    if inside_the_package(folder):  # the shipped sample: never tell a user to write into the installed package
        return (
            f"--dataset {dataset} does not load ({where}): {problem}. It is data shipped inside the medprobe package, "
            "so the install is damaged: reinstall medprobe (pip install --force-reinstall medprobe)"
        )
    rebuild = f"medprobe build {card_benchmark(folder)} [--data-dir RELEASE] --out {dataset}"
    return f"--dataset {dataset} does not load ({where}): {problem}. Rebuild it: {rebuild}"


def inside_the_package(folder: Path) -> bool:
    """Whether `folder` is part of the installed medprobe package (its demo data, a builder's sample)."""
    return folder.resolve().is_relative_to(Path(__file__).resolve().parent)


def card_benchmark(folder: Path) -> str:
    """The benchmark a built folder's card is for (from its pretty_name), or `<benchmark>`."""
    import yaml

    from medprobe.resources import available

    try:
        header = (folder / "README.md").read_text(encoding="utf-8").split("---", 2)[1]
        pretty = str(yaml.safe_load(header).get("pretty_name", ""))
    except (OSError, IndexError, AttributeError, yaml.YAMLError):
        return "<benchmark>"
    squeezed = "".join(ch for ch in pretty.lower() if ch.isalnum())
    names = [name for name in available("datasets") if squeezed.startswith(name.lower().replace("_", ""))]
    return names[0] if len(names) == 1 else "<benchmark>"


def folder_benchmark(dataset: str) -> str | None:
    """The benchmark a local --dataset folder holds, when it says so: the record of its `medprobe build` card, or the
    card of a sample shipped with medprobe (the folder itself or a copy, e.g. `medprobe build medlama --sample`);
    None for anything else (a Hub id, another tool's folder), which the task's own checks then meet."""
    from medprobe.building.cards import RECORD_KEY, split_template
    from medprobe.digests import sha256_file
    from medprobe.registry import registry
    from medprobe.resources import shipped_sample

    card = Path(dataset).expanduser() / "README.md"
    if not card.is_file():
        return None
    try:
        meta = split_template(card.read_text(encoding="utf-8"), str(card))[0]
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    record = meta.get(RECORD_KEY) if isinstance(meta, dict) else None
    if isinstance(record, dict) and isinstance(record.get("benchmark"), str):
        return record["benchmark"]
    digest = sha256_file(card)
    for entry in registry().tasks.values():
        plan = entry.profile
        if plan is not None and plan.sample and (shipped_sample(plan.sample) / "README.md").is_file():
            if sha256_file(shipped_sample(plan.sample) / "README.md") == digest:
                return entry.benchmark
    return None


def folder_problem(folder: Path, config: str | None, split: str | None) -> str | None:
    """What is wrong with the data files of a built folder's config and split, or None if nothing is found.

    Reads only the card and the Parquet footers: an unreadable (truncated) Parquet file, data files
    that are missing, or a row count that differs from the card's `dataset_info` (a stale card).
    """
    import datasets
    import pyarrow.parquet as pq

    try:
        builder = datasets.load_dataset_builder(str(folder), config)
    except Exception:  # noqa: BLE001 - the diagnosis is best effort; the caller falls back to load_dataset's message
        return missing_card_files(folder, config, split)
    split = split or next(iter(builder.config.data_files or {}), None)
    if split is None or split not in (builder.config.data_files or {}):
        return None
    files = [str(f) for f in builder.config.data_files[split]]
    name = f"{builder.config.name}/{split}"
    if not files:
        return f"the card names data files for {name} but none exist"
    if not all(file.endswith(".parquet") for file in files):
        return None  # JSON lines (the shipped sample), CSV: datasets' own message says what is wrong with them
    rows = 0
    for file in files:
        try:
            rows += pq.read_metadata(file).num_rows
        except Exception as err:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, ... for a broken file
            return f"{file} is not a readable Parquet file (truncated or corrupt: {first_line(err)})"
    stated = builder.info.splits[split].num_examples if builder.info.splits and split in builder.info.splits else None
    if stated is not None and stated != rows:
        return (
            f"its README.md card says {name} has {stated:,} rows but its Parquet files hold {rows:,} "
            "(a stale card, or data files missing or replaced)"
        )
    return None


def missing_card_files(folder: Path, config: str | None, split: str | None) -> str | None:
    """The data files the card names (by exact name, as `medprobe build` writes them) that are gone, or None."""
    import yaml

    try:
        header = (folder / "README.md").read_text(encoding="utf-8").split("---", 2)[1]
        configs = yaml.safe_load(header).get("configs") or []
    except (OSError, IndexError, AttributeError, yaml.YAMLError):
        return None
    chosen = next((c for c in configs if c.get("config_name") == config or (config is None and c.get("default"))), None)
    if not isinstance(chosen, dict):
        return None
    for entry in chosen.get("data_files") or []:
        if not isinstance(entry, dict) or (split and entry.get("split") != split):
            continue
        paths = entry.get("path")
        paths = [paths] if isinstance(paths, str) else list(paths or [])
        if paths and not any((folder / path).is_file() or list(folder.glob(path)) for path in paths):
            return f"the card names data files for {chosen['config_name']}/{entry.get('split')} but none exist"
    return None


def first_line(err: BaseException) -> str:
    """The first non-empty line of an error message, without a trailing full stop."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return (lines[0] if lines else type(err).__name__).rstrip(".")


def check_fields(ds: datasets.Dataset, required: tuple[str, ...] | list[str], what: str) -> None:
    """Refuse a dataset that lacks a field the task reads, naming what is missing and what is there."""
    missing = [f for f in required if f not in ds.column_names]
    if missing:
        raise UserError(
            f"{what} lacks the field(s) {', '.join(missing)} that this task needs "
            f"(expected {', '.join(required)}; found {', '.join(ds.column_names)})"
        )


# --- what a run read: the data files' content ---------------------------------------------------------
# Here, not in medprobe.provenance (which re-exports them), because the lm-eval export records it too.

HUB_REVISION = re.compile(r"^hf://datasets/(?P<repo>[^@]+)@(?P<revision>[0-9a-f]{40})/")


def dataset_fingerprint(dataset: str, probed: Sequence[tuple[str | None, str]]) -> dict:
    """The content of the config/split pairs a run read, as `load_dataset(dataset, config, split=split)` resolves them.

    Local data files: {"sha256": over each file's name and sha256, "files": {name: sha256}}; files of a
    Hub dataset: {"hub": repo id, "revision": the commit they were read at, "sha256": of those}.
    """
    import datasets

    from medprobe.digests import sha256_file

    files: dict[str, str] = {}
    revisions: dict[str, str] = {}
    for config, split in probed:
        builder = datasets.load_dataset_builder(dataset, config)
        for path in map(str, (builder.config.data_files or {}).get(split, [])):
            hub = HUB_REVISION.match(path)
            name = f"{builder.config.name}/{split}/{Path(path).name}"
            if hub:
                revisions[hub["repo"]] = hub["revision"]
                files[name] = f"{hub['repo']}@{hub['revision']}"
            else:
                files[name] = sha256_file(Path(path))
    fingerprint: dict = {"sha256": files_digest(files), "files": dict(sorted(files.items()))}
    if revisions:
        fingerprint["hub"] = ", ".join(sorted(revisions))
        fingerprint["revision"] = ", ".join(revisions[repo] for repo in sorted(revisions))
    return fingerprint


def files_digest(files: dict[str, str]) -> str:
    """One sha256 over data files' names (`<config>/<split>/<file>`) and digests: a dataset fingerprint's `sha256`
    (also derived from a dataset card's build record by `medprobe publish results`)."""
    from medprobe.digests import sha256_text

    return sha256_text("".join(f"{name}|{digest}\n" for name, digest in sorted(files.items())))
