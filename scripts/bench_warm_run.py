"""A warm Contrastive-Probe run of MedLAMA, whole process, phase by phase (issue 25 §2).

    python scripts/bench_warm_run.py [--dataset DIR] [--config full] [--rounds 5]
    python scripts/bench_warm_run.py --against /path/to/other/checkout      # A/B, runs alternate

Runs the `medprobe` program as a user does (`medprobe probe --prober contrastive --task medlama
--model minilm`, MEDPROBE_TIMINGS=1), with an embedding cache of its own that a first, untimed run
fills, so every timed run reads all its vectors from the cache: what is left is imports, reading the
dataset and the cache, the search, scoring, intervals and writing. Prints each timestamp's median and
best over the rounds, the wall time, and whether every run wrote the same predictions bytes. With
--against, the same runs of another checkout (its `medprobe` package first on PYTHONPATH, sharing
the cache, alternating with this one, so that a busy machine slows both alike).

The numbers in docs/scaling.md came from it. On a shared machine take the medians of an A/B run,
not one run's wall time: neighbours' jobs move a 7 s run by a second.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from medlama_release import built_medlama

HERE = Path(__file__).resolve().parent.parent
STAMP = re.compile(r"\[medprobe\s+([\d.]+) s\] (.*)")


def run_once(tree: Path, dataset: str, config: str, cache: Path, out: Path) -> tuple[dict[str, float], str]:
    """({timestamp label: seconds since process start, "wall": seconds}, sha256 of the predictions)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "MEDPROBE_EMBEDDING_CACHE": str(cache),
        "MEDPROBE_TIMINGS": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_EVALUATE_OFFLINE": "1",
    }
    command = [sys.executable, "-m", "medprobe", "probe", "--prober", "contrastive", "--task", "medlama"]
    command += ["--dataset", dataset, "--config", config, "--model", "minilm", "--device", "cpu"]
    command += ["--out", str(out / "results.json"), "--predictions", str(out / "predictions.jsonl")]
    start = time.perf_counter()
    # run from `out`: `python -m` puts the working directory first on sys.path, which would import this checkout's
    # medprobe in place of `tree`'s (an --against run measured the same code twice)
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=out)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{tree}: medprobe probe failed ({done.returncode}):\n{done.stderr[-3000:]}")
    stamps = {label: float(seconds) for seconds, label in STAMP.findall(done.stderr)}
    stamps["wall (measured outside)"] = wall
    return stamps, hashlib.sha256((out / "predictions.jsonl").read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", help="a built MedLAMA folder (default: build the release into /tmp/medlama_full)")
    parser.add_argument("--config", default="full", choices=("full", "hard"))
    parser.add_argument("--rounds", type=int, default=5, help="timed runs of each checkout (default: 5)")
    parser.add_argument("--against", type=Path, help="another checkout to time the same way (A/B)")
    parser.add_argument("--cache", type=Path, help="an embedding cache folder to use (default: a new one; its first run encodes)")
    args = parser.parse_args(argv)
    dataset = built_medlama(args.dataset)
    trees = {"this": HERE, **({"against": args.against.resolve()} if args.against else {})}
    with tempfile.TemporaryDirectory(prefix="bench-warm-run-") as scratch:
        cache = args.cache or Path(scratch) / "cache"
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        digests: dict[str, set[str]] = {name: set() for name in trees}
        for name, tree in trees.items():  # untimed: fills the cache (and the tokens) of each checkout's space
            (Path(scratch) / name).mkdir()
            print(f"{name}: first run, filling the embedding cache ({tree}) ...", flush=True)
            run_once(tree, dataset, args.config, cache, Path(scratch) / name)
        for round_ in range(args.rounds):
            for name, tree in trees.items():
                stamps, digest = run_once(tree, dataset, args.config, cache, Path(scratch) / name)
                runs[name].append(stamps)
                digests[name].add(digest)
            print(f"round {round_ + 1}/{args.rounds} done", flush=True)
    load = os.getloadavg()
    print(f"\nwarm MedLAMA {args.config}, {args.rounds} rounds, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(
        f"{'seconds since the process started':50s}" + "".join(f"{name + ' median':>15s}{name + ' best':>13s}" for name in trees)
    )
    for label in runs["this"][0]:
        cells = []
        for name in trees:
            values = [stamps[label] for stamps in runs[name] if label in stamps]
            cells.append(f"{statistics.median(values):15.2f}{min(values):13.2f}" if values else " " * 28)
        print(f"{label[:50]:50s}" + "".join(cells))
    every = set().union(*digests.values())
    print(f"predictions: {'the same bytes in every run' if len(every) == 1 else f'{len(every)} different files!'}")


if __name__ == "__main__":
    main()
