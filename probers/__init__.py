"""medprobe: probing what pre-trained language models know about biomedicine.

The importable package is `probers`; the distribution is `medprobe`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("medprobe")
except PackageNotFoundError:  # running from a source checkout that is not installed
    __version__ = "0.0.0+source"

__all__ = ["__version__", "ContrastiveProbe", "PairClassifierProbe", "RankChangeProbe"]

# Probers are imported on first use, so that `import probers` (and `medprobe --help`) stays light.
_LAZY = {
    "ContrastiveProbe": "probers.contrastive",
    "PairClassifierProbe": "probers.lm.pair_classifier",
    "RankChangeProbe": "probers.lm.rank_change",
}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'probers' has no attribute {name!r}")
