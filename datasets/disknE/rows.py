"""From annotation rows and NLI pairs to the dataset's rows: pairs missing from the user's files,
unknown CUIs, the disease span of each pair, and the diseases a premise mentions.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import datasets

from .annotations import AnnotationRow, DisknEInputError
from .sources import MEDIQA_NLI_URL, MEDNLI_URL, NliPair
from .umls import UMLS_NAMES_TSV, UmlsName

logger = datasets.utils.logging.get_logger(__name__)

_TOKEN = re.compile(r"\w+|[^\w\s]")


def name_tokens(text: str) -> tuple[str, ...]:
    """Lower-cased words and single punctuation marks: names match as whole words, in any case."""
    return tuple(_TOKEN.findall(text.lower()))


class MentionIndex:
    """Finds which concepts a text mentions by any of their names, as whole words, ignoring case."""

    def __init__(self, names_by_cui: dict[str, set[str]]):
        self.cuis_by_tokens: dict[tuple[str, ...], set[str]] = defaultdict(set)
        for cui, names in names_by_cui.items():
            for name in names:
                tokens = name_tokens(name)
                if tokens:
                    self.cuis_by_tokens[tokens].add(cui)
        self.longest = max(map(len, self.cuis_by_tokens), default=0)

    def mentioned(self, text: str) -> list[str]:
        tokens = name_tokens(text)
        found: set[str] = set()
        for start in range(len(tokens)):
            for end in range(start + 1, min(start + self.longest, len(tokens)) + 1):
                found.update(self.cuis_by_tokens.get(tokens[start:end], ()))
        return sorted(found)


def drop_missing_pairs(rows: list[AnnotationRow], pairs: dict[str, NliPair], path: str, limit: int) -> list[AnnotationRow]:
    """Skip the rows whose pair is not in the user's files: reported, and an error past `limit` pairs."""
    absent = [r for r in rows if r.pair_id not in pairs]
    if not absent:
        return rows
    absent_ids = sorted({r.pair_id for r in absent})
    first = "; ".join(f"{r.pair_id} (row {r.row})" for r in absent[:5])
    message = f"{path}: {len(absent_ids)} pair id(s) are in no MedNLI / MEDIQA-NLI file ({len(absent)} rows), first: {first}"
    if len(absent_ids) > limit:
        raise DisknEInputError(
            f"{message}. More than {limit} missing pairs means the files are not MedNLI 1.0.0 and MEDIQA-NLI 1.0.1 "
            f"as distributed ({MEDNLI_URL}, {MEDIQA_NLI_URL}); raise the limit with --set max_missing_pairs=N."
        )
    logger.warning(f"{message}. These rows are skipped.")
    return [r for r in rows if r.pair_id in pairs]


def check_known_cuis(rows: list[AnnotationRow], names: dict[str, list[UmlsName]], path: str, umls: Path) -> None:
    unknown: dict[str, int] = {}
    for r in rows:
        for cui in (r.cui, r.original_cui):
            if cui not in names:
                unknown.setdefault(cui, r.row)
    if unknown:
        listed = ", ".join(f"{cui} (row {row})" for cui, row in list(unknown.items())[:20])
        raise DisknEInputError(
            f"{path}: {len(unknown)} CUI(s) have no English name in {umls}: {listed}. Use a UMLS release that "
            f"has them (the paper used 2020AA), or re-extract {UMLS_NAMES_TSV} for these annotation files."
        )


def positive_spans(rows: list[AnnotationRow], pairs: dict[str, NliPair], path: str) -> dict[tuple[str, str], tuple[int, int]]:
    """(pair id, disease CUI) -> the disease's stripped, inclusive offsets in the hypothesis, from the positive rows."""
    spans: dict[tuple[str, str], tuple[int, int]] = {}
    for r in rows:
        if not r.label:
            continue
        hypothesis = pairs[r.pair_id].hypothesis
        if not 0 <= r.start <= r.end < len(hypothesis):
            raise DisknEInputError(
                f"{path}, row {r.row} (pair {r.pair_id}): offsets {r.start}..{r.end} do not fall inside the hypothesis "
                f"({len(hypothesis)} characters in {pairs[r.pair_id].where}); is this the MedNLI 1.0.0 text?"
            )
        span = hypothesis[r.start : r.end + 1]
        if not span.strip():
            raise DisknEInputError(f"{path}, row {r.row} (pair {r.pair_id}): offsets {r.start}..{r.end} select only white space")
        start = r.start + len(span) - len(span.lstrip())
        spans.setdefault((r.pair_id, r.cui), (start, start + len(span.strip()) - 1))
    # A few negatives of the release name an original_cui that their pair has no positive row for
    # (terminological files: 2 pairs, 20 rows); their disease span is the pair's only one.
    borrowed: list[AnnotationRow] = []
    for r in rows:
        if r.label or (r.pair_id, r.original_cui) in spans:
            continue
        pair_spans = {span for (pair_id, _), span in spans.items() if pair_id == r.pair_id}
        if len(pair_spans) != 1:
            raise DisknEInputError(
                f"{path}, row {r.row}: negative of pair {r.pair_id} has no positive row for {r.original_cui}, and the pair "
                f"has {len(pair_spans)} disease spans, so full_hypothesis cannot say which one to replace"
            )
        spans[(r.pair_id, r.original_cui)] = pair_spans.pop()
        borrowed.append(r)
    if borrowed:
        logger.info(
            f"{path}: {len(borrowed)} negative row(s) name an original_cui without a positive row in their pair "
            f"({', '.join(sorted({r.pair_id for r in borrowed}))}); their full_hypothesis replaces the pair's disease span"
        )
    return spans


def synonyms(
    rows: list[AnnotationRow],
    names: dict[str, list[UmlsName]],
    display: dict[str, tuple[str, bool]],
    spans: dict[tuple[str, str], tuple[int, int]],
    pairs: dict[str, NliPair],
    sources: str,
) -> dict[str, set[str]]:
    """Every spelling of every disease of the variant: UMLS names of the chosen sources, the
    name used for negatives, and the spellings found in the annotated hypotheses."""
    chosen = None if sources.strip().lower() == "all" else {s.strip() for s in sources.split(",") if s.strip()}
    spellings: dict[str, set[str]] = defaultdict(set)
    for cui in {c for r in rows for c in (r.cui, r.original_cui)}:
        spellings[cui].add(display[cui][0])
        spellings[cui].update(n.name for n in names[cui] if chosen is None or n.sab in chosen)
    for r in rows:
        if r.label:
            start, end = spans[(r.pair_id, r.cui)]
            spellings[r.cui].add(pairs[r.pair_id].hypothesis[start : end + 1])
    return spellings
