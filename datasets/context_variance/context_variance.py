"""Context-variance prompts: cloze queries preceded by growing pieces of a real document.

Yao, Cao, Yang, Yu, "Context Variance Evaluation of Pretrained Language Models for Prompt-based
Biomedical Knowledge Probing", AMIA 2023 Joint Summits. Triples in BioLAMA's JSONL form (Sung et
al., EMNLP 2021).

For a triple (S, r, O_t) and a document that mentions both S and O_t, the document is cut
around the first mention of O_t into segments S1, S2, ... such that S1 holds O_t and every
other segment holds exactly one entity of the pool (the entities of O_t's type). Segments grow
outward, alternately left and right, starting on the left, and continue on one side once the
other has no pool entity left. Row `step = i` of an instance is the prompt preceded by the
context S1..Si (step 0: the prompt alone), so the rank change of any object between step i-1
and step i is the effect of adding segment Si.

Configs are `<context kind>-<target kind>`:
- context kinds: `real` (the document text of S1..Si), `knowledge_only` (only the entity
  mentions of S1..Si, in document order), `knowledge_sorted` (the mentions in segment order
  S1, S2, ...), `knowledge_random` (S1 first, the others in a seeded random order);
- target kinds: `target` (centred on O_t) and `negative` (centred on the incorrect pool
  entity nearest to O_t in the document).

Input: `data_dir` with `triples.jsonl` (BioLAMA rows), `prompts.jsonl` (`{"relation",
"template"}` with [X] and [Y]), optional `entities.jsonl` (`{"label", "type", "aliases"}`: more
pool entities) and `corpus/` (`*.txt`, one document per file, and/or `*.jsonl` with `{"id",
"text"}` per line). Other locations are builder parameters (`triples`, `prompts`, `entities`,
`corpus`: paths or globs relative to data_dir). Without data_dir the small corpus written for
medprobe (`sample/` beside this file) is used.

Self-contained (datasets and the standard library); loaded by path by `medprobe build`.
"""

from __future__ import annotations

import glob
import hashlib
import json
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import datasets

logger = datasets.logging.get_logger(__name__)

SAMPLE_DIR = Path(__file__).resolve().parent / "sample"
CONTEXT_KINDS = ("real", "knowledge_only", "knowledge_sorted", "knowledge_random")
TARGET_KINDS = ("target", "negative")
LICENCES = ("credentialed", "umls", "open")  # see medprobe/building/cards.py: how a build may be published
SUBJECT_SLOT, OBJECT_SLOT, MASK = "[X]", "[Y]", "[MASK]"
# Objects of a triple without `obj_types` form one pool per relation (BioLAMA leaves types empty
# for some sources); this is the type name they get.
UNTYPED = "objects of {relation}"

FEATURES = datasets.Features(
    {
        "row_id": datasets.Value("string"),
        "instance_id": datasets.Value("string"),
        "triple_id": datasets.Value("string"),
        "relation": datasets.Value("string"),
        "subject": datasets.Value("string"),
        "target": datasets.Value("string"),
        "document_id": datasets.Value("string"),
        "context_kind": datasets.Value("string"),
        "target_kind": datasets.Value("string"),
        "step": datasets.Value("int32"),
        "num_steps": datasets.Value("int32"),
        "text": datasets.Value("string"),
        "prompt": datasets.Value("string"),
        "segment": datasets.Value("string"),
        "added_object": datasets.Value("string"),
        "added_is_correct": datasets.Value("bool"),
        "correct_objects": datasets.List(datasets.Value("string")),
        "incorrect_objects": datasets.List(datasets.Value("string")),
        "gold_objects": datasets.List(datasets.Value("string")),
        "candidates": datasets.List(datasets.Value("string")),
    }
)

FIELD_DESCRIPTIONS = {
    "row_id": "`{instance_id}/{step}`",
    "instance_id": "`{triple_id}\\|{target}\\|{document_id}`: one segmentation of one document; its rows are steps 0..num_steps",
    "triple_id": "the BioLAMA `uuid` of the triple (subject and relation)",
    "relation": "the BioLAMA `predicate_id`",
    "subject": "the subject label [X]",
    "target": "the object whose mention S1 holds: O_t for `target` configs, the nearest incorrect pool entity for `negative` configs",
    "document_id": "the document the context comes from (file name or JSONL `id`)",
    "context_kind": "real, knowledge_only, knowledge_sorted or knowledge_random",
    "target_kind": "target or negative",
    "step": "i: the context holds segments S1..Si (0 = the prompt alone); the rank change of step i compares with step i-1 of the same instance",
    "num_steps": "n, the number of segments of the instance",
    "text": "the context followed by the prompt, with [MASK] in the answer slot",
    "prompt": "the manual prompt with [X] filled and [MASK] in the answer slot",
    "segment": "the document text of Si, the segment added at this step (white space collapsed; empty at step 0)",
    "added_object": "the pool entity that Si holds (its label; empty at step 0)",
    "added_is_correct": "whether the added object satisfies (subject, relation, ·), i.e. is in O_cor",
    "correct_objects": "correct pool entities (O_cor) mentioned in S1..Si, other than `target`, in the order they were added",
    "incorrect_objects": "incorrect pool entities (O_incor) mentioned in S1..Si, other than `target`, in the order they were added",
    "gold_objects": "all objects of the triple (its obj_labels)",
    "candidates": "the entity pool of the target's type (labels, sorted): the names a prober ranks at [MASK]",
}


class ContextVarianceInputError(ValueError):
    """An input file is missing or malformed; the message names the file, the line and what was expected."""


# --- entities and matching ---------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def surface_key(text: str) -> str:
    """How names are compared: case-folded, white space collapsed."""
    return " ".join(text.casefold().split())


@dataclass
class Entity:
    label: str
    type: str
    aliases: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Mention:
    start: int  # character offsets in the document
    end: int
    entity: str  # the entity's label
    surface: str  # the text as written in the document


class EntityMatcher:
    """Whole-word, case-insensitive matching of entity names and aliases, longest match first.

    Every run of consecutive words of a text is looked up among the names (an n-gram lookup, so
    the cost does not grow with the number of names); overlapping candidates are resolved by
    taking the longest first, then the leftmost. When two entities share a name, the entity
    whose label it is wins over one that has it as an alias, then the first label in sorted order.
    """

    def __init__(self, names: dict[str, list[str]]):
        """`names`: entity label -> its surface forms (label first, then aliases)."""
        self.lookup: dict[str, str] = {}
        self.unmatchable: list[str] = []  # names that do not start and end with a letter or digit
        for rank in (0, 1):  # labels before aliases
            for label in sorted(names):
                forms = names[label][:1] if rank == 0 else names[label][1:]
                for form in forms:
                    if not form.strip():
                        continue
                    if not (_WORD.match(form.strip()[0]) and _WORD.match(form.strip()[-1])):
                        self.unmatchable.append(form)
                        continue
                    self.lookup.setdefault(surface_key(form), label)
        self.word_counts = sorted({len(_WORD.findall(key)) for key in self.lookup}, reverse=True)

    def find(self, text: str) -> list[Mention]:
        words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
        candidates = []
        for first in range(len(words)):
            for count in self.word_counts:
                last = first + count - 1
                if last >= len(words):
                    continue
                start, end = words[first][0], words[last][1]
                label = self.lookup.get(surface_key(text[start:end]))
                if label is not None and len(_WORD.findall(text[start:end])) == count:
                    candidates.append((start, end, first, last, label))
        candidates.sort(key=lambda c: (c[0] - c[1], c[0]))
        claimed = bytearray(len(words))
        mentions = []
        for start, end, first, last, label in candidates:
            if any(claimed[first : last + 1]):
                continue
            claimed[first : last + 1] = b"\x01" * (last - first + 1)
            mentions.append(Mention(start, end, label, text[start:end]))
        return sorted(mentions, key=lambda m: m.start)


# --- segmentation and contexts (the paper's construction) --------------------------------------------


def growth_order(num_mentions: int, centre: int) -> list[int]:
    """Mention indices in the order their segments are added: the centre, then alternately the
    next one to the left and to the right (left first), one side alone once the other is exhausted."""
    order, left, right, go_left = [centre], centre - 1, centre + 1, True
    while left >= 0 or right < num_mentions:
        if (go_left and left >= 0) or right >= num_mentions:
            order.append(left)
            left -= 1
        else:
            order.append(right)
            right += 1
        go_left = not go_left
    return order


def segment_span(mentions: list[Mention], index: int, centre: int, doc_length: int) -> tuple[int, int]:
    """Character span of the segment holding mention `index`.

    Cuts fall just after a mention on the left of the centre and just before a mention on its
    right, so the text between two mentions belongs to the segment nearer the centre; the
    outermost segments reach the start and the end of the document.
    """
    if index < centre:
        return (mentions[index - 1].end if index > 0 else 0), mentions[index].end
    if index > centre:
        return mentions[index].start, (mentions[index + 1].start if index + 1 < len(mentions) else doc_length)
    start = mentions[centre - 1].end if centre > 0 else 0
    end = mentions[centre + 1].start if centre + 1 < len(mentions) else doc_length
    return start, end


@dataclass
class Segment:
    start: int
    end: int
    mention: Mention
    text: str  # the document text, white space collapsed


def segment_document(text: str, mentions: list[Mention], centre: int) -> list[Segment]:
    """S1, S2, ... for a document whose pool mentions are `mentions` (in document order)."""
    segments = []
    for index in growth_order(len(mentions), centre):
        start, end = segment_span(mentions, index, centre, len(text))
        segments.append(Segment(start, end, mentions[index], " ".join(text[start:end].split())))
    return segments


def knowledge_text(mentions: list[Mention]) -> str:
    return ", ".join(m.surface for m in mentions) + "."


def context_text(kind: str, document: str, segments: list[Segment], random_priority: list[float]) -> str:
    """The context of a step whose segments are `segments` (S1..Si, in growth order)."""
    if kind == "real":
        # S1..Si are always one contiguous stretch of the document
        start, end = min(s.start for s in segments), max(s.end for s in segments)
        return " ".join(document[start:end].split())
    if kind == "knowledge_only":
        return knowledge_text(sorted((s.mention for s in segments), key=lambda m: m.start))
    if kind == "knowledge_sorted":
        return knowledge_text([s.mention for s in segments])
    if kind == "knowledge_random":
        rest = sorted(range(1, len(segments)), key=lambda i: random_priority[i])
        return knowledge_text([segments[0].mention] + [segments[i].mention for i in rest])
    raise ValueError(f"unknown context kind {kind!r}; expected one of {', '.join(CONTEXT_KINDS)}")


def instance_rng(seed: int, instance_id: str) -> random.Random:
    """A generator that depends only on the seed and the instance (not on build order or hashing)."""
    digest = hashlib.sha256(f"{seed}:{instance_id}".encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def nearest_mention(mentions: list[Mention], centre: int, allowed: set[str]) -> int | None:
    """Index of the mention of an `allowed` entity nearest (in characters) to mention `centre`; ties go left."""
    best, best_gap = None, None
    for index, mention in enumerate(mentions):
        if index == centre or mention.entity not in allowed:
            continue
        gap = mentions[centre].start - mention.end if index < centre else mention.start - mentions[centre].end
        if best_gap is None or gap < best_gap:
            best, best_gap = index, gap
    return best


# --- reading the inputs --------------------------------------------------------------------------------


@dataclass
class Triple:
    triple_id: str
    relation: str
    subject: str
    subject_aliases: list[str]
    objects: list[str]
    object_types: list[str]
    object_aliases: list[list[str]]
    source: str  # file:line, for messages


def _read_jsonl(path: Path) -> list[tuple[int, dict]]:
    rows = []
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise ContextVarianceInputError(f"{path}, line {number}: not valid JSON ({err})") from err
                if not isinstance(row, dict):
                    raise ContextVarianceInputError(f"{path}, line {number}: expected a JSON object, got {type(row).__name__}")
                rows.append((number, row))
    except UnicodeDecodeError as err:
        raise ContextVarianceInputError(f"{path}: not valid UTF-8 ({err})") from err
    return rows


def _string_list(value, where: str, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ContextVarianceInputError(f"{where}: {name} must be a list of strings, got {value!r:.120}")
    return value


def read_triples(paths: list[Path]) -> list[Triple]:
    """BioLAMA rows: uuid, predicate_id, sub_label, sub_aliases, obj_labels, obj_types, obj_aliases."""
    triples = []
    for path in paths:
        for number, row in _read_jsonl(path):
            where = f"{path}, line {number}"
            for name in ("predicate_id", "sub_label", "obj_labels"):
                if not row.get(name):
                    raise ContextVarianceInputError(
                        f"{where}: missing or empty {name!r}; a BioLAMA triple needs predicate_id, sub_label and a non-empty obj_labels list"
                    )
            objects = _string_list(row["obj_labels"], where, "obj_labels")
            types = _string_list(row.get("obj_types"), where, "obj_types")
            aliases = row.get("obj_aliases") or [[] for _ in objects]
            if types and len(types) != len(objects):
                raise ContextVarianceInputError(
                    f"{where}: {len(objects)} obj_labels but {len(types)} obj_types; expected one type per object"
                )
            if len(aliases) != len(objects):
                raise ContextVarianceInputError(
                    f"{where}: {len(objects)} obj_labels but {len(aliases)} obj_aliases lists; expected one list per object"
                )
            relation = str(row["predicate_id"])
            triples.append(
                Triple(
                    triple_id=str(row.get("uuid") or f"{row.get('sub_uri', row['sub_label'])}-{relation}"),
                    relation=relation,
                    subject=row["sub_label"],
                    subject_aliases=_string_list(row.get("sub_aliases"), where, "sub_aliases"),
                    objects=objects,
                    object_types=types or [UNTYPED.format(relation=relation)] * len(objects),
                    object_aliases=[_string_list(a, where, "obj_aliases[i]") for a in aliases],
                    source=where,
                )
            )
    if not triples:
        raise ContextVarianceInputError(f"no triples in {', '.join(map(str, paths))}")
    return triples


def read_prompts(path: Path) -> dict[str, str]:
    """Manual prompts `{"relation", "template"}`; every template needs [X] and exactly one [Y]."""
    prompts = {}
    for number, row in _read_jsonl(path):
        relation, template = row.get("relation"), row.get("template")
        if not isinstance(relation, str) or not isinstance(template, str):
            raise ContextVarianceInputError(
                f'{path}, line {number}: expected {{"relation": ..., "template": ...}}, got {row!r:.120}'
            )
        if template.count(OBJECT_SLOT) != 1 or SUBJECT_SLOT not in template:
            raise ContextVarianceInputError(
                f"{path}, line {number}: the template of {relation!r} must contain {SUBJECT_SLOT} and exactly one {OBJECT_SLOT}, got {template!r}"
            )
        prompts[relation] = template
    return prompts


def read_entities(path: Path) -> list[Entity]:
    entities = []
    for number, row in _read_jsonl(path):
        where = f"{path}, line {number}"
        if not isinstance(row.get("label"), str) or not row["label"].strip() or not isinstance(row.get("type"), str):
            raise ContextVarianceInputError(
                f'{where}: expected {{"label": name, "type": type, "aliases": [...]}}, got {row!r:.120}'
            )
        entities.append(Entity(row["label"], row["type"], _string_list(row.get("aliases"), where, "aliases")))
    if not entities:
        raise ContextVarianceInputError(f"{path}: the entity file is empty; give one entity per line or leave the file out")
    return entities


def read_corpus(path: Path) -> dict[str, str]:
    """Documents by id: `*.txt` files (id = path relative to the corpus folder) and `*.jsonl` lines `{"id", "text"}`."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in (".txt", ".jsonl"))
    documents: dict[str, str] = {}
    for file in files:
        if file.suffix == ".txt":
            documents[str(file.relative_to(path)) if file != path else file.name] = file.read_text(encoding="utf-8")
            continue
        for number, row in _read_jsonl(file):
            if not isinstance(row.get("text"), str):
                raise ContextVarianceInputError(f'{file}, line {number}: expected {{"id": ..., "text": ...}}, got {row!r:.120}')
            doc_id = str(row.get("id", f"{file.stem}:{number}"))
            if doc_id in documents:
                raise ContextVarianceInputError(f"{file}, line {number}: document id {doc_id!r} occurs twice in the corpus")
            documents[doc_id] = row["text"]
    if not documents:
        raise ContextVarianceInputError(f"{path}: no documents (expected *.txt files or *.jsonl lines with id and text)")
    return documents


def build_pools(triples: list[Triple], extra: list[Entity]) -> dict[str, dict[str, Entity]]:
    """Entity pools by type: every object of every triple, plus the entities of the entity file."""
    pools: dict[str, dict[str, Entity]] = {}

    def add(label: str, kind: str, aliases: list[str]) -> None:
        entity = pools.setdefault(kind, {}).setdefault(surface_key(label), Entity(label, kind))
        entity.aliases.extend(a for a in aliases if a not in entity.aliases and a != entity.label)

    for triple in triples:
        for label, kind, aliases in zip(triple.objects, triple.object_types, triple.object_aliases):
            add(label, kind, aliases)
    for entity in extra:
        add(entity.label, entity.type, entity.aliases)
    return pools


# --- instances and rows -----------------------------------------------------------------------------


@dataclass
class BuildStats:
    """What was read, built and skipped; logged after a build and shown in the card."""

    source: str = ""
    licence: str = "credentialed"  # the card's medprobe_licence marker
    triples: int = 0
    documents: int = 0
    pool_sizes: dict[str, int] = field(default_factory=dict)
    triples_objects_not_in_corpus: list[str] = field(default_factory=list)
    triples_without_subject_document: list[str] = field(default_factory=list)  # objects occur, never beside the subject
    pairs_without_subject: int = 0  # (triple object, document) pairs where the object occurs but the subject does not
    instances: int = 0
    negative_without_incorrect: int = 0  # instances with no incorrect pool entity to centre on
    duplicates: int = 0  # the same segmentation reached twice (e.g. two objects sharing their nearest incorrect entity)
    rows: int = 0
    unmatchable_names: list[str] = field(default_factory=list)

    def summary(self, config: str) -> str:
        return (
            f"context_variance/{config}: {self.triples} triples, {self.documents} documents; "
            f"{len(self.triples_objects_not_in_corpus)} triple(s) skipped because no object occurs in the corpus"
            f"{_examples(self.triples_objects_not_in_corpus)}; "
            f"{len(self.triples_without_subject_document)} triple(s) skipped because no document with an object mentions the subject"
            f"{_examples(self.triples_without_subject_document)}; "
            f"{self.pairs_without_subject} (object, document) pairs skipped because the document lacks the subject; "
            f"{self.negative_without_incorrect} instances without an incorrect entity to centre on (negative configs); "
            f"{self.duplicates} duplicate instances dropped; "
            f"{self.instances} instances, {self.rows} rows"
        )


def _examples(ids: list[str]) -> str:
    return f" ({', '.join(ids[:5])}{', ...' if len(ids) > 5 else ''})" if ids else ""


# The statistics of the latest build of each config, read by `card_context`.
LAST_BUILD_STATS: dict[str, BuildStats] = {}


def instance_rows(
    triple: Triple,
    document_id: str,
    document: str,
    mentions: list[Mention],
    centre: int,
    pool: dict[str, Entity],
    prompt: str,
    context_kind: str,
    target_kind: str,
    seed: int,
    max_steps: int | None,
) -> list[dict]:
    """Rows for steps 0..n of the segmentation of `document` around `mentions[centre]`."""
    centre_entity = mentions[centre].entity
    instance_id = f"{triple.triple_id}|{centre_entity}|{document_id}"
    correct = {surface_key(o) for o in triple.objects}
    segments = segment_document(document, mentions, centre)[: max_steps or None]
    rng = instance_rng(seed, instance_id)
    priority = [rng.random() for _ in segments]
    candidates = sorted((e.label for e in pool.values()), key=lambda name: (name.casefold(), name))
    rows = []
    for step in range(len(segments) + 1):
        shown = segments[:step]
        in_context = list(dict.fromkeys(s.mention.entity for s in shown if s.mention.entity != centre_entity))
        added = shown[-1] if shown else None
        rows.append(
            {
                "row_id": f"{instance_id}/{step}",
                "instance_id": instance_id,
                "triple_id": triple.triple_id,
                "relation": triple.relation,
                "subject": triple.subject,
                "target": centre_entity,
                "document_id": document_id,
                "context_kind": context_kind,
                "target_kind": target_kind,
                "step": step,
                "num_steps": len(segments),
                "text": f"{context_text(context_kind, document, shown, priority)} {prompt}" if shown else prompt,
                "prompt": prompt,
                "segment": added.text if added else "",
                "added_object": added.mention.entity if added else "",
                "added_is_correct": bool(added) and surface_key(added.mention.entity) in correct,
                "correct_objects": [e for e in in_context if surface_key(e) in correct],
                "incorrect_objects": [e for e in in_context if surface_key(e) not in correct],
                "gold_objects": list(triple.objects),
                "candidates": candidates,
            }
        )
    return rows


def generate_rows(
    triples: list[Triple],
    prompts: dict[str, str],
    pools: dict[str, dict[str, Entity]],
    documents: dict[str, str],
    context_kind: str,
    target_kind: str,
    seed: int = 0,
    max_steps: int | None = None,
    stats: BuildStats | None = None,
):
    """Yield the rows of one config; fill `stats` with what was built and skipped."""
    stats = stats if stats is not None else BuildStats()
    stats.triples, stats.documents = len(triples), len(documents)
    stats.pool_sizes = {kind: len(pool) for kind, pool in sorted(pools.items())}
    missing = sorted({t.relation for t in triples} - set(prompts))
    if missing:
        raise ContextVarianceInputError(
            f'no prompt for relation(s) {", ".join(missing)}; add {{"relation", "template"}} lines to the prompts file'
        )
    if not any(pools.values()):
        raise ContextVarianceInputError("the entity pool is empty: the triples have no objects and no entity file was given")

    matchers = {kind: EntityMatcher({e.label: [e.label, *e.aliases] for e in pool.values()}) for kind, pool in pools.items()}
    subjects: dict[str, list[str]] = {}  # subject key -> its names
    for triple in triples:
        subjects.setdefault(surface_key(triple.subject), [triple.subject]).extend(triple.subject_aliases)
    subject_matcher = EntityMatcher(subjects)
    stats.unmatchable_names = sorted({n for m in [subject_matcher, *matchers.values()] for n in m.unmatchable})

    # one pass over the corpus: which subjects and which pool mentions each document holds
    doc_subjects = {doc_id: {m.entity for m in subject_matcher.find(text)} for doc_id, text in documents.items()}
    doc_mentions = {
        kind: {doc_id: matcher.find(text) for doc_id, text in documents.items()} for kind, matcher in matchers.items()
    }

    seen: set[str] = set()
    for triple in triples:
        prompt = prompts[triple.relation].replace(SUBJECT_SLOT, triple.subject).replace(OBJECT_SLOT, MASK)
        object_found = subject_found = False
        for target, kind in zip(triple.objects, triple.object_types):
            pool = pools[kind]
            label = pool[surface_key(target)].label
            correct = {surface_key(o) for o in triple.objects}
            for doc_id, mentions in doc_mentions[kind].items():
                centre = next((i for i, m in enumerate(mentions) if m.entity == label), None)
                if centre is None:
                    continue
                object_found = True
                if surface_key(triple.subject) not in doc_subjects[doc_id]:
                    stats.pairs_without_subject += 1
                    continue
                subject_found = True
                if target_kind == "negative":
                    incorrect = {m.entity for m in mentions if surface_key(m.entity) not in correct}
                    centre = nearest_mention(mentions, centre, incorrect)
                    if centre is None:
                        stats.negative_without_incorrect += 1
                        continue
                rows = instance_rows(
                    triple, doc_id, documents[doc_id], mentions, centre, pool, prompt, context_kind, target_kind, seed, max_steps
                )
                if rows[0]["instance_id"] in seen:
                    stats.duplicates += 1
                    continue
                seen.add(rows[0]["instance_id"])
                stats.instances += 1
                stats.rows += len(rows)
                yield from rows
        if not object_found:
            stats.triples_objects_not_in_corpus.append(triple.triple_id)
        elif not subject_found:
            stats.triples_without_subject_document.append(triple.triple_id)


# --- the builder ----------------------------------------------------------------------------------------


@dataclass
class ContextVarianceConfig(datasets.BuilderConfig):
    """`<context kind>-<target kind>`, plus where the inputs are and the seed of knowledge_random."""

    context_kind: str = "real"
    target_kind: str = "target"
    seed: int = 0
    max_steps: int | None = None  # keep at most this many segments per instance (None: all)
    triples: str = "triples.jsonl"  # path or glob, relative to data_dir
    prompts: str = "prompts.jsonl"
    entities: str | None = None  # default: entities.jsonl when it exists
    corpus: str = "corpus"  # a folder of *.txt / *.jsonl, or one *.jsonl file
    # How a build from a user's data may be published (the card's medprobe_licence marker):
    # "credentialed" (default: e.g. MIMIC notes, private only), "umls" (UMLS-derived triples, gated)
    # or "open" (openly licensed corpus and triples). The shipped sample is always "open".
    licence: str = "credentialed"


def _config(context_kind: str, target_kind: str) -> ContextVarianceConfig:
    what = {
        "real": "the document text of S1..Si",
        "knowledge_only": "only the entity mentions of S1..Si, in document order",
        "knowledge_sorted": "the entity mentions in segment order S1, S2, ...",
        "knowledge_random": "S1's entity first, the other mentions in a seeded random order",
    }[context_kind]
    centre = "O_t" if target_kind == "target" else "the incorrect pool entity nearest to O_t"
    return ContextVarianceConfig(
        name=f"{context_kind}-{target_kind}",
        version=datasets.Version("1.0.0"),
        description=f"Context: {what}; S1 holds {centre}.",
        context_kind=context_kind,
        target_kind=target_kind,
    )


class ContextVariance(datasets.GeneratorBasedBuilder):
    """Context-variance prompts built from BioLAMA-style triples and a corpus of documents."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = ContextVarianceConfig
    BUILDER_CONFIGS = [_config(c, t) for t in TARGET_KINDS for c in CONTEXT_KINDS]
    DEFAULT_CONFIG_NAME = "real-target"

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=__doc__.split("\n\n")[0],
            features=FEATURES,
            homepage="https://github.com/dmis-lab/BioLAMA",
        )

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        config = self.config
        if config.context_kind not in CONTEXT_KINDS or config.target_kind not in TARGET_KINDS:
            raise ValueError(f"unknown context/target kind {config.context_kind!r}/{config.target_kind!r}")
        root = Path(config.data_dir) if config.data_dir else SAMPLE_DIR
        files = {"triples": resolve_inputs(root, config.triples, "triples")}
        files["prompts"] = resolve_inputs(root, config.prompts, "prompts")[0]
        files["corpus"] = resolve_inputs(root, config.corpus, "corpus")[0]
        entities = config.entities or "entities.jsonl"
        files["entities"] = (
            resolve_inputs(root, entities, "entities")[0] if config.entities or (root / entities).exists() else None
        )
        files["source"] = "the sample corpus shipped with medprobe" if not config.data_dir else "a user data folder"
        if config.licence not in LICENCES:
            raise ValueError(f"licence must be one of {', '.join(LICENCES)} (--set licence=...), got {config.licence!r}")
        files["licence"] = config.licence if config.data_dir else "open"
        return [datasets.SplitGenerator(name=datasets.Split.TEST, gen_kwargs={"files": files})]

    def _generate_examples(self, files: dict):
        triples = read_triples(files["triples"])
        pools = build_pools(triples, read_entities(files["entities"]) if files["entities"] else [])
        stats = BuildStats(source=files["source"], licence=files["licence"])
        rows = generate_rows(
            triples,
            read_prompts(files["prompts"]),
            pools,
            read_corpus(files["corpus"]),
            self.config.context_kind,
            self.config.target_kind,
            self.config.seed,
            self.config.max_steps,
            stats,
        )
        for row in rows:
            yield row["row_id"], row
        LAST_BUILD_STATS[self.config.name] = stats
        logger.warning(stats.summary(self.config.name))
        if stats.unmatchable_names:
            logger.warning(
                f"{len(stats.unmatchable_names)} names cannot be matched as whole words and were ignored: {stats.unmatchable_names[:10]}"
            )
        if stats.rows == 0:
            raise ContextVarianceInputError(f"nothing to build: {stats.summary(self.config.name)}")


def resolve_inputs(root: Path, pattern: str, what: str) -> list[Path]:
    """Paths for an input parameter (relative to data_dir unless absolute; globs allowed)."""
    full = pattern if Path(pattern).is_absolute() else str(root / pattern)
    paths = sorted(Path(p) for p in glob.glob(full, recursive=True))
    if not paths:
        raise FileNotFoundError(
            f"no {what} input at {full}; expected the layout triples.jsonl, prompts.jsonl, [entities.jsonl], corpus/ "
            f"in the data folder, or set the path with --set {what}=PATH"
        )
    return paths


# --- card text ---------------------------------------------------------------------------------------


def card_context(built: dict[str, datasets.DatasetDict], params: dict | None = None) -> dict[str, str]:
    """Benchmark-specific parts of the dataset card (hub_cards/context_variance.md)."""
    lines = ["| config | instances | rows | steps per instance (mean) | relations |", "|---|---|---|---|---|"]
    for name, dataset_dict in built.items():
        ds = dataset_dict["test"]
        instances = Counter(ds["instance_id"])
        relations = ", ".join(f"`{r}` {n}" for r, n in sorted(Counter(ds["relation"]).items()))
        mean_steps = (ds.num_rows / len(instances) - 1) if instances else 0.0
        lines.append(f"| `{name}` | {len(instances):,} | {ds.num_rows:,} | {mean_steps:.1f} | {relations} |")
    stats = next((LAST_BUILD_STATS[c] for c in built if c in LAST_BUILD_STATS), None)
    if stats is None:
        coverage = "The build statistics were not recorded."
    else:
        coverage = (
            f"Built from {stats.source}: {stats.triples} triples, {stats.documents} documents, entity pools "
            + ", ".join(f"{kind} ({size})" for kind, size in stats.pool_sizes.items())
            + f". {len(stats.triples_objects_not_in_corpus)} triple(s) were skipped because none of their objects occurs in the corpus"
            + f"{_examples(stats.triples_objects_not_in_corpus)}, {len(stats.triples_without_subject_document)} because no document"
            + f" that mentions an object also mentions the subject{_examples(stats.triples_without_subject_document)};"
            + f" {stats.pairs_without_subject} (object, document) pairs were skipped because the document lacks the subject."
        )
    licence = stats.licence if stats is not None else "credentialed"  # unknown inputs: the strictest
    return {"instances_table": "\n".join(lines), "coverage": coverage, "licence": licence}
