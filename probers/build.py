"""Build a benchmark into a Hub-ready folder: Parquet per config and split, plus a card.

    OUT/README.md                          card with `configs:` and `dataset_info:` YAML
    OUT/<config>/<split>-00000-of-00001.parquet

`load_dataset(OUT, config)` then works offline and with no remote code, and the folder can be
uploaded as it is (`medprobe publish dataset OUT --repo ...`).
"""

from __future__ import annotations

import inspect
import shlex
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import datasets
from datasets.exceptions import DatasetGenerationError

from probers.cards import render_dataset_card
from probers.resources import load_builder_module


@dataclass
class BuildReport:
    out: Path
    rows: dict[str, dict[str, int]] = field(default_factory=dict)  # config -> split -> rows
    seconds: dict[str, float] = field(default_factory=dict)  # config -> build time


def builder_class(benchmark: str) -> type[datasets.DatasetBuilder]:
    """The `GeneratorBasedBuilder` (or other builder) defined in `datasets/<benchmark>/`."""
    module = load_builder_module(benchmark)
    classes = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, datasets.DatasetBuilder) and obj.__module__ == module.__name__
    ]
    if len(classes) != 1:
        raise ValueError(f"datasets/{benchmark}/{benchmark}.py must define exactly one builder class, found {len(classes)}")
    return classes[0]


def config_names(benchmark: str) -> list[str]:
    return [c.name for c in builder_class(benchmark).BUILDER_CONFIGS]


def check_configs(benchmark: str, requested: list[str] | None) -> list[str]:
    known = config_names(benchmark)
    if not requested:
        return known
    unknown = [c for c in requested if c not in known]
    if unknown:
        raise ValueError(f"unknown config(s) {', '.join(unknown)} for {benchmark}; expected one of: {', '.join(known)}")
    return requested


def build_config(
    benchmark: str, config: str, data_dir: str | None, cache_dir: str, params: dict
) -> datasets.DatasetDict:
    builder = builder_class(benchmark)(config_name=config, data_dir=data_dir, cache_dir=cache_dir, **params)
    try:
        builder.download_and_prepare()
    except DatasetGenerationError as err:
        # datasets wraps whatever the builder raised; the builder's own message names the file and
        # row, so surface it instead of the generic wrapper.
        cause = err.__cause__ or err.__context__
        if isinstance(cause, (ValueError, OSError)):
            raise cause from None
        raise
    return builder.as_dataset()


def build(
    benchmark: str,
    out: str | Path,
    *,
    data_dir: str | None = None,
    configs: list[str] | None = None,
    params: dict | None = None,
) -> BuildReport:
    """Build `configs` (default: all) of `benchmark` into `out`.

    `params` are builder-config parameters (e.g. sizes and seed for generated benchmarks).
    Stale Parquet files of a rebuilt config are removed first, so the folder always matches
    its card.
    """
    out = Path(out)
    configs = check_configs(benchmark, configs)
    module = load_builder_module(benchmark)
    report = BuildReport(out=out)
    built: dict[str, datasets.DatasetDict] = {}
    split_files: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="medprobe-build-") as cache_dir:
        for config in configs:
            start = time.perf_counter()
            dataset_dict = build_config(benchmark, config, data_dir, cache_dir, params or {})
            target = out / config
            target.mkdir(parents=True, exist_ok=True)
            for stale in target.glob("*.parquet"):
                stale.unlink()
            split_files[config] = {}
            for split, ds in dataset_dict.items():
                ds.to_parquet(str(target / f"{split}-00000-of-00001.parquet"))
                split_files[config][split] = f"{config}/{split}-*"
            report.seconds[config] = time.perf_counter() - start
            report.rows[config] = {split: ds.num_rows for split, ds in dataset_dict.items()}
            built[config] = dataset_dict

        builder_cls = builder_class(benchmark)
        default = builder_cls.DEFAULT_CONFIG_NAME
        card = render_dataset_card(
            benchmark,
            built,
            split_files,
            default_config=default if default in built else configs[0],
            context=module.card_context(built) if hasattr(module, "card_context") else {},
            field_descriptions=getattr(module, "FIELD_DESCRIPTIONS", {}),
            config_descriptions={c.name: c.description or "" for c in builder_cls.BUILDER_CONFIGS},
            build_command=build_command(benchmark, data_dir, params or {}),
        )
        card.save(out / "README.md")
    return report


def build_command(benchmark: str, data_dir: str | None, params: dict) -> str:
    """The command line for the card; a local data folder is named generically, not by its path."""
    words = ["medprobe", "build", benchmark]
    if data_dir:
        words += ["--data-dir", "DATA_DIR"]
    for key, value in sorted(params.items()):
        words += ["--set", f"{key}={value}"]
    return shlex.join(words).replace("DATA_DIR", "<data folder>")
