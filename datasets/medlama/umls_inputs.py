"""The second source's inputs: the checked parameters of a build from the user's own UMLS release,
its META folder and its release name.

`medprobe build medlama --umls-dir META [--set key=value]` regenerates the benchmark from a UMLS
release the way the authors' notebook (NOTEBOOK_URL) generated the 2021AA release; the steps are
in umls_queries.py, the reading of MRREL and MRCONSO in rrf.py.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .config import DEFAULT_SYNONYMS, MedlamaConfig
from .release import HARD_SIZES, RELATIONS, RELEASE_COMMIT, MedlamaFormatError

NOTEBOOK_URL = f"https://github.com/cambridgeltl/medlama/blob/{RELEASE_COMMIT}/notebooks/data_prep/generate_biomed_lama.ipynb"
UMLS_PARAMETERS = (
    "umls_dir",
    "umls_version",
    "relations",
    "per_relation",
    "seed",
    "sabs",
    "names",
    "max_answers",
    "drop_suppressed",
    "allow_fewer",
    "synonyms",
)
NOTEBOOK_SABS = ("SNOMEDCT_US", "NCI", "MED-RT")
NAME_SOURCES = ("atom", "preferred")
MAX_SYNONYMS = 50  # a bound, not a recommendation: each synonym is one more query per item to rank
_VERSION_PATTERN = re.compile(r"[0-9A-Za-z._-]+")


class UmlsInputError(MedlamaFormatError):
    """A UMLS file is not in the RRF layout; the message names the file and line."""


@dataclass(frozen=True)
class UmlsSettings:
    """The checked parameters of a build from a UMLS release."""

    umls_dir: str
    umls_version: str | None
    relations: tuple[str, ...]
    per_relation: int
    seed: int
    sabs: tuple[str, ...]
    names: str
    max_answers: int
    drop_suppressed: bool
    allow_fewer: bool
    synonyms: int = DEFAULT_SYNONYMS  # subject synonyms per item at most, in the `variants` config (0: none)


def _whole_number(name: str, value: object, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ValueError(f"medlama: {name} must be a whole number {bound}, got {value!r}")
    return value


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"medlama: {name} must be true or false, got {value!r}")
    return value


def _name_list(name: str, value: object) -> tuple[str, ...]:
    """A comma-separated string (from --set) or a list of strings (from Python)."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(item, str) for item in items):
        raise ValueError(f"medlama: {name} must be a comma-separated list, got {value!r}")
    items = [item.strip() for item in items]
    if not all(items):
        raise ValueError(f"medlama: {name} has an empty entry: {value!r}")
    repeated = sorted({item for item in items if items.count(item) > 1})
    if repeated:
        raise ValueError(f"medlama: {name} lists {', '.join(repeated)} more than once")
    return tuple(items)


def umls_settings(config: MedlamaConfig) -> UmlsSettings | None:
    """The checked UMLS parameters, or None for a build from the release files (no `umls_dir`)."""
    defaults = MedlamaConfig()
    changed = [p for p in UMLS_PARAMETERS[1:] if getattr(config, p) != getattr(defaults, p)]
    if not config.umls_dir:
        if changed:
            raise ValueError(
                f"medlama: {', '.join(changed)} only appl{'ies' if len(changed) == 1 else 'y'} to a build from "
                "your own UMLS release: add --umls-dir META (the META folder of the release)"
            )
        return None
    if not isinstance(config.umls_dir, (str, os.PathLike)):
        raise ValueError(f"medlama: umls_dir must be a folder path, got {config.umls_dir!r}")
    relations = _name_list("relations", config.relations) if config.relations is not None else RELATIONS
    unknown = [r for r in relations if r not in HARD_SIZES]
    if unknown:
        raise ValueError(f"medlama: unknown relation(s) {', '.join(unknown)}; MedLAMA's relations: {', '.join(RELATIONS)}")
    sabs = _name_list("sabs", config.sabs)
    if any(not re.fullmatch(r"[A-Za-z0-9_.-]+", sab) for sab in sabs):
        raise ValueError(f"medlama: sabs must be UMLS source abbreviations (SAB) such as SNOMEDCT_US, got {config.sabs!r}")
    if config.names not in NAME_SOURCES:
        raise ValueError(f"medlama: names must be one of {', '.join(NAME_SOURCES)}, got {config.names!r}")
    version = config.umls_version
    if version is not None and not (isinstance(version, str) and _VERSION_PATTERN.fullmatch(version)):
        raise ValueError(f"medlama: umls_version must be a release name such as 2025AA, got {version!r}")
    return UmlsSettings(
        umls_dir=os.fspath(config.umls_dir),
        umls_version=version,
        relations=tuple(r for r in RELATIONS if r in relations),  # the release's order, whatever the order given
        per_relation=_whole_number("per_relation", config.per_relation, 1),
        seed=_whole_number("seed", config.seed, 0, 2**32 - 1),  # numpy's RandomState takes 32-bit seeds
        sabs=sabs,
        names=config.names,
        max_answers=_whole_number("max_answers", config.max_answers, 1),
        drop_suppressed=_flag("drop_suppressed", config.drop_suppressed),
        allow_fewer=_flag("allow_fewer", config.allow_fewer),
        synonyms=DEFAULT_SYNONYMS if config.synonyms is None else _whole_number("synonyms", config.synonyms, 0, MAX_SYNONYMS),
    )


# --- the META folder and the release name ---


@dataclass(frozen=True)
class UmlsSource:
    meta: str
    mrrel: str
    mrconso: str
    version: str
    version_from: str  # where the version was read


def meta_folder(umls_dir: str) -> Path:
    """The META folder: `umls_dir` itself, or its META subfolder when given the release folder."""
    root = Path(umls_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"--umls-dir {umls_dir}: no such folder; expected the META folder of a UMLS release")
    if not any((root / name).exists() for name in ("MRREL.RRF", "MRCONSO.RRF")) and (root / "META").is_dir():
        root = root / "META"
    missing = [name for name in ("MRCONSO.RRF", "MRREL.RRF") if not (root / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{root} is missing {', '.join(missing)}; expected the META folder of a UMLS Metathesaurus release "
            "(full or a MetamorphoSys subset in RRF format, uncompressed) with MRCONSO.RRF and MRREL.RRF"
        )
    return root


def _release_dat_version(path: Path) -> str | None:
    """`umls.release.name` from a release.dat (a Java properties file the release and MetamorphoSys write)."""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "umls.release.name":
            return value.strip() or None
    return None


def _mrdoc_version(path: Path) -> str | None:
    """The release name from MRDOC.RRF's row RELEASE|umls.release.name|release_info|<name>|."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            fields = line.rstrip("\r\n").split("|")
            if fields[:3] == ["RELEASE", "umls.release.name", "release_info"] and len(fields) > 3:
                return fields[3].strip() or None
    return None


def umls_version(meta: Path, given: str | None) -> tuple[str, str]:
    """The release name and where it came from; the files and `umls_version` must agree."""
    found = []
    for path in (meta / "release.dat", meta.parent / "release.dat"):
        if path.is_file() and (name := _release_dat_version(path)):
            found.append((name, str(path)))
    if (meta / "MRDOC.RRF").is_file() and (name := _mrdoc_version(meta / "MRDOC.RRF")):
        found.append((name, str(meta / "MRDOC.RRF")))
    names = {name for name, _ in found}
    if len(names) > 1:
        raise UmlsInputError("the release files disagree on the UMLS version: " + "; ".join(f"{w}: {n}" for n, w in found))
    if given is not None:
        if names and given not in names:
            raise ValueError(f"medlama: umls_version={given} but {found[0][1]} says {found[0][0]}; leave umls_version out")
        return given, "the umls_version parameter" + (f" (and {found[0][1]})" if found else "")
    if not found:
        raise ValueError(
            f"medlama: cannot tell the UMLS version: no release.dat in {meta} or {meta.parent} and no "
            f"RELEASE|umls.release.name row in {meta / 'MRDOC.RRF'}; pass it: --set umls_version=2025AA"
        )
    return found[0][0], Path(found[0][1]).name


def umls_source(settings: UmlsSettings) -> UmlsSource:
    meta = meta_folder(settings.umls_dir)
    version, version_from = umls_version(meta, settings.umls_version)
    return UmlsSource(str(meta), str(meta / "MRREL.RRF"), str(meta / "MRCONSO.RRF"), version, version_from)
