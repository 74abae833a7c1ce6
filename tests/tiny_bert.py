"""A tiny randomly initialised BERT encoder with a vocabulary written here (plumbing tests only).

It knows nothing: tests that use it check mechanics (shapes, masks, truncation, training
signals, ties, determinism), never knowledge.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import BertConfig, BertModel, BertTokenizer

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = (
    "the a of is and in to with by may might treat prevent cause gene disease drug cell lung liver "
    "heart kidney brain blood bone skin fever pain cough aspirin insulin asthma gout alpha beta gamma "
    "delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi "
    "psi omega red green blue black white small large early late acute chronic . ,"
).split()


def tiny_tokenizer(mask: bool = True) -> BertTokenizer:
    vocab = {token: index for index, token in enumerate(SPECIAL + WORDS)}
    if not mask:
        return BertTokenizer(vocab=vocab, mask_token=None)
    return BertTokenizer(vocab=vocab)


def tiny_bert(layers: int = 3, seed: int = 0, dropout: float = 0.1) -> BertModel:
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(SPECIAL) + len(WORDS),
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    return BertModel(config)


def save_tiny_bert(folder: Path, layers: int = 3, mask: bool = True) -> Path:
    """Save the model and tokenizer as a model folder that `--model` accepts."""
    tiny_bert(layers).save_pretrained(folder)
    tiny_tokenizer(mask).save_pretrained(folder)
    return folder


def toy_corpus(lines: int = 48) -> list[str]:
    """Sentences of 6 to 12 words drawn deterministically from the vocabulary."""
    words = [w for w in WORDS if w not in {".", ","}]
    sentences = []
    for i in range(lines):
        length = 6 + (i * 5) % 7
        sentences.append(" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(length)))
    return sentences
