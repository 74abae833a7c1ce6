"""Stage 1 of Contrastive-Probe: rewire an encoder on raw sentences with a stock `transformers.Trainer`.

The Trainer stays the Trainer: `RewiringTrainer` only says how a batch of pairs becomes a loss
(`compute_loss`), and every training setting is an ordinary `TrainingArguments` field, so
devices, mixed precision, checkpoints and logging come from transformers and accelerate.
`rewiring_arguments()` fills in the paper's settings.

Speed: the 2N texts of a batch are encoded in length-sorted chunks, each padded only to its
own longest text, and the loss is taken over all 2N embeddings at once. The gradient is that
of one big padded batch; the encoder just skips the padding (the released code padded
every text to 48 word pieces).

Imports (docs/architecture.md, layer probers and tasks): the foundation, the data layer and its own
layer; never the run, profile, compare, hub/ or cli/.
"""

from __future__ import annotations

import functools
import os
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from urllib.parse import urlparse

import torch
from torch.utils.data import Dataset
from transformers import PreTrainedModel, PreTrainedTokenizerBase, Trainer, TrainingArguments

from medprobe import distributed
from medprobe.api import UserError
from medprobe.atomic import atomic_output
from medprobe.contrastive.encoding import (
    cls_embeddings,
    length_sorted_batches,
    pad_batch,
    tokenize_keeping_mask,
    tokenize_truncated,
)
from medprobe.contrastive.loss import InfoNCELoss
from medprobe.contrastive.pairs import CorpusStats, MaskedPair, check_corpus

# The paper's rewiring settings (Meng, Liu et al. 2022; released script mirror_sentence_pubmedbert.sh).
PAPER_SETTINGS = {
    "max_steps": 150,  # the released code probes the step-150 checkpoint (the paper says 200)
    "per_device_train_batch_size": 192,
    "learning_rate": 2e-5,
    "weight_decay": 0.01,
    "lr_scheduler_type": "constant",  # AdamW without a scheduler
    "warmup_steps": 0,
    "max_grad_norm": 0.0,  # the released code does not clip gradients
    "seed": 33,
}
TEMPERATURE = 0.04
MAX_LENGTH = 48
MASK_RATIO = 0.5


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


@dataclass
class RewiringReport:
    """What a rewiring run did: the corpus counts, the settings, the losses, the time."""

    corpus: CorpusStats
    steps: int
    seconds: float
    losses: list[tuple[int, float]] = field(default_factory=list)  # (step, mean loss since the last log)
    settings: dict = field(default_factory=dict)

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds else 0.0


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


# --- a release's rewiring corpora -----------------------------------------------------------------------

# A benchmark's release may ship rewiring corpora (the MedLAMA release does: data/elicit_corpora/). Which
# ones, at which commit and where, is the benchmark's own knowledge: its builder module (the one its
# registry entry names) declares them as REWIRING_CORPORA, and this module only finds, downloads and
# caches the files such a declaration names.


@dataclass(frozen=True)
class ReleaseCorpora:
    """The rewiring corpora of one benchmark's release, as its builder module declares them."""

    benchmark: str  # the registry's benchmark whose builder declares them (it names the cache folder)
    release: str  # the release in words, for messages
    commit: str  # the pinned commit they are downloaded at
    url: str  # the URL of their folder at that commit
    folder: str  # the folder of a release copy that holds them
    names: tuple[str, ...]


def declared_corpora(benchmark: str) -> ReleaseCorpora | None:
    """The REWIRING_CORPORA that the builder module of `benchmark` declares, or None."""
    from medprobe.registry import benchmark_entry
    from medprobe.resources import load_builder_module

    target = benchmark_entry(benchmark).builder  # a plugin's "module:Class", or "" for the shipped builder
    module = import_module(target.partition(":")[0]) if target else load_builder_module(benchmark)
    declared = getattr(module, "REWIRING_CORPORA", None)
    return ReleaseCorpora(benchmark=benchmark, **{**declared, "names": tuple(declared["names"])}) if declared else None


@functools.cache
def release_corpora() -> tuple[ReleaseCorpora, ...]:
    """Every benchmark's release corpora, in registry order (builder modules are read once, on first use)."""
    from medprobe.registry import benchmarks

    return tuple(corpora for corpora in map(declared_corpora, benchmarks()) if corpora is not None)


def corpora_named(name: str) -> ReleaseCorpora | None:
    """The release corpora that hold a corpus called `name`, or None: `name` is not a release corpus."""
    return next((corpora for corpora in release_corpora() if name in corpora.names), None)


def corpus_path(corpus: str | Path) -> Path:
    """The rewiring corpus file for `--rewire-corpus`: a text file, or a release corpus by name.

    - a file (one sentence a line): used as it is;
    - `DIR/NAME`, NAME a release corpus (e.g. MedLAMA's pubmed_sents_no_punkt_10k_0) and DIR a copy of
      that release (for MedLAMA the `--data-dir` of `medprobe build medlama`, or the repository's root
      or data/ folder): read from the release's corpus folder in DIR, beside DIR, or in DIR/data;
    - NAME alone: downloaded once at the pinned commit into the medprobe cache
      ($XDG_CACHE_HOME/medprobe, by default ~/.cache/medprobe) and read from there afterwards.
    """
    path = Path(corpus).expanduser()
    corpora = None if path.is_file() else corpora_named(path.name)
    if corpora is None:
        return check_corpus(path)
    if str(corpus) != path.name:  # DIR/NAME: a release folder the user has
        return from_release_folder(corpora, path.parent, path.name)
    cached = corpus_cache(corpora) / path.name
    return cached if cached.is_file() else download_corpus(corpora, path.name, cached)


def from_release_folder(corpora: ReleaseCorpora, folder: Path, name: str) -> Path:
    places = [
        folder / corpora.folder / name,
        folder.parent / corpora.folder / name,
        folder / "data" / corpora.folder / name,
    ]
    for place in places:
        if place.is_file():
            return place
    what = "does not exist" if not folder.is_dir() else f"holds no {name} (looked for {', '.join(map(str, places))})"
    raise UserError(
        f"--rewire-corpus {folder / name}: the folder {folder} {what}. Give the {corpora.release} folder that has "
        f"{corpora.folder}/ ({corpora.url}/{name} at the pinned commit), the corpus file itself, or the name alone "
        f"(--rewire-corpus {name}) to download it"
    )


def corpus_cache(corpora: ReleaseCorpora) -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "medprobe" / f"{corpora.benchmark}-{corpora.commit[:12]}" / corpora.folder


def download_corpus(corpora: ReleaseCorpora, name: str, target: Path) -> Path:
    """Download the release corpus `name` at the pinned commit to `target` (atomically: an interrupted
    download leaves nothing behind); offline, one error naming the URL and what to pass instead."""
    from medprobe.models import host_reachable

    url = f"{corpora.url}/{name}"
    instead = (
        f"download {url} where the network is reachable and pass the file (--rewire-corpus FILE), or pass it "
        f"from a {corpora.release} folder that has {corpora.folder}/ (--rewire-corpus DIR/{name})"
    )
    offline = [
        flag
        for flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
        if os.environ.get(flag, "").upper() in {"1", "ON", "YES", "TRUE"}
    ]
    host = urlparse(url).hostname or ""
    if offline or not host_reachable(host):
        why = f"{' and '.join(offline)} set" if offline else f"{host} cannot be reached from here"
        raise UserError(
            f"--rewire-corpus {name} is a {corpora.release} corpus that is not in {target.parent} yet "
            f"and cannot be downloaded ({why}): {instead}"
        )
    print(f"downloading the rewiring corpus {name} from {url}")
    try:
        with urllib.request.urlopen(url, timeout=60) as response, atomic_output(target) as temp:
            temp.write_bytes(response.read())
    except OSError as err:  # HTTP errors, time-outs, a dropped connection
        raise UserError(f"could not download --rewire-corpus {name} from {url} ({err}): {instead}") from err
    return target
