"""medprobe: probing what pre-trained language models know about biomedicine.

The package and the distribution are both `medprobe` (`probers`, the old name, is an alias for
one release). `import medprobe` is the Python API (medprobe/python_api.py), each name imported on
first use, so that `import medprobe` (and `medprobe --help`) loads neither torch, transformers nor
datasets:

    import medprobe

    record = medprobe.probe("contrastive", "medlama", dataset=medprobe.sample("medlama"), model="minilm")
    profile = medprobe.profile("minilm", "out/profile", quick=True)     # every benchmark that fits
    comparison = medprobe.compare(["runs/a.json", "runs/b.json"])       # paired on identical items
    report = medprobe.build("mst", "out/mst")                           # a Hub-ready dataset folder
    record = medprobe.load("runs/a.json")                               # a results JSON or a profile

Every prober and task class medprobe registers is exported too (`from medprobe import
MaskAverageProbe, MedLAMATask`): the names come from the registry (medprobe/registry.py), read when
one of them is first asked for.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("medprobe")
except PackageNotFoundError:  # running from a source checkout that is not installed
    __version__ = "0.0.0+source"

API = ("probe", "profile", "compare", "build", "load", "sample")  # medprobe.python_api
# Classes that are no registry target but part of the API: the re-ranking wrapper the medlama task builds.
EXTRA = {"ShortlistProber": "medprobe.lm.candidate_scoring"}


def lazy_names() -> dict[str, str]:
    """Exported name -> the module that defines it: the API functions, then the classes the registry's
    built-in entries name (a plugin's classes stay in its own package), then EXTRA."""
    from medprobe.registry import BUILTIN_PROBERS, BUILTIN_TASKS

    targets = [entry.target for entry in (*BUILTIN_PROBERS, *BUILTIN_TASKS)]
    classes = {target.split(":")[1]: target.split(":")[0] for target in targets if target.startswith("medprobe.")}
    return {**dict.fromkeys(API, "medprobe.python_api"), **classes, **EXTRA}


def __getattr__(name: str):
    if name == "_LAZY":
        return lazy_names()
    if name == "__all__":
        return ["__version__", *lazy_names()]
    # Only the API's functions and class names (CapWords) are looked up: `from medprobe import distributed`
    # asks for a submodule first as an attribute, and must not read the registry (and its plugins) for it.
    if name in API or name[:1].isupper():
        module = lazy_names().get(name)
        if module:
            from importlib import import_module

            value = getattr(import_module(module), name)
            globals()[name] = value  # later lookups skip __getattr__
            return value
    raise AttributeError(f"module 'medprobe' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *lazy_names()})
