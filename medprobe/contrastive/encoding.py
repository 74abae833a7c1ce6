"""Turning texts into [CLS] embeddings: tokenization that keeps the mask, length-sorted batches.

What makes encoding faithful and fast:
- a text with a mask token never loses it to truncation: the window that is kept always
  contains the mask (the released code cut long rewiring sentences after 48 word pieces, and
  with them their [MASK]);
- dynamic padding with length-sorted batches: every batch is padded only to its own longest
  text, so the encoder sees (almost) only real tokens. The released code padded queries to 50
  and names to 25 tokens, 2.6x the real tokens of MedLAMA;
- only what is read is computed: layer-wise probing drops the later layers, and the last
  layer used runs at [CLS] alone;
- on a CPU, one batch per thread.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from medprobe import distributed, timeline
from medprobe.contracts import UserError
from medprobe.progress import progress_bar

if TYPE_CHECKING:  # only types here: a warm probe reads every vector from the cache and never imports transformers' models
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


def mask_window(length: int, mask_position: int, limit: int) -> tuple[int, int]:
    """The [start, end) slice of `limit` content tokens that keeps the mask at `mask_position`.

    When the mask survives ordinary truncation (cutting the end), cut the end. Otherwise keep
    up to half the window after the mask and fill the rest with the context before it: for
    "<long context> [MASK] ." that drops the start of the context, never the mask.
    """
    if length <= limit:
        return 0, length
    if mask_position < limit:
        return 0, limit
    after = min(length - mask_position - 1, (limit - 1) // 2)
    end = mask_position + 1 + after
    return end - limit, end


def special_token_frame(tokenizer: PreTrainedTokenizerBase) -> tuple[int, int]:
    """How many special tokens the tokenizer puts before and after one text ([CLS] / [SEP])."""
    probe = tokenizer("a", return_special_tokens_mask=True)["special_tokens_mask"]
    before = next(i for i, special in enumerate(probe) if not special)
    after = len(probe) - 1 - max(i for i, special in enumerate(probe) if not special)
    return before, after


def tokenize_keeping_mask(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """Token ids (with special tokens) of texts that each hold one mask token, at most `max_length` long."""
    mask_id = tokenizer.mask_token_id
    before, after = special_token_frame(tokenizer)
    limit = max_length - before - after
    if limit < 1:
        raise UserError(f"max length {max_length} leaves no room for text between the special tokens")
    encoded = tokenizer(list(texts), add_special_tokens=True, truncation=False)["input_ids"]
    sequences = []
    for text, ids in zip(texts, encoded):
        content = ids[before : len(ids) - after]
        if mask_id not in content:
            raise UserError(f"the text {text!r} has no {tokenizer.mask_token} token after tokenization")
        start, end = mask_window(len(content), content.index(mask_id), limit)
        sequences.append(ids[:before] + content[start:end] + ids[len(ids) - after :])
    return sequences


def tokenize_truncated(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """Token ids (with special tokens) cut at `max_length` from the end, for texts without a mask."""
    return tokenizer(list(texts), add_special_tokens=True, truncation=True, max_length=max_length)["input_ids"]


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask), right-padded to the longest sequence of the batch."""
    width = max(len(s) for s in sequences)
    input_ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, sequence in enumerate(sequences):
        input_ids[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
        attention_mask[row, : len(sequence)] = 1
    return input_ids, attention_mask


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length, longest first (a memory problem shows at once).

    The sort is stable, so the batches, and with them the floating-point results, are the same
    on every run.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def cls_embeddings(model: PreTrainedModel, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The last layer's hidden state at the first position ([CLS]), the embedding the paper uses."""
    return model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state[:, 0]


def bert_style(layer: torch.nn.Module) -> bool:
    """Whether `layer` has BERT's parts (BERT, RoBERTa, ELECTRA, ... in transformers)."""
    attention = getattr(layer, "attention", None)
    self_attention = getattr(attention, "self", None)
    blocks = (getattr(attention, "output", None), getattr(layer, "intermediate", None), getattr(layer, "output", None))
    return (
        all(hasattr(self_attention, part) for part in ("query", "key", "value", "scaling", "attention_head_size"))
        and all(isinstance(block, torch.nn.Module) for block in blocks)
        and not getattr(self_attention, "is_decoder", False)
    )


def layer_at_cls(layer: torch.nn.Module, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """A BERT-style layer's output at position 0 only (inference): the other positions are not computed.

    Keys and values still come from every position, but the query, the attention output and
    the feed-forward block run on [CLS] alone, which saves about a sixth of a 6-layer
    encoder's work when only [CLS] of the last layer is read.
    """
    attention = layer.attention.self
    batch = hidden.shape[0]

    def by_head(projected: torch.Tensor) -> torch.Tensor:  # (batch, positions, heads, head size), heads first
        return projected.view(batch, projected.shape[1], -1, attention.attention_head_size).transpose(1, 2)

    context = F.scaled_dot_product_attention(
        by_head(attention.query(hidden[:, :1])),
        by_head(attention.key(hidden)),
        by_head(attention.value(hidden)),
        attn_mask=attention_mask[:, None, None, :].bool(),
        scale=attention.scaling,
    )
    context = context.transpose(1, 2).reshape(batch, 1, -1)
    attended = layer.attention.output(context, hidden[:, :1])
    return layer.output(layer.intermediate(attended), attended)[:, 0]


def encode_cls(
    model: PreTrainedModel,
    sequences: Sequence[Sequence[int]],
    *,
    pad_id: int,
    batch_size: int,
    device: torch.device,
    layers: int | None = None,
    workers: int | None = None,
    desc: str = "encoding",
    show_progress: bool = True,
) -> torch.Tensor:
    """[CLS] embeddings (float32, on the CPU) after the first `layers` layers (None: all), in the given order.

    For BERT-style encoders the last layer used runs at [CLS] only (`layer_at_cls`); other
    encoders run whole. On a CPU, `workers` batches (default: one per torch thread) run at
    once, each on one thread: for these small matrices that beats splitting every operation
    over the threads (more texts per second on 2 cores: docs/scaling.md).
    """
    last, keep = None, layers  # the layer to run at [CLS] only, and how many run whole
    if layers is not None or has_layer_list(model):
        total = layers or len(layer_list(model))
        if bert_style(layer_list(model)[total - 1]):
            last, keep = layer_list(model)[total - 1], total - 1
    if workers is None:
        workers = torch.get_num_threads() if device.type == "cpu" else 1

    def encode_batch(batch: list[int]) -> torch.Tensor:
        with torch.inference_mode():  # per thread: grad mode is thread-local
            input_ids, attention_mask = pad_batch([sequences[i] for i in batch], pad_id)
            input_ids, attention_mask = input_ids.to(device), attention_mask.to(device)
            hidden = model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            embeddings = layer_at_cls(last, hidden, attention_mask) if last is not None else hidden[:, 0]
            return embeddings.float().cpu()

    timeline.first("first forward pass")
    out = torch.empty((len(sequences), model.config.hidden_size), dtype=torch.float32)
    # under a launch each process encodes every N-th batch (the batches are those of one process,
    # so each text is encoded exactly as it would be alone) and the rows are gathered everywhere
    batches = distributed.round_robin(length_sorted_batches([len(s) for s in sequences], batch_size))
    encoded: list[tuple[list[int], torch.Tensor]] = []
    model.eval()
    with (
        _using_layers(model, keep),
        _intra_op_threads(1 if workers > 1 else None),
        ThreadPoolExecutor(max_workers=workers) as pool,
        progress_bar(total=sum(map(len, batches)), desc=desc, unit="text", disable=not show_progress) as bar,
    ):
        for batch, embeddings in zip(batches, pool.map(encode_batch, batches)):
            encoded.append((batch, embeddings))
            bar.update(len(batch))
    for batch, embeddings in distributed.gather(encoded):
        out[torch.tensor(batch)] = embeddings
    return out


@contextmanager
def _intra_op_threads(threads: int | None) -> Iterator[None]:
    """Set torch's intra-op thread count for a while (None: leave it)."""
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def has_layer_list(model: PreTrainedModel) -> bool:
    try:
        layer_list(model)
    except ValueError:
        return False
    return True


def layer_list(model: PreTrainedModel) -> torch.nn.ModuleList:
    """The encoder's list of transformer layers (BERT, RoBERTa, ELECTRA: encoder.layer; DistilBERT: transformer.layer)."""
    for path in ("encoder.layer", "transformer.layer", "encoder.layers"):
        owner = model
        for attribute in path.split("."):
            owner = getattr(owner, attribute, None)
        if isinstance(owner, torch.nn.ModuleList):
            return owner
    raise UserError(
        f"cannot find the transformer layers of {type(model).__name__} (looked for encoder.layer, transformer.layer, "
        "encoder.layers); layer-wise probing supports BERT-style encoders"
    )


def check_layers(model: PreTrainedModel, layers: int | None) -> None:
    """A clear error unless the model has a layer list with at least `layers` layers."""
    if layers is not None:
        count = len(layer_list(model))
        if not 1 <= layers <= count:
            raise UserError(f"layers must be between 1 and {count} for this model, got {layers}")


@contextmanager
def _using_layers(model: PreTrainedModel, layers: int | None) -> Iterator[None]:
    """Run the model with only its first `layers` layers (0: embeddings only; None: all).

    The layer list is swapped for a shorter one and restored on exit: the layers after it are
    not computed at all, and the same model can be rewired whole and probed layer-wise.
    """
    if layers is None:
        yield
        return
    full = layer_list(model)
    parent, name = _layer_list_owner(model, full)
    setattr(parent, name, torch.nn.ModuleList(list(full)[:layers]))
    try:
        yield
    finally:
        setattr(parent, name, full)


def _layer_list_owner(model: torch.nn.Module, layers: torch.nn.ModuleList) -> tuple[torch.nn.Module, str]:
    for module in model.modules():
        for name, child in module.named_children():
            if child is layers:
                return module, name
    raise UserError("the layer list is not a child of the model")  # unreachable: layer_list found it there
