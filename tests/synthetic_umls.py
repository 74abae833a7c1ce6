"""A made-up UMLS release (RRF layout, no UMLS content) for the MedLAMA UMLS source, written by tests.

`write_meta(root)` writes root/release.dat and root/META/{MRCONSO,MRREL,MRDOC}.RRF: a few hundred
concepts (C9xxxxxx) with English and French names, suppressed and lower-ranked English names that
must never be chosen, source atoms (SNOMEDCT_US, NCI, MED-RT) whose strings differ from the
preferred name, and MRREL rows for the 19 relations with several answers per head, duplicate rows,
rows in other sources and of other relations, suppressed rows, rows that name no atom or an atom
MRCONSO lacks or a Spanish atom, rows touching a concept without an English name, heads with more
than 10 answers, and one relation with only three heads.

It returns a `Truth`: what each counted MRREL row must give, known by construction (the generator
decides which name each side must get), not by reading the files back.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from medprobe.resources import load_builder_module

RELATIONS = load_builder_module("medlama").RELATIONS
VERSION = "2031AB"  # made up: no real release has this name
SHORT_RELATION = "occurs_after"  # only three heads
HOME_SAB = {relation: ("SNOMEDCT_US", "NCI", "MED-RT")[i % 3] for i, relation in enumerate(RELATIONS)}
WORDS = (
    "arvel",
    "bostrin",
    "calmex",
    "dervan",
    "elsor",
    "fintal",
    "gorvex",
    "hestan",
    "ilmor",
    "jandor",
    "kelvin",
    "lumtar",
    "morvane",
    "nestor",
    "orlinex",
    "pardin",
    "quelso",
    "rostan",
    "selmar",
    "tavrin",
    "ulmex",
    "vardos",
    "welmin",
    "xantor",
    "yelvin",
    "zorbax",
    "amtel",
    "brevon",
    "cystrel",
    "doltan",
)


@dataclass
class Concept:
    cui: str
    preferred: str | None  # the English name that must be chosen; None: the concept has no English name
    atoms: dict[str, tuple[str, str]] = field(default_factory=dict)  # SAB -> (AUI, STR) of its source atom


@dataclass
class Edge:
    """One MRREL row of a selected relation and source, and what it must give."""

    relation: str
    head_cui: str
    head_name: str | None  # names=atom; None: the row is dropped for want of an English name
    tail_cui: str
    tail_name: str | None
    suppressed: bool


@dataclass
class Truth:
    version: str
    concepts: dict[str, Concept]
    edges: list[Edge]  # in MRREL order
    rela_rows: dict[str, int]  # relation -> MRREL rows with that RELA, any source
    mrrel_lines: int


def _mrconso_line(
    cui: str, lat: str, ts: str, stt: str, ispref: str, aui: str, sab: str, tty: str, name: str, suppress: str
) -> str:
    fields = [cui, lat, ts, "L0000001", stt, "S0000001", ispref, aui, "", "", "", sab, tty, "0", name, "0", suppress, ""]
    return "|".join(fields) + "|\n"


def _mrrel_line(cui1: str, aui1: str, rela: str, cui2: str, aui2: str, sab: str, rui: int, suppress: str = "N") -> str:
    stype1, stype2 = ("SCUI" if aui1 else "CUI"), ("SCUI" if aui2 else "CUI")
    fields = [cui1, aui1, stype1, "RO", cui2, aui2, stype2, rela, f"R{rui:08d}", "", sab, sab, "0", "Y", suppress, ""]
    return "|".join(fields) + "|\n"


def _concepts(rng: random.Random, count: int) -> tuple[dict[str, Concept], list[str]]:
    """Concepts with unique made-up names and the MRCONSO lines that describe them.

    Decoys come before the name that must win: a French preferred row first, a suppressed English
    preferred row (every 7th), a TS=P lexical variant, a TS=P STT=PF row with ISPREF=N (every 5th), a
    TS=S synonym; every 29th concept has no English name at all, every 13th has no TS=P row (its
    first TS=S STT=PF ISPREF=Y row must win).
    """
    concepts: dict[str, Concept] = {}
    lines: list[str] = []
    names: set[str] = set()
    aui = 1

    def new_aui() -> str:
        nonlocal aui
        aui += 1
        return f"A9{aui:07d}"

    def fresh_name() -> str:
        while True:
            name = " ".join(rng.sample(WORDS, rng.choice((2, 2, 3)))).capitalize()
            if name not in names:
                names.add(name)
                return name

    for number in range(1, count + 1):
        cui = f"C9{number:06d}"
        lines.append(_mrconso_line(cui, "FRE", "P", "PF", "Y", new_aui(), "MDRFRE", "PT", f"nom français {number}", "N"))
        if number % 29 == 0:
            concepts[cui] = Concept(cui, None)
            continue
        preferred = fresh_name()
        concept = Concept(cui, preferred)
        if number % 7 == 0:
            lines.append(_mrconso_line(cui, "ENG", "P", "PF", "Y", new_aui(), "MTH", "PN", f"Obsolete name {number}", "O"))
        if number % 13 == 0:  # no TS=P row (as in a subset): the first of the equal S/PF/Y rows wins
            lines.append(_mrconso_line(cui, "ENG", "S", "VO", "N", new_aui(), "MSH", "ET", f"{preferred}, variant", "N"))
            lines.append(_mrconso_line(cui, "ENG", "S", "PF", "Y", new_aui(), "MSH", "SY", preferred, "N"))
            lines.append(_mrconso_line(cui, "ENG", "S", "PF", "Y", new_aui(), "MSH", "SY", f"{preferred} synonym", "N"))
        else:
            lines.append(_mrconso_line(cui, "ENG", "P", "VO", "N", new_aui(), "MSH", "ET", f"{preferred}, variant", "N"))
            if number % 5 == 0:
                lines.append(_mrconso_line(cui, "ENG", "P", "PF", "N", new_aui(), "MSH", "PT", f"{preferred}, not ISPREF", "N"))
            lines.append(_mrconso_line(cui, "ENG", "S", "PF", "Y", new_aui(), "MSH", "SY", f"{preferred} synonym", "N"))
            lines.append(_mrconso_line(cui, "ENG", "P", "PF", "Y", new_aui(), "MTH", "PN", preferred, "N"))
        for sab in ("SNOMEDCT_US", "NCI", "MED-RT"):
            # the source's own term differs from the preferred name for most concepts
            string = preferred if rng.random() < 0.3 else fresh_name()
            if sab == "NCI" and number in (2, 3):  # two answer concepts whose NCI atoms share one string
                string = "Shared twin name"
            concept.atoms[sab] = (new_aui(), string)
            lines.append(_mrconso_line(cui, "ENG", "S", "PF", "Y", concept.atoms[sab][0], sab, "PT", string, "N"))
        concepts[cui] = concept
    # one Spanish atom that a row names: the concept's preferred name must be used instead
    spanish = concepts["C9000001"]
    spanish.atoms["SPANISH"] = (new_aui(), "nombre español")
    lines.append(
        _mrconso_line(spanish.cui, "SPA", "P", "PF", "Y", spanish.atoms["SPANISH"][0], "SNOMEDCT_ES", "PT", "nombre español", "N")
    )
    return concepts, lines


def _side(concept: Concept, sab: str, kind: str) -> tuple[str, str | None]:
    """(AUI written in MRREL, the name that side must get) for a row of `sab`.

    kind: "atom" (the source's atom), "none" (CUI-level row), "missing" (an AUI MRCONSO lacks),
    "spanish" (a non-English atom).
    """
    if kind == "atom" and sab in concept.atoms:
        aui, string = concept.atoms[sab]
        return aui, string
    if kind == "spanish" and "SPANISH" in concept.atoms:
        return concept.atoms["SPANISH"][0], concept.preferred
    if kind == "missing":
        return f"A8{int(concept.cui[1:]):07d}", concept.preferred
    return "", concept.preferred


def write_meta(root: Path, *, seed: int = 0, concepts_count: int = 320, release_dat: bool = True, mrdoc: bool = True) -> Truth:
    rng = random.Random(seed)
    concepts, conso_lines = _concepts(rng, concepts_count)
    cuis = list(concepts)
    named = [cui for cui in cuis if concepts[cui].preferred is not None]
    rows: list[tuple[str, Edge | None]] = []  # (MRREL line without RUI yet, edge or None for rows that do not count)
    rela_rows = {relation: 0 for relation in RELATIONS}

    def add(relation: str, head: Concept, tail: Concept, sab: str, kind: str = "atom", suppress: str = "N") -> None:
        head_aui, head_name = _side(head, sab, kind)
        tail_aui, tail_name = _side(tail, sab, kind)
        rela_rows[relation] += 1
        edge = None
        if sab in ("SNOMEDCT_US", "NCI", "MED-RT"):
            edge = Edge(relation, head.cui, head_name, tail.cui, tail_name, suppress != "N")
        # MRREL reads "CUI2 RELA CUI1": the head is the second concept
        rows.append(((tail.cui, tail_aui, relation, head.cui, head_aui, sab, suppress), edge))

    for index, relation in enumerate(RELATIONS):
        sab = HOME_SAB[relation]
        heads = rng.sample(named, 3 if relation == SHORT_RELATION else 12)
        for number, head_cui in enumerate(heads):
            head = concepts[head_cui]
            answers = rng.randint(1, 6)
            if relation != SHORT_RELATION and number in (0, 5):
                answers = 11 if number == 0 else 10  # one more than max_answers, and exactly max_answers
            for tail_cui in rng.sample([c for c in named if c != head_cui], answers):
                add(relation, head, concepts[tail_cui], sab)
            if number == 1:  # SNOMED CT repeats a row per relationship group: the answers list keeps one name
                add(relation, head, concepts[tail_cui], sab)
            if number == 2:  # a second source names the head differently: a second query
                other = "NCI" if sab != "NCI" else "SNOMEDCT_US"
                add(relation, head, concepts[rng.choice(named)], other)
            if number == 3:
                add(relation, head, concepts[rng.choice(named)], sab, kind="none")
                add(relation, head, concepts[rng.choice(named)], sab, kind="missing")
                add(relation, head, concepts[rng.choice(named)], sab, suppress="O")
            if number == 4:  # an answer without an English name: the row is dropped
                add(relation, head, concepts[rng.choice([c for c in cuis if concepts[c].preferred is None])], sab)
        if index == 0:
            add(relation, concepts["C9000004"], concepts["C9000002"], "NCI")  # the twins: one answer name,
            add(relation, concepts["C9000004"], concepts["C9000003"], "NCI")  # with the last row's CUI
            add(relation, concepts["C9000001"], concepts["C9000005"], "SNOMEDCT_US", kind="spanish")
        for _ in range(3):  # the same relation in a source that is not selected
            add(relation, concepts[rng.choice(named)], concepts[rng.choice(named)], "MSH")
    noise = []
    for _ in range(200):  # other relations, and the inverse direction, which must be ignored
        a, b = concepts[rng.choice(named)], concepts[rng.choice(named)]
        noise.append(
            (
                a.cui,
                a.atoms["NCI"][0],
                rng.choice(("isa", "inverse_isa", "has_associated_morphology")),
                b.cui,
                b.atoms["NCI"][0],
                "NCI",
                "N",
            )
        )
    ordered = rows + [(fields, None) for fields in noise]
    rng.shuffle(ordered)
    meta = root / "META"
    meta.mkdir(parents=True, exist_ok=True)
    with open(meta / "MRREL.RRF", "w", encoding="utf-8", newline="") as handle:
        for rui, (fields, _) in enumerate(ordered):
            cui1, aui1, rela, cui2, aui2, sab, suppress = fields
            handle.write(_mrrel_line(cui1, aui1, rela, cui2, aui2, sab, rui, suppress))
    with open(meta / "MRCONSO.RRF", "w", encoding="utf-8", newline="") as handle:
        handle.writelines(conso_lines)
    if release_dat:
        (root / "release.dat").write_text(
            f"# Release Metadata\numls.release.name={VERSION}\numls.release.description=Made-up release for tests\n",
            encoding="utf-8",
        )
    if mrdoc:
        (meta / "MRDOC.RRF").write_text(
            f"RELA|may_treat|rela_inverse|may_be_treated_by|\nRELEASE|umls.release.name|release_info|{VERSION}|\n",
            encoding="utf-8",
        )
    edges = [edge for _, edge in ordered if edge is not None]
    return Truth(VERSION, concepts, edges, rela_rows, len(ordered))


def write_prompts(folder: Path) -> Path:
    """A prompts.csv with made-up prompts for the 19 relations (the release's file is not shipped)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["pid,default_prompt,human_prompt"] + [f"{r},[X] {r} [Y] .,[X] is linked by {r} to [Y] ." for r in RELATIONS]
    (folder / "prompts.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder
