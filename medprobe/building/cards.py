"""Dataset cards rendered from the templates in `hub_cards/`.

A template is Markdown with a YAML header. The header holds what is fixed for a benchmark
(pretty name, licence, gating, tags); the body holds `$placeholders` filled at build time. The
Hub-facing YAML keys that depend on the built data (`configs:` so that `load_dataset(folder,
config)` works, `dataset_info:` with features and split sizes, `size_categories`) are added
here with the card classes of huggingface_hub and datasets, so they are always well-formed.

Placeholders available to every template:
- `$configs_table`, `$fields_table`, `$total_rows`: from the built data;
- `$medprobe_version`, `$datasets_version`, `$build_command`;
- `$citation`: the BibTeX of the benchmark's keys in the registry, and medprobe's (medprobe/citations.py);
- one per file in `hub_cards/_shared/` (e.g. `$umls_licence` from `_shared/umls_licence.md`);
- whatever the builder module's `card_context(built, params)` returns (`params`: the build's `--set` values).
  A builder whose instances record statistics of what they built (counts of what was read, kept and
  skipped, which the rows alone do not show) sets them as its `card_statistics` after generating a
  config; the build then calls `card_context(built, params, statistics={config: ...})` with those of
  the configs built now (configs kept from an earlier build have none). Nothing passes through
  module-level state.

A dataset card has `pretty_name` and `license` in its YAML and, in its body, sections whose
headings name its configs, fields, how it was built and its citation (`medprobe publish
dataset` checks them).

Licence marker. Every template's YAML carries `medprobe_licence:`, which says what the built
data may be published as; `medprobe publish dataset` enforces it (medprobe/hub/checks.py):
- `open`: made by medprobe or from openly licensed sources; may be published publicly.
- `umls`: derived from the UMLS Metathesaurus (MedLAMA; context variance built on UMLS
  triples). Published only gated (manual approval): the template must also carry
  `extra_gated_prompt` (the UMLS licence prompt) and `extra_gated_fields`, as
  `hub_cards/medlama.md` does; `$umls_licence` and `$gating_note` are the shared card text.
- `credentialed`: contains credentialed text that its data-use agreement forbids sharing:
  MedNLI / MEDIQA-NLI (DisKnE), MIMIC clinical notes (a context-variance build from them).
  Never published publicly: only to a private repo (`--private`).
A template may take the marker from its builder (`medprobe_licence: $licence`, filled by
`card_context`) when it depends on the inputs, as for context variance.
"""

from __future__ import annotations

import string
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from huggingface_hub import DatasetCard, DatasetCardData

from medprobe.citations import benchmark_keys, bibtex
from medprobe.contracts import UserError
from medprobe.resources import card_template, resource_root

if TYPE_CHECKING:  # datasets is imported where a card is rendered: publish and --help import this module
    import datasets


LICENCE_KEY = "medprobe_licence"
LICENCES = ("open", "umls", "credentialed")
# The build record in a built card's YAML (written by medprobe/building/build.py, checked by `medprobe publish`):
#   medprobe_build:
#     benchmark: medlama
#     configs:
#       full:
#         medprobe_version: 0.1.0
#         source: download (pinned commit ...)   # or data_dir (never the user's path), generated, ...
#         parameters: {}                           # the builder config's own fields: seed, sizes, ...
#         rows: {test: 19000}
#         files: {full/test-00000-of-00001-<sha256[:16]>.parquet: <sha256>}   # named by content: build.data_file_path
#     card_sha256: <sha256>                       # card_digest of the card as written (a hand-edited card differs)
# It says which configs the folder holds and how each was made; a build changes only a folder
# whose record names the same benchmark, and only a card it wrote (a rebuild refuses an edited card).
RECORD_KEY = "medprobe_build"
CARD_DIGEST_KEY = "card_sha256"


def card_digest(text: str, source: str = "README.md") -> str:
    """The digest of a card's content: its YAML (parsed, so formatting does not count) and its text, leaving out
    the digest the build record holds of them. Equal exactly when the card is the one a build wrote."""
    from medprobe.digests import json_digest

    meta, body = split_template(text, source)
    record = dict(meta.get(RECORD_KEY) or {})
    record.pop(CARD_DIGEST_KEY, None)
    content = {"meta": {**meta, RECORD_KEY: record}, "body": body}
    return json_digest(content)


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def split_template(text: str, source: str, variables: dict[str, str] | None = None) -> tuple[dict, str]:
    """Split a template into its YAML header (a dict) and its Markdown body.

    With `variables`, `$placeholders` are filled in both parts first (a header may hold one,
    e.g. a licence marker that depends on the build's inputs).
    """
    if not text.startswith("---\n"):
        raise UserError(f"{source}: a card template must start with a '---' YAML header")
    header, sep, body = text[4:].partition("\n---\n")
    if not sep:
        raise UserError(f"{source}: the YAML header is not closed by a '---' line")
    if variables is not None:
        try:
            header = string.Template(header).substitute(variables)
            body = string.Template(body).substitute(variables)
        except KeyError as err:
            raise UserError(f"{source}: placeholder ${err.args[0]} has no value; known: {', '.join(sorted(variables))}") from err
    try:
        meta = yaml.safe_load(header) or {}
    except yaml.YAMLError as err:
        raise UserError(f"{source}: the YAML header does not parse: {err}") from err
    return meta, body


def card_path(benchmark: str) -> Path:
    """The card template of a benchmark: its registry entry's `card` (a plugin's own template), else the
    shipped `hub_cards/<benchmark>.md` (FileNotFoundError when there is none)."""
    from medprobe.registry import registry

    card = next((entry.card for entry in registry().tasks.values() if entry.benchmark == benchmark and entry.card), "")
    if not card:
        return card_template(f"{benchmark}.md")
    if not Path(card).is_file():
        raise FileNotFoundError(f"card template {card!r} of benchmark {benchmark!r} (its registry entry's card) not found")
    return Path(card)


def template_metadata(benchmark: str) -> dict:
    """The static YAML header of the benchmark's card template (pretty name, licence, gating, tags)."""
    path = card_path(benchmark)
    return split_template(path.read_text(encoding="utf-8"), str(path))[0]


def shared_snippets() -> dict[str, str]:
    folder = resource_root() / "hub_cards" / "_shared"
    return {p.stem: p.read_text(encoding="utf-8").strip() for p in sorted(folder.glob("*.md"))}


def size_category(rows: int) -> str:
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")]
    return next((label for bound, label in bounds if rows < bound), "1M<n<10M")


def fields_table(features: datasets.Features, descriptions: dict[str, str]) -> str:
    import datasets

    lines = ["| field | type | description |", "|---|---|---|"]
    for name, feature in features.items():
        if isinstance(feature, datasets.Value):
            kind = feature.dtype
        elif isinstance(feature, datasets.ClassLabel):
            kind = "class label (" + ", ".join(feature.names) + ")"
        elif isinstance(feature, (datasets.List, datasets.Sequence)) and isinstance(feature.feature, datasets.Value):
            kind = f"list of {feature.feature.dtype}"
        else:
            kind = type(feature).__name__
        lines.append(f"| `{name}` | {kind} | {descriptions.get(name, '')} |")
    return "\n".join(lines)


def configs_table(built: dict[str, datasets.DatasetDict], descriptions: dict[str, str]) -> str:
    lines = ["| config | split | rows | description |", "|---|---|---|---|"]
    for config, dataset_dict in built.items():
        for split, ds in dataset_dict.items():
            lines.append(f"| `{config}` | {split} | {ds.num_rows:,} | {descriptions.get(config, '')} |")
    return "\n".join(lines)


def render_dataset_card(
    benchmark: str,
    built: dict[str, datasets.DatasetDict],
    split_files: dict[str, dict[str, str]],
    default_config: str,
    *,
    context: dict[str, str],
    field_descriptions: dict[str, str],
    config_descriptions: dict[str, str],
    build_command: str,
    build_record: dict | None = None,
) -> DatasetCard:
    """Render the benchmark's card template (`card_path`: `hub_cards/<benchmark>.md` for a shipped one) for the built configs.

    `split_files[config][split]` is the data file (path or pattern) relative to the card, e.g.
    `"hard/test-00000-of-00001-<hash>.parquet"`; `build_record` goes under `medprobe_build:` (see RECORD_KEY).
    """
    import datasets
    from datasets.info import DatasetInfo, DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs

    path = card_path(benchmark)
    first = next(iter(built.values()))
    features = next(iter(first.values())).features
    total_rows = sum(ds.num_rows for dd in built.values() for ds in dd.values())
    variables = {
        **shared_snippets(),
        "configs_table": configs_table(built, config_descriptions),
        "fields_table": fields_table(features, field_descriptions),
        "total_rows": f"{total_rows:,}",
        "medprobe_version": package_version("medprobe"),
        "datasets_version": datasets.__version__,
        "build_command": build_command,
        "citation": bibtex(benchmark_keys(benchmark)),
        **context,
    }
    meta, text = split_template(path.read_text(encoding="utf-8"), str(path), variables)
    card_data = DatasetCardData(**meta)
    card_data.size_categories = [size_category(total_rows)]
    infos = {}
    for config, dataset_dict in built.items():
        splits = datasets.SplitDict()
        for split, ds in dataset_dict.items():
            splits.add(datasets.SplitInfo(name=split, num_bytes=ds.data.nbytes, num_examples=ds.num_rows))
        infos[config] = DatasetInfo(features=next(iter(dataset_dict.values())).features, splits=splits, config_name=config)
    DatasetInfosDict(infos).to_dataset_card_data(card_data)
    configs = {
        config: {
            "data_files": [{"split": split, "path": pattern} for split, pattern in split_files[config].items()],
            **({"default": True} if config == default_config else {}),
        }
        for config in built
    }
    MetadataConfigs(configs).to_dataset_card_data(card_data)
    if build_record is None:
        return DatasetCard(f"---\n{card_data.to_yaml()}\n---\n{text}")
    card_data[RECORD_KEY] = build_record
    build_record[CARD_DIGEST_KEY] = card_digest(f"---\n{card_data.to_yaml()}\n---\n{text}", str(path))
    card_data[RECORD_KEY] = build_record
    return DatasetCard(f"---\n{card_data.to_yaml()}\n---\n{text}")
