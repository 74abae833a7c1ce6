"""Min-K%++ (Zhang et al. 2024) of texts under a causal LM: a membership signal, computed in batches.

Per token x_t of a text, z_t = (log p(x_t | x<t) - mu_t) / sigma_t, where mu_t and sigma_t are the mean and
the standard deviation of log p(z | x<t) for z drawn from p(. | x<t) itself (mu_t is minus the entropy of the
next-token distribution). All three come from one full-vocabulary log-softmax per position, the logits of
one forward pass over the text. The text's score is the mean of its k% lowest z_t (max(1, floor(T k / 100))
of its T scored tokens, as the authors' code takes int(T k) of them, never none). A token far less likely than
the model's typical next token pulls the score down; a text seen in training tends to score higher.

What is scored: every token of the text the model predicts from something before it. The tokenizer's own
special tokens stay as they are (a BOS where it adds one conditions the first token; where it adds none, the
first token has nothing before it and is not scored) and are never scored themselves. A text with no scored
token gets NaN.

Texts run `batch_size` at a time, sorted by length (less padding), right-padded: a causal LM's real positions
never see the padding after them, so a text's score does not depend on its batch (within float noise).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from medprobe.contracts import UserError
from medprobe.lm.loading import model_device

# logits standardised per call (positions x vocabulary): 128 MB of float32, as the prefix-tree scoring's head calls
STATS_LOGITS = 2**25

Tokens = tuple[list[int], list[bool]]  # a text's input ids and which of them are scored


def text_tokens(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], limit: int | None, model_name: str) -> list[Tokens]:
    """Each text's input ids (its special tokens as the tokenizer adds them, trailing ones dropped: nothing reads
    them) and which ids are scored: the text's own tokens that have a token before them."""
    encoded = tokenizer(list(texts), return_special_tokens_mask=True)
    sequences = []
    for text, ids, special in zip(texts, encoded["input_ids"], encoded["special_tokens_mask"]):
        end = max((i + 1 for i, is_special in enumerate(special) if not is_special), default=0)
        ids, special = ids[:end], special[:end]
        if limit and len(ids) > limit:
            raise UserError(f"the text {text!r} is {len(ids)} tokens, more than the {limit} positions of {model_name!r}")
        sequences.append((ids, [position > 0 and not is_special for position, is_special in enumerate(special)]))
    return sequences


def standardised_logp(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """(log p(token) - mu) / sigma per row of `logits` (positions x vocabulary), in float32, mu and sigma the mean
    and standard deviation of log p under p. A vocabulary entry of probability 0 (a -inf logit) adds nothing."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    p = logp.exp()
    finite = torch.where(torch.isfinite(logp), logp, torch.zeros_like(logp))
    mu = (p * finite).sum(dim=-1)
    variance = (p * (finite - mu[:, None]) ** 2).sum(dim=-1)
    sigma = variance.clamp_min(torch.finfo(torch.float32).tiny).sqrt()
    return (logp.gather(-1, tokens[:, None]).squeeze(-1) - mu) / sigma


def lowest_mean(z: np.ndarray, percent: float) -> float:
    """The mean of the `percent`% lowest values (at least one; NaN for none)."""
    if not len(z):
        return float("nan")
    count = max(1, int(len(z) * percent // 100))
    return float(np.sort(z)[:count].mean())


@torch.inference_mode()
def mink_plus_plus(
    model: PreTrainedModel,
    sequences: Sequence[Tokens],
    percent: float,
    batch_size: int,
    pad_id: int,
    advance: Callable[[int], object] = lambda n: None,
) -> np.ndarray:
    """Min-K%++ of each (ids, scored) sequence (`text_tokens`), in their order: one forward pass per batch."""
    device = model_device(model)
    scores = np.full(len(sequences), np.nan)
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i][0]))
    for start in range(0, len(order), batch_size):
        batch = [i for i in order[start : start + batch_size] if len(sequences[i][0]) > 1]
        if batch:
            for i, z in zip(batch, batch_z(model, [sequences[i] for i in batch], pad_id, device)):
                scores[i] = lowest_mean(z, percent)
        advance(len(order[start : start + batch_size]))
    return scores


def batch_z(model: PreTrainedModel, sequences: Sequence[Tokens], pad_id: int, device: torch.device) -> list[np.ndarray]:
    """The z of every scored token of each sequence, from one right-padded forward pass."""
    width = max(len(ids) for ids, _ in sequences)
    ids = torch.tensor([ids + [pad_id] * (width - len(ids)) for ids, _ in sequences], device=device)
    real = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in sequences], device=device)
    logits = model(input_ids=ids, attention_mask=real).logits
    # token t is predicted by position t - 1
    rows, columns = zip(*[(row, t) for row, (_, scored) in enumerate(sequences) for t, wanted in enumerate(scored) if wanted])
    rows_t, columns_t = torch.tensor(rows, device=device), torch.tensor(columns, device=device)
    z = torch.empty(len(rows), dtype=torch.float32, device=device)
    chunk = max(1, STATS_LOGITS // logits.shape[-1])
    for first in range(0, len(rows), chunk):
        r, c = rows_t[first : first + chunk], columns_t[first : first + chunk]
        z[first : first + chunk] = standardised_logp(logits[r, c - 1], ids[r, c])
    values = z.cpu().numpy().astype(np.float64)
    counts = np.bincount(np.asarray(rows), minlength=len(sequences))
    return np.split(values, np.cumsum(counts)[:-1])
