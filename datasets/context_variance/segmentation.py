"""The paper's construction: entity matching, the segments S1, S2, ... of a document, and the
context a step shows.

Entities are matched as whole words, case-insensitively, longest match first. A document is cut
around one mention (the centre) into segments that each hold one pool mention; segments grow
outward, alternately left and right, starting on the left. The context of step i is S1..Si shown
as document text (`real`) or as entity mentions only (the three `knowledge_*` kinds).
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field

CONTEXT_KINDS = ("real", "knowledge_only", "knowledge_sorted", "knowledge_random")

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
