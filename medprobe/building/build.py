"""Build a benchmark into a Hub-ready folder: Parquet per config and split, plus a card.

    OUT/README.md                          card with `configs:`, `dataset_info:` and `medprobe_build:` YAML
    OUT/<config>/<split>-00000-of-00001-<first 16 hex of the file's sha256>.parquet

`load_dataset(OUT, config)` then works offline and with no remote code, and the folder can be
uploaded as it is (`medprobe publish dataset OUT --repo ...`).

A benchmark's builder is the class its registry entry names (`TaskEntry.builder`, "module:Class": a
plugin's), else the one class of the shipped `datasets/<benchmark>/<benchmark>.py`; its card template
is the entry's `card`, else `hub_cards/<benchmark>.md` (medprobe/building/cards.py).

A data file is named by its content, and the card's `configs:` names each file exactly (no
pattern). datasets keys its cache of a local folder on the card (the `configs:` paths as written
and `dataset_info:`), not on what the files hold: with a fixed name or a pattern, a rebuild with
the same row counts and byte sizes but other rows loaded the previous build's rows from the cache.
With the content in the path, new rows are a new cache entry, for every user of the folder.

A build never leaves OUT half-written. It holds a lock beside OUT (`.OUT.medprobe-lock`), writes
the whole new folder into a staging folder beside OUT (`.OUT.medprobe-tmp-<pid>/out`, never
inside OUT), loads every config from there with `load_dataset` and compares the rows, and only
then swaps it for OUT in one rename. A failed or interrupted build (an error, Ctrl-C, SIGTERM)
removes its staging folder and leaves OUT as it was, byte for byte; what a killed one (SIGKILL)
leaves beside OUT is removed by the next build, which also finishes backwards a swap that was
cut between its two renames (the lock, staging and swap are medprobe/atomic_folder.py).

The card records how every config was built (`medprobe_build:` in its YAML: benchmark, and per
config the builder parameters, the source, the rows and the sha256 of each data file). That
record is what makes OUT ours: a rebuild replaces only a medprobe build of the same benchmark
(or an empty folder) unless `overwrite`; a build of some configs keeps the others, with their
record, when they were built with the same parameters and source. `medprobe publish dataset`
checks the folder against the record (medprobe/hub/checks.py).
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import os
import shlex
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from importlib import import_module
from pathlib import Path
from types import ModuleType

import datasets
from datasets.exceptions import DatasetGenerationError

from medprobe.atomic_folder import staged_folder
from medprobe.building.cards import (
    CARD_DIGEST_KEY,
    RECORD_KEY,
    card_digest,
    package_version,
    render_dataset_card,
    split_template,
)
from medprobe.building.sources import check_source_folders
from medprobe.contracts import UserError
from medprobe.digests import sha256_file
from medprobe.resources import load_builder_module

CARD = "README.md"


class BuildError(UserError):
    """The build cannot go ahead; the message names the folder or config and what to do."""


@dataclass
class BuildReport:
    out: Path
    rows: dict[str, dict[str, int]] = field(default_factory=dict)  # built config -> split -> rows
    seconds: dict[str, float] = field(default_factory=dict)  # built config -> build time
    kept: list[str] = field(default_factory=list)  # configs of the previous build kept as they were
    notes: list[str] = field(default_factory=list)  # what was cleaned up from killed builds


# --- the builder module --------------------------------------------------------------------------


def builder_target(benchmark: str) -> str:
    """The "module:Class" of a benchmark's builder when its registry entry names one (a plugin's), else "": the
    shipped builder `datasets/<benchmark>/<benchmark>.py` is loaded by path."""
    from medprobe.registry import registry

    return next((entry.builder for entry in registry().tasks.values() if entry.benchmark == benchmark and entry.builder), "")


def builder_module(benchmark: str) -> ModuleType:
    """The module of a benchmark's builder (its card context, field descriptions and sources are read
    there): a plugin's, imported, or the shipped `datasets/<benchmark>/<benchmark>.py`, loaded by path."""
    target = builder_target(benchmark)
    return import_module(target.partition(":")[0]) if target else load_builder_module(benchmark)


def builder_class(benchmark: str) -> type[datasets.DatasetBuilder]:
    """The `GeneratorBasedBuilder` (or other builder) of a benchmark: the class its registry entry
    names, or the one defined in `datasets/<benchmark>/`."""
    target = builder_target(benchmark)
    if target:
        from medprobe.registry import load

        cls = load(target)
        if not (inspect.isclass(cls) and issubclass(cls, datasets.DatasetBuilder)):
            raise UserError(f"the builder {target} of benchmark {benchmark!r} is not a datasets.DatasetBuilder class")
        return cls
    module = load_builder_module(benchmark)
    classes = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, datasets.DatasetBuilder) and obj.__module__ == module.__name__
    ]
    if len(classes) != 1:
        raise UserError(f"datasets/{benchmark}/{benchmark}.py must define exactly one builder class, found {len(classes)}")
    return classes[0]


def config_names(benchmark: str) -> list[str]:
    return [c.name for c in builder_class(benchmark).BUILDER_CONFIGS]


def check_configs(benchmark: str, requested: list[str] | None) -> list[str]:
    known = config_names(benchmark)
    if not requested:
        return known
    unknown = [c for c in requested if c not in known]
    if unknown:
        raise UserError(f"unknown config(s) {', '.join(unknown)} for {benchmark}; expected one of: {', '.join(known)}")
    return [c for c in known if c in requested]  # the builder's order, each once


def builder_parameters(config: datasets.BuilderConfig) -> dict:
    """The builder-specific fields of a config (seed, sizes, input names...), as YAML-safe values."""
    base = {f.name for f in dataclasses.fields(datasets.BuilderConfig)}
    values = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name not in base}
    return {
        key: value if isinstance(value, (str, int, float, bool, type(None))) else repr(value) for key, value in values.items()
    }


def resolved_parameters(benchmark: str, config: str, params: dict) -> dict:
    """The parameters `config` would be built with under `params`, set the way datasets sets them."""
    resolved = copy.deepcopy(next(c for c in builder_class(benchmark).BUILDER_CONFIGS if c.name == config))
    for key, value in params.items():
        if hasattr(resolved, key):  # an unknown key is the builder's to refuse, with its own message
            setattr(resolved, key, value)
    return builder_parameters(resolved)


def source_of(benchmark: str, data_dir: str | None) -> str:
    """Where a config's rows come from, for the record; a user's folder is never named by its path."""
    if data_dir:
        return "data_dir"
    module = builder_module(benchmark)
    commits = [value for name, value in vars(module).items() if name.endswith("_COMMIT") and isinstance(value, str)]
    if commits:
        return f"download (pinned commit {commits[0]})"
    if hasattr(module, "SAMPLE_DIR"):
        return "sample shipped with medprobe"
    return "generated"


def build_config(
    benchmark: str, config: str, data_dir: str | None, cache_dir: str, params: dict
) -> tuple[datasets.DatasetDict, dict, object]:
    """One config built with the builder: its splits, its builder parameters and what the builder
    recorded for the card (its `card_statistics`, None when it keeps none; see `write_card`)."""
    # A builder raises ValueError for bad source files or parameters, with a message naming the file,
    # row or parameter (builders are self-contained and cannot import medprobe.contracts): shown as user errors.
    try:
        builder = builder_class(benchmark)(config_name=config, data_dir=data_dir, cache_dir=cache_dir, **params)
        builder.download_and_prepare()
    except DatasetGenerationError as err:
        # datasets wraps whatever the builder raised; the builder's own message names the file and
        # row, so surface it instead of the generic wrapper.
        cause = err.__cause__ or err.__context__
        if isinstance(cause, ValueError):
            raise UserError(str(cause)) from cause  # the builder's own error class stays reachable as __cause__
        if isinstance(cause, OSError):
            raise cause from None
        raise
    except ValueError as err:
        if isinstance(err, UserError):
            raise
        raise UserError(str(err)) from err
    return builder.as_dataset(), builder_parameters(builder.config), getattr(builder, "card_statistics", None)


def build_command(benchmark: str, data_dir: str | None, params: dict) -> str:
    """The command line for the card; a local data folder is named generically, not by its path."""
    words = ["medprobe", "build", benchmark]
    if data_dir:
        words += ["--data-dir", "DATA_DIR"]
    for key, value in sorted(params.items()):
        words += ["--set", f"{key}={value}"]
    return shlex.join(words).replace("DATA_DIR", "<data folder>")


# --- what OUT holds ------------------------------------------------------------------------------


def card_meta(card: Path) -> dict | None:
    """The YAML header of a card, or None when there is none that parses."""
    try:
        return split_template(card.read_text(encoding="utf-8"), str(card))[0]
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def card_default(meta: dict) -> str | None:
    configs = meta.get("configs") or []
    return next((c.get("config_name") for c in configs if isinstance(c, dict) and c.get("default")), None)


def files_under(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink())


def existing_build(out: Path, benchmark: str) -> dict | None:
    """The card YAML of OUT when OUT is a medprobe build of `benchmark` that a build may change.

    None when there is nothing to keep: no OUT, or a folder without files. Anything else is refused,
    naming what is there, because the swap would delete it (not asked under `overwrite`).
    """
    if not os.path.lexists(out):
        return None
    if not out.is_dir():
        raise BuildError(f"{out} exists and is not a folder; choose another --out")
    files = files_under(out)
    if not files:
        return None
    meta = card_meta(out / CARD) if CARD in files else None
    record = (meta or {}).get(RECORD_KEY)
    if not isinstance(record, dict) or not isinstance(record.get("configs"), dict):
        listing = f"{len(files)} file(s): {', '.join(files[:5])}{' ...' if len(files) > 5 else ''}"
        if CARD not in files:
            what = f"{listing}, and no {CARD}"
        elif meta is not None and "medprobe_licence" in meta:
            what = f"a dataset card without the `{RECORD_KEY}:` record (an older medprobe's build?) ({listing})"
        else:
            what = f"a {CARD} that is not a medprobe dataset card (no `{RECORD_KEY}:` record in its YAML) ({listing})"
        raise BuildError(f"{out} already holds {what}; a build would replace it: pass --overwrite, or choose another --out")
    if record.get("benchmark") != benchmark:
        raise BuildError(
            f"{out} holds a medprobe build of {record.get('benchmark')!r} (configs {', '.join(record['configs'])}), "
            f"not of {benchmark!r}; pass --overwrite to replace it, or choose another --out"
        )
    recorded = record.get(CARD_DIGEST_KEY)  # builds before medprobe 0.2 recorded none: nothing shows an edit
    if recorded and card_digest((out / CARD).read_text(encoding="utf-8"), str(out / CARD)) != recorded:
        raise BuildError(
            f"{out / CARD} was changed since medprobe built it (edited by hand?); a build writes a new card: move your "
            "edits away, or pass --overwrite to replace it"
        )
    return meta


def kept_configs(out: Path, meta: dict | None, requested: list[str], parameters: dict, source: str) -> list[str]:
    """The configs of the previous build that this one keeps: all it did not ask to rebuild.

    A kept config must have been built with the parameters and source this build uses (one card,
    one recipe) and its files must still be what its record says; files of no config outside the
    rebuilt configs' folders are refused (they would be deleted).
    """
    if meta is None:
        return []
    record = meta[RECORD_KEY]
    benchmark = record["benchmark"]
    known = config_names(benchmark)
    unknown = [c for c in record["configs"] if c not in known]
    if unknown:
        raise BuildError(
            f"{out}: its card records config(s) {', '.join(unknown)}, which this medprobe's {benchmark} builder does not "
            "know; pass --overwrite to replace the whole folder"
        )
    kept = [c for c in known if c in record["configs"] and c not in requested]
    recorded_files = {path for config in record["configs"].values() for path in (config.get("files") or {})}
    stray = [
        path for path in files_under(out) if path != CARD and path not in recorded_files and path.split("/")[0] not in requested
    ]
    if stray:
        raise BuildError(
            f"{out} holds file(s) that are not part of its build: {', '.join(stray[:10])}"
            f"{' ...' if len(stray) > 10 else ''}; the rebuild would delete them: move them away, or pass --overwrite"
        )
    for config in kept:
        check_kept_config(out, config, record["configs"][config], parameters[config], source)
    return kept


def check_kept_config(out: Path, config: str, recorded: dict, parameters: dict, source: str) -> None:
    fix = "rebuild every config (leave out --config), or pass --overwrite"
    before = {**(recorded.get("parameters") or {}), "source": recorded.get("source")}
    now = {**parameters, "source": source}
    differ = sorted(key for key in before.keys() | now.keys() if before.get(key) != now.get(key))
    if differ:
        raise BuildError(
            f"{out}: config {config!r}, which this build keeps, was built with "
            f"{', '.join(f'{key}={before.get(key)!r}' for key in differ)}; this build uses "
            f"{', '.join(f'{key}={now.get(key)!r}' for key in differ)}. One card describes one recipe: {fix}"
        )
    for path, digest in (recorded.get("files") or {}).items():
        if not (out / path).is_file() or sha256_file(out / path) != digest:
            raise BuildError(f"{out}/{path} of config {config!r} is missing or changed since it was built; {fix}")


# --- writing the staged folder -------------------------------------------------------------------


def data_file_path(config: str, split: str, digest: str) -> str:
    """The path of a split's Parquet file in OUT, named by its content (see the module docstring).

    It keeps the Hub's one-shard form `<split>-00000-of-00001` in front. datasets allows no dash in a
    split name, so the split is the name up to its first dash (`split_of`).
    """
    return f"{config}/{split}-00000-of-00001-{digest[:16]}.parquet"


def split_of(path: str) -> str:
    """The split of a data file written by `data_file_path` (or by an older medprobe: `<split>-...`)."""
    return Path(path).name.split("-")[0]


def write_config(folder: Path, config: str, dataset_dict: datasets.DatasetDict) -> dict[str, str]:
    """Write one config's splits as Parquet; return relative path -> sha256."""
    (folder / config).mkdir(parents=True)
    files = {}
    for split, ds in dataset_dict.items():
        unnamed = folder / config / f"{split}.parquet.unnamed"  # inside the staging folder: renamed once hashed
        ds.to_parquet(str(unnamed))
        digest = sha256_file(unnamed)
        relative = data_file_path(config, split, digest)
        unnamed.rename(folder / relative)
        files[relative] = digest
    return files


def copy_kept_config(out: Path, folder: Path, recorded: dict, cache_dir: str) -> tuple[datasets.DatasetDict, dict[str, str]]:
    """Copy a kept config's files from OUT; return its splits, read back, for the card, and its files.

    The files keep their bytes (`check_kept_config` compared them with the record); one written by
    an older medprobe under a fixed name gets its content name, so the whole folder loads fresh.
    """
    splits, files = {}, {}
    for relative, digest in recorded["files"].items():
        split = split_of(relative)
        target = data_file_path(Path(relative).parent.as_posix(), split, digest)
        (folder / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(out / relative, folder / target)
        files[target] = digest
        splits[split] = datasets.Dataset.from_parquet(str(folder / target), cache_dir=cache_dir)
    return datasets.DatasetDict(splits), files


def write_card(
    benchmark: str,
    folder: Path,
    built: dict[str, datasets.DatasetDict],
    record: dict,
    default: str,
    params: dict,
    command: str,
    statistics: dict[str, object],
) -> None:
    """The card of the staged folder. The builder module's `card_context(built, params)` gives its
    benchmark-specific text; a builder that records statistics of the configs it builds (counts of
    what it read and skipped: `card_statistics`) gets them as `statistics={config: ...}` too."""
    module = builder_module(benchmark)
    recorded = {config: value for config, value in statistics.items() if value is not None}
    builder_cls = builder_class(benchmark)
    card = render_dataset_card(
        benchmark,
        built,
        {config: {split_of(path): path for path in record["configs"][config]["files"]} for config in built},
        default_config=default,
        # every config of a card was built with the same parameters (checked when configs are kept)
        context=module.card_context(built, params, **({"statistics": recorded} if recorded else {}))
        if hasattr(module, "card_context")
        else {},
        field_descriptions=getattr(module, "FIELD_DESCRIPTIONS", {}),
        config_descriptions={c.name: c.description or "" for c in builder_cls.BUILDER_CONFIGS},
        build_command=command,
        build_record=record,
    )
    card.save(folder / CARD)


def check_staged_build(folder: Path, record: dict, cache_dir: str) -> None:
    """Load every config of the staged folder as a Hub user would; its rows must be those written."""
    meta = card_meta(folder / CARD)
    if meta is None or meta.get(RECORD_KEY) != record:
        raise BuildError(f"{folder / CARD}: the card written does not read back with its build record")
    for config, recorded in record["configs"].items():
        try:
            loaded = datasets.load_dataset(str(folder), config, cache_dir=cache_dir)
        except Exception as err:  # noqa: BLE001 - whatever fails, this build must not replace OUT
            raise BuildError(
                f"the staged build of config {config!r} does not load ({type(err).__name__}: {err}); "
                "the output folder was left as it was"
            ) from err
        rows = {split: ds.num_rows for split, ds in loaded.items()}
        if rows != recorded["rows"]:
            raise BuildError(
                f"the staged build of config {config!r} loads with rows {rows}, but {recorded['rows']} were written; "
                "the output folder was left as it was"
            )


def default_config(benchmark: str, configs: list[str], previous: dict | None) -> str:
    """The builder's default when built, else the previous card's default when kept, else the first."""
    default = builder_class(benchmark).DEFAULT_CONFIG_NAME
    if default in configs:
        return default
    before = card_default(previous) if previous else None
    return before if before in configs else configs[0]


# --- the build -----------------------------------------------------------------------------------


def build(
    benchmark: str,
    out: str | Path,
    *,
    data_dir: str | None = None,
    configs: list[str] | None = None,
    params: dict | None = None,
    overwrite: bool = False,
    progress: Callable[[str, dict[str, int], float], None] | None = None,
) -> BuildReport:
    """Build `configs` (default: all) of `benchmark` into `out`, replacing it in one rename.

    `params` are builder-config parameters (e.g. sizes and seed for generated benchmarks). The
    other configs of a previous build of the same benchmark in `out` are kept. `overwrite`
    replaces whatever `out` holds instead of refusing it. `progress(config, rows per split,
    seconds)` is called as each config is built (`medprobe build` prints one line for each);
    datasets' own progress bars (a "Generating ... split" and a "Creating parquet" bar per split,
    three times over) are off during the build.
    """
    out = Path(out).resolve()
    requested = check_configs(benchmark, configs)
    params = dict(params or {})
    report = BuildReport(out=out)
    ours = partial(existing_build, benchmark=benchmark)  # the card's record says what a build wrote
    with staged_folder(out, "build", refuse=ours, overwrite=overwrite, notes=report.notes.append) as folder:
        previous = folder.owned
        check_source_folders(benchmark, data_dir, params)  # a typo'd --data-dir: one line, before any reading
        source = source_of(benchmark, data_dir)
        parameters = {c: resolved_parameters(benchmark, c, params) for c in config_names(benchmark)}
        report.kept = kept_configs(out, previous, requested, parameters, source)
        with datasets_bars_off():
            write_staged_build(benchmark, out, folder.stage, requested, previous, data_dir, params, source, report, progress)
    return report


@contextmanager
def datasets_bars_off() -> Iterator[None]:
    """datasets' progress bars off for the block, as they were after it."""
    were_on = not datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if were_on:
            datasets.enable_progress_bars()


def write_staged_build(
    benchmark: str,
    out: Path,
    stage: Path,
    requested: list[str],
    previous: dict | None,
    data_dir: str | None,
    params: dict,
    source: str,
    report: BuildReport,
    progress: Callable[[str, dict[str, int], float], None] | None = None,
) -> None:
    """Write the whole new OUT into `stage/out` (caches in `stage/cache`) and check it loads."""
    folder, cache = stage / "out", stage / "cache"
    built: dict[str, datasets.DatasetDict] = {}
    configs: dict[str, dict] = {}
    statistics: dict[str, object] = {}  # what each builder recorded for the card, for the configs built now
    for config in requested:
        start = time.perf_counter()
        dataset_dict, parameters, statistics[config] = build_config(benchmark, config, data_dir, str(cache / "build"), params)
        files = write_config(folder, config, dataset_dict)
        rows = {split: ds.num_rows for split, ds in dataset_dict.items()}
        configs[config] = {
            "medprobe_version": package_version("medprobe"),
            "source": source,
            "parameters": parameters,
            "rows": rows,
            "files": files,
        }
        built[config] = dataset_dict
        report.rows[config] = rows
        report.seconds[config] = time.perf_counter() - start
        if progress is not None:
            progress(config, rows, report.seconds[config])
    for config in report.kept:
        recorded = previous[RECORD_KEY]["configs"][config]
        built[config], files = copy_kept_config(out, folder, recorded, str(cache / "kept"))
        configs[config] = {**recorded, "files": files}
    order = [c for c in config_names(benchmark) if c in built]
    record = {"benchmark": benchmark, "configs": {c: configs[c] for c in order}}
    built = {c: built[c] for c in order}
    default = default_config(benchmark, order, previous)
    write_card(benchmark, folder, built, record, default, params, build_command(benchmark, data_dir, params), statistics)
    check_staged_build(folder, record, str(cache / "check"))
