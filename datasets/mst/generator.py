"""Generating the rows: the task templates, the deterministic draws, one row generator per task,
and the splits of a task with no sentence twice. Every label is decided with exact decimal
arithmetic (measures.py), never with floats.
"""

from __future__ import annotations

import decimal
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from .measures import (
    DECADES,
    EXACT,
    MAX_PREFIX_GAP,
    PREFIXES,
    REFERENCE_RANGES,
    SIGNIFICANT_DIGITS,
    Analyte,
    Measurement,
    check_reference_table,
    grid_step,
    in_range,
    number_text,
    sampling_regions,
)


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
