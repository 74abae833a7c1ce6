"""Where the benchmark builders, metric modules and card templates live.

In a source checkout they are the top-level folders `datasets/`, `metrics/` and `hub_cards/`.
In an installed wheel they are copied to `medprobe/_resources/` (see pyproject.toml), because a
wheel may only install importable packages. Every lookup goes through this module so that
`medprobe build` and `evaluate.load(metric_path(...))` work either way.

A plugin's own files (its metric folder, its BibTeX) are named "package:relative/path" and found in
its installed package with importlib.resources (`package_resource`): `metric_path("toy_medprobe:metrics/toy_acc")`.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from medprobe.contracts import UserError

_PACKAGE_DIR = Path(__file__).resolve().parent  # medprobe/


def resource_root() -> Path:
    """The folder that holds `datasets/`, `metrics/` and `hub_cards/`."""
    bundled = _PACKAGE_DIR / "_resources"
    if bundled.is_dir():
        return bundled
    return _PACKAGE_DIR.parent


def release_data_dirs() -> list[tuple[Path, str]]:
    """Where the real release files (MedLAMA, the DisKnE annotations) are looked for, each with why, present or
    not: $MEDPROBE_SHARED_DATA, then ../shared/data beside the checkout and beside the working folder."""
    places = []
    if os.environ.get("MEDPROBE_SHARED_DATA"):
        places.append((Path(os.environ["MEDPROBE_SHARED_DATA"]), "$MEDPROBE_SHARED_DATA"))
    places.append((resource_root().parent / "shared" / "data", "../shared/data beside the checkout"))
    places.append((Path.cwd().parent / "shared" / "data", "../shared/data beside the working folder"))
    unique: dict[Path, tuple[Path, str]] = {}
    for path, why in places:
        unique.setdefault(path.resolve(), (path.resolve(), why))
    return list(unique.values())


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
    """Path to give `evaluate.load`, e.g. `evaluate.load(metric_path("acc_at_k"))`: a metric medprobe ships,
    or a plugin's metric folder "package:path/<metric>" (holding <metric>.py, as every evaluate module)."""
    if ":" not in name:
        return str(_module_folder("metrics", name))
    folder = package_resource(name, "metric")
    if not (folder / f"{folder.name}.py").is_file():
        raise UserError(f"metric {name!r}: {folder} holds no {folder.name}.py (an evaluate module folder is named after its .py)")
    return str(folder)


def package_resource(ref: str, what: str) -> Path:
    """The file or folder "package:relative/path" names inside an installed package (importlib.resources): how
    a plugin names its metric folder or BibTeX file. `what` names it in the errors."""
    package, sep, relative = ref.partition(":")
    if not sep or not package or not relative:
        raise UserError(f"{what} {ref!r}: expected 'package:relative/path', a path inside an installed package")
    try:
        root = importlib.resources.files(package)
    except ModuleNotFoundError as err:
        raise UserError(f"{what} {ref!r}: no package {package!r} is installed") from err
    found = root.joinpath(*relative.split("/"))
    if not isinstance(found, Path) or not found.exists():
        raise UserError(f"{what} {ref!r}: {found} does not exist; list it in the package data of its distribution")
    return found


# Set by the `medprobe` program (medprobe.cli.main without argv): the process is ours alone, so evaluate may be
# imported without its Evaluator. From Python (the API, a notebook) evaluate is imported whole: the user's own
# `evaluate.evaluator(...)` must keep working in their process.
LEAN_EVALUATE = False


def import_evaluate() -> ModuleType:
    """`import evaluate`; in the `medprobe` program, without the transformers that its Evaluator imports.

    `import evaluate` imports `evaluate.evaluator`, which imports transformers and its pipelines, and with
    them transformers' model code (torch.distributed, ...): seconds of a warm probe (docs/scaling.md), which
    builds no model
    and, its token ids remembered, may not import transformers at all. Loading and computing metric
    modules does not use the Evaluator, so what of transformers is not imported yet (all of it, or its
    pipelines) is hidden while evaluate imports (its Evaluator then takes transformers as absent:
    `evaluate.evaluator(...)` raises in this process) and importable again after."""
    if "evaluate" in sys.modules or not LEAN_EVALUATE:
        import evaluate

        return evaluate
    hidden = next((name for name in ("transformers", "transformers.pipelines") if name not in sys.modules), None)
    if hidden is not None:
        sys.modules[hidden] = None  # type: ignore[assignment]  # an import of it raises ImportError
    try:
        import evaluate
    finally:
        if hidden is not None and sys.modules.get(hidden, 0) is None:
            del sys.modules[hidden]
    return evaluate


def card_template(name: str) -> Path:
    """A file in `hub_cards/`, e.g. `card_template("medlama.md")`."""
    path = resource_root() / "hub_cards" / name
    if not path.is_file():
        raise FileNotFoundError(f"card template {name!r} not found in {path.parent}")
    return path


def load_builder_module(name: str) -> ModuleType:
    """Import `datasets/<name>/<name>.py` by path, as a package whose `__path__` is its folder.

    A builder may be one file or several: `<name>.py` is the entry point and the package itself,
    so it can import the other modules of its folder relatively (`from . import release`). The
    package is registered under a private name (`_medprobe_builder_<name>`, its modules under
    `_medprobe_builder_<name>.<module>`), so that it can never shadow the Hugging Face `datasets`
    library, and works the same from a checkout and from the wheel's `medprobe/_resources/`.
    """
    module_name = f"_medprobe_builder_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    folder = dataset_folder(name)
    spec = importlib.util.spec_from_file_location(module_name, folder / f"{name}.py", submodule_search_locations=[str(folder)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        # a builder that failed to import must not stay half-imported for the next caller
        for loaded in [m for m in sys.modules if m == module_name or m.startswith(f"{module_name}.")]:
            del sys.modules[loaded]
        raise
    return module


def shipped_sample(sample: str) -> Path:
    """A profile plan's `sample` folder (a sample shipped with medprobe): relative to the medprobe package, or absolute."""
    return _PACKAGE_DIR / sample
