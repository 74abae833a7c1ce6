"""Contrastive-Probe (Meng, Liu et al., "Rewire-then-Probe", ACL 2022).

Stage 1 rewires an encoder on raw sentences with a contrastive objective (`RewiringTrainer`,
`InfoNCELoss`, pairs from `build_pairs`); stage 2 probes by retrieval (`ContrastiveProbe.rank`).

The names below are imported on first use: `medprobe.contrastive.prober` (what `medprobe probe`
loads) must not pull in the rewiring's Trainer, which takes seconds to import and a probe without
rewiring never needs.
"""

from __future__ import annotations

from importlib import import_module

# eager, and first: the function `search` shares its module's name, and importing that submodule later
# (the prober does) would otherwise leave the module, not the function, as this package's `search`
from medprobe.contrastive.search import search as search

_LAZY = {
    "ContrastiveProbe": "medprobe.contrastive.prober",
    "CorpusStats": "medprobe.contrastive.pairs",
    "InfoNCELoss": "medprobe.contrastive.loss",
    "MaskedPair": "medprobe.contrastive.pairs",
    "PairCollator": "medprobe.contrastive.rewiring",
    "PairDataset": "medprobe.contrastive.rewiring",
    "RewiringTrainer": "medprobe.contrastive.rewiring",
    "build_pairs": "medprobe.contrastive.pairs",
    "mask_tail_span": "medprobe.contrastive.pairs",
    "rewiring_arguments": "medprobe.contrastive.rewiring",
}

__all__ = sorted([*_LAZY, "search"])


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'medprobe.contrastive' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
