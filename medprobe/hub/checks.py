"""Checks that run before anything is sent to the Hub; all local, all offline.

A built dataset folder passes when its card's YAML parses, every config in the card loads
with `load_dataset(folder, config)` and has the rows the card says, the folder holds nothing
but the card and the data files those configs name, those configs and files are the ones the
card's `medprobe_build:` record lists with their sha256 (one build, not a mix), and no file in
it is a raw licensed file
(same bytes as a file of a raw-data folder such as ../shared/data, or named like a MedLAMA,
DisKnE, MedNLI or UMLS release file) unless the repo will be gated or private. The card's
`medprobe_licence:` marker (see medprobe/building/cards.py) decides how the data may be published:
`access_for` turns it into the repo's privacy and gating, or refuses.

A metric folder passes when `evaluate.load(folder)` loads it, its card's Space YAML parses and
names the gradio SDK, and it holds its module, card and requirements.txt.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from huggingface_hub import DatasetCard, SpaceCard

from medprobe.building.cards import LICENCE_KEY, LICENCES, RECORD_KEY
from medprobe.contracts import UserError
from medprobe.digests import sha256_file
from medprobe.local_paths import could_be_local, missing_message
from medprobe.resources import available, release_data_dirs, resource_root

if TYPE_CHECKING:  # datasets is imported by the checks that use it: the CLI imports this module for --help
    import datasets


class PublishError(UserError):
    """Publishing cannot go ahead; the message names the file, argument or repo and what to fix."""


# File names of the raw, licensed sources several benchmarks draw on; a built folder never needs any of them.
# Each benchmark adds its own release's (`raw_files` of its registry entry): `raw_file_patterns`.
SOURCE_FILE_PATTERNS = {
    "MedNLI / MEDIQA-NLI file": re.compile(r"^mli_(train|dev|test)_v\d\.jsonl$|^mednli_bionlp19", re.IGNORECASE),
    "UMLS Metathesaurus file": re.compile(r"^MR[A-Z]+\.RRF$"),
}
# Sections every dataset card has (hub_cards/<benchmark>.md): a heading containing each word.
CARD_SECTIONS = ("config", "field", "built", "citation")
# Card files that are always uploaded with the data.
CARD_FILES = ("README.md",)
SPACE_FILES = ("README.md", "requirements.txt", "app.py")


@dataclass
class FileEntry:
    path: str  # relative to the folder, POSIX separators: the path in the repo
    size: int


@dataclass
class DatasetCheck:
    folder: Path
    licence: str
    gated_prompt: str | None
    rows: dict[str, dict[str, int]]  # config -> split -> rows, as loaded
    files: list[FileEntry]
    raw_findings: list[str] = field(default_factory=list)  # "path: why", raw licensed content


@dataclass
class Access:
    private: bool
    gated: bool
    reason: str


def folder_files(folder: Path) -> list[FileEntry]:
    """Every regular file under `folder` except caches, sorted by path."""
    entries = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_file() and "__pycache__" not in relative.parts:
            entries.append(FileEntry(relative.as_posix(), path.stat().st_size))
    return entries


def read_card(path: Path) -> DatasetCard:
    """The dataset card; a missing card or a missing or broken YAML header is a clear error."""
    if not path.is_file():
        raise PublishError(f"{path} is missing: a Hub folder needs its card (build it with `medprobe build`)")
    try:
        card = DatasetCard.load(path)
    except (yaml.YAMLError, ValueError) as err:
        raise PublishError(f"{path}: the card's YAML header does not parse: {err}") from err
    if not card.data.to_dict():
        raise PublishError(f"{path}: the card has no YAML header (--- ... ---) with the Hub metadata")
    return card


def raw_file_patterns() -> dict[str, re.Pattern]:
    """What a raw licensed file is called -> its file-name pattern: every registered benchmark's release
    files, then the shared sources'."""
    from medprobe.registry import registry

    found = {what: re.compile(regex) for entry in registry().tasks.values() for what, regex in entry.raw_files.items()}
    return {**found, **SOURCE_FILE_PATTERNS}


# --- datasets ---------------------------------------------------------------------------------------


def check_card_contents(card_path: Path, card: DatasetCard) -> None:
    """The card says what the data is, under which licence, how it was built and whom to cite."""
    missing = [key for key in ("pretty_name", "license") if not card.data.get(key)]
    if missing:
        raise PublishError(f"{card_path}: the card's YAML has no {' or '.join(missing)}")
    headings = [line.lower() for line in card.text.splitlines() if line.startswith("##")]
    absent = [word for word in CARD_SECTIONS if not any(word in heading for heading in headings)]
    if absent:
        raise PublishError(
            f"{card_path}: the card has no section on {', '.join(absent)}; a medprobe dataset card has "
            "Configs, Fields, How it was built and Citation sections (see the templates in hub_cards/)"
        )


def card_configs(card_path: Path, card: DatasetCard) -> tuple[dict[str, dict], dict[str, datasets.DatasetInfo]]:
    """`configs:` and `dataset_info:` of the card, read with the datasets card classes."""
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs

    try:
        configs = MetadataConfigs.from_dataset_card_data(card.data)
        infos = DatasetInfosDict.from_dataset_card_data(card.data)
    except (ValueError, TypeError, KeyError) as err:
        raise PublishError(f"{card_path}: `configs:` / `dataset_info:` are malformed: {err}") from err
    if not configs:
        raise PublishError(
            f"{card_path}: the card has no `configs:` YAML, so load_dataset cannot tell its configs apart; "
            "build the folder with `medprobe build`"
        )
    if len(configs) > 1 and not any(c.get("default") for c in configs.values()):
        raise PublishError(
            f"{card_path}: {len(configs)} configs and none has `default: true`, so load_dataset(repo) without a "
            "config name fails; mark one config as the default"
        )
    return dict(configs), dict(infos)


def load_config(folder: Path, config: str, cache_dir: str) -> tuple[dict[str, int], set[Path]]:
    """Load one config as a Hub user would; return its rows per split and the data files it read."""
    import datasets

    try:
        loaded = datasets.load_dataset(str(folder), config, cache_dir=cache_dir)
        data_files = datasets.load_dataset_builder(str(folder), config, cache_dir=cache_dir).config.data_files
    except Exception as err:  # noqa: BLE001 - any load failure is the user's to fix; say which config
        raise PublishError(f"{folder}: load_dataset(folder, {config!r}) fails: {type(err).__name__}: {err}") from err
    rows = {split: ds.num_rows for split, ds in loaded.items()}
    files = {Path(str(f)).resolve() for split_files in (data_files or {}).values() for f in split_files}
    return rows, files


def check_row_counts(card_path: Path, config: str, rows: dict[str, int], info: datasets.DatasetInfo | None) -> None:
    if not rows or not all(rows.values()):
        raise PublishError(f"{card_path}: config {config!r} loads with empty splits: {rows}")
    if info is None or not info.splits:
        return
    stated = {name: split.num_examples for name, split in info.splits.items()}
    if stated != rows:
        raise PublishError(
            f"{card_path}: config {config!r} has rows {rows} but the card's dataset_info says {stated}; "
            "the card is stale: rebuild the folder"
        )


def raw_data_dirs(extra: list[str | Path] | None = None) -> list[Path]:
    """Folders of raw licensed files to compare against: the given ones, $MEDPROBE_SHARED_DATA,
    and ../shared/data beside the checkout or the working directory, where present."""
    for path in extra or []:
        if not Path(path).is_dir():
            raise PublishError(f"--raw-data {path}: not a folder")
    candidates = [Path(p) for p in extra or []] + [path for path, _ in release_data_dirs()]
    unique: dict[Path, None] = {}
    for path in candidates:
        if path.is_dir():
            unique.setdefault(path.resolve(), None)
    return list(unique)


def raw_file_findings(folder: Path, files: list[FileEntry], raw_dirs: list[Path]) -> list[str]:
    """Files of `folder` that are raw licensed files, by name pattern or by content."""
    findings = []
    patterns = raw_file_patterns()
    for entry in files:
        name = Path(entry.path).name
        for label, pattern in patterns.items():
            if pattern.search(name):
                findings.append(f"{entry.path}: named like a {label}")
    # Compare contents only where sizes match (cheap), then by hash.
    raw_by_size: dict[int, list[Path]] = {}
    for root in raw_dirs:
        for path in root.rglob("*"):
            if path.is_file():
                raw_by_size.setdefault(path.stat().st_size, []).append(path)
    raw_digests: dict[Path, str] = {}
    for entry in files:
        same_size = raw_by_size.get(entry.size, [])
        if same_size:
            digest = sha256_file(folder / entry.path)
            for raw in same_size:
                if raw not in raw_digests:
                    raw_digests[raw] = sha256_file(raw)
                if raw_digests[raw] == digest:
                    findings.append(f"{entry.path}: same bytes as the raw file {raw}")
    return findings


def check_dataset_folder(folder: str | Path, raw_dirs: list[Path]) -> DatasetCheck:
    """Run every dataset check; raise `PublishError` on the first problem."""
    expected = "expected a built Hub folder (medprobe build ... --out DIR)"
    if not Path(folder).expanduser().exists():
        raise PublishError(missing_message(str(folder), "", expected))
    folder = Path(folder)
    if not folder.is_dir():
        raise PublishError(f"{folder} is not a folder: {expected}")
    card_path = folder / "README.md"
    card = read_card(card_path)
    licence = card.data.get(LICENCE_KEY)
    if licence not in LICENCES:
        raise PublishError(
            f"{card_path}: the card must say how its data may be published with `{LICENCE_KEY}:` "
            f"(one of {', '.join(LICENCES)}; see medprobe/building/cards.py), found {licence!r}"
        )
    check_card_contents(card_path, card)
    configs, infos = card_configs(card_path, card)

    rows: dict[str, dict[str, int]] = {}
    data_files: set[Path] = set()
    files_by_config: dict[str, set[str]] = {}
    with tempfile.TemporaryDirectory(prefix="medprobe-publish-check-") as cache_dir:
        for config in configs:
            rows[config], files = load_config(folder, config, cache_dir)
            check_row_counts(card_path, config, rows[config], infos.get(config))
            data_files |= files
            files_by_config[config] = {f.relative_to(folder.resolve()).as_posix() for f in files}

    files = folder_files(folder)
    expected = {f.relative_to(folder.resolve()).as_posix() for f in data_files} | set(CARD_FILES)
    stray = [entry.path for entry in files if entry.path not in expected]
    if stray:
        raise PublishError(
            f"{folder} holds {len(stray)} file(s) that no config of its card names: {', '.join(stray[:10])}"
            f"{' ...' if len(stray) > 10 else ''}. A published folder holds only the card and the data files "
            "of its configs: remove them"
        )
    check_build_record(folder, card_path, card, rows, files_by_config)
    return DatasetCheck(
        folder=folder,
        licence=licence,
        gated_prompt=card.data.get("extra_gated_prompt"),
        rows=rows,
        files=files,
        raw_findings=raw_file_findings(folder, files, raw_dirs),
    )


def check_build_record(
    folder: Path, card_path: Path, card: DatasetCard, rows: dict[str, dict[str, int]], files_by_config: dict[str, set[str]]
) -> None:
    """The card's configs are those its `medprobe_build:` record lists, with the recorded rows and bytes.

    This catches a folder whose configs come from different builds (an interrupted rebuild under
    an older medprobe, files copied in by hand): every data file must have the sha256 the build
    recorded. A card without the record (older medprobe, or not built by medprobe) is refused: it
    cannot say how its configs were made.
    """
    record = card.data.get(RECORD_KEY)
    if not isinstance(record, dict) or not isinstance(record.get("configs"), dict):
        raise PublishError(
            f"{card_path}: the card has no `{RECORD_KEY}:` record of how each config was built (an older medprobe "
            "or another tool wrote it); rebuild the folder with this medprobe (`medprobe build ... --overwrite`)"
        )
    recorded = record["configs"]
    if set(recorded) != set(rows):
        raise PublishError(
            f"{card_path}: the card's `configs:` ({', '.join(rows)}) and its `{RECORD_KEY}:` record "
            f"({', '.join(recorded)}) disagree; rebuild the folder with `medprobe build`"
        )
    for config, entry in recorded.items():
        files = entry.get("files") if isinstance(entry, dict) else None
        if not isinstance(files, dict) or set(files) != files_by_config[config]:
            raise PublishError(
                f"{card_path}: config {config!r} loads {', '.join(sorted(files_by_config[config]))} but its build record "
                f"lists {', '.join(sorted(files or {}))}; rebuild the folder with `medprobe build`"
            )
        if entry.get("rows") != rows[config]:
            raise PublishError(
                f"{card_path}: config {config!r} has rows {rows[config]} but its build record says {entry.get('rows')}; "
                "rebuild the folder with `medprobe build`"
            )
        for path, digest in files.items():
            if sha256_file(folder / path) != digest:
                raise PublishError(
                    f"{folder / path} (config {config!r}) is not the file its build recorded (sha256 differs): the "
                    "folder mixes builds; rebuild it with `medprobe build`"
                )


def access_for(check: DatasetCheck, private: bool) -> Access:
    """How the repo must be published, from the card's licence marker; refuse what may not be."""
    card = check.folder / "README.md"
    if check.licence == "credentialed":
        if not private:
            raise PublishError(
                f"{card}: `{LICENCE_KEY}: credentialed`: the data holds credentialed text (MedNLI, MEDIQA-NLI or "
                "MIMIC notes: PhysioNet data-use agreements), which may not be redistributed: it is published only "
                "to a private repo (--private)"
            )
        return Access(private=True, gated=False, reason="credentialed text: private repo only")
    if check.licence == "umls":
        if not check.gated_prompt:
            raise PublishError(
                f"{card}: `{LICENCE_KEY}: umls` data is published gated, but the card has no `extra_gated_prompt` "
                "with the UMLS licence terms (the shipped UMLS-derived card templates in hub_cards/ carry it)"
            )
        return Access(private=private, gated=True, reason="UMLS-derived: gated, manual approval of the UMLS licence")
    if check.raw_findings and not private:
        raise PublishError(
            f"{check.folder} is marked `{LICENCE_KEY}: open` but holds raw licensed files: "
            + "; ".join(check.raw_findings)
            + ". Remove them, or publish to a private repo (--private)"
        )
    if check.gated_prompt:
        return Access(private=private, gated=True, reason="the card asks for gating (extra_gated_prompt)")
    return Access(private=private, gated=False, reason="open data")


# --- metrics ----------------------------------------------------------------------------------------


@dataclass
class MetricCheck:
    folder: Path
    name: str
    files: list[FileEntry]  # the module, its card, requirements.txt and app.py if the folder has its own


def metric_folder(name_or_path: str) -> Path:
    """A shipped metric by name (`acc_at_k`) or a metric folder by path."""
    path = Path(name_or_path)
    if path.is_dir():
        return path
    if name_or_path in available("metrics"):
        return resource_root() / "metrics" / name_or_path
    if could_be_local(name_or_path):
        raise PublishError(
            missing_message(name_or_path, "", f"give a metric folder or a shipped metric: {', '.join(available('metrics'))}")
        )
    raise PublishError(
        f"{name_or_path!r} is neither a metric folder nor a shipped metric; shipped: {', '.join(available('metrics'))}"
    )


def check_metric_folder(folder: Path) -> MetricCheck:
    """Run every metric check; raise `PublishError` on the first problem."""
    import evaluate

    name = folder.resolve().name
    module_file = folder / f"{name}.py"
    if not module_file.is_file():
        raise PublishError(f"{folder}: an evaluate module folder holds {name}.py (named like the folder)")
    card_path = folder / "README.md"
    if not card_path.is_file():
        raise PublishError(f"{card_path} is missing: the metric card with the Space YAML")
    try:
        space = SpaceCard.load(card_path).data.to_dict()
    except (yaml.YAMLError, ValueError) as err:
        raise PublishError(f"{card_path}: the card's YAML header does not parse: {err}") from err
    if space.get("sdk") != "gradio" or space.get("app_file", "app.py") != "app.py" or not space.get("title"):
        raise PublishError(
            f"{card_path}: the Space YAML needs `title:`, `sdk: gradio` and `app_file: app.py`; found "
            f"title={space.get('title')!r}, sdk={space.get('sdk')!r}, app_file={space.get('app_file')!r}"
        )
    requirements = folder / "requirements.txt"
    if not requirements.is_file() or not re.search(r"^evaluate\b", requirements.read_text(), re.MULTILINE):
        raise PublishError(f"{requirements}: the Space installs from requirements.txt, which must list evaluate")
    try:
        module = evaluate.load(str(folder))
    except Exception as err:  # noqa: BLE001 - whatever evaluate raises, the folder is not publishable
        raise PublishError(f"{folder}: evaluate.load(folder) fails: {type(err).__name__}: {err}") from err
    if not (module.description or "").strip() or not (module.inputs_description or "").strip():
        raise PublishError(f"{module_file}: the module must document itself (description and inputs_description)")

    files = folder_files(folder)
    expected = {module_file.name, *SPACE_FILES}
    stray = [entry.path for entry in files if entry.path not in expected]
    if stray:
        raise PublishError(
            f"{folder} holds file(s) that are not part of a metric Space: {', '.join(stray)}; "
            f"a metric folder holds {name}.py, README.md, requirements.txt (and optionally its own app.py)"
        )
    return MetricCheck(folder=folder, name=name, files=files)
