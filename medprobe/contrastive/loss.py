"""InfoNCE / NT-Xent over the 2N embeddings of a batch of N positive pairs."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from medprobe.contracts import UserError


class InfoNCELoss(nn.Module):
    """NT-Xent (SimCLR) loss, as Contrastive-Probe rewires with it (temperature 0.04).

    A batch holds N pairs (anchor i, positive i). All 2N embeddings are compared by cosine
    similarity; for each of them the partner of its pair is the positive and the other 2N - 2
    embeddings are negatives. The loss is the cross-entropy of picking the partner, averaged
    over the 2N embeddings (the NTXentLoss of pytorch-metric-learning that the released code
    used, with one label per pair).

    Example:
        >>> loss = InfoNCELoss(temperature=0.04)
        >>> anchors = torch.eye(3)
        >>> float(loss(anchors, anchors)) < 1e-3     # every pair is its own nearest neighbour
        True
    """

    def __init__(self, temperature: float = 0.04):
        super().__init__()
        if temperature <= 0:
            raise UserError(f"temperature must be positive, got {temperature}")
        self.temperature = temperature

    def forward(self, anchors: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
        n = anchors.shape[0]
        embeddings = F.normalize(torch.cat([anchors, positives]), dim=-1)
        logits = embeddings @ embeddings.T / self.temperature
        # an embedding is never its own candidate
        self_pairs = torch.eye(2 * n, dtype=torch.bool, device=logits.device)
        logits = logits.masked_fill(self_pairs, float("-inf"))
        # the partner of anchor i is row n + i, and the partner of positive i is row i
        partners = torch.cat([torch.arange(n, 2 * n), torch.arange(n)]).to(logits.device)
        return F.cross_entropy(logits, partners)

    def extra_repr(self) -> str:
        return f"temperature={self.temperature}"
