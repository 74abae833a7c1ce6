"""Tiny randomly initialised models with vocabularies written here: they test plumbing and
scoring arithmetic, never knowledge (nothing on the package registry ships an MLM head, a T5
or a BART)."""

from __future__ import annotations

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    BertConfig,
    BertForMaskedLM,
    BertTokenizer,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    T5Config,
    T5ForConditionalGeneration,
)

WORDS = [
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


def bert_tokenizer(words: list[str] = WORDS) -> BertTokenizer:
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


def tiny_random_llama(tokenizer: PreTrainedTokenizerFast, seed: int = 0) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        bos_token_id=0,
        eos_token_id=0,
    )
    return LlamaForCausalLM(config).eval()


def word_level_tokenizer(specials: list[str], template: str, **special_tokens) -> PreTrainedTokenizerFast:
    vocab = {token: i for i, token in enumerate(specials + WORDS)}
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


def tiny_random_bart(seed: int = 0) -> tuple[BartForConditionalGeneration, PreTrainedTokenizerFast]:
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tokenizer = word_level_tokenizer(
        specials, "<s> $A </s>", bos_token="<s>", pad_token="<pad>", eos_token="</s>", mask_token="<mask>"
    )
    torch.manual_seed(seed)
    config = BartConfig(
        vocab_size=len(tokenizer),
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
        bos_token_id=0,
        pad_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_eos_token_id=None,
    )
    return BartForConditionalGeneration(config).eval(), tokenizer
