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

Sections of this file: the measurement system (units, prefixes, exact values), the
reference-range table, the task templates (data), the deterministic draws, one row generator
per task, the builder, and the card text. Every label is decided with exact decimal
arithmetic (a decimal context that traps any rounding), never with floats.

This module is self-contained (the datasets library and the standard library) and is loaded
by path: `medprobe build mst --out DIR [--set seed=7 --set train_size=5000 ...]`.
"""

from __future__ import annotations

import decimal
import hashlib
import inspect
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from decimal import Decimal

import datasets

_DESCRIPTION = (
    "Measuring-skill tests (MST): generated cloze sentences that ask a masked language model "
    "to compare, rank, sort and convert measurements with SI prefixes, and to tell whether a "
    "laboratory value lies in its reference range."
)
# --- measurement system ---------------------------------------------------------------------------

BASE_UNITS = {"g": "gram", "L": "litre", "m": "metre", "mol": "mole"}
# symbol -> power of ten; "" is the bare unit
PREFIXES = {"k": 3, "": 0, "d": -1, "c": -2, "m": -3, "µ": -6, "n": -9}
PREFIX_NAMES = {"k": "kilo", "": "none", "d": "deci", "c": "centi", "m": "milli", "µ": "micro", "n": "nano"}
# other spellings accepted in the `prefixes` parameter (µ is U+00B5, the micro sign)
PREFIX_ALIASES = {"none": "", "-": "", "u": "µ", "\u03bc": "µ", **{name: s for s, name in PREFIX_NAMES.items() if s}}

# A shown number always lies in [LOWEST, HIGHEST) of its prefix.
LOWEST, HIGHEST = Decimal("0.001"), Decimal(1000)
DECADES = tuple(range(-3, 3))  # the leading digit of a drawn number sits at 10^decade
SIGNIFICANT_DIGITS = (1, 2, 3)
MAX_PREFIX_GAP = 5  # decades: an equal pair needs both numbers in range, so prefixes may differ by 1..5

# All arithmetic runs in this context: a result that would need rounding raises instead.
EXACT = decimal.Context(prec=60, traps=[decimal.Inexact, decimal.Rounded, decimal.InvalidOperation])


@dataclass(frozen=True)
class Measurement:
    """A number with a prefixed unit, e.g. 1.59 mg = Measurement(Decimal("1.59"), "m", "g")."""

    value: Decimal
    prefix: str
    unit: str  # a base unit ("g") or, for laboratory values, a concentration ("g/dL")

    def __str__(self) -> str:
        return f"{number_text(self.value)} {self.prefix}{self.unit}"

    @property
    def magnitude(self) -> Decimal:
        """The value in the unprefixed unit (exact)."""
        return EXACT.scaleb(self.value, PREFIXES[self.prefix])

    def with_prefix(self, prefix: str) -> Measurement:
        """The same quantity written with another prefix (exact)."""
        return Measurement(EXACT.scaleb(self.value, PREFIXES[self.prefix] - PREFIXES[prefix]), prefix, self.unit)


def number_text(value: Decimal) -> str:
    """Plain decimal notation without trailing zeros: 300, 1.5, 0.00159."""
    return format(value.normalize(EXACT), "f")


def in_range(value: Decimal) -> bool:
    return LOWEST <= value < HIGHEST


# --- reference ranges ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Analyte:
    """A laboratory test with a typical adult reference range in its conventional unit."""

    name: str  # as it reads in "The {name} level of ..."
    low: Decimal
    high: Decimal
    prefix: str  # conventional prefix of the numerator, e.g. "m" in mg/dL
    unit: str  # e.g. "g/dL"

    @property
    def unit_text(self) -> str:
        return self.prefix + self.unit


def _analyte(name: str, low: str, high: str, unit: str) -> Analyte:
    prefix, rest = ("", unit) if unit.startswith(("g/", "mol/")) else (unit[0], unit[1:])
    return Analyte(name, Decimal(low), Decimal(high), prefix, rest)


# Typical adult ranges as printed in common laboratory references. Ranges differ between
# laboratories, methods and populations: they serve as the ground truth of this test only, not
# as clinical guidance. Analytes with strongly sex-dependent ranges or a lower limit near zero
# are left out (the test needs abnormal values on both sides of the range).
REFERENCE_RANGES: tuple[Analyte, ...] = (
    _analyte("serum sodium", "135", "145", "mmol/L"),
    _analyte("serum potassium", "3.5", "5.0", "mmol/L"),
    _analyte("serum chloride", "98", "106", "mmol/L"),
    _analyte("serum bicarbonate", "22", "29", "mmol/L"),
    _analyte("fasting plasma glucose", "70", "99", "mg/dL"),
    _analyte("blood urea nitrogen", "7", "20", "mg/dL"),
    _analyte("serum creatinine", "0.6", "1.2", "mg/dL"),
    _analyte("serum total calcium", "8.5", "10.2", "mg/dL"),
    _analyte("blood ionized calcium", "1.15", "1.33", "mmol/L"),
    _analyte("serum magnesium", "1.7", "2.2", "mg/dL"),
    _analyte("serum phosphate", "2.5", "4.5", "mg/dL"),
    _analyte("serum total protein", "6.0", "8.3", "g/dL"),
    _analyte("serum albumin", "3.5", "5.0", "g/dL"),
    _analyte("plasma lactate", "0.5", "2.2", "mmol/L"),
    _analyte("plasma ammonia", "15", "45", "µmol/L"),
    _analyte("serum iron", "60", "170", "µg/dL"),
    _analyte("serum transferrin", "200", "360", "mg/dL"),
    _analyte("plasma fibrinogen", "200", "400", "mg/dL"),
    _analyte("serum uric acid", "3.5", "7.2", "mg/dL"),
    _analyte("serum zinc", "60", "120", "µg/dL"),
    _analyte("serum copper", "70", "140", "µg/dL"),
    _analyte("serum ceruloplasmin", "20", "35", "mg/dL"),
    _analyte("serum prealbumin", "15", "36", "mg/dL"),
    _analyte("serum alpha-1 antitrypsin", "100", "200", "mg/dL"),
    _analyte("serum immunoglobulin G", "7.0", "16.0", "g/L"),
    _analyte("serum complement C3", "90", "180", "mg/dL"),
    _analyte("serum 25-hydroxyvitamin D", "30", "100", "ng/mL"),
    _analyte("morning serum cortisol", "6", "23", "µg/dL"),
)
EDGE_MARGIN = Decimal("0.1")  # drawn values stay this share of the range width away from both limits


@dataclass(frozen=True)
class Interval:
    low: Decimal
    high: Decimal


def sampling_regions(analyte: Analyte) -> dict[str, Interval]:
    """Where values are drawn, in the conventional unit: inside the range, below it, above it.

    width w = high - low, margin = 0.1 w:
      normal [low + margin, high - margin]; below [low - min(w, low/2), low - margin];
      above [high + margin, high + w].
    """
    width = EXACT.subtract(analyte.high, analyte.low)
    margin = EXACT.multiply(width, EDGE_MARGIN)
    below_depth = min(width, EXACT.divide(analyte.low, 2))
    return {
        "normal": Interval(analyte.low + margin, analyte.high - margin),
        "below": Interval(analyte.low - below_depth, analyte.low - margin),
        "above": Interval(analyte.high + margin, analyte.high + width),
    }


def grid_step(analyte: Analyte) -> Decimal:
    """Values are drawn on a grid two decades finer than the range width (1 for 135-145: 137.4)."""
    width = EXACT.subtract(analyte.high, analyte.low)
    return Decimal(1).scaleb(width.adjusted() - 2)


def check_reference_table(table: Sequence[Analyte] = REFERENCE_RANGES) -> None:
    """The table's own invariants; a broken entry stops generation with its name."""
    names = [a.name for a in table]
    if len(set(names)) != len(names):
        raise ValueError(f"reference-range table: duplicate analyte names in {names}")
    for analyte in table:
        if analyte.prefix not in PREFIXES or analyte.unit.split("/")[0] not in BASE_UNITS:
            raise ValueError(f"reference-range table: {analyte.name} has an unknown unit {analyte.unit_text!r}")
        if not analyte.low < analyte.high:
            raise ValueError(f"reference-range table: {analyte.name} has low {analyte.low} >= high {analyte.high}")
        for side, region in sampling_regions(analyte).items():
            if not (region.low < region.high and region.low > 0 and in_range(region.low) and in_range(region.high)):
                raise ValueError(
                    f"reference-range table: the {side} region [{region.low}, {region.high}] of {analyte.name} "
                    f"must be non-empty, positive and inside [{LOWEST}, {HIGHEST}) {analyte.unit_text}"
                )


# --- templates (data) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    template: str  # str.format slots; [MASK] is where the choice goes
    choices: tuple[str, ...]
    description: str
    list_choice: str | None = None  # a choice that exists only for lists of 3 or more

    def choices_for(self, list_length: int) -> tuple[str, ...]:
        if self.list_choice and list_length < 3:
            return tuple(c for c in self.choices if c != self.list_choice)
        return self.choices


MASK = "[MASK]"
LIST_SEPARATOR = ", "
TASKS: dict[str, Task] = {
    "comparison": Task(
        "{first} is [MASK] than {second}.",
        ("larger", "smaller"),
        "Is the first of two measurements of the same quantity larger or smaller than the second?",
    ),
    "argminmax": Task(
        "The [MASK] value among {items} is {answer}.",
        ("largest", "smallest", "middle"),
        "Is a measurement the largest, the smallest, or neither (middle) of a list?",
        list_choice="middle",
    ),
    "sorting": Task(
        "Sorting {items} in [MASK] order gives {result}.",
        ("increasing", "decreasing", "random"),
        "Is a reordering of a list of measurements increasing, decreasing, or neither (random)?",
        list_choice="random",
    ),
    "unit_conversion": Task(
        "{first} and {second} are [MASK].",
        ("equal", "different"),
        "Are two measurements written with different prefixes the same quantity?",
    ),
    "reference_range": Task(
        "The {entity} level of {measurement} is [MASK].",
        ("normal", "abnormal"),
        "Is a laboratory value inside the typical adult reference range of its analyte?",
    ),
}

# --- deterministic draws ---------------------------------------------------------------------------


class Draws:
    """Random draws from SHA-256 of (seed, stream, counter).

    Unlike `random.Random`, whose choice/shuffle algorithms may change between Python versions,
    these draws give the same rows on every Python version and platform.
    """

    def __init__(self, seed: int, stream: str):
        self._prefix = f"mst/{seed}/{stream}/".encode()
        self._counter = 0

    def below(self, n: int) -> int:
        """A uniform integer in [0, n) (the modulo bias of a 256-bit draw is negligible)."""
        self._counter += 1
        digest = hashlib.sha256(self._prefix + str(self._counter).encode()).digest()
        return int.from_bytes(digest, "big") % n

    def between(self, low: int, high: int) -> int:
        """A uniform integer in [low, high]."""
        return low + self.below(high - low + 1)

    def choice(self, options: Sequence):
        return options[self.below(len(options))]

    def shuffled(self, items: Sequence) -> list:
        items = list(items)
        for i in range(len(items) - 1, 0, -1):  # Fisher-Yates
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]
        return items


# --- row generators (one per task) ----------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """The validated generation parameters of a config."""

    seed: int
    sizes: dict[str, int]
    list_length: int
    units: tuple[str, ...]
    prefixes: tuple[str, ...]


@dataclass
class Row:
    text: str
    measurements: list[Measurement]  # in the order they appear in the text
    analyte: Analyte | None = None


def draw_value(draws: Draws, decades: Sequence[int] = DECADES) -> Decimal:
    """A number with 1-3 significant digits whose leading digit sits at 10^decade."""
    digits = draws.choice(SIGNIFICANT_DIGITS)
    mantissa = draws.between(10 ** (digits - 1), 10**digits - 1)
    return Decimal(mantissa).scaleb(draws.choice(decades) - digits + 1)


def draw_distinct(draws: Draws, settings: Settings, count: int) -> list[Measurement]:
    """`count` measurements of one base unit with pairwise different magnitudes, in draw order."""
    unit = draws.choice(settings.units)
    drawn: dict[Decimal, Measurement] = {}
    while len(drawn) < count:
        measurement = Measurement(draw_value(draws), draws.choice(settings.prefixes), unit)
        drawn.setdefault(measurement.magnitude, measurement)
    return list(drawn.values())


def listed(measurements: Sequence[Measurement]) -> str:
    return LIST_SEPARATOR.join(map(str, measurements))


def comparison_row(draws: Draws, settings: Settings, answer: str) -> Row:
    a, b = sorted(draw_distinct(draws, settings, 2), key=lambda m: m.magnitude, reverse=answer == "larger")
    return Row(TASKS["comparison"].template.format(first=a, second=b), [a, b])


def argminmax_row(draws: Draws, settings: Settings, answer: str) -> Row:
    items = draw_distinct(draws, settings, settings.list_length)
    ordered = sorted(items, key=lambda m: m.magnitude)
    chosen = {"smallest": ordered[0], "largest": ordered[-1]}.get(answer) or draws.choice(ordered[1:-1])
    text = TASKS["argminmax"].template.format(items=listed(items), answer=chosen)
    return Row(text, [*items, chosen])


def sorting_row(draws: Draws, settings: Settings, answer: str) -> Row:
    items = draw_distinct(draws, settings, settings.list_length)
    ordered = sorted(items, key=lambda m: m.magnitude)
    if answer == "increasing":
        result = ordered
    elif answer == "decreasing":
        result = ordered[::-1]
    else:  # neither order: reshuffle until it is not monotonic (2 of n! orders are)
        result = ordered
        while result in (ordered, ordered[::-1]):
            result = draws.shuffled(items)
    text = TASKS["sorting"].template.format(items=listed(items), result=listed(result))
    return Row(text, [*items, *result])


def valid_prefix_pairs(prefixes: Sequence[str]) -> list[tuple[str, str]]:
    """Ordered prefix pairs that can write one quantity with both numbers in [0.001, 1000)."""
    return [(p, q) for p in prefixes for q in prefixes if 0 < abs(PREFIXES[p] - PREFIXES[q]) <= MAX_PREFIX_GAP]


def unit_conversion_row(draws: Draws, settings: Settings, answer: str) -> Row:
    unit = draws.choice(settings.units)
    first_prefix, second_prefix = draws.choice(valid_prefix_pairs(settings.prefixes))
    shift = PREFIXES[first_prefix] - PREFIXES[second_prefix]
    # decades where the first number and its conversion both stay in range
    decades = [d for d in DECADES if d + shift in DECADES]
    first = Measurement(draw_value(draws, decades), first_prefix, unit)
    second = first.with_prefix(second_prefix)
    if answer == "different":
        second = Measurement(different_value(draws, second.value), second_prefix, unit)
    pair = [first, second] if draws.below(2) else [second, first]
    return Row(TASKS["unit_conversion"].template.format(first=pair[0], second=pair[1]), pair)


def different_value(draws: Draws, value: Decimal) -> Decimal:
    """A clearly different number: half the time the same digits shifted by 1-3 decades (a slipped
    prefix), otherwise other digits of the same length and decade, at least 10 % away."""
    if draws.below(2):
        shifts = [s for s in (-3, -2, -1, 1, 2, 3) if in_range(EXACT.scaleb(value, s))]
        return EXACT.scaleb(value, draws.choice(shifts))
    digits = len(value.normalize(EXACT).as_tuple().digits)
    exponent = value.adjusted() - digits + 1
    while True:
        other = Decimal(draws.between(10 ** (digits - 1), 10**digits - 1)).scaleb(exponent)
        if EXACT.multiply(abs(other - value), 10) >= value:
            return other


def reference_range_row(draws: Draws, settings: Settings, answer: str) -> Row:
    analyte = draws.choice(REFERENCE_RANGES)
    region = sampling_regions(analyte)["normal" if answer == "normal" else draws.choice(("below", "above"))]
    step = grid_step(analyte)
    ticks = draws.between(
        int(EXACT.divide(region.low, step).to_integral_value(decimal.ROUND_CEILING)),
        int(EXACT.divide(region.high, step).to_integral_value(decimal.ROUND_FLOOR)),
    )
    conventional = Measurement(EXACT.multiply(ticks, step), analyte.prefix, analyte.unit)
    # half the rows in the conventional unit, the others re-prefixed (number kept in range)
    rewritten = [conventional.with_prefix(p) for p in settings.prefixes if p != analyte.prefix]
    rewritten = [m for m in rewritten if in_range(m.value)]
    measurement = draws.choice(rewritten) if rewritten and draws.below(2) else conventional
    text = TASKS["reference_range"].template.format(entity=analyte.name, measurement=measurement)
    return Row(text, [measurement], analyte)


ROW_GENERATORS: dict[str, Callable[[Draws, Settings, str], Row]] = {
    "comparison": comparison_row,
    "argminmax": argminmax_row,
    "sorting": sorting_row,
    "unit_conversion": unit_conversion_row,
    "reference_range": reference_range_row,
}
SPLITS = ("train", "validation", "test")
MAX_TRIES_PER_ROW = 200


def balanced_labels(draws: Draws, size: int, choices: int) -> list[int]:
    """Each label `size // choices` or one more times, in a random order."""
    return draws.shuffled([index % choices for index in range(size)])


def generate(task: str, settings: Settings) -> dict[str, list[dict]]:
    """All rows of a task, split by split. No text occurs twice in the whole task (so no test
    sentence is also a training sentence)."""
    if task == "reference_range":
        check_reference_table()
    with decimal.localcontext(EXACT):  # operators too: any rounding raises
        return _generate(task, settings)


def _generate(task: str, settings: Settings) -> dict[str, list[dict]]:
    choices = TASKS[task].choices_for(settings.list_length)
    draws = Draws(settings.seed, task)
    seen: set[str] = set()
    splits = {}
    for split in SPLITS:
        rows = []
        for index, label in enumerate(balanced_labels(draws, settings.sizes[split], len(choices))):
            for _ in range(MAX_TRIES_PER_ROW):
                row = ROW_GENERATORS[task](draws, settings, choices[label])
                if row.text not in seen:
                    break
            else:
                raise ValueError(
                    f"mst/{task}: could not draw a new distinct sentence for {split} row {index} after "
                    f"{MAX_TRIES_PER_ROW} tries ({len(seen):,} drawn so far); the sizes "
                    f"{settings.sizes} are too large for this task's value space: lower them"
                )
            seen.add(row.text)
            rows.append(example(f"{task}-{split}-{index:05d}", row, choices, label))
        splits[split] = rows
    return splits


def example(row_id: str, row: Row, choices: Sequence[str], label: int) -> dict:
    analyte = row.analyte
    return {
        "id": row_id,
        "text": row.text,
        "choices": list(choices),
        "label": label,
        "values": [number_text(m.value) for m in row.measurements],
        "prefixes": [m.prefix for m in row.measurements],
        "units": [m.unit for m in row.measurements],
        "entity": analyte.name if analyte else "",
        "reference_low": number_text(analyte.low) if analyte else "",
        "reference_high": number_text(analyte.high) if analyte else "",
        "reference_unit": analyte.unit_text if analyte else "",
    }


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
