"""Benchmark `--dtype`: the untuned full MedLAMA Contrastive-Probe with MiniLM, float32 vs bfloat16.

    python scripts/bench_dtype.py [--dataset DIR] [--model minilm] [--device cpu]

Issue 13's goal: bfloat16 <= 60 s at acc@10 within 0.1 point of float32 (float32 was 88.8 s).
Without --dataset it builds the release (/work/shared/data/medlama) into /tmp/medlama_full once.
Both runs go through medprobe.run.run, as `medprobe probe` does; results files go to a temp folder.

Measured 2026-11-23 on this 2-core AMD EPYC CPU (avx2 only: no avx512, no bf16 or AMX instructions;
torch 2.13.0+cpu), both in one run of this script under `nice -n 19` beside other work:

    python scripts/bench_dtype.py --dataset /tmp/medlama_full
    float32   wall   213.9 s  acc@1   1.49  acc@10  12.14
    bfloat16  wall  1637.0 s  acc@1   1.48  acc@10  12.12
    bfloat16 - float32: wall +1423.1 s (7.65x), acc@1 -0.01 pt, acc@10 -0.02 pt

bfloat16 keeps the accuracy (acc@10 within 0.1 point) but is 7.7x slower: without bf16 instructions
torch converts every bf16 matmul (a 384 x 1536 linear: 40 ms float32, 270-310 ms bfloat16). So `auto`
stays float32 on CPU; on a GPU with bf16 (or a CPU with AMX / avx512_bf16) `auto` or `--dtype bfloat16`
is where it pays. (float32 alone on an idle machine: 88.8-117 s.)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from medlama_release import built_medlama
from phases import Phases

from medprobe.run import RunRequest, run

# the run's timings, in order, with what each phase handles (None: no count)
PHASES = (
    ("load_dataset", None),
    ("load_model", None),
    ("encode_candidates", "name"),
    ("encode_queries", "query"),
    ("search", "query"),
    ("score", "query"),
    ("intervals", None),
)


def phase_report(dtype: str, timings: dict, counts: dict) -> str:
    """The run's phases with items per second (scripts/phases.py)."""
    phases = Phases()
    items = {"name": counts.get("candidates"), "query": counts.get("queries")}
    for name, unit in PHASES:
        if name in timings:
            phases.add(name, timings[name], items.get(unit) if unit else None, unit or "item")
    return phases.report(f"{dtype}: time per phase")


def probe(dataset: str, model: str, device: str, dtype: str, out: Path) -> tuple[float, dict, dict, dict]:
    """(wall seconds, metrics, timings, counts) of one untuned full probe in `dtype` (the embedding cache off:
    the encoding is what is measured)."""
    request = RunRequest(
        task="medlama",
        prober="contrastive",
        dataset=dataset,
        config="full",
        model=model,
        device=device,
        prober_options={"dtype": dtype, "cache": False},
        out=str(out / f"{dtype}.json"),
    )
    start = time.perf_counter()
    record = run(request, print_fn=lambda _: None)
    return time.perf_counter() - start, record.metrics, record.timings, record.counts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", help="a built MedLAMA folder (default: build the release into /tmp/medlama_full)")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    dataset = built_medlama(args.dataset)
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-dtype-") as out:
        for dtype in ("float32", "bfloat16"):
            results[dtype] = probe(dataset, args.model, args.device, dtype, Path(out))
            wall, metrics, timings, counts = results[dtype]
            print(
                f"{dtype:9s} wall {wall:7.1f} s  acc@1 {100 * metrics['acc@1']:6.2f}  acc@10 {100 * metrics['acc@10']:6.2f}",
                flush=True,
            )
            print(phase_report(dtype, timings, counts), flush=True)
    (w32, m32, *_), (w16, m16, *_) = results["float32"], results["bfloat16"]
    print(
        f"bfloat16 - float32: wall {w16 - w32:+.1f} s ({w16 / w32:.2f}x), acc@1 {100 * (m16['acc@1'] - m32['acc@1']):+.2f} pt, "
        f"acc@10 {100 * (m16['acc@10'] - m32['acc@10']):+.2f} pt"
    )
    print(
        f"goal (bf16 <= 60 s, |d acc@10| <= 0.1 pt): {'met' if w16 <= 60 and abs(m16['acc@10'] - m32['acc@10']) <= 0.001 else 'not met'}"
    )


if __name__ == "__main__":
    sys.exit(main())
