"""The second source's generation: from MRREL rows to named queries, and the per-relation sample.

The authors generated the release once, from UMLS 2021AA, with the notebook NOTEBOOK_URL. What it
does, and what this source does (the card states each step, with the counts of this build):
- keeps the MRREL rows whose RELA is one of the 19 relations (final_19_relation.txt) and whose SAB is
  SNOMEDCT_US, NCI or MED-RT; no filter on SUPPRESS, no semantic-type filter (MRSTY is not read);
- reads a row CUI1|AUI1|..|CUI2|AUI2|..|RELA as "CUI2 RELA CUI1": the head is CUI2, the answer CUI1;
- names each side by the string of the atom the row names (AUI2 / AUI1), else by a string of the CUI;
- groups rows into one query per (head CUI, head name, relation), answers de-duplicated by name in
  MRREL order, each with the CUI of the last row that gives that name;
- keeps queries with at most 10 answer names; per relation, draws 1,000 with pandas'
  DataFrame.sample(1000, random_state=2021) from the queries sorted by (head CUI, head name);
- the hard subset is the drawn rows with avg_match < 0.1 and avg_rouge_l < 0.1 (hardness.py).
Where we differ, and why: the fallback name is the CUI's English preferred name (the notebook took
whichever string of the CUI came last in MRCONSO, in any language), and an atom that is not English is
not used as a name (never the case for the three default sources, which are English).

`full` and `hard` are built by two builders in one `medprobe build`. The extraction (the passes over
MRREL and MRCONSO and the sampling frames) is kept as a JSON file in the download cache the builder
is given, keyed by the files and the parameters that shape it, so that the second config reads
neither file again; the sample is drawn anew by each config.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import datasets
import numpy as np

from .rrf import ConceptNames, FileScan, MrrelScan, read_concept_names, read_mrrel
from .umls_inputs import NOTEBOOK_SABS, UmlsInputError, UmlsSettings, UmlsSource

logger = datasets.logging.get_logger(__name__)


@dataclass(frozen=True)
class UmlsQuery:
    head_cui: str
    head_name: str
    answers: tuple[str, ...]
    answer_cuis: tuple[str, ...]


# Filter steps, in order; each counts per relation what is left after it (the card shows them all).
STEP_RELA, STEP_SAB, STEP_SUPPRESS, STEP_NAMED, STEP_QUERIES, STEP_MAX_ANSWERS = (
    "rela",
    "sab",
    "not_suppressed",
    "named",
    "queries",
    "max_answers",
)


@dataclass
class UmlsExtraction:
    """The sampling frame of each relation and the counts at every filter."""

    queries: dict[str, list[UmlsQuery]]  # relation -> queries sorted by (head CUI, head name)
    counts: dict[str, dict[str, int]]  # relation -> step -> what is left
    suppressed_kept: dict[str, int]  # relation -> suppressed MRREL rows kept (drop_suppressed=false)
    rows_by_sab: dict[tuple[str, str], int]  # (relation, SAB) -> MRREL rows with that RELA
    name_sources: Counter  # how each side of each kept row got its name
    mrrel: FileScan
    mrconso: FileScan
    # head CUI -> its English names that are not suppressed (rrf.ConceptNames.names), read when synonyms > 0:
    # what the `variants` config draws each item's subject synonyms from (variants.py)
    head_names: dict[str, list[str]] = dataclasses.field(default_factory=dict)


def query_answers(tails: list[tuple[str, str]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Answer names de-duplicated in MRREL order, each with the CUI of the last row giving that name.

    `tails` are (CUI, name) pairs in MRREL order. The notebook kept one CUI per name this way
    (its name-to-CUI dict), so a name that two answer concepts share is one answer.
    """
    cui_of_name: dict[str, str] = {}
    for cui, name in tails:
        cui_of_name[name] = cui
    names = tuple(dict.fromkeys(name for _, name in tails))
    return names, tuple(cui_of_name[name] for name in names)


# How a side of a row got its name (keys of UmlsExtraction.name_sources), as the card says it.
NAME_HOW = {
    "atom": "by the row's atom",
    "concept": "by the concept's preferred name",
    "no_atom": "by the concept's preferred name, the row naming no atom",
    "atom_absent": "by the concept's preferred name, the row's atom not being in MRCONSO",
    "atom_not_english": "by the concept's preferred name, the row's atom not being English",
    "atom_suppressed": "by the concept's preferred name, the row's atom being suppressed",
    "unnamed": "not at all: the concept has no English name (the row is dropped)",
}


def endpoint_name(cui: str, aui: str, names: ConceptNames, settings: UmlsSettings) -> tuple[str | None, str]:
    """The name of one side of a row, and how it was chosen (a NAME_HOW key, for the card's counts)."""
    how = "concept"
    if settings.names == "atom":
        atom = names.atoms.get(aui) if aui else None
        if atom is not None and atom[1] == "ENG" and not (settings.drop_suppressed and atom[2] != "N"):
            return atom[0], "atom"
        if not aui:
            how = "no_atom"
        elif atom is None:
            how = "atom_absent"
        else:
            how = "atom_not_english" if atom[1] != "ENG" else "atom_suppressed"
    name = names.preferred.get(cui)
    return (name, how) if name is not None else (None, "unnamed")


def relation_queries(
    edges: list[tuple[str, str, str, str]], names: ConceptNames, settings: UmlsSettings, name_sources: Counter
) -> tuple[list[UmlsQuery], int, int]:
    """The queries of one relation, sorted by (head CUI, head name) as the notebook's groupby sorted
    them (the sample draws positions in this order), with the named-row and query counts."""
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    named = 0
    for head_cui, head_aui, tail_cui, tail_aui in edges:
        head_name, head_how = endpoint_name(head_cui, head_aui, names, settings)
        tail_name, tail_how = endpoint_name(tail_cui, tail_aui, names, settings)
        name_sources[head_how] += 1
        name_sources[tail_how] += 1
        if head_name is None or tail_name is None:
            continue
        named += 1
        groups.setdefault((head_cui, head_name), []).append((tail_cui, tail_name))
    queries = []
    for (head_cui, head_name), tails in sorted(groups.items()):
        answers, answer_cuis = query_answers(tails)
        if len(answers) <= settings.max_answers:
            queries.append(UmlsQuery(head_cui, head_name, answers, answer_cuis))
    return queries, named, len(groups)


def check_relations_present(scan: MrrelScan, settings: UmlsSettings, mrrel: str) -> None:
    """Stop on a relation with no row in the selected sources, and on a chosen SAB that gives no row."""
    absent = [relation for relation in settings.relations if scan.sab_rows[relation] == 0]
    if absent:
        details = []
        for relation in absent:
            others = sorted(sab for (r, sab), n in scan.rows_by_sab.items() if r == relation and n)
            where = f"{scan.rela_rows[relation]:,} rows with SAB {', '.join(others)}" if others else "no row at all"
            details.append(f"{relation} ({where})")
        rest = [r for r in settings.relations if r not in absent]
        raise UmlsInputError(
            f"{mrrel}: relation(s) absent from this release with SAB in {', '.join(settings.sabs)}: "
            f"{'; '.join(details)}. Build without them (--set relations={','.join(rest) or '...'}) or widen sabs."
        )
    if settings.sabs != NOTEBOOK_SABS:  # a chosen list: a SAB that gives nothing is most likely misspelt
        used = {sab for (_, sab), n in scan.rows_by_sab.items() if n}
        idle = [sab for sab in settings.sabs if sab not in used]
        if idle:
            raise UmlsInputError(
                f"{mrrel}: sabs {', '.join(idle)} give no row of the selected relations; SABs that do: "
                f"{', '.join(sorted(used)) or 'none'}"
            )


def _file_identity(path: str) -> tuple[str, int, int]:
    stat = os.stat(path)
    return (os.path.realpath(path), stat.st_size, stat.st_mtime_ns)


def extract_queries(
    source: UmlsSource, settings: UmlsSettings, cache_dir: str | None = None, progress: bool = True
) -> UmlsExtraction:
    """One pass over MRREL, one over MRCONSO (for the CUIs and atoms of the kept rows only), and the
    sampling frame of each relation; kept in `cache_dir` (when given) for the next config of a build."""
    key = (
        _file_identity(source.mrrel),
        _file_identity(source.mrconso),
        settings.relations,
        settings.sabs,
        settings.names,
        settings.max_answers,
        settings.drop_suppressed,
        settings.synonyms > 0,  # the heads' names are read only when synonyms are asked for
    )
    memo = _memo_path(cache_dir, key) if cache_dir else None
    if memo is not None and (remembered := _read_memo(memo)) is not None:
        return remembered
    scan = read_mrrel(source.mrrel, settings, progress)
    check_relations_present(scan, settings, source.mrrel)
    cuis = {cui for edges in scan.edges.values() for edge in edges for cui in (edge[0], edge[2])}
    auis = {aui for edges in scan.edges.values() for edge in edges for aui in (edge[1], edge[3]) if aui}
    heads = {edge[0] for edges in scan.edges.values() for edge in edges} if settings.synonyms > 0 else set()
    names = read_concept_names(source.mrconso, cuis, auis, settings.drop_suppressed, progress, synonym_cuis=heads)
    queries, counts, name_sources = {}, {}, Counter()
    for relation in settings.relations:
        queries[relation], named, grouped = relation_queries(scan.edges[relation], names, settings, name_sources)
        kept = len(scan.edges[relation])
        counts[relation] = {
            STEP_RELA: scan.rela_rows[relation],
            STEP_SAB: scan.sab_rows[relation],
            STEP_SUPPRESS: kept,
            STEP_NAMED: named,
            STEP_QUERIES: grouped,
            STEP_MAX_ANSWERS: len(queries[relation]),
        }
    suppressed_kept = {r: 0 if settings.drop_suppressed else scan.suppressed_rows[r] for r in settings.relations}
    extraction = UmlsExtraction(
        queries, counts, suppressed_kept, dict(scan.rows_by_sab), name_sources, scan.scan, names.scan, names.names
    )
    if memo is not None:
        _write_memo(memo, extraction)
    return extraction


# --- the extraction kept between the configs of a build ---

_MEMO_FORMAT = 2  # part of the key: a file written in another layout is never read


def _memo_path(cache_dir: str, key: tuple) -> Path:
    digest = hashlib.sha256(json.dumps([_MEMO_FORMAT, key]).encode()).hexdigest()
    return Path(cache_dir) / "medlama_umls_extraction" / f"{digest}.json"


def _read_memo(path: Path) -> UmlsExtraction | None:
    """The kept extraction, or None when there is none (or it does not read: then the files are read again)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return UmlsExtraction(
            queries={r: [UmlsQuery(c, n, tuple(a), tuple(ac)) for c, n, a, ac in rows] for r, rows in data["queries"].items()},
            counts=data["counts"],
            suppressed_kept=data["suppressed_kept"],
            rows_by_sab={(relation, sab): rows for relation, sab, rows in data["rows_by_sab"]},
            name_sources=Counter(data["name_sources"]),
            mrrel=FileScan(**data["mrrel"]),
            mrconso=FileScan(**data["mrconso"]),
            head_names=data["head_names"],
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _write_memo(path: Path, extraction: UmlsExtraction) -> None:
    """Write under a temporary name and rename; one extraction at most is kept (it can be tens of MB)."""
    data = {
        "queries": {
            r: [[q.head_cui, q.head_name, q.answers, q.answer_cuis] for q in rows] for r, rows in extraction.queries.items()
        },
        "counts": extraction.counts,
        "suppressed_kept": extraction.suppressed_kept,
        "rows_by_sab": [[relation, sab, rows] for (relation, sab), rows in extraction.rows_by_sab.items()],
        "name_sources": dict(extraction.name_sources),
        "mrrel": dataclasses.asdict(extraction.mrrel),
        "mrconso": dataclasses.asdict(extraction.mrconso),
        "head_names": extraction.head_names,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    for older in path.parent.glob("*.json"):
        older.unlink(missing_ok=True)
    staged = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    staged.write_text(json.dumps(data), encoding="utf-8")
    os.replace(staged, path)


def sample_indices(available: int, wanted: int, seed: int) -> list[int]:
    """The positions pandas' `DataFrame.sample(wanted, random_state=seed)` draws from `available`
    rows: a fresh numpy RandomState(seed), `choice` without replacement (a permutation's head), in
    drawn order. Checked against the order of the 2021AA release rows (tests)."""
    return np.random.RandomState(seed).choice(available, size=min(wanted, available), replace=False).tolist()


def sample_relations(extraction: UmlsExtraction, settings: UmlsSettings) -> dict[str, list[UmlsQuery]]:
    """`per_relation` queries of each relation, drawn as the notebook drew them (a fresh generator
    per relation). A relation with fewer queries is built whole, with a warning, unless
    allow_fewer=false: a newer release may hold fewer heads for a relation, and the card records it."""
    sampled = {}
    for relation in settings.relations:
        frame = extraction.queries[relation]
        counts = extraction.counts[relation]
        if not frame:
            raise UmlsInputError(
                f"{relation}: no query is left after the filters ({counts[STEP_SAB]:,} MRREL rows in the selected "
                f"sources, {counts[STEP_NAMED]:,} with English names, {counts[STEP_QUERIES]:,} queries, none with at "
                f"most {settings.max_answers} answers); build without it: --set relations=..."
            )
        if len(frame) < settings.per_relation:
            message = (
                f"{relation}: {len(frame):,} queries are left after the filters ({counts[STEP_SAB]:,} MRREL rows, "
                f"{counts[STEP_QUERIES]:,} queries, {len(frame):,} with at most {settings.max_answers} answers), fewer "
                f"than per_relation={settings.per_relation:,}"
            )
            if not settings.allow_fewer:
                raise UmlsInputError(
                    f"{message}; lower per_relation, leave the relation out (--set relations=...), or "
                    f"--set allow_fewer=true to build all {len(frame):,}"
                )
            logger.warning(f"{message}: building all {len(frame):,} of them (the card says so)")
        sampled[relation] = [frame[i] for i in sample_indices(len(frame), settings.per_relation, settings.seed)]
    return sampled
