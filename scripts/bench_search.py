"""Contrastive-Probe's exact search against its floor, on MedLAMA's shapes.

    python scripts/bench_search.py                       # 19,000 queries x 22,810 names x 384 (MiniLM), top 10

The search (medprobe.contrastive.search.search) is a chunked matrix product into one reused block,
followed by a top-k whose ties always go to the earlier name. Its floor is the same matrix product
into the same reused block and a plain `torch.topk` on the same chunks: nothing exact can do less.
The benchmark prints both, and the tie-breaking's share; a search much above its floor is a
regression. Random vectors: the time does not depend on the values.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from phases import Phases  # noqa: E402

from medprobe.contrastive.search import search  # noqa: E402


def floor(queries: torch.Tensor, names: torch.Tensor, k: int, chunk: int, topk: bool) -> float:
    """Seconds of the matrix product (and, with `topk`, torch.topk) on the search's chunks."""
    unit = F.normalize(names, dim=-1)
    block = torch.empty((chunk, names.shape[0]))  # one block reused, as the search does: no fresh pages per chunk
    start = time.perf_counter()
    with torch.inference_mode():
        for first in range(0, queries.shape[0], chunk):
            part = queries[first : first + chunk]
            scores = torch.mm(F.normalize(part, dim=-1), unit.T, out=block[: part.shape[0]])
            if topk:
                scores.topk(k, dim=1)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=19_000)
    parser.add_argument("--names", type=int, default=22_810)
    parser.add_argument("--width", type=int, default=384)
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=512, help="queries scored at once (the search's default)")
    parser.add_argument("--repeats", type=int, default=3, help="best of N (default: 3)")
    args = parser.parse_args()
    generator = torch.Generator().manual_seed(0)
    queries = torch.randn(args.queries, args.width, generator=generator)
    names = torch.randn(args.names, args.width, generator=generator)
    search(queries[:64], names, args.k)  # warm-up

    best = {"matmul": [], "matmul + topk (floor)": [], "search (exact, ties by index)": []}
    for _ in range(args.repeats):
        best["matmul"].append(floor(queries, names, args.k, args.chunk, topk=False))
        best["matmul + topk (floor)"].append(floor(queries, names, args.k, args.chunk, topk=True))
        start = time.perf_counter()
        search(queries, names, args.k, chunk_size=args.chunk)
        best["search (exact, ties by index)"].append(time.perf_counter() - start)
    phases = Phases()
    for name, seconds in best.items():
        phases.add(name, min(seconds), args.queries, "query")
    print(f"{args.queries:,} queries x {args.names:,} names x {args.width}, top {args.k}; {torch.get_num_threads()} threads")
    print(phases.report(f"best of {args.repeats} (shares are of the three rows together)"))
    search_s, floor_s = min(best["search (exact, ties by index)"]), min(best["matmul + topk (floor)"])
    print(f"search vs floor: {search_s:.2f} s vs {floor_s:.2f} s ({search_s / floor_s:.2f}x)")


if __name__ == "__main__":
    main()
