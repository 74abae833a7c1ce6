"""The builder's configs and parameters (`medprobe build medlama --set key=value`)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import datasets

from .release import FULL_SIZE


@dataclass
class MedlamaConfig(datasets.BuilderConfig):
    """`full` or `hard`, with the build's parameters (`medprobe build medlama --set key=value`).

    rows_per_relation (release source): how many distinct rows each full release file must hold.
    The release has 1,000 and the default insists on it, so a duplicated row or a truncated file
    stops the build; a different N (0: any number) is for a user's own data in the release
    format, and the card says so.

    The other parameters apply to a build from the user's own UMLS release only (`umls_dir`;
    `medprobe build medlama --umls-dir META --set key=value`); see `umls_settings`. Among them
    `synonyms` (`--synonyms N`): how many subject synonyms each item of the `variants` config gets
    at most (None: DEFAULT_SYNONYMS); the release files have no synonyms.
    """

    rows_per_relation: int | None = FULL_SIZE

    umls_dir: str | None = None
    umls_version: str | None = None  # read from release.dat or MRDOC.RRF when not given
    relations: str | None = None  # comma-separated; default: the 19 relations
    per_relation: int = 1000
    seed: int = 2021  # the notebook's random_state
    sabs: str = "SNOMEDCT_US,NCI,MED-RT"
    names: str = "atom"  # or "preferred"
    max_answers: int = 10
    drop_suppressed: bool = False
    allow_fewer: bool = True
    # None, not 3: a build from the release files records synonyms=None, as builds before the parameter did
    synonyms: int | None = None


DEFAULT_SYNONYMS = 3  # subject synonyms per item in a build from a UMLS release, unless --synonyms N
PARAMETERS = tuple(f.name for f in fields(MedlamaConfig) if f.name not in {f.name for f in fields(datasets.BuilderConfig)})


def checked_rows_per_relation(value: object) -> int:
    # --set passes ints as ints; a bool is an int to Python but never a row count
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"medlama: rows_per_relation must be a whole number >= 0 (0: any number of rows), got {value!r}")
    return value
