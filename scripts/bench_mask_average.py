"""Benchmark: mask average on the full MedLAMA answer space, one forward pass per candidate length.

Scores every query against all names of the answer space (22,923 for full MedLAMA) with a tiny
randomly initialised BertForMaskedLM (speed only, no knowledge), and prints forward passes per
query and queries/s against the one-pass-per-candidate count it avoids; the per-candidate
approach is also timed on a sample of candidates and extrapolated.

The names are the real answer space when the MedLAMA release is beside the checkout
(../shared/data/medlama, or MEDPROBE_SHARED_DATA); otherwise a synthetic space of 22,923 names
with MedLAMA-like word counts. The tokenizer is bert-base-uncased's vocabulary (from the
packaged MiniLM) when installed, so token lengths are realistic; otherwise a small written one.

    MEDPROBE_SHARED_DATA=/work/shared/data flock /work/heavy.lock python scripts/bench_mask_average.py
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import torch
from transformers import BertConfig, BertForMaskedLM, BertTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from phases import Phases  # noqa: E402

from medprobe.lm.mask_average import MaskAverageProbe  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("MEDPROBE_SHARED_DATA", REPO.parent / "shared" / "data"))
FULL_SPACE = 22_923


def real_queries_and_space(n_queries: int) -> tuple[list[str], list[str], str] | None:
    release = SHARED_DATA / "medlama"
    if not release.exists():
        return None
    from datasets import load_dataset

    from medprobe.building.build import build
    from medprobe.tasks.medlama import answer_space, first_per_group

    with tempfile.TemporaryDirectory() as out:
        build("medlama", out, data_dir=str(release), configs=["full"])
        ds = load_dataset(out, "full", split="test")
        per_relation = -(-n_queries // len(set(ds["relation"])))
        queries = first_per_group(ds, per_relation)["query"][:n_queries]
        return queries, answer_space(ds), f"real MedLAMA full answer space ({release})"


def synthetic_queries_and_space(n_queries: int, words: list[str], seed: int) -> tuple[list[str], list[str], str]:
    rng = random.Random(seed)
    names: set[str] = set()
    while len(names) < FULL_SPACE:  # 1-7 words, most names 2-4 words long, like MedLAMA's
        names.add(" ".join(rng.choice(words) for _ in range(rng.choice([1, 2, 2, 3, 3, 3, 4, 4, 5, 6, 7]))).capitalize())
    queries = [f"{rng.choice(words).capitalize()} {rng.choice(words)} is associated with [Y] ." for _ in range(n_queries)]
    return queries, sorted(names), f"synthetic space of {FULL_SPACE:,} names (no MedLAMA release found)"


def tokenizer_for_bench() -> tuple[BertTokenizer, str]:
    try:
        from medprobe.models import load_tokenizer

        return load_tokenizer("minilm"), "bert-base-uncased vocabulary (packaged MiniLM)"
    except FileNotFoundError:
        words = [f"{a}{b}" for a in "bcdfglmnprstv" for b in ("ab", "ex", "ion", "ase", "oma", "itis", "in", "ol")]
        vocab = (
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "is", "associated", "with"] + words + [f"##{w}" for w in words]
        )
        return BertTokenizer(vocab={token: i for i, token in enumerate(vocab)}), "written vocabulary (MiniLM not installed)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=19, help="queries to score (default: 19, one per relation)")
    parser.add_argument("--batch-size", type=int, default=64, help="inputs per forward pass (default: 64)")
    parser.add_argument("--sample", type=int, default=512, help="candidates timed one pass each for the baseline (default: 512)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    tokenizer, vocabulary = tokenizer_for_bench()
    words = [w for w in tokenizer.get_vocab() if w.isalpha() and len(w) > 3][:5000]
    loaded = real_queries_and_space(args.queries) or synthetic_queries_and_space(args.queries, words, args.seed)
    queries, space, source = loaded
    torch.manual_seed(args.seed)
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128
    )
    probe = MaskAverageProbe(
        BertForMaskedLM(config).eval(), tokenizer, model_name="tiny-random-bert", batch_size=args.batch_size, progress=False
    )
    start = time.perf_counter()
    lengths = {len(ids) for ids in probe.candidate_token_ids(space).values()}  # once per space, then cached
    tokenize_seconds = time.perf_counter() - start
    phases = Phases()
    phases.add("tokenize the answer space", tokenize_seconds, len(space), "name")
    print(f"answer space: {len(space):,} names, {source}")
    print(f"tokenizer: {vocabulary}; distinct candidate lengths: {len(lengths)} (1..{max(lengths)} tokens)")
    print(f"tokenizing the space (once, cached by the probe): {tokenize_seconds:.2f} s")
    print(
        f"model: tiny random BertForMaskedLM (2 layers, 64 wide), {torch.get_num_threads()} CPU threads, batch {args.batch_size}"
    )

    start = time.perf_counter()
    probe.score_candidates(queries, [space] * len(queries))
    seconds = time.perf_counter() - start
    phases.add("mask average (score every name)", seconds, len(queries), "query")
    per_query = probe.forward_passes / len(queries)
    print(f"\nmask average: {len(queries)} queries in {seconds:.2f} s = {len(queries) / seconds:.2f} queries/s")
    print(f"  forward passes per query: {per_query:.1f} (one per distinct candidate length)")
    print(f"  per-candidate scoring would run {len(space):,} forward passes per query")
    print(f"  ratio: {len(space) / per_query:,.0f}x fewer forward passes")

    # the avoided approach, timed: one input row per (query, candidate), batched the same way
    sample = random.Random(args.seed).sample(space, min(args.sample, len(space)))
    token_ids = probe.candidate_token_ids(sample)
    ids, slot = probe.query_ids(queries[0])
    rows = [ids[:slot] + [tokenizer.mask_token_id] * len(token_ids[name]) + ids[slot + 1 :] for name in sample]
    start = time.perf_counter()
    for first in range(0, len(rows), args.batch_size):
        probe.mask_log_probs(rows[first : first + args.batch_size])
    phases.add("per-candidate baseline (sample)", time.perf_counter() - start, len(sample), "candidate")
    naive_seconds = phases.done[-1].seconds / len(sample) * len(space)
    print(f"\nper-candidate baseline: {len(sample)} candidates timed (one input each, batch {args.batch_size}),")
    print(f"  extrapolated: {naive_seconds:.1f} s per query = {1 / naive_seconds:.4f} queries/s")
    print(f"  mask average is {naive_seconds / (seconds / len(queries)):,.0f}x faster")
    print(phases.report())


if __name__ == "__main__":
    main()
