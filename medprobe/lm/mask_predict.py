"""Mask predict (X-FACTR, Jiang et al. 2020): generate multi-token answers with a masked LM.

For every number of masks n = 1..M the [Y] slot gets n mask tokens, which are filled by beam
search (beam B):
- `independent`: one forward pass; every mask is predicted from the all-mask input;
- `order`: left to right, one forward pass per filled position (the filled tokens are visible);
- `confidence`: each hypothesis fills, at every step, the still-masked position whose best
  token is most probable.
Optional refinement (`iter_method="order"`, "Order+Order"): up to `max_iter` rounds; in each
round every position, left to right, is masked again and re-predicted from all the others
(greedily, per hypothesis); rounds stop early when no token changes.

Score of a filled answer: the sum of the log-probabilities its tokens had when they were last
chosen, i.e. the log of the product of token probabilities, with no length normalisation
(BioLAMA). Answers of all mask counts are pooled, duplicates merged after normalisation
(`medprobe.lm.answer_pooling`), and ranked by that score. Special tokens are never predicted.
All queries of a batch and their beams run through the model together.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from medprobe.contracts import Prober, Ranked, UserError, fill_mask_slot
from medprobe.lm.answer_pooling import pool_predictions
from medprobe.lm.loading import FromPretrained, SelectedLogits, check_model, model_device, position_limit
from medprobe.models import dtype_name, require_mask_token
from medprobe.progress import progress_bar

INIT_METHODS = ("independent", "order", "confidence")
ITER_METHODS = ("none", "order")


class MaskPredictProbe(FromPretrained, Prober):
    """Fill 1..M masks by beam search and rank the pooled answers by the product of token probabilities.

    `rank(queries, candidates, k)` generates answers; `candidates` only names them (an answer
    equal to a candidate after normalisation is reported as that candidate's string) and,
    with `only_candidates=True`, drops answers outside the list.
    """

    name = "mask-predict"
    kinds = ("ranking",)
    model_kind = "masked-lm"
    probabilities = True  # rank's scores: log of the answer's probability (the product of its token probabilities)

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        model_name: str = "model",
        num_masks: int = 5,
        init_method: str = "order",
        iter_method: str = "none",
        max_iter: int = 10,
        beam_size: int = 5,
        only_candidates: bool = False,
        batch_size: int = 64,
        progress: bool = True,
    ):
        check_model(model, "masked-lm", model_name)
        require_mask_token(tokenizer, model_name)
        if init_method not in INIT_METHODS or iter_method not in ITER_METHODS:
            raise UserError(f"init_method must be one of {INIT_METHODS} and iter_method one of {ITER_METHODS}")
        if min(num_masks, beam_size, max_iter, batch_size) < 1:
            raise UserError("num_masks, beam_size, max_iter and batch_size must be positive")
        self.model, self.tokenizer, self.model_name = model.eval(), tokenizer, model_name
        self.num_masks, self.init_method, self.iter_method, self.max_iter = num_masks, init_method, iter_method, max_iter
        self.beam_size, self.only_candidates = beam_size, only_candidates
        self.batch_size, self.progress = batch_size, progress
        self.limit = position_limit(model, tokenizer)
        self.logits_at = SelectedLogits(model)
        self.banned = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
        self.timings: dict[str, float] = {}
        self.forward_passes = 0

    @property
    def settings(self) -> dict:
        return {
            "num_masks": self.num_masks,
            "init_method": self.init_method,
            "iter_method": self.iter_method,
            "max_iter": self.max_iter if self.iter_method != "none" else 0,
            "beam_size": self.beam_size,
            "only_candidates": self.only_candidates,
            "batch_size": self.batch_size,
            "dtype": dtype_name(self.model.dtype),
            "scoring": "product of token probabilities, answers of 1..M masks pooled",
        }

    def rank(self, queries: Sequence[str], candidates: Sequence[str], k: int) -> list[Ranked]:
        """The k best pooled (answer, log-probability) pairs of each query."""
        return [answers[:k] for answers in self.generate_answers(queries, candidates)]

    def generate_answers(self, queries: Sequence[str], candidates: Sequence[str] = ()) -> list[list[tuple[str, float]]]:
        """Per query, the pooled (answer, log-probability) pairs, best first."""
        encoded = [self.query_ids(query) for query in queries]
        generated: list[list[tuple[str, float]]] = [[] for _ in queries]
        per_batch = max(1, self.batch_size // self.beam_size)  # queries per batch: each brings B rows
        starts = range(0, len(encoded), per_batch)
        with progress_bar(
            total=self.num_masks * len(starts), desc="mask predict", unit="batch", disable=not self.progress
        ) as bar:
            for n in range(1, self.num_masks + 1):
                for start in starts:
                    tokens, scores = self.decode(encoded[start : start + per_batch], n)
                    texts = self.tokenizer.batch_decode(tokens.reshape(-1, n).tolist(), skip_special_tokens=True)
                    for flat, (text, score) in enumerate(zip(texts, scores.reshape(-1).tolist())):
                        if score > float("-inf"):
                            generated[start + flat // tokens.shape[1]].append((text, score))
                    bar.update()
        return [pool_predictions(answers, candidates, self.only_candidates) for answers in generated]

    def query_ids(self, query: str) -> tuple[list[int], int]:
        ids = self.tokenizer(fill_mask_slot(query, self.tokenizer.mask_token))["input_ids"]
        slots = [i for i, token in enumerate(ids) if token == self.tokenizer.mask_token_id]
        if len(slots) != 1:
            raise UserError(f"query {query!r} gives {len(slots)} mask tokens under {self.model_name!r}; expected exactly one")
        if self.limit and len(ids) - 1 + self.num_masks > self.limit:
            raise UserError(
                f"query {query!r} with {self.num_masks} masks is {len(ids) - 1 + self.num_masks} tokens, "
                f"more than the {self.limit} positions of {self.model_name!r}"
            )
        return ids, slots[0]

    @torch.inference_mode()
    def decode(self, encoded: list[tuple[list[int], int]], n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Beam-fill n masks for a batch of queries: token ids [q, B, n] and scores [q, B] (-inf: no hypothesis)."""
        mask_id = self.tokenizer.mask_token_id
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        rows = [ids[:slot] + [mask_id] * n + ids[slot + 1 :] for ids, slot in encoded]
        width = max(map(len, rows))
        slots = SlotInputs(
            torch.tensor([row + [pad] * (width - len(row)) for row in rows]),
            torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows]),
            torch.tensor([slot for _, slot in encoded])[:, None] + torch.arange(n),
        )
        q = len(rows)
        beams = Beams(
            torch.zeros(q, 1, n, dtype=torch.long),
            torch.zeros(q, 1, n, dtype=torch.bool),
            torch.zeros(q, 1, n),
            torch.zeros(q, 1),
        )

        if self.init_method == "independent":
            logp = self.mask_log_probs(slots, beams.tokens, beams.filled)[:, 0]  # [q, n, V], all masks at once
            for j in range(n):
                h = beams.score.shape[1]
                beams = beams.extend(torch.full((q, h), j), logp[:, j, None].expand(q, h, -1), self.beam_size)
        else:
            for j in range(n):
                logp = self.mask_log_probs(slots, beams.tokens, beams.filled)  # [q, H, n, V]
                if self.init_method == "order":
                    position = torch.full(beams.score.shape, j)
                else:  # confidence: the open position whose best token is most probable
                    confidence = logp.max(dim=-1).values.masked_fill(beams.filled, float("-inf"))
                    position = confidence.argmax(dim=-1)
                at = logp.gather(2, position[:, :, None, None].expand(-1, -1, 1, logp.shape[-1])).squeeze(2)
                beams = beams.extend(position, at, self.beam_size)

        if self.iter_method == "order":
            self.refine(slots, beams, n)
        score = beams.logps.sum(dim=-1).masked_fill(~torch.isfinite(beams.score), float("-inf"))
        return beams.tokens, score

    def refine(self, slots: SlotInputs, beams: Beams, n: int) -> None:
        """Order refinement in place: re-predict each position from all the others until nothing changes."""
        for _ in range(self.max_iter):
            changed = False
            for j in range(n):
                filled = beams.filled.clone()
                filled[:, :, j] = False
                best_logp, best_token = self.mask_log_probs(slots, beams.tokens, filled)[:, :, j].max(dim=-1)
                changed |= bool((best_token != beams.tokens[:, :, j]).any())
                beams.tokens[:, :, j], beams.logps[:, :, j] = best_token, best_logp
            if not changed:
                return

    def mask_log_probs(self, slots: SlotInputs, tokens: torch.Tensor, filled: torch.Tensor) -> torch.Tensor:
        """Log-probabilities at the n slot positions for every hypothesis: [q, H, n, vocab].

        Filled positions carry their token, open ones the mask token; special tokens get -inf
        so that they are never chosen (the other entries keep the model's probabilities).
        """
        q, h, n = tokens.shape
        device = model_device(self.model)
        ids = slots.input_ids[:, None, :].expand(q, h, -1).clone()
        ids.scatter_(2, slots.positions[:, None, :].expand(q, h, n), torch.where(filled, tokens, self.tokenizer.mask_token_id))
        attention = slots.attention_mask[:, None, :].expand(q, h, -1).reshape(q * h, -1)
        ids = ids.reshape(q * h, -1)
        select = torch.zeros_like(ids, dtype=torch.bool).scatter_(1, slots.positions.repeat_interleave(h, dim=0), True)
        logp = []
        for start in range(0, q * h, self.batch_size):
            chunk = slice(start, start + self.batch_size)
            logits = self.logits_at(ids[chunk].to(device), attention[chunk].to(device), select[chunk].to(device))
            logp.append(torch.log_softmax(logits.float(), dim=-1).cpu())  # slot positions in order, row by row
        self.forward_passes += q * h
        logp = torch.cat(logp).view(q, h, n, -1)
        logp[..., self.banned] = float("-inf")
        return logp


class SlotInputs(NamedTuple):
    """A batch of queries with n masks in the slot: input ids and attention [q, T], slot positions [q, n]."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    positions: torch.Tensor


class Beams:
    """Beam state for a batch of queries: tokens / filled / per-token log-probs [q, H, n], score [q, H]."""

    def __init__(self, tokens: torch.Tensor, filled: torch.Tensor, logps: torch.Tensor, score: torch.Tensor):
        self.tokens, self.filled, self.logps, self.score = tokens, filled, logps, score

    def extend(self, position: torch.Tensor, logp_at: torch.Tensor, beam_size: int) -> Beams:
        """Fill `position` [q, H] of every hypothesis from `logp_at` [q, H, vocab]; keep the best `beam_size`."""
        q, h, vocab = logp_at.shape
        total = (self.score[:, :, None] + logp_at).reshape(q, h * vocab)
        # a stable sort, not topk: equal scores keep the lower (beam, token) index, on every machine
        score, index = total.sort(dim=1, descending=True, stable=True)
        score, index = score[:, :beam_size], index[:, :beam_size]
        parent, token = index // vocab, index % vocab
        chosen = logp_at.reshape(q, h * vocab).gather(1, index)
        n = self.tokens.shape[2]

        def pick(state: torch.Tensor) -> torch.Tensor:
            return state.gather(1, parent[:, :, None].expand(-1, -1, n)).clone()

        tokens, filled, logps = pick(self.tokens), pick(self.filled), pick(self.logps)
        where = position.gather(1, parent)[:, :, None]
        tokens.scatter_(2, where, token[:, :, None])
        filled.scatter_(2, where, True)
        logps.scatter_(2, where, chosen[:, :, None])
        return Beams(tokens, filled, logps, score)
