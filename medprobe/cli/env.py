"""`medprobe env`: what a bug report needs to know about this installation, as text to paste (like `hf env`).

Versions, the device, the caches and their sizes, the packaged models, the release data and the plugins, each
found without importing torch, transformers, datasets or a plugin: importing torch alone takes seconds, and a
broken plugin or a broken torch must not stop the command that a bug report about them needs. So the versions
come from the installed distributions' metadata, CUDA from torch's build tag and the NVIDIA driver, MPS from
the platform (Apple silicon), and the plugins from their entry points (listed, and their source files compiled to
find one that cannot load, never run).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

LIBRARIES = ("torch", "transformers", "datasets", "evaluate", "huggingface_hub", "accelerate")
PLUGIN_GROUPS = ("medprobe.tasks", "medprobe.probers")
SWITCHES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE", "TRANSFORMERS_OFFLINE", "MEDPROBE_DISABLE_PLUGINS")
SIZE_BUDGET_S = 0.3  # per cache: a cache of many small files is summed for this long, then shown as "at least"


def add_env_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "env",
        help="print versions, device, caches, packaged models, release data and plugins, for a bug report",
        description="Print what a bug report needs to know about this installation; paste it into the report. "
        "Imports no model and no deep-learning library (runs in well under two seconds).",
    )
    parser.set_defaults(func=run_env)


def run_env(args: argparse.Namespace | None = None) -> int:
    print("Paste this into your bug report (it names folders on this machine; nothing else is private):\n")
    print("\n".join(f"- {name}: {value}" for name, value in env_lines()))
    return 0


def env_lines() -> list[tuple[str, str]]:
    """(what, value) pairs, in the order a reader of a bug report looks for them. A part that fails (a library
    missing, a folder unreadable) says so on its line: a broken installation is when this is needed most."""
    return [
        ("medprobe", safely(medprobe_line)),
        ("Python", f"{platform.python_version()} ({sys.executable})"),
        ("platform", platform.platform()),
        ("torch", safely(torch_line)),
        *((name, version_of(name)) for name in LIBRARIES[1:]),
        ("device", safely(device_line)),
        *cache_lines(),
        ("packaged models", safely(packaged_models_line)),
        ("release data", safely(release_data_line)),
        ("plugins", safely(plugins_line)),
        ("switches set", ", ".join(f"{name}={os.environ[name]}" for name in SWITCHES if os.environ.get(name)) or "none"),
    ]


def safely(part: Callable[[], str]) -> str:
    try:
        return part()
    except Exception as err:  # noqa: BLE001 - one line of the report; the others still print
        return f"unknown ({type(err).__name__}: {err})"


def version_of(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def medprobe_line() -> str:
    from medprobe.provenance import source_identity

    identity = source_identity()
    where = Path(__file__).resolve().parents[1]
    commit = ""
    if identity.get("commit"):  # an installed wheel, or a checkout without git, has no commit
        commit = f", git commit {identity['commit'][:12]}{' with local changes' if identity.get('dirty') else ''}"
    return f"{identity['version']}{commit} ({where})"


# --- torch and the device ------------------------------------------------------------------------


def torch_line() -> str:
    """torch's version and what its build can use here: `2.13.0+cpu (CPU build; CUDA: no; MPS: no)`."""
    version = version_of("torch")
    if version == "not installed":
        return version
    cuda = torch_cuda_version()
    build = f"CUDA {cuda} build" if cuda else "CPU build" if sys.platform != "darwin" else "macOS build"
    usable = "yes" if cuda and nvidia_gpus() else "no"
    return f"{version} ({build}; CUDA available: {usable}; MPS available: {'yes' if mps_platform() else 'no'})"


def torch_cuda_version() -> str | None:
    """The CUDA version torch was built with (torch/version.py's `cuda`), read without importing torch."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        return cuda_of(Path(list(spec.submodule_search_locations)[0]).joinpath("version.py").read_text(encoding="utf-8"))
    except OSError:
        return None


def cuda_of(version_py: str) -> str | None:
    """`cuda = '12.6'` (or `cuda: Optional[str] = '12.6'`) of torch/version.py; None for a CPU build."""
    import re

    found = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", version_py, re.M)
    return found.group(1) if found else None


NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")  # one folder per GPU the Linux driver found


def nvidia_gpus() -> list[str]:
    """The NVIDIA GPUs the driver lists (Linux: /proc/driver/nvidia/gpus/*/information), by model name."""
    names = []
    for info in sorted(NVIDIA_GPUS.glob("*/information")):
        try:
            text = info.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Model:")), "NVIDIA GPU")
        names.append(model)
    return names


def mps_platform() -> bool:
    """Apple silicon running macOS, where torch's macOS wheels use the GPU through MPS."""
    return sys.platform == "darwin" and platform.machine() == "arm64"


def device_line() -> str:
    """What `--device auto` picks here, and why."""
    gpus = nvidia_gpus()
    cores = f"{os.cpu_count() or '?'} CPU cores"
    if gpus and torch_cuda_version():
        return f"cuda ({len(gpus)} GPU{'s' if len(gpus) > 1 else ''}: {', '.join(sorted(set(gpus)))}); {cores}"
    if gpus:
        return f"cpu: the driver lists {', '.join(sorted(set(gpus)))} but this torch is a CPU build; {cores}"
    if mps_platform():
        return f"cpu (`--device auto` picks CUDA or the CPU; give --device mps for Apple's GPU); {cores}"
    return f"cpu ({cores}, no NVIDIA driver found)"


# --- caches ----------------------------------------------------------------------------------------


def cache_lines() -> list[tuple[str, str]]:
    xdg = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    hf_home, hub_cache = hugging_face_folders(xdg)
    caches = [
        ("Hugging Face Hub cache", hub_cache),
        ("datasets cache", Path(os.environ.get("HF_DATASETS_CACHE") or hf_home / "datasets")),
        ("embedding cache", embedding_cache(hf_home)),
        ("release files cache", xdg / "medprobe"),
    ]
    return [(name, f"{folder} ({safely(lambda folder=folder: size_text(folder))})") for name, folder in caches]


def embedding_cache(hf_home: Path) -> Path:
    """`medprobe.digests.cache_root()`; where huggingface_hub is missing, the same rule read from the variables."""
    try:
        from medprobe.digests import cache_root

        return cache_root()
    except ImportError:
        return Path(os.environ.get("MEDPROBE_EMBEDDING_CACHE") or hf_home / "medprobe" / "embeddings").expanduser()


def hugging_face_folders(xdg: Path) -> tuple[Path, Path]:
    """HF_HOME and the Hub cache as huggingface_hub resolves them (read from it; from the same variables when it is
    missing)."""
    try:
        from huggingface_hub import constants
    except ImportError:
        home = Path(os.environ.get("HF_HOME") or xdg / "huggingface").expanduser()
        return home, Path(os.environ.get("HF_HUB_CACHE") or home / "hub").expanduser()
    return Path(constants.HF_HOME), Path(constants.HF_HUB_CACHE)


def size_text(folder: Path) -> str:
    if not folder.is_dir():
        return "absent"
    total, complete = folder_size(folder, time.monotonic() + SIZE_BUDGET_S)
    return f"{'' if complete else 'at least '}{human_bytes(total)}"


def folder_size(folder: Path, deadline: float) -> tuple[int, bool]:
    """Bytes of the files under `folder` (links not followed), and whether all were counted before `deadline`."""
    total, pending = 0, [folder]
    while pending:
        if time.monotonic() > deadline:
            return total, False
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return total, True


def human_bytes(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1000:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} TB"


# --- models, data, plugins -------------------------------------------------------------------------


def packaged_models_line() -> str:
    from medprobe.models import PACKAGED, packaged_model_path

    found = []
    for name, model in PACKAGED.items():
        try:
            found.append(f"{name} at {packaged_model_path(name)}")
        except FileNotFoundError:
            found.append(f"{name} not installed ({model.install})")
    return "; ".join(found)


def release_data_line() -> str:
    """Where the tests and the publish checks find the release files (MedLAMA, DisKnE), and which are there."""
    from medprobe.resources import release_data_dirs

    found = [(folder, why) for folder, why in release_data_dirs() if folder.is_dir()]
    if not found:
        return "none ($MEDPROBE_SHARED_DATA unset and no ../shared/data beside the checkout; the tests that need it skip)"
    shown = []
    for folder, why in found:
        names = sorted(entry.name + "/" for entry in folder.iterdir() if entry.is_dir())
        shown.append(f"{folder} ({why}): {', '.join(names) or 'empty'}")
    return "; ".join(shown)


def plugins_line() -> str:
    """Every entry point of medprobe's plugin groups, one line each, with its distribution; one whose code cannot
    load says why (`plugin_problem`)."""
    found = []
    problems: dict[str, str | None] = {}  # by top-level package: a task and a prober often share one
    for group in PLUGIN_GROUPS:
        for point in metadata.entry_points(group=group):
            dist = f"{point.dist.name} {point.dist.version}" if point.dist else "unknown distribution"
            line = f"{group}: {point.name} = {point.value} ({dist})"
            top = point.value.partition(":")[0].strip().split(".")[0]
            if top not in problems:
                problems[top] = plugin_problem(point.value.partition(":")[0].strip())
            if problems[top]:
                check = f"medprobe plugin check {point.dist.name}" if point.dist else "medprobe plugin check DIST"
                line += f": DOES NOT LOAD, {problems[top]} (`{check}` runs it)"
            found.append(line)
    if not found:
        return f"none (no entry points in {' or '.join(PLUGIN_GROUPS)})"
    return "".join(f"\n  - {line}" for line in found)


PLUGIN_FILES = 300  # the most source files of one plugin package compiled (a plugin is a handful)


def plugin_problem(module: str) -> str | None:
    """Why the package of an entry point's `module` cannot load, found without running any of it: the module is
    missing, or one of the package's source files does not compile (a SyntaxError in its task.py, which only
    `plugin check` imports). Compiling runs nothing and writes no bytecode; an error a module raises when run (an
    ImportError of its own dependencies) shows under `medprobe plugin check`, which imports them."""
    import importlib.util

    top = module.split(".")[0]
    spec = importlib.util.find_spec(top)  # a top-level name: found, not imported
    if spec is None:
        return f"no module named {top!r} is installed"
    locations = [Path(folder) for folder in spec.submodule_search_locations or ()]
    if not locations:  # a single-file module
        return compile_problem(Path(spec.origin)) if spec.origin and spec.origin.endswith(".py") else None
    inner = module.split(".")[1:]
    if inner and not any(
        folder.joinpath(*inner).with_suffix(".py").is_file() or folder.joinpath(*inner, "__init__.py").is_file()
        for folder in locations
    ):
        return f"no module named {module!r} is installed"
    sources = sorted(path for folder in locations for path in folder.rglob("*.py") if "__pycache__" not in path.parts)
    for path in sources[:PLUGIN_FILES]:
        problem = compile_problem(path)
        if problem:
            return problem
    return None


def compile_problem(path: Path) -> str | None:
    """`SyntaxError in FILE, line N: what` when the source file does not compile; None when it does."""
    import warnings

    try:
        with warnings.catch_warnings():  # a SyntaxWarning (an invalid escape) is the plugin's to see, not the report's
            warnings.simplefilter("ignore")
            compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    except SyntaxError as err:  # IndentationError and TabError too
        return f"{type(err).__name__} in {path}, line {err.lineno}: {err.msg}"
    except (ValueError, OSError) as err:  # a null byte in the source; an unreadable file
        return f"{path} does not read as Python ({type(err).__name__}: {err})"
    return None
