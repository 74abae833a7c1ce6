"""PairClassifierProbe: DisKnE's prober, a sequence-pair classifier fine-tuned per disease.

For each target disease X a fresh `AutoModelForSequenceClassification` (2 labels; a new head on
the pretrained encoder) is fine-tuned with the stock `transformers.Trainer` on Train_X, stopped
early on the validation loss, and asked to label Test_X. The paper's settings are the defaults:
learning rate 2e-5, batch 8, up to 8 epochs, (premise, disease name) pairs of at most 256 tokens.
Options give the paper's other settings: `hypothesis="full"` (the whole MedNLI hypothesis
instead of the disease name) and `hypothesis_only=True` (the baseline that never sees the premise).

Every row of the dataset is tokenised once (`encode`); the per-disease splits are row selections
of that encoding. `training_args` passes any other `TrainingArguments` through (bf16, several
GPUs through accelerate, ...).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import datasets
import numpy as np
import torch
from transformers import (
    AutoModelForSequenceClassification,
    EarlyStoppingCallback,
    PrinterCallback,
    Trainer,
    TrainingArguments,
    set_seed,
)
from transformers.utils import logging as transformers_logging

from medprobe.contracts import Prober, UserError
from medprobe.distributed import pin_training_device
from medprobe.models import dtype_name, load_tokenizer, resolve_device, resolve_dtype, resolve_model
from medprobe.progress import library_bars_hidden

HYPOTHESES = ("canonical", "full")


class PairSplits(Protocol):
    """The rows (indices into the encoded dataset) of one target's training, validation and test sets."""

    cui: str
    train: Sequence[int]
    validation: Sequence[int]
    test: Sequence[int]


@contextmanager
def quiet_transformers():
    """Silence what transformers repeats for every disease (the new-head notice, checkpoint
    loading and saving bars): one progress bar over the diseases says more."""
    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()
    try:
        with library_bars_hidden():  # put back as they were, by the one progress policy
            yield
    finally:
        transformers_logging.set_verbosity(verbosity)


@dataclass
class DiseaseRun:
    """One disease, one seed: the Test_X predictions and what the training did."""

    cui: str
    seed: int
    predictions: list[int]
    references: list[int]
    epochs: float  # epochs run before early stopping (or the maximum)
    best_validation_loss: float | None
    seconds: float


class PairClassifierProbe(Prober):
    """Fine-tune a (premise, hypothesis) classifier on Train_X and label Test_X, per disease.

    The defaults are those of the registry's "pair-classifier" options (the CLI passes only the
    options given). `epochs` may be fractional (TrainingArguments.num_train_epochs is a float).
    """

    name = "pair-classifier"
    kinds = ("disease-classification",)

    def __init__(
        self,
        model: str,
        *,
        hypothesis: str = "canonical",
        hypothesis_only: bool = False,
        learning_rate: float = 2e-5,
        train_batch_size: int = 8,
        eval_batch_size: int = 64,
        epochs: float = 8,
        patience: int = 2,
        max_length: int = 256,
        device: str = "auto",
        dtype: str = "auto",
        training_args: dict | None = None,
    ):
        if hypothesis not in HYPOTHESES:
            raise UserError(f"hypothesis must be one of {', '.join(HYPOTHESES)}, got {hypothesis!r}")
        if epochs < 1 or patience < 1:
            raise UserError(f"epochs and patience must be at least 1, got epochs={epochs}, patience={patience}")
        self.model_name = model
        self.model_path, self.model_kwargs = resolve_model(model)
        self.tokenizer = load_tokenizer(model)
        self.hypothesis_field = "full_hypothesis" if hypothesis == "full" else "hypothesis"
        self.hypothesis_only = hypothesis_only
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.max_length = max_length
        self.patience = patience
        self.training_kwargs = {
            # half precision as the Trainer's mixed precision (float32 master weights), not cast weights
            "bf16": self.dtype == torch.bfloat16,
            "fp16": self.dtype == torch.float16,
            "learning_rate": learning_rate,
            "per_device_train_batch_size": train_batch_size,
            "per_device_eval_batch_size": eval_batch_size,
            "num_train_epochs": epochs,
            **(training_args or {}),
        }
        self._settings = {
            "hypothesis": hypothesis,
            "hypothesis_only": hypothesis_only,
            "learning_rate": learning_rate,
            "train_batch_size": train_batch_size,
            "eval_batch_size": eval_batch_size,
            "max_epochs": epochs,
            "early_stopping_patience": patience,
            "max_length": max_length,
            "device": str(self.device),
            "dtype": dtype_name(self.dtype),
        }

    @classmethod
    def create(cls, model: str, *, device: str = "auto", seed: int | None = None, **options) -> PairClassifierProbe:
        """The prober on `model`; the seeds are the task's, one per fine-tuning (`run_disease`)."""
        return cls(model, device=device, **options)

    @property
    def settings(self) -> dict:
        return dict(self._settings)

    def encode(self, ds: datasets.Dataset) -> datasets.Dataset:
        """Token ids and labels of every row, in dataset order (splits select rows of it)."""
        hypotheses = list(ds[self.hypothesis_field])
        if self.hypothesis_only:
            encoded = self.tokenizer(hypotheses, truncation=True, max_length=self.max_length)
        else:
            encoded = self.tokenizer(list(ds["premise"]), hypotheses, truncation="longest_first", max_length=self.max_length)
        return datasets.Dataset.from_dict({**encoded, "labels": list(ds["label"])})

    def training_arguments(self, output_dir: str, seed: int) -> TrainingArguments:
        # on GPU cuda:K (this process's own under a launch), the Trainer trains there alone
        return pin_training_device(
            TrainingArguments(
                output_dir=output_dir,
                eval_strategy="epoch",
                save_strategy="epoch",
                load_best_model_at_end=True,  # Test_X is labelled by the epoch with the lowest validation loss
                metric_for_best_model="eval_loss",
                greater_is_better=False,
                save_total_limit=1,
                save_only_model=True,
                logging_strategy="no",
                report_to="none",
                disable_tqdm=True,  # one progress bar over diseases instead of one per training
                seed=seed,
                data_seed=seed,
                use_cpu=self.device.type == "cpu",
                **self.training_kwargs,
            ),
            self.device,
        )

    def new_model(self, seed: int):
        """The pretrained encoder with a freshly initialised 2-label head (seeded)."""
        set_seed(seed)
        return AutoModelForSequenceClassification.from_pretrained(self.model_path, num_labels=2, **self.model_kwargs)

    def fit(self, train: datasets.Dataset, validation: datasets.Dataset, seed: int, output_dir: str) -> Trainer:
        with quiet_transformers():
            trainer = Trainer(
                model=self.new_model(seed),
                args=self.training_arguments(output_dir, seed),
                train_dataset=train,
                eval_dataset=validation,
                processing_class=self.tokenizer,
                callbacks=[EarlyStoppingCallback(early_stopping_patience=self.patience)],
            )
            trainer.remove_callback(PrinterCallback)
            trainer.train()
        return trainer

    @staticmethod
    def predict(trainer: Trainer, test: datasets.Dataset) -> list[int]:
        with quiet_transformers():
            logits = trainer.predict(test).predictions
        return np.asarray(logits).argmax(-1).tolist()

    def run_disease(self, encoded: datasets.Dataset, splits: PairSplits, seed: int) -> DiseaseRun:
        """Fine-tune on Train_X (early stopping on validation), then label Test_X."""
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="medprobe-pair-classifier-") as output_dir:
            trainer = self.fit(encoded.select(splits.train), encoded.select(splits.validation), seed, output_dir)
            test = encoded.select(splits.test)
            predictions = self.predict(trainer, test)
        return DiseaseRun(
            cui=splits.cui,
            seed=seed,
            predictions=predictions,
            references=list(test["labels"]),
            epochs=float(trainer.state.epoch or 0),
            best_validation_loss=trainer.state.best_metric,
            seconds=time.perf_counter() - start,
        )
