"""The measurement system and the reference-range table: units, SI prefixes, exact decimal values,
and the typical adult ranges of the reference_range task with the regions values are drawn from.

All arithmetic runs in the EXACT decimal context: a result that would need rounding raises.
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

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
