"""Load a language model with the head a prober needs, and refuse one that lacks it.

Three kinds of model serve the cloze probers: a masked LM (mask predict, mask average), a
decoder-only causal LM (causal-LM scoring) and an encoder-decoder (generative probing).
`AutoModelForMaskedLM.from_pretrained` happily loads an encoder without an MLM head and
initialises the head at random (it only logs a warning): probing such a model measures noise,
so here a head missing from the checkpoint is an error that names the model.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    AutoModelForSeq2SeqLM,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.models.auto.modeling_auto import (
    MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
    MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
)

from medprobe.contracts import UserError
from medprobe.models import load_config, load_tokenizer, resolve_device, resolve_dtype, resolve_model

# kind -> (Auto class, model types -> class names, what a user should give instead)
KINDS = {
    "masked-lm": (
        AutoModelForMaskedLM,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
        "a model with a masked-LM head (e.g. bert-base-uncased, PubMedBERT)",
    ),
    "causal-lm": (
        AutoModelForCausalLM,
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        "a decoder-only causal LM (e.g. GPT-2, Llama, smollm2)",
    ),
    "seq2seq": (
        AutoModelForSeq2SeqLM,
        MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
        "an encoder-decoder LM (e.g. t5-base, facebook/bart-base, SciFive)",
    ),
}


def _class_names(mapping) -> set[str]:
    names: set[str] = set()
    for value in mapping.values():
        names.update([value] if isinstance(value, str) else value)
    return names


def kind_problem(config, kind: str, class_name: str | None = None) -> str | None:
    """Why a model of this config (and class) cannot serve `kind`, or None when it can."""
    model_type = getattr(config, "model_type", "?")
    if kind == "causal-lm" and getattr(config, "is_encoder_decoder", False):
        return f"it is an encoder-decoder model ({model_type}); use --prober generative for it"
    if kind == "causal-lm" and model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES and not getattr(config, "is_decoder", False):
        return f"it is a bidirectional encoder ({model_type}), not a causal LM; use mask-average or mask-predict"
    if kind == "masked-lm" and getattr(config, "is_encoder_decoder", False):
        return f"it is an encoder-decoder model ({model_type}) without a masked-LM head; use --prober generative"
    if class_name is None and model_type not in KINDS[kind][1]:
        return f"transformers has no {kind} class for model type {model_type!r}"
    if class_name is not None and class_name not in _class_names(KINDS[kind][1]):
        return f"{class_name} is not a {kind} class"
    return None


def check_model(model: PreTrainedModel, kind: str, name: str) -> None:
    """Raise ValueError when an already-loaded model is not of the kind a prober needs."""
    problem = kind_problem(model.config, kind, type(model).__name__)
    if problem:
        raise UserError(f"model {name!r} cannot be used here: {problem}; expected {KINDS[kind][2]}")


def load_model(
    name_or_path: str, kind: str, device: str = "auto", dtype: str = "auto"
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """(model in eval mode on `device` in `dtype` (models.resolve_dtype), tokenizer) for `kind`, with
    every head weight from the checkpoint."""
    target = resolve_device(device)
    weights_dtype = resolve_dtype(dtype, target)  # before any weights are read: a bad --dtype fails fast
    auto_class, _, expected = KINDS[kind]
    path, extra = resolve_model(name_or_path)
    if not extra:  # check the config before any weights are read (a GGUF file is checked once loaded:
        # parsing its config alone takes as long as loading the tokenizer)
        problem = kind_problem(load_config(name_or_path), kind)
        if problem:
            raise UserError(f"model {name_or_path!r} cannot be used here: {problem}; expected {expected}")
    try:
        with gguf_parsed_once():  # a no-op for a folder of safetensors
            tokenizer = load_tokenizer(name_or_path)
            model, info = auto_class.from_pretrained(path, output_loading_info=True, **extra)
    except ValueError as err:  # "Unrecognized configuration class ..." followed by every supported type
        first_line = str(err).splitlines()[0]
        raise UserError(f"model {name_or_path!r} cannot be loaded as {kind}: {first_line}; expected {expected}") from err
    except OSError as err:
        raise FileNotFoundError(f"could not load model {name_or_path!r}: {err}") from err
    check_model(model, kind, name_or_path)
    prefix = f"{model.base_model_prefix}."
    head_missing = sorted(key for key in info["missing_keys"] if not key.startswith(prefix))
    if head_missing:
        raise UserError(
            f"model {name_or_path!r} has no trained {kind} head: the checkpoint lacks {', '.join(head_missing[:4])}"
            f"{' ...' if len(head_missing) > 4 else ''}, which transformers would initialise at random; expected {expected}"
        )
    # loaded as the checkpoint says, then cast: one path for safetensors, GGUF and packaged models
    return model.to(target, dtype=weights_dtype).eval(), tokenizer


@contextmanager
def gguf_parsed_once() -> Iterator[None]:
    """While it lasts, each GGUF file is parsed once and gguf's tensor-name map built once per shape.

    transformers parses a GGUF file afresh for the tokenizer, the config and the weights (SmolLM2's
    50k-token vocabulary makes each parse slow: docs/scaling.md) and rebuilds `gguf.get_tensor_name_map` for
    every module it maps (~400 times). It looks both up on the `gguf` module at call time, and both
    are read-only functions of their arguments, so they are memoized here for one load and restored
    after: the same weights, tokenizer and config, a third of the parsing.
    """
    try:
        import gguf
    except ImportError:  # no GGUF support installed: nothing to parse
        yield
        return
    reader_class, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict[tuple[str, str], object] = {}

    def read_once(path, mode: str = "r"):
        key = (os.path.realpath(os.fspath(path)), mode)
        if key not in readers:
            readers[key] = reader_class(path, mode)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = read_once, functools.cache(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader_class, name_map


def position_limit(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> int | None:
    """The most tokens the model takes in one sequence (None when nothing bounds it)."""
    limits = [getattr(model.config, attr, None) for attr in ("max_position_embeddings", "n_positions")]
    limits.append(tokenizer.model_max_length if tokenizer.model_max_length < 1_000_000 else None)
    limits = [limit for limit in limits if isinstance(limit, int) and limit > 0]
    return min(limits) if limits else None


def model_device(model: PreTrainedModel) -> torch.device:
    return next(model.parameters()).device


class SelectedLogits:
    """A masked LM's logits at selected positions only, e.g. the masks of a cloze query.

    The vocabulary projection is the most expensive layer of a small MLM (a 30k-way output at
    every position); when the model is a base encoder plus one head module (BertForMaskedLM,
    RobertaForMaskedLM, ...), the head runs on the selected hidden states alone. The shortcut is
    checked once against the full forward pass and dropped when they disagree.
    """

    def __init__(self, model: PreTrainedModel):
        self.model = model
        heads = [module for name, module in model.named_children() if name != model.base_model_prefix]
        self.head = heads[0] if len(heads) == 1 and hasattr(model, "base_model") else None
        if self.head is not None and not self._shortcut_matches():
            self.head = None

    @torch.inference_mode()
    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, select: torch.Tensor) -> torch.Tensor:
        """[number of selected positions, vocab] for a boolean `select` of the shape of `input_ids`."""
        if self.head is None:
            return self.model(input_ids=input_ids, attention_mask=attention_mask).logits[select]
        hidden = self.model.base_model(input_ids=input_ids, attention_mask=attention_mask)[0]
        return self.head(hidden[select])

    @torch.inference_mode()
    def _shortcut_matches(self) -> bool:
        device = model_device(self.model)
        ids = (torch.arange(8, device=device)[None] * 7 + 5) % self.model.config.vocab_size
        attention = torch.ones_like(ids)
        select = torch.zeros_like(ids, dtype=torch.bool)
        select[0, 2] = select[0, 5] = True
        try:
            hidden = self.model.base_model(input_ids=ids, attention_mask=attention)[0]
            shortcut = self.head(hidden[select])
        except (TypeError, RuntimeError, IndexError):
            return False
        full = self.model(input_ids=ids, attention_mask=attention).logits[select]
        return isinstance(shortcut, torch.Tensor) and shortcut.shape == full.shape and torch.allclose(shortcut, full, atol=1e-4)


class FromPretrained:
    """`Prober.from_pretrained(name_or_path, device="auto", dtype="auto", **options)` for a prober class that
    takes `(model, tokenizer, model_name=..., **options)` and names its `model_kind`, and `Prober.create`
    through it (these probers draw nothing: the seed is not used)."""

    model_kind: str

    @classmethod
    def create(cls, model: str, *, device: str = "auto", seed: int | None = None, **options):
        return cls.from_pretrained(model, device=device, **options)

    @classmethod
    def from_pretrained(cls, name_or_path: str, device: str = "auto", dtype: str = "auto", **options):
        start = time.perf_counter()
        model, tokenizer = load_model(name_or_path, cls.model_kind, device, dtype)
        probe = cls(model, tokenizer, model_name=name_or_path, **options)
        probe.timings["load_model"] = time.perf_counter() - start
        return probe
