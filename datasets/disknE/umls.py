"""UMLS names: the English names of the annotated concepts, read from MRCONSO.RRF (streamed) or
from the small TSV that `medprobe umls-names` writes, and the name a negative row carries.

The names of one build are kept for its other configs as JSON in the download cache the builder
is given (`umls_names`), so MRCONSO.RRF is read once per build.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict
from dataclasses import astuple, dataclass
from pathlib import Path

from datasets.utils import tqdm

from .annotations import CUI_PATTERN, DisknEInputError, normalised

UMLS_NAMES_TSV = "umls_names.tsv"
MRCONSO = "MRCONSO.RRF"

# MRCONSO.RRF columns (UMLS reference manual, section 3.3.4): the ones kept, by position.
MRCONSO_FIELDS = {"CUI": 0, "LAT": 1, "TS": 2, "STT": 4, "ISPREF": 6, "SCUI": 9, "SAB": 11, "TTY": 12, "STR": 14, "SUPPRESS": 16}
MRCONSO_FIELD_COUNT = 18
TSV_COLUMNS = ("CUI", "SAB", "TTY", "SCUI", "PREFERRED", "SUPPRESS", "STR")


@dataclass(frozen=True, order=True)
class UmlsName:
    cui: str
    sab: str  # source vocabulary, e.g. SNOMEDCT_US
    tty: str  # term type in the source, e.g. PT (preferred term), SY (synonym)
    scui: str  # the source's concept id (a SNOMED CT concept id for SNOMEDCT_US)
    preferred: bool  # the concept's UMLS preferred English name (TS=P, STT=PF, ISPREF=Y)
    suppress: str  # MRCONSO SUPPRESS: N = not suppressible; O, E, Y = obsolete or suppressible
    name: str


def read_mrconso(path: str | Path, cuis: set[str], progress: bool = True) -> dict[str, list[UmlsName]]:
    """The English names of `cuis` from MRCONSO.RRF, streamed (the file is several GB)."""
    wanted = {cui.encode() for cui in cuis}
    names: dict[str, list[UmlsName]] = defaultdict(list)
    size = os.path.getsize(path)
    with (
        open(path, "rb") as handle,
        tqdm(total=size, unit="B", unit_scale=True, desc=f"reading {Path(path).name}", disable=not progress) as bar,
    ):
        pending = 0
        for line_number, raw in enumerate(handle, start=1):
            pending += len(raw)
            if pending > 1 << 24:
                bar.update(pending)
                pending = 0
            if raw[: raw.find(b"|")] not in wanted:
                continue
            fields = raw.decode("utf-8").rstrip("\r\n").split("|")
            if len(fields) < MRCONSO_FIELD_COUNT:
                raise DisknEInputError(
                    f"{path}, line {line_number}: expected {MRCONSO_FIELD_COUNT} '|'-separated MRCONSO fields, got {len(fields)}"
                )
            f = {key: fields[i] for key, i in MRCONSO_FIELDS.items()}
            if f["LAT"] != "ENG":
                continue
            preferred = f["TS"] == "P" and f["STT"] == "PF" and f["ISPREF"] == "Y"
            name = disease_name(path, line_number, f["CUI"], f["STR"])
            names[f["CUI"]].append(UmlsName(f["CUI"], f["SAB"], f["TTY"], f["SCUI"], preferred, f["SUPPRESS"], name))
        bar.update(pending)
    return {cui: sorted(found) for cui, found in names.items()}


def read_names_tsv(path: str | Path, cuis: set[str] | None = None) -> dict[str, list[UmlsName]]:
    """The TSV written by `write_names_tsv` (`medprobe umls-names`)."""
    names: dict[str, list[UmlsName]] = defaultdict(list)
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().rstrip("\r\n").split("\t")
        if tuple(header) != TSV_COLUMNS:
            raise DisknEInputError(
                f"{path}, line 1: expected the header {' '.join(TSV_COLUMNS)} (tab-separated, as written by "
                f"`medprobe umls-names`), got {' '.join(header)!r}"
            )
        for line_number, line in enumerate(handle, start=2):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != len(TSV_COLUMNS) or not CUI_PATTERN.fullmatch(fields[0]) or fields[4] not in ("Y", "N"):
                raise DisknEInputError(
                    f"{path}, line {line_number}: expected {len(TSV_COLUMNS)} tab-separated fields "
                    f"{', '.join(TSV_COLUMNS)}, got {line.strip()[:120]!r}"
                )
            cui, sab, tty, scui, preferred, suppress, name = fields
            if cuis is None or cui in cuis:
                name = disease_name(path, line_number, cui, name)
                names[cui].append(UmlsName(cui, sab, tty, scui, preferred == "Y", suppress, name))
    return {cui: sorted(found) for cui, found in names.items()}


def disease_name(path: str | Path, line: int, cui: str, name: str) -> str:
    """A UMLS name, normalised as the disease ids are (annotations.normalised): a name that is empty once normalised
    would be a negative row's hypothesis of nothing, and is a DisknEInputError naming the line."""
    found = normalised(name)
    if not found:
        raise DisknEInputError(
            f"{path}, line {line}: the name of {cui} is {name!r}, empty once white space and invisible format "
            "characters are removed; expected a disease name"
        )
    return found


def write_names_tsv(names: dict[str, list[UmlsName]], path: str | Path) -> int:
    """Write the names as a TSV (sorted, so the same names give the same bytes); returns the rows written."""
    rows = sorted(n for found in names.values() for n in found)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write("\t".join(TSV_COLUMNS) + "\n")
        for n in rows:
            name = " ".join(n.name.split())  # no tab or newline can reach the TSV
            handle.write("\t".join((n.cui, n.sab, n.tty, n.scui, "Y" if n.preferred else "N", n.suppress, name)) + "\n")
    return len(rows)


def _scui_order(scui: str) -> tuple[int, str]:
    return (int(scui), scui) if scui.isdigit() else (1 << 62, scui)


def display_name(names: list[UmlsName]) -> tuple[str, bool]:
    """(lower-cased name of a concept, whether it is its SNOMED CT preferred term).

    The current (not suppressed) SNOMED CT US preferred term (TTY PT; the lowest SNOMED id when
    the concept maps to several), as the paper's negatives used; a concept without one falls back
    to its UMLS preferred English name.
    """
    snomed = [n for n in names if n.sab == "SNOMEDCT_US" and n.tty == "PT" and n.suppress == "N"]
    if snomed:
        best = min(snomed, key=lambda n: (_scui_order(n.scui), n.name))
        return best.name.lower(), True
    preferred = sorted(n.name for n in names if n.preferred) or sorted(n.name for n in names)
    return preferred[0].lower(), False


def umls_names(path: Path, cuis: set[str], cache_dir: str | None = None) -> dict[str, list[UmlsName]]:
    """Names of `cuis` from the TSV or MRCONSO.RRF, kept in `cache_dir` (when given) for the other configs of a build."""
    kept = _kept_path(path, cuis, cache_dir) if cache_dir else None
    if kept is not None and (names := _read_kept(kept)) is not None:
        return names
    names = read_names_tsv(path, cuis) if path.name == UMLS_NAMES_TSV else read_mrconso(path, cuis)
    if kept is not None:
        _write_kept(kept, names)
    return names


# --- the names kept between the configs of a build ---

_KEPT_FORMAT = 2  # part of the key: a file written in another layout is never read (2: names normalised)


def _kept_path(path: Path, cuis: set[str], cache_dir: str) -> Path:
    stat = path.stat()
    key = [_KEPT_FORMAT, str(path), stat.st_size, stat.st_mtime_ns, sorted(cuis)]
    return Path(cache_dir) / "disknE_umls_names" / f"{hashlib.sha256(json.dumps(key).encode()).hexdigest()}.json"


def _read_kept(path: Path) -> dict[str, list[UmlsName]] | None:
    """The kept names, or None when there are none (or they do not read: then the file is read again)."""
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        return {cui: [UmlsName(*fields) for fields in found] for cui, found in kept.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def _write_kept(path: Path, names: dict[str, list[UmlsName]]) -> None:
    """Write under a temporary name and rename; one set of names is kept at most."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for older in path.parent.glob("*.json"):
        older.unlink(missing_ok=True)
    staged = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    staged.write_text(json.dumps({cui: [astuple(n) for n in found] for cui, found in names.items()}), encoding="utf-8")
    os.replace(staged, path)
