"""Contrastive-Probe (Meng, Liu et al., "Rewire-then-Probe", ACL 2022).

Stage 1 rewires an encoder on raw sentences with a contrastive objective (`RewiringTrainer`,
`InfoNCELoss`, pairs from `build_pairs`); stage 2 probes by retrieval (`ContrastiveProbe.rank`).
"""

from probers.contrastive.loss import InfoNCELoss
from probers.contrastive.pairs import CorpusStats, MaskedPair, build_pairs, mask_tail_span
from probers.contrastive.prober import ContrastiveProbe
from probers.contrastive.rewiring import PairCollator, PairDataset, RewiringTrainer, rewiring_arguments
from probers.contrastive.search import search

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
