"""MST: measuring-skill tests, generated cloze tasks about measurements and units.

After Park, Ryu, Choi, "Do language models understand measurements?" (Findings of EMNLP 2022).
Five tasks, one config each; every row is a sentence with one [MASK] and a fixed set of choices:

    comparison       "3.8 g is [MASK] than 1.59 mg."                        larger / smaller
    argminmax        "The [MASK] value among 2 mL, 0.5 L, 30 cL is 0.5 L."  largest / smallest / middle
    sorting          "Sorting 3 m, 20 cm in [MASK] order gives 20 cm, 3 m." increasing / decreasing / random
    unit_conversion  "1.5 g and 1500 mg are [MASK]."                        equal / different
    reference_range  "The serum sodium level of 152 mmol/L is [MASK]."      normal / abnormal

The paper's unit tables, sampling ranges and reference-range table are not public; the ones
here were written for this project and are documented in the dataset card.

The generator is in this folder: measures.py (the measurement system and the reference-range
table) and generator.py (templates, deterministic draws, one row generator per task); this module
holds the parameters, the builder and the card text. Every label is decided with exact decimal
arithmetic (a decimal context that traps any rounding), never with floats.

Self-contained (the datasets library and the standard library), loaded by path, as a package:
`medprobe build mst --out DIR [--set seed=7 --set train_size=5000 ...]`.
"""

from __future__ import annotations

import decimal
import inspect
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, fields

import datasets

from .generator import SPLITS, TASKS, Settings, generate, valid_prefix_pairs
from .measures import (
    BASE_UNITS,
    EXACT,
    MAX_PREFIX_GAP,
    PREFIX_ALIASES,
    PREFIX_NAMES,
    PREFIXES,
    REFERENCE_RANGES,
    grid_step,
    number_text,
    sampling_regions,
)

# What medprobe reads from the builder module: the builder, its features and the card's text.
__all__ = ["FEATURES", "FIELD_DESCRIPTIONS", "Mst", "MstConfig", "card_context"]

_DESCRIPTION = (
    "Measuring-skill tests (MST): generated cloze sentences that ask a masked language model "
    "to compare, rank, sort and convert measurements with SI prefixes, and to tell whether a "
    "laboratory value lies in its reference range."
)
# --- parameters ------------------------------------------------------------------------------------


def _names(value, what: str) -> list[str]:
    """A comma-separated string (from `--set units=g,L`) or a list of names."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",")]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value]
    raise ValueError(f"mst: {what} must be a comma-separated string or a list of names, got {value!r}")


def parse_units(value) -> tuple[str, ...]:
    units = _names(value, "units")
    unknown = [u for u in units if u not in BASE_UNITS]
    if unknown or not units:
        known = ", ".join(f"{s} ({n})" for s, n in BASE_UNITS.items())
        raise ValueError(
            f"mst: unknown unit(s) {', '.join(map(repr, unknown)) or '(none given)'} in units={value!r}; known: {known}"
        )
    return tuple(dict.fromkeys(units))


def parse_prefixes(value) -> tuple[str, ...]:
    prefixes = []
    for name in _names(value, "prefixes"):
        symbol = PREFIX_ALIASES.get(name, name)
        if symbol not in PREFIXES:
            known = ", ".join(f"{s} ({PREFIX_NAMES[s]})" if s else "none" for s in PREFIXES)
            raise ValueError(f"mst: unknown prefix {name!r} in prefixes={value!r}; known: {known} (write none for no prefix)")
        prefixes.append(symbol)
    return tuple(dict.fromkeys(prefixes))


def _positive_int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"mst: {name} must be an integer >= {minimum}, got {value!r}")
    return value


def settings_of(config: MstConfig) -> Settings:
    """Check and normalise a config's parameters; every error names the parameter."""
    seed = config.seed
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"mst: seed must be an integer, got {seed!r}")
    sizes = {split: _positive_int(f"{split}_size", getattr(config, f"{split}_size")) for split in SPLITS}
    list_length = config.list_length
    if isinstance(list_length, bool) or not isinstance(list_length, int) or not 2 <= list_length <= 10:
        raise ValueError(f"mst: list_length must be an integer from 2 to 10 (a list needs two items), got {list_length!r}")
    settings = Settings(seed, sizes, list_length, parse_units(config.units), parse_prefixes(config.prefixes))
    if config.name == "unit_conversion" and not valid_prefix_pairs(settings.prefixes):
        raise ValueError(
            f"mst: unit_conversion needs two prefixes 1 to {MAX_PREFIX_GAP} decades apart (so that both numbers of an "
            f"equal pair stay in [0.001, 1000)); prefixes={config.prefixes!r} has none"
        )
    return settings


# --- the builder -----------------------------------------------------------------------------------

FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "text": datasets.Value("string"),
        "choices": datasets.List(datasets.Value("string")),
        "label": datasets.Value("int64"),
        "values": datasets.List(datasets.Value("string")),
        "prefixes": datasets.List(datasets.Value("string")),
        "units": datasets.List(datasets.Value("string")),
        "entity": datasets.Value("string"),
        "reference_low": datasets.Value("string"),
        "reference_high": datasets.Value("string"),
        "reference_unit": datasets.Value("string"),
    }
)

FIELD_DESCRIPTIONS = {
    "id": "`{task}-{split}-{row}`",
    "text": "the sentence; `[MASK]` is the slot a prober replaces with its own mask token",
    "choices": "the candidate words for `[MASK]` (the same for every row of a config)",
    "label": "index of the correct choice",
    "values": "every number in the text, as written (exact decimals), in order of appearance",
    "prefixes": 'the SI prefix of each number (`""` for none; `µ` is U+00B5)',
    "units": "the unit after the prefix: `g`, `L`, `m`, `mol`, or a concentration such as `g/dL`",
    "entity": "reference_range: the analyte (empty in the other configs)",
    "reference_low": "reference_range: lower limit of the analyte's range, in `reference_unit`",
    "reference_high": "reference_range: upper limit of the analyte's range, in `reference_unit`",
    "reference_unit": "reference_range: the unit the range is given in",
}


@dataclass
class MstConfig(datasets.BuilderConfig):
    """One task; the generation parameters can be set with `medprobe build mst --set key=value`."""

    seed: int = 42
    train_size: int = 2000
    validation_size: int = 500
    test_size: int = 1000
    list_length: int = 3  # argminmax and sorting
    units: str = "g,L,m,mol"
    prefixes: str = "k,none,d,c,m,µ,n"


_VERSION = datasets.Version("1.0.0")
PARAMETERS = tuple(f.name for f in fields(MstConfig) if f.name not in {f.name for f in fields(datasets.BuilderConfig)})


class Mst(datasets.GeneratorBasedBuilder):
    """The five measuring-skill tests, generated deterministically from a seed."""

    VERSION = _VERSION
    BUILDER_CONFIG_CLASS = MstConfig
    BUILDER_CONFIGS = [MstConfig(name=name, version=_VERSION, description=task.description) for name, task in TASKS.items()]
    DEFAULT_CONFIG_NAME = "comparison"

    def __init__(self, *args, **kwargs):
        # datasets' own message for a misspelt parameter prints the whole config; name it instead
        known = {f.name for f in fields(MstConfig)} | set(inspect.signature(datasets.DatasetBuilder.__init__).parameters)
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise ValueError(f"mst: unknown parameter(s) {', '.join(unknown)}; known: {', '.join(PARAMETERS)}")
        super().__init__(*args, **kwargs)
        self.settings = settings_of(self.config)  # fail before any work, naming the parameter

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=FEATURES,
            homepage="https://arxiv.org/abs/2210.12694",
            license="cc-by-4.0",
        )

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        rows = generate(self.config.name, self.settings)
        return [datasets.SplitGenerator(name=split, gen_kwargs={"rows": tuple(rows[split])}) for split in SPLITS]

    def _generate_examples(self, rows: tuple[dict, ...]):
        for row in rows:
            yield row["id"], row


# --- card text -------------------------------------------------------------------------------------


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def card_context(built: dict[str, datasets.DatasetDict], params: dict | None = None) -> dict[str, str]:
    """Benchmark-specific parts of the dataset card (hub_cards/mst.md)."""
    with decimal.localcontext(EXACT):
        return _card_context(built)


def _card_context(built: dict[str, datasets.DatasetDict]) -> dict[str, str]:
    templates = []
    for name, task in TASKS.items():
        example_text = built[name]["test"][0]["text"] if name in built else ""
        templates.append((f"`{name}`", f"`{task.template}`", " / ".join(task.choices), example_text))
    balance = []
    for name, dataset_dict in built.items():
        for split, ds in dataset_dict.items():
            counts = Counter(ds["label"])
            choices = ds[0]["choices"] if ds.num_rows else []
            shares = ", ".join(f"{c} {100 * counts[i] / ds.num_rows:.1f} %" for i, c in enumerate(choices))
            balance.append((f"`{name}`", split, shares))
    analytes = [
        (
            a.name,
            f"{number_text(a.low)}–{number_text(a.high)}",
            a.unit_text,
            ", ".join(f"{side} {number_text(r.low)}–{number_text(r.high)}" for side, r in sampling_regions(a).items()),
            number_text(grid_step(a)),
        )
        for a in REFERENCE_RANGES
    ]
    defaults = MstConfig()
    return {
        "units_table": _table(["symbol", "unit"], [(f"`{s}`", n) for s, n in BASE_UNITS.items()]),
        "prefixes_table": _table(
            ["symbol", "name", "factor"], [(f"`{s}`" if s else "(none)", PREFIX_NAMES[s], f"10^{e}") for s, e in PREFIXES.items()]
        ),
        "templates_table": _table(["config", "template", "choices", "example (first test row)"], templates),
        "balance_table": _table(["config", "split", "label shares"], balance),
        "reference_table": _table(["analyte", "typical adult range", "unit", "values drawn from", "grid step"], analytes),
        "parameters_table": _table(["parameter", "default"], [(f"`{p}`", f"`{getattr(defaults, p)}`") for p in PARAMETERS]),
        "analyte_count": str(len(REFERENCE_RANGES)),
    }
