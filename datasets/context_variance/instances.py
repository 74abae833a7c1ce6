"""Instances and rows: for each triple, object and document, the segmentation around the object's
mention and one row per step; and the statistics of what a build read, built and skipped
(BuildStats), which the builder logs and hands to the card.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .inputs import MASK, OBJECT_SLOT, SUBJECT_SLOT, ContextVarianceInputError, Triple
from .segmentation import (
    Entity,
    EntityMatcher,
    Mention,
    context_text,
    instance_rng,
    nearest_mention,
    segment_document,
    surface_key,
)


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
            f"{examples(self.triples_objects_not_in_corpus)}; "
            f"{len(self.triples_without_subject_document)} triple(s) skipped because no document with an object mentions the subject"
            f"{examples(self.triples_without_subject_document)}; "
            f"{self.pairs_without_subject} (object, document) pairs skipped because the document lacks the subject; "
            f"{self.negative_without_incorrect} instances without an incorrect entity to centre on (negative configs); "
            f"{self.duplicates} duplicate instances dropped; "
            f"{self.instances} instances, {self.rows} rows"
        )


def examples(ids: list[str]) -> str:
    return f" ({', '.join(ids[:5])}{', ...' if len(ids) > 5 else ''})" if ids else ""


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
