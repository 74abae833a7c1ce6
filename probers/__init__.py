"""medprobe: probing what pre-trained language models know about biomedicine.

The importable package is `probers`; the distribution is `medprobe`. Every prober class is
exported here (`from probers import MaskAverageProbe`) and imported on first use, so that
`import probers` (and `medprobe --help`) loads neither torch, transformers nor datasets.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("medprobe")
except PackageNotFoundError:  # running from a source checkout that is not installed
    __version__ = "0.0.0+source"

# class name -> the module that defines it: the targets of probers.registry.PROBERS, plus the
# re-ranking wrapper that the medlama task builds (tests/test_imports.py keeps the two in step).
_LAZY = {
    "ContrastiveProbe": "probers.contrastive.prober",
    "MaskPredictProbe": "probers.lm.mask_predict",
    "MaskAverageProbe": "probers.lm.mask_average",
    "GenerativeProbe": "probers.lm.seq2seq",
    "CausalLMProbe": "probers.lm.causal_lm",
    "RankChangeProbe": "probers.lm.rank_change",
    "PairClassifierProbe": "probers.lm.pair_classifier",
    "MLMHeadProbe": "probers.lm.mlm_head",
    "ShortlistProber": "probers.lm.candidate_scoring",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value  # later lookups skip __getattr__
        return value
    raise AttributeError(f"module 'probers' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
