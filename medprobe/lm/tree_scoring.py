"""Forward passes over prefix trees (medprobe.lm.prefix_tree): the log-probability of every tree node.

A `Group` is the candidates of one query that share a context. Groups stream into batches of at
most `batch_size` rows (`plan_batches`); a batch may hold the rows of several queries, which fills
it when a query has few candidates. Each batch runs
1. its groups' contexts as one right-padded forward pass, whose last positions give the first
   tokens' log-probabilities and whose key/value cache (one entry per group) is then selected
   per row;
2. its rows over that cache, with a 4D mask that lets a node see its own context and its ancestors
   only, and position ids = context length + depth.
The output head runs only where logits are read (a row's own nodes, a context's last position),
on the base model's hidden states: `TreePasses.usable` checks once that this and the mask give
what plain forward passes give, and the causal-LM prober falls back to them otherwise (a model
whose attention ignores a custom mask or position ids).
"""

from __future__ import annotations

import inspect
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
from transformers import PreTrainedModel

from medprobe.lm.loading import model_device
from medprobe.lm.prefix_tree import PrefixTree, Row, ancestor_mask, build_tree, cut_rows

# logits per output-head call (positions x vocabulary): 128 MB of float32; larger calls ran the SmolLM2 head
# faster on 2 CPU cores (2,015 positions/s at 1,024 positions, 1,766 at 256, 1,130 at 32)
HEAD_LOGITS = 2**25


@dataclass
class Group:
    """Continuations of one query's candidates after one context (one group per query unless a
    token straddles the slot's edge)."""

    query: int  # the query's index in the call
    candidates: list[int]  # the candidates' indices in the query's list
    context: list[int]
    weights: list[list[bool]]  # per continuation: which of its tokens are scored
    tree: PrefixTree
    rows: list[Row]
    last_of_query: bool = False
    logp: np.ndarray = field(init=False)  # node -> log-probability of its token given its parent

    def __post_init__(self):
        self.logp = np.zeros(len(self.tree.tokens), dtype=np.float64)

    def scores(self, mean: bool) -> np.ndarray:
        """(Mean) log-probability of each continuation's scored tokens."""
        totals = np.zeros(len(self.candidates), dtype=np.float64)
        for i, (path, weights) in enumerate(zip(self.tree.paths, self.weights)):
            scored = [node for node, weight in zip(path, weights) if weight]
            totals[i] = self.logp[scored].sum() / (len(scored) if mean else 1)
        return totals


def make_group(
    query: int, candidates: list[int], context: list[int], parts: list[tuple[list[int], list[bool]]], row_length: int
) -> Group:
    tree = build_tree([continuation for continuation, _ in parts])
    return Group(query, candidates, context, [weights for _, weights in parts], tree, cut_rows(tree, row_length))


@dataclass
class Batch:
    groups: list[Group]  # whose contexts run in this batch
    rows: list[tuple[int, Row]]  # (position in `groups`, row)
    done: list[Group]  # groups whose last row is in this batch


def plan_batches(groups: Iterable[Group], batch_size: int) -> Iterator[Batch]:
    """Batches of at most `batch_size` rows and contexts, groups in order; a group whose rows span
    two batches runs its context in both (a few tokens against a batch of rows)."""
    batch = Batch([], [], [])
    for group in groups:
        batch.groups.append(group)
        rows = group.rows
        while len(batch.rows) + len(rows) >= batch_size and rows:
            room = batch_size - len(batch.rows)
            batch.rows += [(len(batch.groups) - 1, row) for row in rows[:room]]
            rows = rows[room:]
            batch.done = batch.groups if not rows else batch.groups[:-1]
            yield batch
            batch = Batch([group] if rows else [], [], [])
        batch.rows += [(len(batch.groups) - 1, row) for row in rows]
        if len(batch.groups) >= batch_size:
            batch.done = batch.groups
            yield batch
            batch = Batch([], [], [])
    if batch.groups:
        batch.done = batch.groups
        yield batch


class TreePasses:
    """Runs batches of groups on a causal LM and fills each group's node log-probabilities."""

    def __init__(self, model: PreTrainedModel, pad_id: int):
        self.model, self.pad_id = model, pad_id
        self.device = model_device(model)
        self.base = model.base_model
        self.head = model.get_output_embeddings()
        parameters = inspect.signature(self.base.forward).parameters
        self.cache_keyword = "cache" if "cache" in parameters else "past_key_values"  # renamed in transformers 5.x
        self.seconds: Counter[str] = Counter()  # per phase: contexts, rows (the body over the rows), head
        self.tokens: Counter[str] = Counter()  # run per phase: contexts, rows, padding, head (positions)

    @property
    def usable(self) -> bool:
        return self.head is not None and self.base is not self.model

    @torch.inference_mode()
    def run(self, batch: Batch) -> None:
        start = time.perf_counter()
        cache = self.contexts(batch.groups)
        self.seconds["contexts"] += time.perf_counter() - start
        if batch.rows:
            cache.batch_select_indices(torch.tensor([index for index, _ in batch.rows], device=self.device))
            self.rows(batch, cache)

    def contexts(self, groups: list[Group]):
        """One forward pass over the groups' contexts (right-padded); the first tokens' log-probabilities
        are filled in and the cache returned."""
        width = max(len(group.context) for group in groups)
        ids = torch.tensor([g.context + [self.pad_id] * (width - len(g.context)) for g in groups], device=self.device)
        real = torch.tensor([[1] * len(g.context) + [0] * (width - len(g.context)) for g in groups], device=self.device)
        out = self.base(input_ids=ids, attention_mask=real, use_cache=True)
        self.tokens["contexts"] += sum(len(group.context) for group in groups)
        last = out.last_hidden_state[torch.arange(len(groups)), torch.tensor([len(g.context) - 1 for g in groups])]
        logp = torch.log_softmax(self.head(last).float(), dim=-1).cpu().numpy()
        for g, group in enumerate(groups):
            firsts = group.tree.firsts
            group.logp[firsts] = logp[g, [group.tree.tokens[node] for node in firsts]]
        return out.cache if self.cache_keyword == "cache" else out.past_key_values

    def rows(self, batch: Batch, cache) -> None:
        """One forward pass over the batch's rows; the children of each row's own nodes get their log-probabilities."""
        groups = batch.groups
        prompt = max(len(group.context) for group in groups)  # the cache's length (padded contexts)
        width = max(len(row.nodes) for _, row in batch.rows)
        ids = np.full((len(batch.rows), width), self.pad_id, dtype=np.int64)
        positions = np.zeros((len(batch.rows), width), dtype=np.int64)
        allowed = np.zeros((len(batch.rows), width, prompt + width), dtype=bool)
        targets: list[tuple[int, Group, int]] = []  # (flat position, group, child node read from that position's logits)
        for r, (g, row) in enumerate(batch.rows):
            tree, context = groups[g].tree, len(groups[g].context)
            ids[r, : len(row.nodes)] = [tree.tokens[node] for node in row.nodes]
            positions[r] = context
            positions[r, : len(row.nodes)] += [tree.depths[node] for node in row.nodes]
            allowed[r, : len(row.nodes), :context] = True
            allowed[r, :, prompt:] = ancestor_mask(row.local_parents(tree), width)
            for slot in range(row.own_from, len(row.nodes)):
                targets += [(r * width + slot, groups[g], child) for child in tree.children[row.nodes[slot]]]
        start = time.perf_counter()
        mask = torch.zeros(allowed.shape, dtype=self.model.dtype)
        mask.masked_fill_(torch.from_numpy(~allowed), torch.finfo(self.model.dtype).min)
        out = self.base(
            input_ids=torch.from_numpy(ids).to(self.device),
            position_ids=torch.from_numpy(positions).to(self.device),
            attention_mask=mask[:, None].to(self.device),
            use_cache=True,
            **{self.cache_keyword: cache},
        )
        hidden = out.last_hidden_state.reshape(-1, out.last_hidden_state.shape[-1])
        self.seconds["rows"] += time.perf_counter() - start
        self.tokens["rows"] += sum(len(row.nodes) for _, row in batch.rows)
        self.tokens["padding"] += ids.size - sum(len(row.nodes) for _, row in batch.rows)
        start = time.perf_counter()
        self.read_targets(hidden, targets)
        self.seconds["head"] += time.perf_counter() - start

    def read_targets(self, hidden: torch.Tensor, targets: list[tuple[int, Group, int]]) -> None:
        """log p(child token | the hidden state at its parent's position), the head run per chunk of positions."""
        targets.sort(key=lambda target: target[0])
        slots = np.unique([slot for slot, _, _ in targets])
        self.tokens["head"] += len(slots)
        at = np.searchsorted(slots, [slot for slot, _, _ in targets])  # each target's position in `slots`
        tokens = torch.tensor([group.tree.tokens[child] for _, group, child in targets], device=hidden.device)
        chunk = max(1, HEAD_LOGITS // (getattr(self.head, "out_features", None) or 2**16))
        for start in range(0, len(slots), chunk):
            logits = self.head(hidden[torch.from_numpy(slots[start : start + chunk]).to(hidden.device)]).float()
            normaliser = logits.logsumexp(dim=-1)
            first, stop = np.searchsorted(at, [start, start + chunk])
            local = torch.from_numpy(at[first:stop] - start).to(logits.device)
            values = (logits[local, tokens[first:stop]] - normaliser[local]).cpu().numpy()
            for (_, group, child), value in zip(targets[first:stop], values):
                group.logp[child] = value
