"""A tiny randomly initialised BERT encoder with a vocabulary written there (plumbing tests only): the
plugin kit's (medprobe.cli.plugin_kit.tiny), which the conformance rules build probers on; `toy_corpus` is the tests'.

It knows nothing: tests that use it check mechanics (shapes, masks, truncation, training
signals, ties, determinism), never knowledge.
"""

from __future__ import annotations

from medprobe.cli.plugin_kit.tiny import ENCODER_WORDS as WORDS
from medprobe.cli.plugin_kit.tiny import SPECIAL, save_tiny_bert, tiny_bert, tiny_tokenizer

__all__ = ["SPECIAL", "WORDS", "save_tiny_bert", "tiny_bert", "tiny_tokenizer", "toy_corpus"]


def toy_corpus(lines: int = 48) -> list[str]:
    """Sentences of 6 to 12 words drawn deterministically from the vocabulary."""
    words = [w for w in WORDS if w not in {".", ","}]
    sentences = []
    for i in range(lines):
        length = 6 + (i * 5) % 7
        sentences.append(" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(length)))
    return sentences
