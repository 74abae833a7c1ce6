"""A DisKnE data_dir with made-up text for the pair ids of the real annotation files.

MedNLI and MEDIQA-NLI are credentialed and UMLS is licensed, so tests never see them: this
writes files in their formats (MedNLI JSONL, the MEDIQA-NLI ground-truth CSV, MRCONSO.RRF)
whose text is invented. Every disease span sits at the annotated offsets; names are built from a
hash of the CUI, so they are stable and look like nothing real. The annotation files themselves
are linked, not copied, from ../shared/data (never into the repository).

Run as a script to write such a folder for a measured run:
    python tests/synthetic_disknE.py ../shared/data/disknE/annotation_files OUT_DIR
"""

from __future__ import annotations

import csv
import hashlib
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

NLI_FILES = {
    "mednli_train": "mli_train_v1.jsonl",
    "mednli_dev": "mli_dev_v1.jsonl",
    "mednli_test": "mli_test_v1.jsonl",
    "mediqa_nli_test": "mednli_bionlp19_shared_task.jsonl",
}
GROUND_TRUTH = "mednli_bionlp19_shared_task_ground_truth.csv"
FILLER = "the patient was noted to have "
NLI_LABELS = ("entailment", "neutral", "contradiction")


def stem(cui: str) -> str:
    """24 made-up letters for a CUI."""
    return "".join(chr(ord("a") + b % 26) for b in hashlib.sha256(cui.encode()).digest()[:24])


def spelling(cui: str, length: int) -> str:
    """A made-up spelling of the disease exactly `length` characters long (words of 6 letters)."""
    words = " ".join(stem(cui)[i : i + 6] for i in range(0, 24, 6)) * 3
    text = words[:length]
    return text if not text.endswith(" ") else text[:-1] + "z"


@dataclass
class Concept:
    cui: str
    snomed_pt: str | None  # the current SNOMED CT preferred term (None: the concept has none)
    preferred: str  # the UMLS preferred English name (an MSH heading here)
    snomed_synonym: str
    icd10: str
    obsolete_pt: str  # a suppressed SNOMED CT PT with a lower SNOMED id: must never be chosen

    @property
    def negative_name(self) -> str:
        """The name a negative row must carry: the SNOMED PT, else the UMLS preferred name."""
        return (self.snomed_pt or self.preferred).lower()

    def names(self, sources: set[str] | None) -> set[str]:
        by_source = {
            "SNOMEDCT_US": [self.snomed_synonym, self.obsolete_pt] + ([self.snomed_pt] if self.snomed_pt else []),
            "ICD10": [self.icd10],
            "MSH": [self.preferred],
        }
        return {n for sab, found in by_source.items() if sources is None or sab in sources for n in found}


def concept(cui: str, index: int) -> Concept:
    s = stem(cui)
    return Concept(
        cui=cui,
        snomed_pt=None if index % 10 == 3 else f"{s[:7].title()} {s[7:12]} Disease",
        preferred=f"{s[12:18]} {s[18:22]} syndrome",
        snomed_synonym=s[2:9].upper(),
        icd10=f"{s[4:10]}osis of {s[14:18]}",
        obsolete_pt=f"obsolete {s[:7]}",
    )


def mrconso_line(
    cui: str, sab: str, tty: str, scui: str, name: str, preferred: bool = False, suppress: str = "N", lat: str = "ENG"
) -> str:
    ts, stt, ispref = ("P", "PF", "Y") if preferred else ("S", "VO", "N")
    fields = [
        cui,
        lat,
        ts,
        "L0000001",
        stt,
        "S0000001",
        ispref,
        "A0000001",
        "",
        scui,
        "",
        sab,
        tty,
        scui,
        name,
        "0",
        suppress,
        "",
    ]
    return "|".join(fields) + "|\n"


def concept_lines(c: Concept, snomed_id: int) -> list[str]:
    lines = [
        mrconso_line(c.cui, "MSH", "MH", f"D{snomed_id:06d}", c.preferred, preferred=True),
        mrconso_line(c.cui, "SNOMEDCT_US", "PT", str(snomed_id), c.obsolete_pt, suppress="O"),
        mrconso_line(c.cui, "SNOMEDCT_US", "SY", str(snomed_id + 7), c.snomed_synonym),
        mrconso_line(c.cui, "ICD10", "PT", f"X{snomed_id % 100:02d}", c.icd10),
        mrconso_line(c.cui, "MSHFRE", "MH", f"D{snomed_id:06d}", f"maladie {stem(c.cui)[:8]}", lat="FRE"),
    ]
    if c.snomed_pt:
        lines.insert(1, mrconso_line(c.cui, "SNOMEDCT_US", "PT", str(snomed_id + 7), c.snomed_pt))
    return lines


@dataclass
class SyntheticDisknE:
    data_dir: Path
    concepts: dict[str, Concept] = field(default_factory=dict)
    pair_sources: dict[str, str] = field(default_factory=dict)


def read_annotations(paths: list[Path]) -> list[dict]:
    rows = []
    for path in paths:
        with open(path, encoding="utf-8", newline="") as handle:
            rows.extend(csv.DictReader(handle))
    return rows


def hypothesis_text(spans: list[tuple[int, int, str]], capitalise: bool) -> str:
    """A sentence with each disease's made-up spelling at its (inclusive) offsets.

    Overlapping spans of one disease (the release has one such pair) share the spelling in their
    common part, with blanks in the rest, which the builder strips.
    """
    length = max(end for _, end, _ in spans) + 12
    chars = list((FILLER * (length // len(FILLER) + 1))[:length])
    by_cui: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for start, end, cui in spans:
        by_cui[cui].append((start, end))
    for cui, cui_spans in by_cui.items():
        first, last = min(s for s, _ in cui_spans), max(e for _, e in cui_spans)
        inner_start, inner_end = max(s for s, _ in cui_spans), min(e for _, e in cui_spans)
        chars[max(first - 1, 0) : last + 2] = " " * (last + 2 - max(first - 1, 0))
        text = spelling(cui, inner_end - inner_start + 1)
        chars[inner_start : inner_end + 1] = text.capitalize() if capitalise else text
    return "".join(chars).rstrip() + "."


def premise_text(index: int, cui: str, c: Concept, positive_spelling: str | None) -> str:
    """Made-up premise; every third one mentions some disease, in ways that do and do not count."""
    text = f"Patient {index} was admitted for evaluation."
    kind = (index // 3) % 6
    if index % 3:
        return text
    mention = {
        0: c.snomed_synonym,  # upper case: counts
        1: c.icd10,  # counts (ICD10 is a default synonym source)
        2: positive_spelling or c.snomed_synonym,  # a dataset spelling: counts
        3: c.preferred,  # MSH only: counts only with synonym_sources=all (or when it is the negative name)
        4: stem(cui)[2:9] + "ectomy",  # glued to another word: never a whole-word mention
        5: f"({c.snomed_synonym.lower()})",  # punctuation around the name: counts
    }[kind]
    return f"{text} History of {mention} noted."


def write_data_dir(
    root: Path,
    annotation_paths: list[Path],
    *,
    umls: str = "mrconso",
    drop_pairs: int = 0,
    link_annotations: bool = True,
) -> SyntheticDisknE:
    """Write MedNLI, MEDIQA-NLI and UMLS files (made-up text) for the pairs of `annotation_paths`.

    umls: "mrconso" writes META/MRCONSO.RRF; "none" writes no UMLS file.
    drop_pairs: leave out the first N pair ids (sorted), as if the user's MedNLI lacked them.
    """
    root.mkdir(parents=True, exist_ok=True)
    rows = read_annotations(annotation_paths)
    cuis = sorted({r[c] for r in rows for c in ("CUI", "original_cui")})
    result = SyntheticDisknE(data_dir=root, concepts={cui: concept(cui, i) for i, cui in enumerate(cuis)})

    spans: dict[str, set[tuple[int, int, str]]] = defaultdict(set)
    for r in rows:
        pair_id = r["pair_id"].removesuffix(",ng")
        spans.setdefault(pair_id, set())
        if r["label"] == "entailment":
            spans[pair_id].add((int(float(r["start_index"])), int(float(r["end_index"])), r["CUI"]))
    target_of = {r["pair_id"].removesuffix(",ng"): r["original_cui"] for r in rows}

    records: dict[str, list[dict]] = defaultdict(list)
    truth = []
    for index, pair_id in enumerate(sorted(spans)):
        if index < drop_pairs:
            continue
        source = list(NLI_FILES)[[0, 0, 0, 0, 0, 0, 1, 2, 3, 3][index % 10]]
        result.pair_sources[pair_id] = source
        pair_spans = sorted(spans[pair_id])
        mentioned = cuis[(index * 7) % len(cuis)]
        own = next((s for s in pair_spans if s[2] == mentioned), None)
        label = NLI_LABELS[index % 3] if not pair_spans else "entailment"
        record = {
            "sentence1": premise_text(
                index, mentioned, result.concepts[mentioned], spelling(mentioned, own[1] - own[0] + 1) if own else None
            ),
            "sentence2": hypothesis_text(pair_spans, capitalise=index % 2 == 0)
            if pair_spans
            else f"Finding {target_of[pair_id]}.",
            "pairID": pair_id,
            "gold_label": "" if source == "mediqa_nli_test" else label,
        }
        records[source].append(record)
        if source == "mediqa_nli_test":
            truth.append({"pair_id": pair_id, "label": label})
    for source, name in NLI_FILES.items():
        folder = root / ("mediqa_nli" if source == "mediqa_nli_test" else "mednli")
        folder.mkdir(exist_ok=True)
        with open(folder / name, "w", encoding="utf-8") as handle:
            for record in records[source]:
                handle.write(json.dumps(record) + "\n")
    with open(root / "mediqa_nli" / GROUND_TRUTH, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["pair_id", "label"])
        writer.writeheader()
        writer.writerows(truth)

    if umls == "mrconso":
        (root / "META").mkdir(exist_ok=True)
        with open(root / "META" / "MRCONSO.RRF", "w", encoding="utf-8") as handle:
            handle.write(mrconso_line("C9999999", "SNOMEDCT_US", "PT", "1", "Unrelated concept"))
            for i, cui in enumerate(cuis):
                handle.writelines(concept_lines(result.concepts[cui], 100_000 + 10 * i))
    if link_annotations:
        (root / "annotation_files").mkdir(exist_ok=True)
        for path in annotation_paths:
            (root / "annotation_files" / path.name).symlink_to(path.resolve())
    return result


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python tests/synthetic_disknE.py ANNOTATION_DIR OUT_DIR")
    made = write_data_dir(Path(sys.argv[2]), sorted(Path(sys.argv[1]).glob("DisknE_*_annotation.csv")))
    print(f"wrote a synthetic DisKnE data_dir with {len(made.pair_sources)} pairs to {made.data_dir}")
