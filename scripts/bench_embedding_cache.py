"""Benchmark the on-disk embedding cache: untuned Contrastive-Probe on MedLAMA, cold and warm.

    python scripts/bench_embedding_cache.py [--dataset DIR] [--model minilm] [--device cpu]

Issue 13 §3: a second probe of the same model on full, or on hard after full, reads the names'
and queries' embeddings from disk instead of encoding them again. Four runs through
medprobe.run.run (as `medprobe probe` does), with a cache folder of their own (empty at the start):
full cold (encodes and stores everything), full warm, hard after full (warm), and hard with
--no-cache (the cold reference for hard). Predictions must be identical between the two full runs
and acc@k equal between the two hard runs. Without --dataset it builds the release
(/work/shared/data/medlama) into /tmp/medlama_full once.

Measured 2026-11-23 on this project's 2-core CPU (torch 2.13.0+cpu), MiniLM, float32, while other
people's runs shared the machine (load average ~4: the cold times are about twice those of an idle
machine; the warm ones are mostly search and the results' scoring):

    run              wall       load  enc.names  enc.queries  search   hits/misses   acc@1  acc@10
    full cold       224.8 s     0.7 s    93.2 s   112.3 s    13.7 s        0/41,810    1.49   12.14
    full warm        21.9 s     0.1 s     2.1 s     2.2 s    13.7 s        41,810/0    1.49   12.14
    hard warm        17.3 s     0.1 s     2.0 s     2.2 s     9.8 s        32,834/0    0.07    4.83
    hard no-cache   166.4 s     0.1 s    59.3 s    94.6 s     9.9 s           (off)    0.07    4.83
    full: warm 21.9 s vs cold 224.8 s (10.3x); predictions identical: True
    hard after full: 17.3 s vs 166.4 s without the cache (9.6x); acc@k equal: True
    cache size after the runs: 69.1 MB (bound 2.0 GB)

(22,810 distinct name tokenizations + 19,000 queries on full; hard's 17,505 names and 15,329
queries are all among them. "enc." on a warm run is reading the cache: 69 MB, checksums, index.)
An earlier run, under heavier load, gave the same counts and accuracies (cold 297.7 s, warm 21.0 s).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from medlama_release import built_medlama

from medprobe.contrastive import embedding_cache
from medprobe.run import RunRequest, run

RUNS = (  # (label, config, prober options)
    ("full cold", "full", {}),
    ("full warm", "full", {}),
    ("hard warm", "hard", {}),
    ("hard no-cache", "hard", {"cache": False}),
)


def probe(dataset: str, model: str, device: str, config: str, options: dict, out: Path) -> tuple[float, dict, dict]:
    """(wall seconds, metrics, timings) of one untuned probe; predictions written to out.jsonl."""
    request = RunRequest(
        task="medlama",
        prober="contrastive",
        dataset=dataset,
        config=config,
        model=model,
        device=device,
        prober_options=options,
        task_options={"predictions": str(out.with_suffix(".jsonl"))},
        out=str(out.with_suffix(".json")),
    )
    start = time.perf_counter()
    record = run(request, print_fn=lambda _: None)
    return time.perf_counter() - start, record.metrics, record.timings


def row(label: str, wall: float, metrics: dict, timings: dict) -> str:
    hits, misses = timings.get("embedding_cache_hits"), timings.get("embedding_cache_misses")
    counts = "(off)" if hits is None else f"{hits:,}/{misses:,}"
    phases = [timings.get(phase, 0.0) for phase in ("load_model", "encode_candidates", "encode_queries", "search")]
    return (
        f"{label:13s} {wall:7.1f} s  "
        + "  ".join(f"{seconds:6.1f} s" for seconds in phases)
        + f"  {counts:>14s}  {100 * metrics['acc@1']:6.2f}  {100 * metrics['acc@10']:6.2f}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", help="a built MedLAMA folder (default: build the release into /tmp/medlama_full)")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    dataset = built_medlama(args.dataset)
    with tempfile.TemporaryDirectory(prefix="bench-embedding-cache-") as scratch:
        root = Path(scratch) / "cache"
        os.environ["MEDPROBE_EMBEDDING_CACHE"] = str(root)  # an empty cache of its own: the first run is cold
        results, lines = {}, []
        for label, config, options in RUNS:
            out = Path(scratch) / label.replace(" ", "_")
            results[label] = probe(dataset, args.model, args.device, config, options, out)
            lines.append(row(label, *results[label]))
            print(
                f"{label}: done in {results[label][0]:.1f} s, cache {embedding_cache.describe_size(embedding_cache.cache_size(root))}",
                flush=True,
            )
        same_full = Path(scratch, "full_cold.jsonl").read_bytes() == Path(scratch, "full_warm.jsonl").read_bytes()
        size = embedding_cache.cache_size(root)
    header = "run              wall       load  enc.names  enc.queries  search   hits/misses   acc@1  acc@10"
    print("\n".join([header, *lines]))
    full_cold, full_warm = results["full cold"], results["full warm"]
    hard_warm, hard_off = results["hard warm"], results["hard no-cache"]
    print(
        f"full: warm {full_warm[0]:.1f} s vs cold {full_cold[0]:.1f} s ({full_cold[0] / full_warm[0]:.1f}x); predictions identical: {same_full}"
    )
    print(
        f"hard after full: {hard_warm[0]:.1f} s vs {hard_off[0]:.1f} s without the cache ({hard_off[0] / hard_warm[0]:.1f}x); "
        f"acc@k equal: {hard_warm[1] == hard_off[1]}"
    )
    print(
        f"cache size after the runs: {embedding_cache.describe_size(size)} (bound {embedding_cache.describe_size(embedding_cache.max_bytes())})"
    )


if __name__ == "__main__":
    sys.exit(main())
