"""Exact nearest-neighbour search of query embeddings among candidate embeddings.

Scores are computed by matrix products, a chunk of queries at a time, so that the full
query x candidate matrix (19,000 x 22,923 floats = 1.7 GB for MedLAMA) is never held at once.

Equal scores are real (distinct names can have identical embeddings) and are broken by
candidate order, always: the result does not depend on the chunk size, the thread count or
the sort algorithm.

What no search can settle is a top k whose k-th and (k+1)-th scores are closer than float32 can
tell apart: then rounding picks the names, and rounding differs between CPUs' matrix kernels
(`search_with_misses` counts such queries). MiniLM's first three layers give every text nearly the
same [CLS] vector (all cosines within 5e-7 of each other on the shipped sample): `--layers 3` on
MedLAMA hard gave acc@10 0.23 on an AVX-512 CPU, 0.31 with MKL held to AVX2, and 0.33 on an AMD EPYC.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from medprobe.contracts import UserError

SIMILARITIES = ("cos", "l2")
NAN_SCORES = "the similarity scores contain NaN: the model produced invalid embeddings"


def prepare_candidates(candidates: torch.Tensor, similarity: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    """What the score of every chunk needs from the candidates, computed once.

    cos: unit vectors. l2: the raw vectors and their squared norms, since
    -||q - c||^2 = 2 q.c - ||c||^2 - ||q||^2 and ||q||^2 does not change the order of a row.
    """
    if similarity == "cos":
        return F.normalize(candidates, dim=-1), None
    if similarity == "l2":
        return candidates, (candidates * candidates).sum(-1)
    raise UserError(f"unknown similarity {similarity!r}; expected one of {', '.join(SIMILARITIES)}")


def scores(
    queries: torch.Tensor,
    candidates: torch.Tensor,
    squared_norms: torch.Tensor | None,
    similarity: str,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Higher is closer: cosine similarity, or the negative squared L2 distance up to a per-row constant.

    With `out` (queries x candidates, reused across chunks) the scores are written there: a fresh block
    per chunk of 512 queries is fresh pages, and faulting them in is a measurable share of the search
    (docs/scaling.md). The values are the same either way."""
    if similarity == "cos":
        return torch.mm(F.normalize(queries, dim=-1), candidates.T, out=out)
    products = torch.mm(queries, candidates.T, out=out)
    return products.mul_(2).sub_(squared_norms)


def top_k_with_ties_by_index(row_scores: torch.Tensor, k: int) -> torch.Tensor:
    """Indices of the k best columns of every row, best first; equal scores go to the lower index.

    `torch.topk` does not promise which of equal values it returns, nor their order. Its k+1 best
    values settle most rows: where the k-th best is strictly above the (k+1)-th, no column outside
    the k returned can equal it, so the k are the right ones and only their order (score descending,
    index ascending) is left to sort. Rows with a tie at the k-th place take `top_k_sorting_ties`,
    which looks at every column.
    """
    if k >= row_scores.shape[1]:
        return top_k_sorting_ties(row_scores, k)
    values, columns = row_scores.topk(k + 1, dim=1)  # NaN counts as the largest: a row with any shows it here
    if bool(values.isnan().any()):
        raise UserError(NAN_SCORES)
    settled = values[:, k - 1] > values[:, k]
    columns = columns[:, :k].sort(dim=1).values
    order = row_scores.gather(1, columns).sort(dim=1, descending=True, stable=True).indices
    top = columns.gather(1, order)
    if not bool(settled.all()):
        rows = (~settled).nonzero(as_tuple=True)[0]
        top[rows] = top_k_sorting_ties(row_scores[rows], k)
    return top


def top_k_sorting_ties(row_scores: torch.Tensor, k: int) -> torch.Tensor:
    """`top_k_with_ties_by_index` looking at every column: those at or above each row's k-th best
    score are sorted by (score descending, index ascending) with stable sorts."""
    kth_best = row_scores.topk(k, dim=1).values[:, -1:]
    rows, columns = (row_scores >= kth_best).nonzero(as_tuple=True)  # row-major: columns ascending
    selected = row_scores[rows, columns]
    order = torch.sort(selected, descending=True, stable=True).indices
    order = order[torch.sort(rows[order], stable=True).indices]
    columns = columns[order]
    counts = torch.bincount(rows, minlength=row_scores.shape[0])
    if bool((counts < k).any()):  # only NaN scores compare false with everything
        raise UserError(NAN_SCORES)
    starts = torch.cumsum(counts, 0) - counts
    return columns[starts[:, None] + torch.arange(k)]


def below_resolution(row_scores: torch.Tensor, k: int) -> int:
    """Rows whose k-th and (k+1)-th best scores are less than one float32 step apart at their size: which
    candidates make those rows' top k is decided by rounding, not by the model."""
    if k >= row_scores.shape[1]:
        return 0
    values = row_scores.topk(k + 1, dim=1).values.float()
    step = torch.finfo(torch.float32).eps * values[:, k - 1].abs()
    return int((values[:, k - 1] - values[:, k] < step).sum())


def search_with_misses(
    queries: torch.Tensor,
    candidates: torch.Tensor,
    k: int,
    *,
    similarity: str = "cos",
    chunk_size: int = 512,
) -> tuple[torch.Tensor, int]:
    """Indices of the `k` nearest candidates of every query (shape queries x k), best first, and how many
    queries' top k is decided by rounding (`below_resolution`)."""
    found, _, misses = search_scored(queries, candidates, k, similarity=similarity, chunk_size=chunk_size)
    return found, misses


def search(
    queries: torch.Tensor,
    candidates: torch.Tensor,
    k: int,
    *,
    similarity: str = "cos",
    chunk_size: int = 512,
) -> torch.Tensor:
    """Indices of the `k` nearest candidates of every query (shape queries x k), best first."""
    return search_scored(queries, candidates, k, similarity=similarity, chunk_size=chunk_size)[0]


def search_scored(
    queries: torch.Tensor,
    candidates: torch.Tensor,
    k: int,
    *,
    similarity: str = "cos",
    chunk_size: int = 512,
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """`search`'s indices (queries x k, best first), their scores (the cosine similarity, or with "l2" the negative
    squared distance, the row's -||q||^2, which orders nothing, added back; float32), and how many queries' top k is
    decided by rounding (`below_resolution`)."""
    if candidates.shape[0] == 0:
        raise UserError("the candidate set is empty: there is nothing to rank")
    k = min(k, candidates.shape[0])
    prepared, squared_norms = prepare_candidates(candidates, similarity)
    results, values, misses = [], [], 0
    with torch.inference_mode():
        block = torch.empty((min(chunk_size, queries.shape[0]), prepared.shape[0]), dtype=prepared.dtype, device=prepared.device)
        for start in range(0, queries.shape[0], chunk_size):
            chunk = queries[start : start + chunk_size]
            row_scores = scores(chunk, prepared, squared_norms, similarity, out=block[: chunk.shape[0]])
            top = top_k_with_ties_by_index(row_scores, k)
            found = row_scores.gather(1, top)
            if similarity == "l2":
                found = found - (chunk * chunk).sum(-1, keepdim=True)
            results.append(top)
            values.append(found.float().cpu())
            misses += below_resolution(row_scores, k)
    if not results:
        return torch.empty((0, k), dtype=torch.long), torch.empty((0, k), dtype=torch.float32), 0
    return torch.cat(results), torch.cat(values), misses
