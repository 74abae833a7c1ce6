"""Where the benchmark builders, metric modules and card templates live.

In a source checkout they are the top-level folders `datasets/`, `metrics/` and `hub_cards/`.
In an installed wheel they are copied to `medprobe/_resources/` (see pyproject.toml), because a
wheel may only install importable packages. Every lookup goes through this module so that
`medprobe build` and `evaluate.load(metric_path(...))` work either way.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from medprobe.api import UserError

_PACKAGE_DIR = Path(__file__).resolve().parent  # medprobe/


def resource_root() -> Path:
    """The folder that holds `datasets/`, `metrics/` and `hub_cards/`."""
    bundled = _PACKAGE_DIR / "_resources"
    if bundled.is_dir():
        return bundled
    return _PACKAGE_DIR.parent


def available(kind: str) -> list[str]:
    """Names of the benchmarks (`kind="datasets"`) or metrics (`kind="metrics"`) shipped."""
    folder = resource_root() / kind
    return sorted(p.name for p in folder.iterdir() if (p / f"{p.name}.py").is_file())


def _module_folder(kind: str, name: str) -> Path:
    folder = resource_root() / kind / name
    if not (folder / f"{name}.py").is_file():
        raise UserError(
            f"unknown {kind[:-1]} {name!r}: expected {folder}/{name}.py; available: {', '.join(available(kind)) or 'none'}"
        )
    return folder


def dataset_folder(name: str) -> Path:
    """The folder of a benchmark builder, e.g. `dataset_folder("medlama")`."""
    return _module_folder("datasets", name)


def metric_path(name: str) -> str:
    """Path to give `evaluate.load`, e.g. `evaluate.load(metric_path("acc_at_k"))`."""
    return str(_module_folder("metrics", name))


def card_template(name: str) -> Path:
    """A file in `hub_cards/`, e.g. `card_template("medlama.md")`."""
    path = resource_root() / "hub_cards" / name
    if not path.is_file():
        raise FileNotFoundError(f"card template {name!r} not found in {path.parent}")
    return path


def load_builder_module(name: str) -> ModuleType:
    """Import `datasets/<name>/<name>.py` by path (it is self-contained, not a package module).

    The module is registered under a private name so that it can never shadow the Hugging Face
    `datasets` library.
    """
    path = dataset_folder(name) / f"{name}.py"
    module_name = f"_medprobe_builder_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
