"""Stage 1 of Contrastive-Probe: rewire an encoder on raw sentences with a stock `transformers.Trainer`.

The Trainer stays the Trainer: `RewiringTrainer` only says how a batch of pairs becomes a loss
(`compute_loss`), and every training setting is an ordinary `TrainingArguments` field, so
devices, mixed precision, checkpoints and logging come from transformers and accelerate.
`rewiring_arguments()` fills in the paper's settings.

Speed: the 2N texts of a batch are encoded in length-sorted chunks, each padded only to its
own longest text, and the loss is taken over all 2N embeddings at once. The gradient is that
of one big padded batch; the encoder just skips the padding (the released code padded
every text to 48 word pieces).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.utils.data import Dataset
from transformers import PreTrainedModel, PreTrainedTokenizerBase, Trainer, TrainingArguments

from medprobe import distributed
from medprobe.contracts import UserError
from medprobe.contrastive.corpora import (  # noqa: F401 (re-exported: the settings and corpora were defined here)
    MASK_RATIO,
    MAX_LENGTH,
    PAPER_SETTINGS,
    TEMPERATURE,
    ReleaseCorpora,
    RewiringReport,
    corpora_named,
    corpus_cache,
    corpus_path,
    declared_corpora,
    download_corpus,
    from_release_folder,
    release_corpora,
)
from medprobe.contrastive.encoding import (
    cls_embeddings,
    length_sorted_batches,
    pad_batch,
    tokenize_keeping_mask,
    tokenize_truncated,
)
from medprobe.contrastive.loss import InfoNCELoss
from medprobe.contrastive.pairs import MaskedPair


def rewiring_arguments(output_dir: str, checkpoint_every: int | None = None, **overrides) -> TrainingArguments:
    """`TrainingArguments` with the paper's settings; any field can be overridden.

    `checkpoint_every=50` saves `output_dir/checkpoint-50`, `-100`, ... (model and tokenizer
    only), each of which can be probed like any model folder.

    `per_device_train_batch_size` (the paper's 192, or `--rewire-batch-size`) is read as the batch
    of a step over all processes: under `accelerate launch` / `torchrun` with N processes the
    Trainer is a DistributedDataParallel one, and each process takes batch / N pairs of every step
    (`per_process_batch`), so 192 stays 192 pairs a step. The gradients are averaged over the
    processes, but the in-batch negatives are per process: with N processes each pair is contrasted
    with the batch / N - 1 other pairs of its own process, not the batch - 1 of the whole step (the
    InfoNCE loss is taken per process), so a launched rewiring is not the 1-process one step for step.
    Only the main process saves (checkpoints and `--save-rewired`: the Trainer's `should_save`).
    """
    settings = {
        **PAPER_SETTINGS,
        "output_dir": output_dir,
        "logging_steps": 10,
        "report_to": "none",
        "remove_unused_columns": False,  # the batches are built by PairCollator
        "save_strategy": "steps" if checkpoint_every else "no",
        "save_only_model": True,
    }
    if checkpoint_every:
        settings["save_steps"] = checkpoint_every
    settings.update(overrides)
    settings["per_device_train_batch_size"] = per_process_batch(settings["per_device_train_batch_size"])
    return TrainingArguments(**settings)


def per_process_batch(batch: int) -> int:
    """This process's share of a rewiring batch of `batch` pairs (all of it without a launch)."""
    processes = distributed.num_processes()
    if batch % processes:
        nearest = [n for n in (batch // processes * processes, (batch // processes + 1) * processes) if n]
        raise UserError(
            f"--rewire-batch-size {batch} is the batch of a step over all {processes} processes and must divide "
            f"evenly among them: use a multiple of {processes} (e.g. {' or '.join(map(str, nearest))}), or launch a "
            f"number of processes that divides {batch}"
        )
    return batch // processes


class PairDataset(Dataset):
    """Tokenized (masked sentence, span) pairs; the masked side always keeps its mask token."""

    def __init__(self, pairs: Sequence[MaskedPair], tokenizer: PreTrainedTokenizerBase, max_length: int = MAX_LENGTH):
        self.anchors = tokenize_keeping_mask(tokenizer, [p.masked for p in pairs], max_length)
        self.positives = tokenize_truncated(tokenizer, [p.span for p in pairs], max_length)

    def __len__(self) -> int:
        return len(self.anchors)

    def __getitem__(self, index: int) -> dict[str, list[int]]:
        return {"anchor": self.anchors[index], "positive": self.positives[index]}


@dataclass
class PairCollator:
    """N pairs -> `input_ids` / `attention_mask` of 2N rows: the N anchors, then the N positives."""

    pad_id: int

    def __call__(self, features: list[dict[str, list[int]]]) -> dict[str, torch.Tensor]:
        sequences = [f["anchor"] for f in features] + [f["positive"] for f in features]
        input_ids, attention_mask = pad_batch(sequences, self.pad_id)
        return {"input_ids": input_ids, "attention_mask": attention_mask}


class RewiringTrainer(Trainer):
    """A `Trainer` whose loss is InfoNCE over the [CLS] embeddings of a batch of pairs.

    `forward_batch_size` is how many texts go through the encoder in one forward pass (the
    2N texts of a step are split into length-sorted chunks of that size).
    """

    def __init__(self, *args, loss: torch.nn.Module | None = None, forward_batch_size: int = 128, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss = loss if loss is not None else InfoNCELoss(TEMPERATURE)
        self.forward_batch_size = forward_batch_size
        self.loss_is_scaled_for_ga = False  # a per-batch mean

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        input_ids, attention_mask = inputs["input_ids"], inputs["attention_mask"]
        lengths = attention_mask.sum(1).tolist()
        chunks = length_sorted_batches(lengths, self.forward_batch_size)
        parts = []
        for chunk in chunks:
            index = torch.tensor(chunk, device=input_ids.device)
            width = max(lengths[i] for i in chunk)
            parts.append(cls_embeddings(model, input_ids[index, :width], attention_mask[index, :width]))
        order = torch.tensor([i for chunk in chunks for i in chunk], device=input_ids.device)
        embeddings = torch.cat(parts)[torch.argsort(order)]  # back to the batch order
        anchors, positives = embeddings.chunk(2)
        loss = self.loss(anchors, positives)
        return (loss, {"embeddings": embeddings}) if return_outputs else loss


def train_pairs(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    pairs: Sequence[MaskedPair],
    args: TrainingArguments,
    *,
    temperature: float = TEMPERATURE,
    max_length: int = MAX_LENGTH,
    forward_batch_size: int = 128,
    callbacks: list | None = None,
) -> tuple[RewiringTrainer, float]:
    """Train `model` in place on the pairs; returns the trainer and the training time in seconds."""
    trainer = RewiringTrainer(
        model=model,
        args=args,
        train_dataset=PairDataset(pairs, tokenizer, max_length),
        data_collator=PairCollator(pad_id=tokenizer.pad_token_id),
        processing_class=tokenizer,
        loss=InfoNCELoss(temperature),
        forward_batch_size=forward_batch_size,
        callbacks=callbacks,
    )
    start = time.perf_counter()
    trainer.train()
    return trainer, time.perf_counter() - start


def logged_losses(trainer: Trainer) -> list[tuple[int, float]]:
    return [(entry["step"], round(entry["loss"], 5)) for entry in trainer.state.log_history if "loss" in entry]
