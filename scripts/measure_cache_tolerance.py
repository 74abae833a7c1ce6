"""How far apart two encodings of the same text by the same model on the same device are: the tolerance of
`medprobe cache verify` (medprobe.contrastive.cache_verify.TOLERANCE).

    python scripts/measure_cache_tolerance.py [--model minilm] [--device cpu] [--dtype float32]

A cached vector was encoded in the batches of the run that stored it (batch size 128 by default, length-sorted,
padded to each batch's longest text); `cache verify` re-encodes a sample in batches of its own. Padding and
batch companions change the kernels' summation order, so the same text gives vectors that differ in their last
bits. This encodes the shipped MedLAMA sample's queries and names, and the demo's rewiring sentences as names,
once as a probe stores them and again in other batches (sizes 1, 3, 17, 64; shuffled input order), through the
prober's own path (ContrastiveProbe._encode_all), and prints per vector the relative L2 difference
||stored - again|| / ||again||: the largest over all re-encodings is what run-to-run noise reaches. Beside it,
the smallest relative L2 distance between the vectors of two different texts: how far a forged vector is at
the least when it is another text's vector of the same model (another model's or random ones are much farther).
"""

from __future__ import annotations

import argparse
import json
import random
from importlib import resources

import torch

from medprobe.contracts import fill_mask_slot
from medprobe.contrastive import ContrastiveProbe
from medprobe.contrastive.encoding import tokenize_keeping_mask, tokenize_truncated


def texts() -> tuple[list[str], list[str]]:
    """(queries, names) of the shipped sample, names with the rewiring sentences."""
    data = resources.files("medprobe") / "demo_data"
    rows = [json.loads(line) for line in (data / "medlama_sample" / "full" / "test.jsonl").read_text().splitlines()]
    names = sorted({row["head_name"] for row in rows} | {answer for row in rows for answer in row["answers"]})
    sentences = (data / "rewiring_sentences.txt").read_text().splitlines()
    return [row["query"] for row in rows], names + [line for line in sentences if line.strip()]


def relative(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a - b).norm(dim=1) / b.norm(dim=1).clamp_min(1e-12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()
    probe = ContrastiveProbe.from_pretrained(args.model, device=args.device, dtype=args.dtype, cache=False, show_progress=False)
    queries, names = texts()
    tokenizer = probe.tokenizer
    sequences = tokenize_keeping_mask(tokenizer, [fill_mask_slot(q, probe.mask_token) for q in queries], 50)
    sequences += tokenize_truncated(tokenizer, names, 25)
    sequences = list(dict.fromkeys(map(tuple, sequences)))
    probe.batch_size = 128
    stored = probe._encode_all(sequences, "stored")
    worst = 0.0
    for batch_size in (1, 3, 17, 64, 128):
        for shuffled in (False, True):
            order = list(range(len(sequences)))
            if shuffled:
                random.Random(batch_size).shuffle(order)
            probe.batch_size = batch_size
            again = torch.empty_like(stored)
            again[torch.tensor(order)] = probe._encode_all([sequences[i] for i in order], "again")
            diff = relative(stored, again)
            worst = max(worst, float(diff.max()))
            print(f"batch {batch_size:4d} {'shuffled' if shuffled else 'in order'}: relative L2 max {float(diff.max()):.2e}")
    distances = torch.cdist(stored, stored) / stored.norm(dim=1, keepdim=True)
    distances.fill_diagonal_(float("inf"))
    print(f"{len(sequences)} texts, {probe.model_name} {args.dtype} on {args.device}: run-to-run at most {worst:.2e}")
    print(f"two different texts at least {float(distances.min()):.2e} apart (relative L2)")


if __name__ == "__main__":
    main()
