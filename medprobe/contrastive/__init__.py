"""Contrastive-Probe (Meng, Liu et al., "Rewire-then-Probe", ACL 2022).

Stage 1 rewires an encoder on raw sentences with a contrastive objective (`RewiringTrainer`,
`InfoNCELoss`, pairs from `build_pairs`); stage 2 probes by retrieval (`ContrastiveProbe.rank`).

Imports (docs/architecture.md, layer probers and tasks): the foundation, the data layer and its own
layer; never the run, profile, compare, hub/ or cli/.
"""

from medprobe.contrastive.loss import InfoNCELoss
from medprobe.contrastive.pairs import CorpusStats, MaskedPair, build_pairs, mask_tail_span
from medprobe.contrastive.prober import ContrastiveProbe
from medprobe.contrastive.rewiring import PairCollator, PairDataset, RewiringTrainer, rewiring_arguments
from medprobe.contrastive.search import search

__all__ = [
    "ContrastiveProbe",
    "CorpusStats",
    "InfoNCELoss",
    "MaskedPair",
    "PairCollator",
    "PairDataset",
    "RewiringTrainer",
    "build_pairs",
    "mask_tail_span",
    "rewiring_arguments",
    "search",
]
