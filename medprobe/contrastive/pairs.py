"""Rewiring pairs from raw sentences: (sentence with its tail replaced by one mask, the tail).

For each sentence (Meng, Liu et al. 2022, and their released code): split into words, draw a
span length uniformly from 1 .. 1 + int(mask_ratio * words), cut that many words off the end
and put one mask token in their place. The pair (masked sentence, span) is a positive; the
other sentences and spans of the batch are its negatives.

What differs from the released code, on purpose:
- white space is normalised (`str.split()`): the released code split on single spaces, so
  double spaces made empty "words" and some spans were empty strings;
- the span ends at the sentence's end. The released code's span ended before the last
  space-separated token, which in its PubMed files is the empty string after a trailing
  space, i.e. the span was the sentence's tail there; without that trailing space it would
  keep the last word;
- at least one word stays visible: the span length is drawn from 1 .. min(1 + int(mask_ratio
  * words), words - 1), and lines with fewer than two words are skipped and counted;
- the draws come from a seeded generator (the released code never seeded `random`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from medprobe.contracts import UserError
from medprobe.local_paths import check_local_path

MIN_WORDS = 2  # one visible word of context and one masked word


@dataclass
class CorpusStats:
    """Counts of what happened to the corpus lines; nothing is dropped without being counted."""

    lines: int = 0
    blank: int = 0
    too_short: int = 0
    pairs: int = 0
    first_too_short: list[int] = field(default_factory=list)  # line numbers (from 1), at most 5

    def as_dict(self) -> dict:
        return asdict(self)

    def summary(self, source: str) -> str:
        text = f"{source}: {self.lines:,} lines -> {self.pairs:,} pairs"
        skipped = []
        if self.blank:
            skipped.append(f"{self.blank:,} blank")
        if self.too_short:
            lines = ", ".join(map(str, self.first_too_short))
            skipped.append(f"{self.too_short:,} with fewer than {MIN_WORDS} words (e.g. line {lines})")
        return text + (f" (skipped {'; '.join(skipped)})" if skipped else "")


@dataclass(frozen=True)
class MaskedPair:
    masked: str  # the sentence with its tail replaced by the mask token
    span: str  # the tail that was cut off


def mask_tail_span(words: list[str], mask_token: str, rng: random.Random, mask_ratio: float = 0.5) -> MaskedPair:
    """Replace a random tail span of `words` (at least two) with one mask token."""
    longest = min(1 + int(mask_ratio * len(words)), len(words) - 1)
    span_length = rng.randint(1, longest)
    cut = len(words) - span_length
    return MaskedPair(masked=" ".join(words[:cut] + [mask_token]), span=" ".join(words[cut:]))


def build_pairs(
    sentences: Iterable[str], mask_token: str, *, seed: int = 33, mask_ratio: float = 0.5
) -> tuple[list[MaskedPair], CorpusStats]:
    """One pair per usable sentence, in corpus order; the same seed gives the same pairs."""
    if not 0 < mask_ratio <= 1:
        raise UserError(f"mask ratio must be in (0, 1], got {mask_ratio}")
    rng = random.Random(seed)
    stats = CorpusStats()
    pairs = []
    for line_number, sentence in enumerate(sentences, start=1):
        stats.lines += 1
        words = sentence.split()
        if not words:
            stats.blank += 1
            continue
        if len(words) < MIN_WORDS:
            stats.too_short += 1
            if len(stats.first_too_short) < 5:
                stats.first_too_short.append(line_number)
            continue
        pairs.append(mask_tail_span(words, mask_token, rng, mask_ratio))
    stats.pairs = len(pairs)
    return pairs, stats


def check_corpus(path: str | Path) -> Path:
    """The corpus path, if it is a file (checked before a model loads, and again when it is read)."""
    expected = "expected a text file with one sentence a line"
    path = check_local_path(str(path), "--rewire-corpus", expected)
    if not path.is_file():
        raise UserError(f"--rewire-corpus {path} is a folder; {expected}")
    return path


def read_sentences(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file, one sentence a line."""
    path = check_corpus(path)
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as err:
        raise UserError(f"rewiring corpus {path} is not UTF-8 text ({err})") from err
