"""Speed and memory of Contrastive-Probe, printed side by side with their baselines.

    python scripts/bench_contrastive.py --dataset out/medlama --config full --model minilm \
        --rewire-corpus ../shared/data/medlama/elicit_corpora/pubmed_sents_no_punkt_10k_0

1. The end-to-end untuned probe, run as the real command (`medprobe probe`) in a child process:
   wall time and peak memory (RSS), with the encoding and search times from its results file.
2. Encoding throughput (texts/s) of queries and candidate names, against the naive way (one
   text per forward pass, on a sample) and the released code's way (batches of 128 padded to
   50 / 25 tokens, on a sample).
3. Rewiring steps/s at batch 192 through the Trainer, against the released code's way (both
   sides padded to 48 word pieces, one forward pass per side).

Run it alone on the machine (`flock /work/heavy.lock python scripts/bench_contrastive.py ...`).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from datasets import load_dataset
from transformers import TrainerCallback

sys.path.insert(0, str(Path(__file__).resolve().parent))
from phases import Phases  # noqa: E402

from medprobe.contracts import fill_mask_slot
from medprobe.contrastive import ContrastiveProbe, InfoNCELoss, build_pairs, rewiring_arguments
from medprobe.contrastive.encoding import tokenize_keeping_mask, tokenize_truncated
from medprobe.contrastive.pairs import read_sentences
from medprobe.contrastive.rewiring import train_pairs
from medprobe.tasks.medlama import answer_space


def end_to_end(args: argparse.Namespace, out: Path) -> dict:
    """`medprobe probe` in a child process: wall time, peak RSS, and the phase times it recorded."""
    command = [
        sys.executable,
        "-m",
        "medprobe.cli",
        "probe",
        "--dataset",
        args.dataset,
        "--config",
        args.config,
        "--prober",
        "contrastive",
        "--model",
        args.model,
        "--out",
        str(out),
    ]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # Linux: KiB
    record = json.loads(out.read_text())
    return {"wall": wall, "peak_gib": peak_kib / 2**20, "record": record}


def phase_report(timings: dict, counts: dict, wall: float) -> str:
    """The run's recorded phases with items/s; what is left of the wall time is start-up, imports and exit."""
    items = {
        "encode_candidates": (counts["candidates"], "name"),
        "encode_queries": (counts["queries"], "query"),
        "search": (counts["queries"], "query"),
        "probe": (counts["queries"], "query"),
    }
    phases = Phases()
    for name in ("load_dataset", "load_model", "encode_candidates", "encode_queries", "search", "score", "intervals"):
        if name in timings:
            phases.add(name, timings[name], *items.get(name, (None, "item")))
    recorded = sum(phase.seconds for phase in phases.done)
    phases.add("imports, start-up, writing, exit", max(0.0, wall - recorded))
    return phases.report(f"time per phase (wall {wall:.1f} s)")


def per_text(model, sequences: list[list[int]]) -> float:
    """Seconds to encode the sequences one text per forward pass (no padding at all)."""
    start = time.perf_counter()
    with torch.inference_mode():
        for ids in sequences:
            model(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long))
    return time.perf_counter() - start


def padded(model, tokenizer, texts: list[str], max_length: int, batch_size: int = 128) -> float:
    """Seconds to encode the texts as the released code did: fixed batches padded to max_length."""
    start = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(texts), batch_size):
            batch = tokenizer(
                texts[i : i + batch_size], padding="max_length", max_length=max_length, truncation=True, return_tensors="pt"
            )
            model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    return time.perf_counter() - start


def released_rewiring_steps(probe: ContrastiveProbe, pairs, steps: int, batch_size: int) -> float:
    """Seconds per step of the released loop: both sides padded to 48, one forward pass each, AdamW."""
    model, tokenizer = probe.model, probe.tokenizer
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01)
    loss_fn = InfoNCELoss(0.04)
    times = []
    for step in range(steps + 1):  # the first step warms up and is not counted
        batch = pairs[step * batch_size : (step + 1) * batch_size]
        start = time.perf_counter()
        sides = []
        for texts in ([p.masked for p in batch], [p.span for p in batch]):
            encoded = tokenizer(texts, padding="max_length", max_length=48, truncation=True, return_tensors="pt")
            sides.append(model(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"]).last_hidden_state[:, 0])
        loss = loss_fn(*sides)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step:
            times.append(time.perf_counter() - start)
    model.eval()
    return sum(times) / len(times)


class StepClock(TrainerCallback):
    """Wall time of every optimizer step of a Trainer run."""

    def __init__(self):
        self.seconds: list[float] = []

    def on_step_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.seconds.append(time.perf_counter() - self.start)


def row(label: str, items: int, seconds: float, baseline: float | None = None) -> str:
    ratio = f"{baseline / seconds:8.1f}x" if baseline else f"{'':>9}"
    return f"{label:<44} {items:>8,} {seconds:>9.2f} {items / seconds:>10.1f} {ratio}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="a built MedLAMA folder (medprobe build medlama --out DIR)")
    parser.add_argument("--config", default="full")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--sample", type=int, default=400, help="texts per baseline measurement (default: 400)")
    parser.add_argument("--rewire-corpus", help="sentences for the rewiring measurement (skipped without)")
    parser.add_argument("--rewire-steps", type=int, default=3, help="timed rewiring steps per method (default: 3)")
    parser.add_argument("--rewire-batch-size", type=int, default=192)
    args = parser.parse_args()
    torch.manual_seed(0)

    with tempfile.TemporaryDirectory() as scratch:
        e2e = end_to_end(args, Path(scratch) / "results.json")
    timings, counts = e2e["record"]["timings"], e2e["record"]["counts"]
    print(f"\n== untuned probe, {args.model} on {args.dataset} ({args.config}): `medprobe probe` end to end")
    print(f"wall {e2e['wall']:.1f} s (target <= 120 s), peak RSS {e2e['peak_gib']:.2f} GiB (target < 1.5 GiB)")
    print(phase_report(timings, e2e["record"]["counts"], e2e["wall"]))

    ds = load_dataset(args.dataset, args.config, split="test")
    names, queries = answer_space(ds), list(ds["query"])
    probe = ContrastiveProbe.from_pretrained(args.model, show_progress=False)
    tokenizer, model = probe.tokenizer, probe.model
    rng = random.Random(0)
    name_sample, query_sample = rng.sample(names, args.sample), rng.sample(queries, args.sample)
    filled = [fill_mask_slot(q, probe.mask_token) for q in query_sample]
    per_text(model, tokenize_truncated(tokenizer, name_sample[:10], 25))  # warm-up
    naive_names = per_text(model, tokenize_truncated(tokenizer, name_sample, 25)) / args.sample
    naive_queries = per_text(model, tokenize_keeping_mask(tokenizer, filled, 50)) / args.sample
    padded_names = padded(model, tokenizer, name_sample, 25) / args.sample
    padded_queries = padded(model, tokenizer, filled, 50) / args.sample

    print(f"\n== encoding and search (baselines measured on {args.sample} random texts, per text)")
    print(f"{'':<44} {'texts':>8} {'seconds':>9} {'texts/s':>10} {'vs naive':>9}")
    n_names, n_queries = counts["candidates"], counts["queries"]
    print(row("names: batched, length-sorted, dynamic pad", n_names, timings["encode_candidates"], naive_names * n_names))
    print(row("names: released way (padded to 25, x128)", n_names, padded_names * n_names, naive_names * n_names))
    print(row("names: naive (one text per forward pass)", n_names, naive_names * n_names, naive_names * n_names))
    print(row("queries: batched, length-sorted, dynamic pad", n_queries, timings["encode_queries"], naive_queries * n_queries))
    print(row("queries: released way (padded to 50, x128)", n_queries, padded_queries * n_queries, naive_queries * n_queries))
    print(row("queries: naive (one text per forward pass)", n_queries, naive_queries * n_queries, naive_queries * n_queries))
    print(f"search: {n_queries:,} x {n_names:,} exact top-10 in {timings['search']:.2f} s")

    if args.rewire_corpus:
        pairs, _ = build_pairs(read_sentences(args.rewire_corpus), probe.mask_token, seed=33)
        needed = (args.rewire_steps + 1) * args.rewire_batch_size
        released = released_rewiring_steps(probe, pairs[:needed], args.rewire_steps, args.rewire_batch_size)
        clock = StepClock()
        with tempfile.TemporaryDirectory() as scratch:
            training = rewiring_arguments(
                scratch,
                max_steps=args.rewire_steps + 1,
                use_cpu=True,
                disable_tqdm=True,
                per_device_train_batch_size=args.rewire_batch_size,
                logging_steps=1000,
            )
            train_pairs(probe.model, tokenizer, pairs, training, forward_batch_size=probe.batch_size, callbacks=[clock])
        ours = sum(clock.seconds[1:]) / len(clock.seconds[1:])  # the first step warms up and is not counted
        print(f"\n== rewiring, batch {args.rewire_batch_size} ({args.rewire_steps} timed steps each)")
        print(f"{'':<44} {'s/step':>9} {'steps/s':>10} {'speed-up':>9}")
        print(f"{'released way (padded to 48, 2 passes)':<44} {released:>9.2f} {1 / released:>10.3f}")
        print(f"{'Trainer, length-sorted chunks, dynamic pad':<44} {ours:>9.2f} {1 / ours:>10.3f} {released / ours:>8.1f}x")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"\n(peak RSS of this benchmark process, baselines and rewiring included: {peak:.2f} GiB)")


if __name__ == "__main__":
    main()
