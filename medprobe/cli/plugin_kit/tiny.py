"""Tiny randomly initialised models of every model kind, saved as `--model` folders: what the conformance
rules build probers on (medprobe.cli.plugin_kit.conformance). They know nothing: they test plumbing (shapes,
masks, the run loop), never knowledge. medprobe's own tests use them too (tests/tiny_bert.py,
tests/tiny_models.py).
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (
    BertConfig,
    BertForMaskedLM,
    BertModel,
    BertTokenizer,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedTokenizerFast,
    T5Config,
    T5ForConditionalGeneration,
)

# --- an encoder without a masked-LM head ------------------------------------------------------------

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ENCODER_WORDS = (
    "the a of is and in to with by may might treat prevent cause gene disease drug cell lung liver "
    "heart kidney brain blood bone skin fever pain cough aspirin insulin asthma gout alpha beta gamma "
    "delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi "
    "psi omega red green blue black white small large early late acute chronic . ,"
).split()


def tiny_tokenizer(mask: bool = True) -> BertTokenizer:
    vocab = {token: index for index, token in enumerate(SPECIAL + ENCODER_WORDS)}
    if not mask:
        return BertTokenizer(vocab=vocab, mask_token=None)
    return BertTokenizer(vocab=vocab)


def tiny_bert(layers: int = 3, seed: int = 0, dropout: float = 0.1) -> BertModel:
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(SPECIAL) + len(ENCODER_WORDS),
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


# --- language models: a masked LM, a causal LM, a seq2seq LM -----------------------------------------

LM_WORDS = [
    "aspirin",
    "ibuprofen",
    "may",
    "might",
    "treat",
    "prevent",
    "fever",
    "cough",
    "heart",
    "failure",
    "attack",
    "renal",
    "pain",
    "the",
    "disease",
    "is",
    "of",
    "gene",
    "has",
    ".",
    ",",
    "alpha",
    "beta",
    "##s",
    "##zine",
    "##itis",
]
SENTENCES = [
    "aspirin may treat fever .",
    "ibuprofen might treat pain .",
    "aspirin may prevent heart attack .",
    "the disease is heart failure .",
    "the gene has renal failure .",
    "alphazine might treat betaitis .",
    "cough , fever and pain .",
    "Aspirin might treat chronic heart failure .",
]


def bert_tokenizer(words: list[str] = LM_WORDS) -> BertTokenizer:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    return BertTokenizer(vocab={token: i for i, token in enumerate(specials + words)})


def tiny_random_bert_mlm(seed: int = 0, **config) -> tuple[BertForMaskedLM, BertTokenizer]:
    tokenizer = bert_tokenizer()
    torch.manual_seed(seed)
    settings = dict(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    model = BertForMaskedLM(BertConfig(**{**settings, **config})).eval()
    return model, tokenizer


def byte_bpe_tokenizer(bos: bool = False) -> PreTrainedTokenizerFast:
    """A byte-level BPE (GPT-2 style: the space belongs to the next word) trained on SENTENCES."""
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    backend.train_from_iterator(SENTENCES * 4, trainer)
    backend.post_processor = processors.ByteLevel(trim_offsets=False)
    if bos:
        backend.post_processor = processors.TemplateProcessing(single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", 0)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<|endoftext|>", eos_token="<|endoftext|>")


def tiny_random_gpt2(tokenizer: PreTrainedTokenizerFast, seed: int = 0, n_positions: int = 64) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=n_positions, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0
    )
    return GPT2LMHeadModel(config).eval()


def word_level_tokenizer(specials: list[str], template: str, **special_tokens) -> PreTrainedTokenizerFast:
    vocab = {token: i for i, token in enumerate(specials + LM_WORDS)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.post_processor = processors.TemplateProcessing(
        single=template, special_tokens=[(t, vocab[t]) for t in specials if t in template]
    )
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", **special_tokens)


def tiny_random_t5(seed: int = 0) -> tuple[T5ForConditionalGeneration, PreTrainedTokenizerFast]:
    specials = ["<pad>", "</s>", "<unk>", "<extra_id_0>", "<extra_id_1>"]
    tokenizer = word_level_tokenizer(
        specials, "$A </s>", pad_token="<pad>", eos_token="</s>", additional_special_tokens=specials[3:]
    )
    torch.manual_seed(seed)
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_heads=2,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
    )
    return T5ForConditionalGeneration(config).eval(), tokenizer


def save_tiny_model(kind: str, folder: Path) -> str:
    """A tiny model of a kind of medprobe.models.model_kind saved into `folder`, as `--model` takes it."""
    if kind == "encoder":
        return str(save_tiny_bert(folder, layers=2))
    if kind == "masked-lm":
        model, tokenizer = tiny_random_bert_mlm(max_position_embeddings=512)  # context-variance texts are long
    elif kind == "seq2seq":
        model, tokenizer = tiny_random_t5()
    elif kind == "causal-lm":
        tokenizer = byte_bpe_tokenizer()
        model = tiny_random_gpt2(tokenizer)
    else:
        raise ValueError(f"no tiny model of kind {kind!r}")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)
