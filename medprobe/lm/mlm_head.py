"""MLMHeadProbe: a frozen encoder, a trained masked-LM head, and the most probable choice at [MASK].

The measuring-skill protocol (Park, Ryu, Choi 2022): the encoder's weights never change; only
the masked-LM head on top of it is trained, with the masked-LM loss (cross-entropy of the gold
choice's word pieces at the masks). An item is answered by the choice with the highest
probability at [MASK].

- `vocabulary="choices"` (default): the softmax runs over the word pieces of the choices given
  (the candidate set), in training and in scoring. For single-piece choices this ranks the
  choices exactly as the full softmax would with the same logits, and it costs a handful of
  decoder rows instead of the whole vocabulary (30,522 for BERT): about 10x faster training on
  MST, at the same accuracy. `vocabulary="full"`: the softmax over the whole vocabulary, as in
  masked-LM pre-training.

- The head is the model's own when its checkpoint has one (`BertForMaskedLM` & co.); an encoder
  saved without one (the packaged all-MiniLM-L6-v2) gets a fresh head of its architecture, whose
  decoder starts from the input embeddings as the architecture ties them. Either way the head is
  a copy, so training it can never touch the encoder. A decoder matrix tied to the input
  embeddings belongs to the frozen encoder and stays as it is (as when a tied model's encoder is
  frozen in place); the transform and the output bias are trained, and an untied decoder too.
- `scratch=True` gives the same architecture with random weights everywhere: the floor.
- A choice of L word pieces is scored with L masks in the text: the mean log-probability of its
  pieces at those positions (one encoder pass per text and L serves every choice of that length).
- Since the encoder is frozen, each (text, number of masks) is encoded once: the hidden states at
  the mask positions are cached, the head is trained on them with a `transformers.Trainer`, and
  reused for every seed (for scratch, every seed draws a new encoder and a new cache).

    probe = MLMHeadProbe("minilm", seed=0)
    probe.fit(train["text"], train["choices"], train["label"])
    predicted = probe.predict(test["text"], test["choices"])     # choice indices
    probe.reset(seed=1)                                          # a new head, same cached encoder
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import shutil
import tempfile
import time
import weakref
from collections.abc import Iterator, Sequence
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn
from transformers import (
    AutoModelForMaskedLM,
    PreTrainedModel,
    PrinterCallback,
    Trainer,
    TrainingArguments,
)
from transformers.modeling_outputs import MaskedLMOutput
from transformers.utils import logging as hf_logging

from medprobe.contracts import Prober, UserError
from medprobe.distributed import pin_training_device
from medprobe.models import (
    dtype_name,
    load_config,
    load_tokenizer,
    require_mask_token,
    resolve_device,
    resolve_dtype,
    resolve_model,
)
from medprobe.progress import library_bars_hidden, library_bars_shown, progress_bar

MASK_SLOT = "[MASK]"  # how the benchmark marks the slot; replaced by the model's own mask token
IGNORE_INDEX = -100
VOCABULARIES = ("full", "choices")
SMALL_DECODER = 1 << 20  # decoder weights (rows x hidden) below which the head trains on one CPU thread


class MaskedChoiceHead(nn.Module):
    """The Trainer-facing model: an MLM head applied to cached encoder states at the masks.

    forward(hidden_states [B, L, H], labels [B, L] with -100 as padding) -> MaskedLMOutput with
    the mean cross-entropy over the real mask positions, as a masked-LM model computes it.
    """

    def __init__(self, head: nn.Module):
        super().__init__()
        self.head = head

    def forward(self, hidden_states: torch.Tensor, labels: torch.Tensor | None = None) -> MaskedLMOutput:
        logits = self.head(hidden_states)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE_INDEX)
        return MaskedLMOutput(loss=loss, logits=logits)


class RestrictedDecoder(nn.Module):
    """A decoder limited to some vocabulary rows: logits for `token_ids` only, same parameters."""

    def __init__(self, decoder: nn.Linear, token_ids: list[int]):
        super().__init__()
        self.decoder = decoder
        self.register_buffer("token_ids", torch.tensor(token_ids, dtype=torch.long, device=decoder.weight.device))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        bias = None if self.decoder.bias is None else self.decoder.bias[self.token_ids]
        return F.linear(hidden, self.decoder.weight[self.token_ids], bias)


def collate_mask_states(batch: list[dict]) -> dict[str, torch.Tensor]:
    """Pad items with different numbers of masks: zero states, ignored labels."""
    width = max(item["labels"].shape[0] for item in batch)
    hidden = batch[0]["hidden_states"].shape[-1]
    states = torch.zeros(len(batch), width, hidden)
    labels = torch.full((len(batch), width), IGNORE_INDEX, dtype=torch.long)
    for row, item in enumerate(batch):
        count = item["labels"].shape[0]
        states[row, :count] = item["hidden_states"]
        labels[row, :count] = item["labels"]
    return {"hidden_states": states, "labels": labels}


DEFAULT_EPOCHS = 20
DEFAULT_LEARNING_RATE = 1e-3


def default_training_args(
    seed: int,
    use_cpu: bool,
    progress: bool,
    output_dir: str,
    epochs: float = DEFAULT_EPOCHS,
    learning_rate: float = DEFAULT_LEARNING_RATE,
    dtype: torch.dtype = torch.float32,
) -> TrainingArguments:
    """What the probe trains with unless TrainingArguments are given: AdamW, lr 1e-3, 20 epochs,
    batch 32, linear decay; nothing saved or reported. (The head is small and the states are
    cached, so epochs are cheap; on MST comparison, 5 epochs leave the head under-fitted.)"""
    return TrainingArguments(
        output_dir=output_dir,
        per_device_train_batch_size=32,
        learning_rate=learning_rate,
        num_train_epochs=epochs,
        lr_scheduler_type="linear",
        save_strategy="no",
        logging_strategy="no",
        report_to="none",
        use_cpu=use_cpu,
        bf16=dtype == torch.bfloat16,  # the Trainer's mixed precision: float32 master weights
        fp16=dtype == torch.float16,
        seed=seed,
        disable_tqdm=not (progress and library_bars_shown()),  # the Trainer's bar: on a terminal only
        dataloader_pin_memory=False,
    )


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Hide the load report and weight-loading bars of from_pretrained (a missing head is expected), both put back
    as they were after (the bars through the progress policy: switching them on unasked warned "Cannot enable
    progress bars" under the CLI, which keeps them off through HF_HUB_DISABLE_PROGRESS_BARS)."""
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        with library_bars_hidden():
            yield
    finally:
        hf_logging.set_verbosity(verbosity)


def head_of(model: PreTrainedModel) -> tuple[nn.Module, str]:
    """The layers of a masked-LM model that sit on top of its encoder, as a separate module.

    The masked-LM classes of transformers hold the encoder (`base_model`) and the head as
    children, the head's in forward order (BERT `cls`, RoBERTa `lm_head`, ALBERT `predictions`,
    DistilBERT `vocab_transform`...`vocab_projector`); `check_head_split` verifies this.
    A head weight shared with the encoder (the decoder of models that tie it to the input
    embeddings) belongs to the frozen encoder: it is copied but not trained. The rest of the
    head (transform, output bias, an untied decoder) is trained.
    Returns the head and the name of its decoder (the output embeddings) inside it.
    """
    layers = nn.Sequential(*[child for child in model.children() if child is not model.base_model])
    if not len(layers):
        raise UserError(f"{type(model).__name__} has no layers besides its encoder; expected a masked-LM head")
    decoders = [name for name, module in layers.named_modules() if module is model.get_output_embeddings()]
    if not decoders:
        raise UserError(f"{type(model).__name__}: the output embeddings are not part of its head")
    encoder_params = {id(p) for p in model.base_model.parameters()}
    tied = {name for name, p in layers.named_parameters(remove_duplicate=False) if id(p) in encoder_params}
    head = copy.deepcopy(layers)  # a copy: nothing done to the head can reach the encoder
    for name, param in head.named_parameters(remove_duplicate=False):
        param.requires_grad_(name not in tied)
    return head, decoders[0]


class MLMHeadProbe(Prober):
    """Score fixed choices at [MASK] with a frozen encoder and a trained masked-LM head.

    Training: `epochs` and `learning_rate` over the probe's own defaults (`default_training_args`,
    with a Trainer output folder of its own that nothing is saved to), or `training_args` passed
    through as they are (with the probe's seed) for anything else the Trainer can do.
    """

    name: ClassVar[str] = "mlm-head"
    kinds: ClassVar[tuple[str, ...]] = ("choice-scoring",)

    def __init__(
        self,
        model: str,
        *,
        scratch: bool = False,
        seed: int = 0,
        vocabulary: str = "choices",
        epochs: float = DEFAULT_EPOCHS,
        learning_rate: float = DEFAULT_LEARNING_RATE,
        training_args: TrainingArguments | None = None,
        batch_size: int = 64,
        device: str = "auto",
        dtype: str = "auto",
        max_length: int = 128,
        progress: bool = True,
    ):
        if vocabulary not in VOCABULARIES:
            raise UserError(f"vocabulary must be one of {', '.join(VOCABULARIES)}, got {vocabulary!r}")
        if training_args is not None and (epochs, learning_rate) != (DEFAULT_EPOCHS, DEFAULT_LEARNING_RATE):
            # one of them would be ignored: say so rather than train with something else than asked
            raise UserError("pass epochs and learning_rate inside training_args (num_train_epochs, learning_rate), not beside it")
        if not (epochs > 0 and learning_rate >= 0):
            raise UserError(f"epochs must be positive and learning_rate not negative, got {epochs} and {learning_rate}")
        self.model_name = model
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.scratch = scratch
        self.vocabulary = vocabulary
        self.training_args = training_args
        self.batch_size = batch_size
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.max_length = max_length
        self.progress = progress
        self.trainer_progress = progress  # the Trainer's bar per fit; off where a caller shows one bar over all fits
        self.tokenizer = load_tokenizer(model)
        self.mask_token = require_mask_token(self.tokenizer, model)
        self.config = load_config(model)
        self.fresh_head = True
        self.encoder: nn.Module | None = None
        self._initial_head: tuple[int, nn.Module] | None = None  # (seed, head before training)
        self._pretrained_state: dict[str, torch.Tensor] = {}
        self._cache: dict[tuple[str, int], torch.Tensor] = {}  # (text, masks) -> [masks, hidden]
        self._choice_ids: dict[str, list[int]] = {}
        self._head_checked = False
        # the Trainer's output_dir (nothing is saved there), removed with the probe or at exit; a TemporaryDirectory
        # left to the garbage collector says so with a ResourceWarning
        self._output_dir = tempfile.mkdtemp(prefix="medprobe-mlm-head-")
        weakref.finalize(self, shutil.rmtree, self._output_dir, ignore_errors=True)
        # "score_choices", not "score": a run's own "score" phase is the metric's
        self.timings = {"load": 0.0, "encode": 0.0, "train": 0.0, "score_choices": 0.0}
        if not scratch:
            self._load_pretrained()
        self.reset(seed)

    @classmethod
    def create(cls, model: str, *, device: str = "auto", seed: int | None = None, **options) -> MLMHeadProbe:
        """The prober on `model`; `seed` (None: the class's default) draws the first head, and a scratch encoder."""
        return cls(model, device=device, **({} if seed is None else {"seed": seed}), **options)

    def _load_pretrained(self) -> None:
        start = time.perf_counter()
        path, extra = resolve_model(self.model_name)
        with quiet_transformers():
            pretrained, info = AutoModelForMaskedLM.from_pretrained(path, output_loading_info=True, **extra)
        missing = set(info["missing_keys"])
        prefix = pretrained.base_model_prefix + "."
        if any(key.startswith(prefix) for key in missing):
            raise UserError(f"{self.model_name!r} lacks encoder weights ({sorted(missing)[:3]} ...); it is not a trained encoder")
        self.fresh_head = bool(missing)  # e.g. a sentence encoder saved without its MLM head
        self._pretrained_state = {k: v for k, v in pretrained.state_dict().items() if k not in missing}
        self._use_encoder(pretrained)
        self.timings["load"] += time.perf_counter() - start

    @property
    def settings(self) -> dict:
        args = self._args()
        return {
            "scratch": self.scratch,
            "head": "random (scratch)" if self.scratch else ("fresh" if self.fresh_head else "pretrained"),
            "vocabulary": self.vocabulary,
            "dtype": dtype_name(self.dtype),
            "learning_rate": args.learning_rate,
            "epochs": args.num_train_epochs,
            "train_batch_size": args.per_device_train_batch_size,
            "loss": f"masked-LM cross-entropy of the gold choice's pieces ({self.vocabulary} vocabulary)",
            "trained": "head weights not tied to the encoder (a tied decoder matrix stays frozen)",
            "multi_piece_choices": "mean log-probability of the choice's pieces at as many masks",
        }

    # --- model state ---------------------------------------------------------------------------

    def reset(self, seed: int) -> None:
        """A new head for `seed`; with scratch=True also a new random encoder (and an empty cache)
        when the seed changes.

        The model is built from its architecture with `seed`, then the checkpoint's weights are
        loaded where the checkpoint has them: a model's own head starts from its trained weights,
        a missing head from the seed's random draw (and the embeddings, for a tied decoder).
        """
        start = time.perf_counter()
        self.seed = seed
        if self._initial_head is None or self._initial_head[0] != seed:
            torch.manual_seed(seed)
            with quiet_transformers():
                model = AutoModelForMaskedLM.from_config(self.config)
            if self.scratch:
                self._cache.clear()
                self._use_encoder(model)
            else:
                model.load_state_dict(self._pretrained_state, strict=False)
            head, self._decoder_name = head_of(model)
            self._initial_head = (seed, head)
            if not self._head_checked:  # once: the architecture is the same for every seed
                self._head_checked = check_head_split(model, self.tokenizer, self.mask_token)
        # every task of a seed starts from the same head (and, for scratch, the same encoder)
        self.head = copy.deepcopy(self._initial_head[1]).to(self.device)
        self.timings["load"] += time.perf_counter() - start

    def _use_encoder(self, model: PreTrainedModel) -> None:
        self.encoder = model.base_model.to(self.device).eval().requires_grad_(False)

    def _args(self) -> TrainingArguments:
        if self.training_args is None:
            args = default_training_args(
                self.seed,
                self.device.type == "cpu",
                self.trainer_progress,
                self._output_dir,
                self.epochs,
                self.learning_rate,
                self.dtype,
            )
        else:
            args = dataclasses.replace(self.training_args, seed=self.seed)
        return pin_training_device(args, self.device)  # on GPU cuda:K (a launched process's own), train there alone

    @contextlib.contextmanager
    def _softmax_over(self, token_ids: list[int] | None) -> Iterator[None]:
        """Within the block, the head's logits cover `token_ids` only (None: the whole vocabulary)."""
        if token_ids is None:
            yield
            return
        parent_name, _, child = self._decoder_name.rpartition(".")
        parent = self.head.get_submodule(parent_name)
        decoder = getattr(parent, child)
        setattr(parent, child, RestrictedDecoder(decoder, token_ids))
        try:
            yield
        finally:
            setattr(parent, child, decoder)

    @contextlib.contextmanager
    def _threads_for_head(self, vocabulary: list[int] | None) -> Iterator[None]:
        """One CPU thread while training a head whose decoder is small (a few vocabulary rows, or
        a tiny vocabulary): its operations are too small to gain from intra-op threads, and on a
        busy machine waiting for a second thread costs milliseconds per operation (fits many times
        slower on 2 shared cores). A full-size decoder keeps every thread."""
        threads = torch.get_num_threads()
        rows = len(vocabulary) if vocabulary is not None else self.config.vocab_size
        if self.device.type == "cpu" and rows * self.config.hidden_size < SMALL_DECODER:
            torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(threads)

    # --- encoding (once per text and number of masks) ---------------------------------------------

    def with_masks(self, text: str, count: int) -> str:
        if text.count(MASK_SLOT) != 1:
            raise UserError(f"expected exactly one {MASK_SLOT} in every text, got {text.count(MASK_SLOT)} in {text!r}")
        return text.replace(MASK_SLOT, " ".join([self.mask_token] * count))

    @torch.inference_mode()
    def mask_states(self, texts: Sequence[str], count: int) -> torch.Tensor:
        """Encoder states at the `count` masks of each text: [len(texts), count, hidden]."""
        todo = [t for t in dict.fromkeys(texts) if (t, count) not in self._cache]
        if todo:
            start = time.perf_counter()
            todo.sort(key=len)  # similar lengths per batch: little padding
            batches = range(0, len(todo), self.batch_size)
            bar = progress_bar(
                batches, desc=f"encoding ({count} mask{'s' * (count > 1)})", disable=not self.progress, leave=False
            )
            for begin in bar:
                self._encode(todo[begin : begin + self.batch_size], count)
            self.timings["encode"] += time.perf_counter() - start
        return torch.stack([self._cache[(t, count)] for t in texts])

    def _encode(self, texts: list[str], count: int) -> None:
        batch = self.tokenizer(
            [self.with_masks(t, count) for t in texts],
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        is_mask = batch["input_ids"] == self.tokenizer.mask_token_id
        found = is_mask.sum(dim=1)
        if (found != count).any():
            row = int((found != count).nonzero()[0])
            raise UserError(
                f"the text {texts[row]!r} keeps {int(found[row])} of its {count} mask(s) after "
                f"tokenization (max_length {self.max_length}); shorten it or raise max_length"
            )
        half = self.dtype != torch.float32  # the frozen encoder runs under autocast, its weights stay float32
        with torch.autocast(self.device.type, dtype=self.dtype, enabled=half):
            hidden = self.encoder(**{k: v.to(self.device) for k, v in batch.items()}).last_hidden_state
        states = hidden[is_mask.to(self.device)].view(len(texts), count, -1).float().cpu()
        for text, state in zip(texts, states):
            self._cache[(text, count)] = state.clone()

    def choice_ids(self, choice: str) -> list[int]:
        """Word pieces of a choice as it follows a space in the text."""
        if choice not in self._choice_ids:
            ids = self.tokenizer(" " + choice.strip(), add_special_tokens=False)["input_ids"]
            if not ids:
                raise UserError(f"the choice {choice!r} has no word pieces")
            self._choice_ids[choice] = ids
        return self._choice_ids[choice]

    def softmax_ids(self, choices: Sequence[Sequence[str]]) -> list[int] | None:
        """The vocabulary rows the softmax covers: None for all, else the choices' pieces."""
        if self.vocabulary == "full":
            return None
        return sorted({i for options in choices for c in options for i in self.choice_ids(c)})

    # --- training and scoring ---------------------------------------------------------------------

    def fit(self, texts: Sequence[str], choices: Sequence[Sequence[str]], labels: Sequence[int]) -> dict:
        """Train the current head on the gold choice of each item (call `reset(seed)` first for a
        new one); returns the Trainer's metrics."""
        check_items(texts, choices, labels)
        gold = [self.choice_ids(options[label]) for options, label in zip(choices, labels)]
        states = {
            n: iter(self.mask_states([t for t, ids in zip(texts, gold) if len(ids) == n], n))
            for n in sorted({len(ids) for ids in gold})
        }
        vocabulary = self.softmax_ids(choices)
        position = {token: index for index, token in enumerate(vocabulary)} if vocabulary else None
        items = [
            {"hidden_states": next(states[len(ids)]), "labels": torch.tensor([position[i] for i in ids] if position else ids)}
            for ids in gold
        ]
        start = time.perf_counter()
        with self._softmax_over(vocabulary), self._threads_for_head(vocabulary):
            trainer = Trainer(
                model=MaskedChoiceHead(self.head), args=self._args(), train_dataset=items, data_collator=collate_mask_states
            )
            if trainer.args.disable_tqdm:
                trainer.remove_callback(PrinterCallback)  # it would print the metrics of every fit
            output = trainer.train()
        self.head = self.head.to(self.device)
        self.timings["train"] += time.perf_counter() - start
        return output.metrics

    @torch.inference_mode()
    def score_choices(self, texts: Sequence[str], choices: Sequence[Sequence[str]]) -> list[list[float]]:
        """Per item, the mean log-probability of each choice's pieces at as many masks."""
        check_items(texts, choices)
        self.head.eval()
        vocabulary = self.softmax_ids(choices)
        column = {token: index for index, token in enumerate(vocabulary)} if vocabulary else None
        scores = [[0.0] * len(options) for options in choices]
        for count in sorted({len(self.choice_ids(c)) for options in choices for c in options}):
            rows = [i for i, options in enumerate(choices) if any(len(self.choice_ids(c)) == count for c in options)]
            states = self.mask_states([texts[i] for i in rows], count)
            start = time.perf_counter()
            with self._softmax_over(vocabulary):
                for begin in range(0, len(rows), self.batch_size):
                    log_probs = self.head(states[begin : begin + self.batch_size].to(self.device)).log_softmax(-1).cpu()
                    for offset, row in enumerate(rows[begin : begin + self.batch_size]):
                        for index, choice in enumerate(choices[row]):
                            ids = self.choice_ids(choice)
                            if len(ids) == count:
                                ids = [column[i] for i in ids] if column else ids
                                scores[row][index] = log_probs[offset, torch.arange(count), ids].mean().item()
            self.timings["score_choices"] += time.perf_counter() - start
        return scores

    def predict(self, texts: Sequence[str], choices: Sequence[Sequence[str]]) -> list[int]:
        """The index of the best choice per item (the first one on a tie)."""
        return [max(range(len(row)), key=row.__getitem__) for row in self.score_choices(texts, choices)]


def check_items(texts: Sequence[str], choices: Sequence[Sequence[str]], labels: Sequence[int] | None = None) -> None:
    if len(texts) != len(choices) or (labels is not None and len(labels) != len(texts)):
        raise UserError(
            f"got {len(texts)} texts, {len(choices)} choice lists and {len(labels or [])} labels; expected one each per item"
        )
    for row, options in enumerate(choices):
        if len(options) < 2:
            raise UserError(f"item {row} has {len(options)} choice(s); expected at least 2")
        if labels is not None and not 0 <= labels[row] < len(options):
            raise UserError(f"item {row} has label {labels[row]} but only {len(options)} choices")


@torch.inference_mode()
def check_head_split(model: PreTrainedModel, tokenizer, mask_token: str) -> bool:
    """Stop unless head(encoder(x)) reproduces the masked-LM model's own logits."""
    model.eval()
    batch = tokenizer([f"a short {mask_token} text"], return_tensors="pt")
    expected = model(**batch).logits
    actual = head_of(model)[0](model.base_model(**batch).last_hidden_state)
    if not torch.allclose(expected, actual, atol=1e-4):
        raise UserError(f"cannot separate the masked-LM head of {type(model).__name__} from its encoder")
    return True
