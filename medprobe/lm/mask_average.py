"""Mask average (Kassner et al. 2021): rank a fixed answer space with a masked LM.

A candidate of L tokens is scored by putting L mask tokens into the query's [Y] slot and
averaging the log-probabilities of its tokens at those positions:

    score(c) = (1 / L) * sum_j log p(c_j at mask j | query with L masks)

The input depends on L only, never on the candidate, so ONE forward pass per (query, distinct
candidate length) serves every candidate of that length: for the 22,923 names of full
MedLAMA that is a few dozen passes per query instead of 22,923.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from medprobe.contracts import Prober, Ranked, UserError, fill_mask_slot
from medprobe.lm.candidate_scoring import check_candidate_lists, rank_by_scores
from medprobe.lm.loading import FromPretrained, SelectedLogits, check_model, model_device, position_limit
from medprobe.models import dtype_name, require_mask_token
from medprobe.progress import progress_bar


class MaskAverageProbe(FromPretrained, Prober):
    """Rank candidates by the mean log-probability of their tokens at L masks (one pass per length)."""

    name = "mask-average"
    kinds = ("ranking", "candidate-scoring")
    model_kind = "masked-lm"

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        model_name: str = "model",
        batch_size: int = 64,
        progress: bool = True,
    ):
        check_model(model, "masked-lm", model_name)
        self.mask_token = require_mask_token(tokenizer, model_name)
        self.model, self.tokenizer, self.model_name = model.eval(), tokenizer, model_name
        self.batch_size, self.progress = batch_size, progress
        self.limit = position_limit(model, tokenizer)
        self.logits_at = SelectedLogits(model)
        self.timings: dict[str, float] = {}
        self.forward_passes = 0  # input rows run through the model (benchmark figure)
        self._token_ids: dict[str, list[int]] = {}

    @property
    def settings(self) -> dict:
        return {
            "scoring": "mean log-probability of the candidate's tokens at L masks",
            "batch_size": self.batch_size,
            "dtype": dtype_name(self.model.dtype),
        }

    def rank(self, queries: Sequence[str], candidates: Sequence[str], k: int) -> list[Ranked]:
        return rank_by_scores(self, queries, candidates, k)

    def candidate_token_ids(self, names: Sequence[str]) -> dict[str, list[int]]:
        """Token ids of each name (without special tokens); new names are tokenized in one batch
        and kept, so an answer space is tokenized once however many calls score it."""
        new = [name for name in dict.fromkeys(names) if name not in self._token_ids]
        if new:
            encoded = self.tokenizer(new, add_special_tokens=False)["input_ids"]
            empty = [name for name, ids in zip(new, encoded) if not ids]
            if empty:
                raise UserError(
                    f"{len(empty)} candidate(s) give no tokens under the tokenizer of {self.model_name!r}, e.g. {empty[0]!r}"
                )
            self._token_ids.update(zip(new, encoded))
        return self._token_ids

    def query_ids(self, query: str) -> tuple[list[int], int]:
        """(token ids of the query with one mask in the slot, position of that mask)."""
        ids = self.tokenizer(fill_mask_slot(query, self.mask_token))["input_ids"]
        positions = [i for i, token in enumerate(ids) if token == self.tokenizer.mask_token_id]
        if len(positions) != 1:
            raise UserError(f"query {query!r} gives {len(positions)} mask tokens under {self.model_name!r}; expected exactly one")
        return ids, positions[0]

    def score_candidates(self, queries: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """One float array per query, aligned with its candidates: mean token log-probability."""
        check_candidate_lists(queries, candidates)
        token_ids = self.candidate_token_ids([name for names in candidates for name in names])
        scores = [np.zeros(len(names), dtype=np.float32) for names in candidates]
        # jobs: (query index, L, candidate positions of length L, their token ids [n, L])
        jobs, rows = [], []
        groups_of_list: dict[int, dict[int, tuple[np.ndarray, torch.Tensor]]] = {}
        for qi, (query, names) in enumerate(zip(queries, candidates)):
            if id(names) not in groups_of_list:  # the same list object for every query: group it once
                groups_of_list[id(names)] = self.group_by_length(names, token_ids)
            ids, slot = self.query_ids(query)
            for length, (positions, cand_ids) in groups_of_list[id(names)].items():
                row = ids[:slot] + [self.tokenizer.mask_token_id] * length + ids[slot + 1 :]
                if self.limit and len(row) > self.limit:
                    longest = names[int(positions[0])]
                    raise UserError(
                        f"candidate {longest!r} is {length} tokens: the query {query!r} with {length} masks is "
                        f"{len(row)} tokens, more than the {self.limit} positions of {self.model_name!r}"
                    )
                jobs.append((qi, positions, cand_ids))
                rows.append(row)
        for start in progress_bar(
            range(0, len(rows), self.batch_size), desc="mask average", unit="batch", disable=not self.progress
        ):
            batch_logp = self.mask_log_probs(rows[start : start + self.batch_size])
            for (qi, positions, cand_ids), logp in zip(jobs[start : start + self.batch_size], batch_logp):
                # logp: [L, vocab]; cand_ids: [n, L] -> log p of token j of each candidate at mask j
                per_token = logp[torch.arange(cand_ids.shape[1]), cand_ids]
                scores[qi][positions] = per_token.mean(dim=1).numpy()
        return scores

    @staticmethod
    def group_by_length(names: Sequence[str], token_ids: dict[str, list[int]]) -> dict[int, tuple[np.ndarray, torch.Tensor]]:
        """length -> (positions of the names of that length, their token ids as an [n, length] tensor)."""
        by_length: dict[int, list[int]] = {}
        for position, name in enumerate(names):
            by_length.setdefault(len(token_ids[name]), []).append(position)
        return {
            length: (np.array(positions), torch.tensor([token_ids[names[p]] for p in positions]))
            for length, positions in sorted(by_length.items())
        }

    @torch.inference_mode()
    def mask_log_probs(self, rows: list[list[int]]) -> list[torch.Tensor]:
        """Per row, log-softmax over the vocabulary at its mask positions ([masks, vocab], on CPU)."""
        width = max(map(len, rows))
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        input_ids = torch.tensor([row + [pad] * (width - len(row)) for row in rows])
        attention = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows])
        device = model_device(self.model)
        is_mask = (input_ids == self.tokenizer.mask_token_id) & attention.bool()
        logits = self.logits_at(input_ids.to(device), attention.to(device), is_mask.to(device))
        self.forward_passes += len(rows)
        logp = torch.log_softmax(logits.float(), dim=-1).cpu()
        return list(logp.split(is_mask.sum(dim=1).tolist()))
