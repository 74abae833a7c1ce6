"""Tiny randomly initialised models with vocabularies written here: they test plumbing and
scoring arithmetic, never knowledge (nothing on the package registry ships an MLM head, a T5
or a BART). The masked LM, GPT-2 and T5 are the plugin kit's (medprobe.cli.plugin_kit.tiny), which the
conformance rules build probers on; Llama and BART are the tests' own."""

from __future__ import annotations

import torch
from transformers import BartConfig, BartForConditionalGeneration, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from medprobe.cli.plugin_kit.tiny import LM_WORDS as WORDS
from medprobe.cli.plugin_kit.tiny import (
    SENTENCES,
    bert_tokenizer,
    byte_bpe_tokenizer,
    tiny_random_bert_mlm,
    tiny_random_gpt2,
    tiny_random_t5,
    word_level_tokenizer,
)

__all__ = [
    "SENTENCES",
    "WORDS",
    "bert_tokenizer",
    "byte_bpe_tokenizer",
    "tiny_random_bart",
    "tiny_random_bert_mlm",
    "tiny_random_gpt2",
    "tiny_random_llama",
    "tiny_random_t5",
    "word_level_tokenizer",
]


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
