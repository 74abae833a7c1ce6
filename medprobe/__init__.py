"""medprobe: probing what pre-trained language models know about biomedicine.

The package and the distribution are both `medprobe` (`probers`, the old name, is an alias for
one release). Every prober class is
exported here (`from medprobe import MaskAverageProbe`) and imported on first use, so that
`import medprobe` (and `medprobe --help`) loads neither torch, transformers nor datasets.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("medprobe")
except PackageNotFoundError:  # running from a source checkout that is not installed
    __version__ = "0.0.0+source"

# class name -> the module that defines it: the targets of medprobe.registry.PROBERS, plus the
# re-ranking wrapper that the medlama task builds (tests/test_imports.py keeps the two in step).
_LAZY = {
    "ContrastiveProbe": "medprobe.contrastive.prober",
    "MaskPredictProbe": "medprobe.lm.mask_predict",
    "MaskAverageProbe": "medprobe.lm.mask_average",
    "GenerativeProbe": "medprobe.lm.seq2seq",
    "CausalLMProbe": "medprobe.lm.causal_lm",
    "RankChangeProbe": "medprobe.lm.rank_change",
    "PairClassifierProbe": "medprobe.lm.pair_classifier",
    "MLMHeadProbe": "medprobe.lm.mlm_head",
    "ShortlistProber": "medprobe.lm.candidate_scoring",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value  # later lookups skip __getattr__
        return value
    raise AttributeError(f"module 'medprobe' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
