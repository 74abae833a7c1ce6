"""Causal-LM probing: rank candidates by how likely a decoder-only model finds the filled prompt.

For the query "Aspirin might treat [Y] ." and the candidate "fever", the filled prompt is
"Aspirin might treat fever." (MedLAMA's templates are written pre-tokenised, with a space before
the final period; a causal LM reads " ." as unusual text, so by default the white space between
the slot and a punctuation mark right after it is removed; `literal_template=True` keeps it).
It is split into
- the context: the text before the slot ("Aspirin might treat"), with the tokenizer's own
  special tokens (a BOS where it adds one; a BOS is added only when the slot opens the query);
- the answer tokens: the tokens after the context up to the candidate's end (" fever", the
  slot's white space included);
- the suffix tokens: the rest of the prompt (".").
The score is the log-likelihood of the answer tokens and, by default, of the suffix tokens
given the context (the suffix tells a complete answer from a truncated one: "fever." is more
likely than "chronic." after "Aspirin might treat"). `length_normalization="mean"` (default)
divides by the number of scored tokens, so long names are not punished for their length;
`"none"` keeps the total log-probability of the text.

The context is the same for every candidate of a query: it runs through the model once, and
the candidates never recompute it. Their continuations run as a prefix tree over its key/value
cache (medprobe.lm.prefix_tree, medprobe.lm.tree_scoring): a token shared by several candidates
("carcinoma of ...") runs once, a continuation's last token needs no forward pass (its parent's
logits give its log-probability), and the rows of several queries fill one batch. The first
scoring call checks once, on made-up tokens, that the tree gives this model's plain scores (its
attention takes a custom 4D mask and position ids); where it does not, each candidate runs in its
own padded row over the repeated cache (`score_query`), with a warning.

With `memorisation=True` the prober also answers `memorisation_scores(texts)`: Min-K%++ of each text
(medprobe.lm.mink, k = `mink_percent`), one forward pass per batch of texts; a task asks for it on each
query filled with a gold answer (`filled`), as a membership signal, never a contamination verdict
(medprobe.tasks.memorisation).
"""

from __future__ import annotations

import copy
import re
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from medprobe.contracts import MASK_SLOT, Prober, Ranked, UserError, fill_mask_slot
from medprobe.lm.candidate_scoring import check_candidate_lists, rank_by_scores
from medprobe.lm.loading import FromPretrained, check_model, model_device, position_limit
from medprobe.lm.mink import mink_plus_plus, text_tokens
from medprobe.lm.tree_scoring import Group, TreePasses, make_group, plan_batches
from medprobe.models import dtype_name
from medprobe.progress import progress_bar

NORMALIZATIONS = ("mean", "none")
ROW_LENGTH = 64  # prefix-tree nodes per row of a batch (more when a path is deeper)
SPACE_BEFORE_PUNCTUATION = re.compile(r"^\s+(?=[.,;:!?])")


class CausalLMProbe(FromPretrained, Prober):
    """Rank candidates by the (mean) log-likelihood of their tokens in the filled prompt."""

    name = "causal-lm"
    kinds = ("ranking", "candidate-scoring")
    model_kind = "causal-lm"
    probabilities = True  # rank's scores: log-probabilities over the candidates ranked (softmax of the log-likelihoods)

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        model_name: str = "model",
        length_normalization: str = "mean",
        score_suffix: bool = True,
        literal_template: bool = False,
        batch_size: int = 64,
        progress: bool = True,
        memorisation: bool = False,
        mink_percent: float = 20.0,
    ):
        check_model(model, "causal-lm", model_name)
        if length_normalization not in NORMALIZATIONS:
            raise UserError(f"length_normalization must be one of {NORMALIZATIONS}, got {length_normalization!r}")
        if not 0 < mink_percent <= 100:
            raise UserError(f"--mink-percent must be in (0, 100], got {mink_percent}")
        self.memorisation, self.mink_percent = memorisation, float(mink_percent)
        self.model, self.tokenizer, self.model_name = model.eval(), tokenizer, model_name
        self.length_normalization, self.score_suffix = length_normalization, score_suffix
        self.literal_template = literal_template
        self.batch_size, self.progress = batch_size, progress
        self.progress_bar: Any = None  # a caller's bar (one over many calls) advanced per query instead of our own
        self.limit = position_limit(model, tokenizer)
        pad = next((i for i in (tokenizer.pad_token_id, tokenizer.eos_token_id) if i is not None), 0)
        self.pad_id = pad  # padded positions are masked out; any id will do
        self.timings: dict[str, float] = {}
        self.row_length = ROW_LENGTH
        self.prefix_tree: bool | None = None  # score through prefix trees; None: check on first use that they fit the model
        self._passes: TreePasses | None = None

    @property
    def settings(self) -> dict:
        return {
            "length_normalization": self.length_normalization,
            "score_suffix": self.score_suffix,
            "literal_template": self.literal_template,
            "batch_size": self.batch_size,
            "dtype": dtype_name(self.model.dtype),
            "scoring": f"{'mean' if self.length_normalization == 'mean' else 'total'} log-probability of the answer"
            f"{' and suffix' if self.score_suffix else ''} tokens given the prompt before the slot",
        }

    def rank(self, queries: Sequence[str], candidates: Sequence[str], k: int) -> list[Ranked]:
        """The top k (name, log-probability) pairs: each score minus the log-sum-exp of every candidate's score."""
        return rank_by_scores(self, queries, candidates, k)

    def template_parts(self, query: str) -> tuple[str, str]:
        """The text before and after the query's slot, as a candidate is put between them (the white space
        before a punctuation mark right after the slot removed unless `literal_template`)."""
        fill_mask_slot(query, "")  # checks the slot
        prefix, suffix = query.split(MASK_SLOT, 1)
        return prefix, suffix if self.literal_template else SPACE_BEFORE_PUNCTUATION.sub("", suffix)

    def filled(self, query: str, name: str) -> str:
        """The query with `name` in its slot, the text this prober scores for that candidate."""
        prefix, suffix = self.template_parts(query)
        return prefix + name + suffix

    def memorisation_scores(self, texts: Sequence[str]) -> np.ndarray:
        """Min-K%++ of each text (k = `mink_percent`; medprobe.lm.mink), NaN where no token is scored."""
        start = time.perf_counter()
        sequences = text_tokens(self.tokenizer, texts, self.limit, self.model_name)
        with progress_bar(total=len(texts), desc="Min-K%++", unit="text", disable=not self.progress) as bar:
            scores = mink_plus_plus(self.model, sequences, self.mink_percent, self.batch_size, self.pad_id, bar.update)
        self.timings["memorisation"] = self.timings.get("memorisation", 0.0) + time.perf_counter() - start
        return scores

    def score_candidates(self, queries: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """One float array per query, aligned with its candidates: higher = more likely."""
        check_candidate_lists(queries, candidates)
        bar = self.progress_bar
        if bar is None:
            bar = progress_bar(total=len(queries), desc="causal LM", unit="query", disable=not self.progress)
        try:
            if self.uses_prefix_tree():
                return self.score_by_tree(queries, candidates, bar.update)
            scores = []
            for query, names in zip(queries, candidates):
                scores.append(self.score_query(query, names))
                bar.update(1)
            return scores
        finally:
            if bar is not self.progress_bar:
                bar.close()

    def score_by_tree(
        self, queries: Sequence[str], candidates: Sequence[Sequence[str]], advance: Callable[[int], object]
    ) -> list[np.ndarray]:
        """Every query's candidates through the prefix tree of their continuations (medprobe.lm.tree_scoring)."""
        scores = [np.zeros(len(names), dtype=np.float32) for names in candidates]
        passes = self.tree_passes()
        for batch in plan_batches(self.groups(queries, candidates, advance), self.batch_size):
            passes.run(batch)
            for group in batch.done:
                scores[group.query][group.candidates] = group.scores(self.length_normalization == "mean")
                if group.last_of_query:
                    advance(1)
        self.timings.update({f"tree_{phase}": seconds for phase, seconds in passes.seconds.items()})
        return scores

    def groups(
        self, queries: Sequence[str], candidates: Sequence[Sequence[str]], advance: Callable[[int], object]
    ) -> Iterator[Group]:
        """The groups of every query, one query at a time (its candidates are tokenized when it is reached)."""
        for index, (query, names) in enumerate(zip(queries, candidates)):
            if not names:
                advance(1)
                continue
            by_context, parts = self.query_parts(query, names)
            groups = [
                make_group(index, indices, list(context), [parts[i] for i in indices], self.row_length)
                for context, indices in by_context.items()
            ]
            groups[-1].last_of_query = True
            yield from groups

    def score_query(self, query: str, names: Sequence[str]) -> np.ndarray:
        """Scores of one query's candidates without the prefix tree: a padded row per candidate."""
        scores = np.zeros(len(names), dtype=np.float32)
        if not names:
            return scores
        by_context, parts = self.query_parts(query, names)
        for context, indices in by_context.items():  # one group unless a token straddles the slot's edge
            scores[indices] = self.score_continuations(list(context), [parts[i] for i in indices])
        return scores

    def query_parts(
        self, query: str, names: Sequence[str]
    ) -> tuple[dict[tuple[int, ...], list[int]], list[tuple[list[int], list[bool]]]]:
        """({context ids: indices of the candidates after it}, (continuation ids, scored) per candidate)."""
        prefix, suffix = self.template_parts(query)
        encoded = self.tokenizer(
            [prefix + name + suffix for name in names], return_offsets_mapping=True, return_special_tokens_mask=True
        )
        blank = [name for name in names if not name.strip()]
        if blank:
            raise UserError(f"query {query!r} has {len(blank)} blank candidate(s); every candidate needs text to score")
        by_context: dict[tuple[int, ...], list[int]] = {}
        parts = []
        for i, name in enumerate(names):
            context, continuation, scored = self.split_filled(
                encoded["input_ids"][i],
                encoded["offset_mapping"][i],
                encoded["special_tokens_mask"][i],
                context_end=len(prefix.rstrip()),
                answer_end=len(prefix) + len(name),
                where=f"candidate {name!r} of query {query!r}",
            )
            by_context.setdefault(tuple(context), []).append(i)
            parts.append((continuation, scored))
        return by_context, parts

    def split_filled(
        self,
        ids: list[int],
        offsets: list[tuple[int, int]],
        special: list[int],
        context_end: int,
        answer_end: int,
        where: str,
    ) -> tuple[list[int], list[int], list[bool]]:
        """(context ids, continuation ids, which continuation tokens are scored) of one filled prompt.

        Context: the leading special tokens and the tokens that end before the slot's white space.
        Answer tokens: continuation tokens that start before the candidate's last character ends
        (`answer_end`); the rest are suffix tokens.
        """
        m = 0
        while m < len(ids) and (special[m] or offsets[m][1] <= context_end):
            m += 1
        context = ids[:m]
        rest = [(token, span) for token, span, is_special in zip(ids[m:], offsets[m:], special[m:]) if not is_special]
        continuation = [token for token, _ in rest]
        # the slot's white space belongs to the answer (" fever" is one token in byte-level BPE)
        is_answer = [start < answer_end for _, (start, _) in rest]
        if not any(is_answer):
            raise UserError(f"{where} gives no answer tokens under the tokenizer of {self.model_name!r}")
        if not context:
            if self.tokenizer.bos_token_id is None:
                raise UserError(
                    f"{where}: the slot opens the query and the tokenizer of {self.model_name!r} has no BOS token, "
                    "so nothing conditions the first answer token"
                )
            context = [self.tokenizer.bos_token_id]
        if self.limit and len(context) + len(continuation) > self.limit:
            raise UserError(
                f"{where} is {len(context) + len(continuation)} tokens, more than the {self.limit} positions of {self.model_name!r}"
            )
        return context, continuation, [answer or self.score_suffix for answer in is_answer]

    @torch.inference_mode()
    def score_continuations(self, context: list[int], parts: list[tuple[list[int], list[bool]]]) -> np.ndarray:
        """Scores of continuations that share `context`: the context runs once, its cache is reused."""
        device = model_device(self.model)
        keyword = self.tree_passes().cache_keyword
        prompt = self.model(input_ids=torch.tensor([context], device=device), use_cache=True)
        first_logits = prompt.logits[0, -1].float()  # predicts the first continuation token
        scores = np.zeros(len(parts), dtype=np.float32)
        order = sorted(range(len(parts)), key=lambda i: len(parts[i][0]))  # similar lengths share a batch
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            width = max(len(parts[i][0]) for i in batch)
            ids = torch.tensor([parts[i][0] + [self.pad_id] * (width - len(parts[i][0])) for i in batch], device=device)
            weight = torch.tensor([parts[i][1] + [False] * (width - len(parts[i][1])) for i in batch], device=device).float()
            real = torch.tensor([[1] * len(parts[i][0]) + [0] * (width - len(parts[i][0])) for i in batch], device=device)
            cache = copy.deepcopy(prompt[keyword])  # the forward pass appends to it
            cache.batch_repeat_interleave(len(batch))
            attention = torch.cat([torch.ones(len(batch), len(context), dtype=real.dtype, device=device), real], dim=1)
            logits = self.model(input_ids=ids, attention_mask=attention, use_cache=True, **{keyword: cache}).logits.float()
            # token t is predicted at position t - 1; token 0 by the context's last position
            predicting = torch.cat([first_logits.expand(len(batch), 1, -1), logits[:, :-1]], dim=1)
            token_logp = predicting.gather(-1, ids[..., None]).squeeze(-1) - predicting.logsumexp(dim=-1)
            total = (token_logp * weight).sum(dim=1)
            if self.length_normalization == "mean":
                total = total / weight.sum(dim=1)
            scores[batch] = total.cpu().numpy()
        return scores

    def tree_passes(self) -> TreePasses:
        if self._passes is None:
            self._passes = TreePasses(self.model, self.pad_id)
        return self._passes

    def uses_prefix_tree(self) -> bool:
        """Whether to score through prefix trees: checked once, on made-up token ids, against plain passes."""
        if self.prefix_tree is None:
            self.prefix_tree = self.tree_matches_plain()
            if not self.prefix_tree:
                warnings.warn(
                    f"{self.model_name}: prefix-tree scoring does not reproduce plain forward passes for this model type "
                    "(custom attention masks or position ids unsupported); each candidate runs its own tokens instead",
                    stacklevel=3,
                )
        return self.prefix_tree

    def tree_matches_plain(self) -> bool:
        """Prefix-tree scores of two made-up groups equal `score_continuations`' within float noise: contexts of
        different lengths, shared prefixes, a continuation inside another, rows that repeat an ancestor and a
        group whose rows span two batches."""
        passes = self.tree_passes()
        if not passes.usable:
            return False
        t = [7 * i + 3 for i in range(12)]  # made-up token ids, in any vocabulary
        continuations = [[t[1], t[2], t[3]], [t[1], t[4], t[5]], [t[1], t[6], t[7]], [t[8], t[9], t[10]], [t[1], t[2]], [t[11]]]
        parts = [(tokens, [True] * len(tokens)) for tokens in continuations]
        contexts = [[t[0], t[9]], [t[5], t[6], t[7], t[0]]]
        # rows of 3 tokens: [1 2 4], [1 6 8], [8 9] (1 repeated); batches of 4 rows: the second group spans two
        groups = [make_group(0, list(range(len(parts))), context, parts, row_length=3) for context in contexts]
        tolerance = 1e-3 if self.model.dtype == torch.float32 else 0.1  # per token; 16-bit passes differ by some 0.01
        try:
            for batch in plan_batches(groups, batch_size=4):
                passes.run(batch)
            plain = [self.score_continuations(context, parts) for context in contexts]
        except (RuntimeError, ValueError, TypeError, IndexError, KeyError, AttributeError):
            return False
        finally:
            passes.seconds.clear()
            passes.tokens.clear()
        lengths = np.array([1.0 if self.length_normalization == "mean" else len(tokens) for tokens in continuations])
        return all(
            np.allclose(group.scores(mean=True), row / lengths, atol=tolerance, rtol=0) for group, row in zip(groups, plain)
        )
