"""Streaming the UMLS RRF files: one pass over MRREL.RRF and one over MRCONSO.RRF (several GB each).

Both readers work on bytes, decode only the lines they keep, check every line's field count and
name the file and line of a malformed one; a progress bar moves once per chunk of about 16 MB.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from datasets.utils import tqdm

from .umls_inputs import UmlsInputError, UmlsSettings

MRREL_COLUMNS = (
    "CUI1",
    "AUI1",
    "STYPE1",
    "REL",
    "CUI2",
    "AUI2",
    "STYPE2",
    "RELA",
    "RUI",
    "SRUI",
    "SAB",
    "SL",
    "RG",
    "DIR",
    "SUPPRESS",
    "CVF",
)
MRCONSO_COLUMNS = (
    "CUI",
    "LAT",
    "TS",
    "LUI",
    "STT",
    "SUI",
    "ISPREF",
    "AUI",
    "SAUI",
    "SCUI",
    "SDUI",
    "SAB",
    "TTY",
    "CODE",
    "STR",
    "SRL",
    "SUPPRESS",
    "CVF",
)
_REL = {name: i for i, name in enumerate(MRREL_COLUMNS)}
_CONSO = {name: i for i, name in enumerate(MRCONSO_COLUMNS)}
_CHUNK_BYTES = 1 << 24  # lines are read about 16 MB at a time: a list iterates faster than a file


@dataclass
class FileScan:
    """What one pass over a file cost: lines, bytes, seconds."""

    lines: int = 0
    bytes: int = 0
    seconds: float = 0.0


@dataclass
class MrrelScan:
    """The MRREL rows of the selected relations and sources, and the counts at each filter."""

    edges: dict[str, list[tuple[str, str, str, str]]]  # relation -> (head CUI, head AUI, tail CUI, tail AUI), MRREL order
    rela_rows: Counter  # relation -> rows with that RELA, any SAB
    sab_rows: Counter  # relation -> ... and a selected SAB
    suppressed_rows: Counter  # relation -> ... of which SUPPRESS != N
    rows_by_sab: Counter  # (relation, SAB) -> rows, selected or not
    scan: FileScan


def _line_chunks(handle, bar) -> Iterator[tuple[int, list[bytes]]]:
    """(number of the first line, lines) about 16 MB at a time; the progress bar moves once a chunk."""
    first = 1
    while lines := handle.readlines(_CHUNK_BYTES):
        yield first, lines
        first += len(lines)
        bar.update(sum(map(len, lines)))


def _ends_well(raw: bytes) -> bool:
    """A line's last field ends with "|" too; a Windows line end, or no end on the last line, is fine."""
    return raw.endswith((b"|\n", b"|\r\n", b"|"))


def _decode(path: str, line_number: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UmlsInputError(f"{path}, line {line_number}: not valid UTF-8 ({err}); the RRF files are UTF-8") from err


def _field_count_error(path: str, line_number: int, raw: bytes, columns: tuple[str, ...]) -> UmlsInputError:
    found = raw.count(b"|")
    return UmlsInputError(
        f"{path}, line {line_number}: expected {len(columns)} fields, each ended by '|' "
        f"({'|'.join(columns[:3])}|...|{columns[-1]}|), found {found} '|': {raw[:160].decode('utf-8', 'replace')!r}"
    )


def read_mrrel(path: str, settings: UmlsSettings, progress: bool = True) -> MrrelScan:
    """One streamed pass over MRREL.RRF (several GB): the rows of the selected relations.

    Works on bytes and decodes only the kept rows (about 1 % of the lines); every line's field
    count is checked. The direction follows the notebook: a row reads "CUI2 RELA CUI1".
    """
    wanted = {relation.encode(): relation for relation in settings.relations}
    sabs = {sab.encode() for sab in settings.sabs}
    parts = len(MRREL_COLUMNS) + 1  # each field ends with "|", so a line splits into one more part
    i_rela, i_sab, i_suppress = _REL["RELA"], _REL["SAB"], _REL["SUPPRESS"]
    i_cui1, i_aui1, i_cui2, i_aui2 = _REL["CUI1"], _REL["AUI1"], _REL["CUI2"], _REL["AUI2"]
    edges: dict[str, list[tuple[str, str, str, str]]] = {relation: [] for relation in settings.relations}
    rela_rows, sab_rows, suppressed_rows, rows_by_sab = Counter(), Counter(), Counter(), Counter()
    strings: dict[str, str] = {}  # one object per CUI/AUI string: the kept rows repeat them
    start, size = time.perf_counter(), os.path.getsize(path)
    lines = 0
    with (
        open(path, "rb") as handle,
        tqdm(total=size, unit="B", unit_scale=True, desc="reading MRREL.RRF", disable=not progress) as bar,
    ):
        for first, chunk in _line_chunks(handle, bar):
            lines += len(chunk)
            for offset, raw in enumerate(chunk):
                fields = raw.split(b"|")
                # the common line ends in "|\n"; anything else takes the slower, exact check
                if (len(fields) != parts or fields[-1] != b"\n") and not (len(fields) == parts and _ends_well(raw)):
                    raise _field_count_error(path, first + offset, raw, MRREL_COLUMNS)
                relation = wanted.get(fields[i_rela])
                if relation is None:
                    continue
                line_number = first + offset
                rela_rows[relation] += 1
                sab = fields[i_sab]
                rows_by_sab[relation, _decode(path, line_number, sab)] += 1
                if sab not in sabs:
                    continue
                sab_rows[relation] += 1
                if fields[i_suppress] != b"N":
                    suppressed_rows[relation] += 1
                    if settings.drop_suppressed:
                        continue
                cui1, aui1, cui2, aui2 = (_decode(path, line_number, fields[i]) for i in (i_cui1, i_aui1, i_cui2, i_aui2))
                if not cui1 or not cui2:
                    raise UmlsInputError(f"{path}, line {line_number}: CUI1 and CUI2 must not be empty: {raw[:160]!r}")
                edges[relation].append(tuple(strings.setdefault(text, text) for text in (cui2, aui2, cui1, aui1)))
    scan = FileScan(lines, size, time.perf_counter() - start)
    return MrrelScan(edges, rela_rows, sab_rows, suppressed_rows, rows_by_sab, scan)


@dataclass
class ConceptNames:
    """From MRCONSO, for the CUIs and atoms of the kept MRREL rows only."""

    atoms: dict[str, tuple[str, str, str]]  # AUI -> (STR, LAT, SUPPRESS)
    preferred: dict[str, str]  # CUI -> its English preferred name
    scan: FileScan
    # CUI -> its English names that are not suppressed, one spelling per case-folded name (the least in code points):
    # the subject synonyms of the `variants` config are drawn from them (variants.py); only for `synonym_cuis`
    names: dict[str, list[str]] = field(default_factory=dict)


def english_name_rank(ts: str, stt: str, ispref: str, suppress: str) -> tuple[bool, ...]:
    """Higher is better: UMLS defines a concept's preferred name as its LAT=ENG, TS=P, STT=PF,
    ISPREF=Y atom; a name that is not suppressed goes first, so that a subset whose preferred atom
    is suppressed, or absent, still gets its best English name."""
    return (suppress == "N", ts == "P", stt == "PF", ispref == "Y")


def read_concept_names(
    path: str,
    cuis: set[str],
    auis: set[str],
    drop_suppressed: bool,
    progress: bool = True,
    synonym_cuis: set[str] | frozenset[str] = frozenset(),
) -> ConceptNames:
    """One streamed pass over MRCONSO.RRF: atom strings and English preferred names of `cuis`, and the English
    names of `synonym_cuis` (a subset of `cuis`) that are not suppressed (`SUPPRESS` = N, whatever drop_suppressed
    says: a suppressed name is one the source itself retired).

    Compares the CUI prefix of each raw line and decodes only the lines of wanted CUIs; every
    line's field count is checked. Ties in rank go to the first line, so the result depends on the
    file only.
    """
    wanted = {cui.encode() for cui in cuis}
    separators = len(MRCONSO_COLUMNS)
    c = _CONSO
    atoms: dict[str, tuple[str, str, str]] = {}
    preferred: dict[str, str] = {}
    ranks: dict[str, tuple[bool, ...]] = {}
    names: dict[str, dict[str, str]] = {}  # CUI -> case-folded name -> its least spelling
    start, size = time.perf_counter(), os.path.getsize(path)
    lines = 0
    with (
        open(path, "rb") as handle,
        tqdm(total=size, unit="B", unit_scale=True, desc="reading MRCONSO.RRF", disable=not progress) as bar,
    ):
        for first, chunk in _line_chunks(handle, bar):
            lines += len(chunk)
            for offset, raw in enumerate(chunk):
                if raw.count(b"|") != separators or not (raw.endswith(b"|\n") or _ends_well(raw)):
                    raise _field_count_error(path, first + offset, raw, MRCONSO_COLUMNS)
                if raw[: raw.find(b"|")] not in wanted:
                    continue
                f = _decode(path, first + offset, raw).rstrip("\r\n").split("|")
                if f[c["AUI"]] in auis:
                    atoms[f[c["AUI"]]] = (f[c["STR"]], f[c["LAT"]], f[c["SUPPRESS"]])
                if f[c["LAT"]] != "ENG":
                    continue
                cui = f[c["CUI"]]
                if cui in synonym_cuis and f[c["SUPPRESS"]] == "N":  # one spelling a name: the least, in any file order
                    spellings, string = names.setdefault(cui, {}), f[c["STR"]]
                    spellings[string.casefold()] = min(spellings.get(string.casefold(), string), string)
                if drop_suppressed and f[c["SUPPRESS"]] != "N":
                    continue
                rank = english_name_rank(f[c["TS"]], f[c["STT"]], f[c["ISPREF"]], f[c["SUPPRESS"]])
                if cui not in ranks or rank > ranks[cui]:
                    ranks[cui], preferred[cui] = rank, f[c["STR"]]
    scan = FileScan(lines, size, time.perf_counter() - start)
    return ConceptNames(atoms, preferred, scan, {cui: list(spellings.values()) for cui, spellings in names.items()})
