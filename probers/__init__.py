"""medprobe: probing what pre-trained language models know about biomedicine.

The importable package is `probers`; the distribution is `medprobe`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("medprobe")
except PackageNotFoundError:  # running from a source checkout that is not installed
    __version__ = "0.0.0+source"

__all__ = ["__version__"]


def __getattr__(name: str):
    # `probers.RankChangeProbe` without importing numpy, datasets and tqdm with the package
    if name == "RankChangeProbe":
        from probers.rank_change import RankChangeProbe

        return RankChangeProbe
    raise AttributeError(f"module 'probers' has no attribute {name!r}")
