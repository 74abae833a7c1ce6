"""Benchmark 1 vs 2 processes (torchrun): the untuned full MedLAMA Contrastive-Probe and DisKnE on 2 diseases.

    python scripts/bench_distributed.py [--part medlama|disknE|both] [--model minilm] [--epochs 1] [--diseases 2] [--nproc 2]

Each run is `medprobe probe ...` as a subprocess: once as one plain process, once under
`torchrun --standalone --nproc_per_node N` (CPU processes, gloo). The wall time is the
subprocess's (start-up, model load and writing included). The results are compared: MedLAMA's
predictions files byte for byte, DisKnE's per-disease records (less their seconds) and metrics.
The 1-process run keeps torch's default threads (all cores); torchrun gives each process one.

- medlama: the release (/work/shared/data/medlama) built once into /tmp/medlama_full (or
  --medlama DIR), config full, `--prober contrastive --model minilm --no-cache`, no rewiring.
- disknE: MedNLI is credentialed and not here, so the text is synthetic (tests/synthetic_disknE.py
  writes made-up MedNLI / MEDIQA-NLI / MRCONSO lines for the pair ids of the real annotation files
  in /work/shared/data/disknE), built once into /tmp/disknE_synthetic_built (or --disknE DIR);
  terminological_similar, `--diseases 2 --seeds 1 --epochs E --prober pair-classifier --model
  minilm`: 2 whole trainings, one per process.

Measured 2026-11-23 on the shared 2-core CPU (torch 2.13.0+cpu), `python scripts/bench_distributed.py
--part disknE --epochs 1` (MiniLM, synthetic text, terminological_similar, 2 diseases x 1 seed):

    run                           1 process   2 processes   ratio  results
    DisKnE 2 diseases, 1 epochs     347.5 s       132.5 s   2.62x  per-disease records equal

and `python scripts/bench_distributed.py --part medlama` (MiniLM, 22,810 names and 19,000 queries
of MedLAMA full, --no-cache), with nothing else running:

    run                                   1 process   2 processes   ratio  results
    MedLAMA full, contrastive (untuned)     129.6 s       127.0 s   1.02x  predictions bytes equal

More than 2x on 2 cores: the 1-process run spends much of its time synchronising torch's 2
threads on small operations (another benchmark was using the CPU at the same time, which makes
that worse), while each launched process runs one thread. Read it as "the jobs split and the
records match", not as a speed-up to expect. MedLAMA's 1.02x is what 2 cores allow: the 1-process
encoder already runs one batch per core.

What a 4-GPU run would do (`accelerate launch --num_processes 4 -m medprobe.cli probe ...` or
`torchrun --nproc_per_node 4 ...`; not run here, there is no GPU): each process gets cuda:<local
rank> (`medprobe.models.resolve_device`), DisKnE's (seed, disease) jobs are split 4 ways as whole
contiguous shares (a 3-seed run of 39 diseases: 117 trainings, 30/29/29/29 per GPU), each trained
by a single-process Trainer pinned to its GPU (`distributed.local_training`,
`distributed.pin_training_device`), so the wall time is about that of the largest share, ~1/4 of
one GPU's; MedLAMA's name and query batches are spread over the 4 GPUs and the rankings gathered;
the records are the 1-process ones (same seeds, same jobs). On 2 CPU cores the gain is small: the
1-process run already uses both cores through torch's threads.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from medlama_release import built_medlama
from phases import Phases

# phases of a results file's timings that another one holds (not shown: the shares would count them twice),
# and timings that are not phases
NOT_PHASES = ("probe", "per_disease_mean", "embedding_cache_hits", "embedding_cache_misses")

REPO_ROOT = Path(__file__).resolve().parents[1]
DISKNE_ANNOTATIONS = "/work/shared/data/disknE/annotation_files"
DISKNE_BUILT = "/tmp/disknE_synthetic_built"


def environment() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    return {
        **os.environ,
        "PYTHONPATH": path,
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }


def medprobe(args: list[str], nproc: int) -> float:
    """Wall seconds of `medprobe ARGS` as one process (nproc 1) or `nproc` torchrun processes."""
    if nproc == 1:
        command = [sys.executable, "-m", "medprobe.cli", *args]
    else:
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            str(nproc),
            "-m",
            "medprobe.cli",
            *args,
        ]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO_ROOT, env=environment(), capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    return seconds


def built_disknE(folder: str | None) -> str:
    """A DisKnE build with synthetic text for the real annotation files (MedNLI is credentialed)."""
    if folder:
        return folder
    if not Path(DISKNE_BUILT).exists():
        with tempfile.TemporaryDirectory(prefix="bench-disknE-data-") as data:
            subprocess.run(
                [sys.executable, str(REPO_ROOT / "tests" / "synthetic_disknE.py"), DISKNE_ANNOTATIONS, data],
                check=True,
                env=environment(),
            )
            subprocess.run(
                [sys.executable, "-m", "medprobe.cli", "build", "disknE", "--data-dir", data, "--out", DISKNE_BUILT],
                check=True,
                env=environment(),
            )
    return DISKNE_BUILT


def bench_medlama(dataset: str, model: str, nproc: int, out: Path) -> tuple[float, float, bool]:
    """(1-process s, N-process s, predictions bytes equal) of the untuned full MedLAMA probe."""
    seconds = {}
    for n in (1, nproc):
        # --no-cache: both runs encode (the embedding cache would let the second read the first's vectors)
        args = [
            "probe",
            "--dataset",
            dataset,
            "--config",
            "full",
            "--prober",
            "contrastive",
            "--model",
            model,
            "--no-cache",
            "--device",
            "cpu",
            "--out",
            str(out / f"medlama_{n}.json"),
            "--predictions",
            str(out / f"medlama_{n}.jsonl"),
        ]
        seconds[n] = medprobe(args, n)
        print(record_phases(out / f"medlama_{n}.json", f"MedLAMA, {n} process(es): time per phase"), flush=True)
    same = (out / "medlama_1.jsonl").read_bytes() == (out / f"medlama_{nproc}.jsonl").read_bytes()
    return seconds[1], seconds[nproc], same


def record_phases(path: Path, title: str) -> str:
    """The phases of a results file's timings, with items per second where the counts say how many."""
    record = json.loads(path.read_text())
    counts = record.get("counts", {})
    items = {
        "encode_candidates": (counts.get("candidates"), "name"),
        "encode_queries": (counts.get("queries"), "query"),
        "search": (counts.get("queries"), "query"),
        "score": (counts.get("queries"), "query"),
    }
    phases = Phases()
    for name, seconds in record.get("timings", {}).items():
        if name not in NOT_PHASES and isinstance(seconds, (int, float)):
            phases.add(name, seconds, *items.get(name, (None, "item")))
    return phases.report(title)


def disease_records(path: Path) -> tuple[dict, dict]:
    record = json.loads(path.read_text())
    per_group = {cui: {k: v for k, v in values.items() if k != "seconds"} for cui, values in record["per_group"].items()}
    return per_group, record["metrics"]


def bench_disknE(dataset: str, model: str, diseases: int, epochs: float, nproc: int, out: Path) -> tuple[float, float, bool]:
    """(1-process s, N-process s, per-disease records and metrics equal) of DisKnE on the first `diseases`."""
    seconds = {}
    for n in (1, nproc):
        args = [
            "probe",
            "--dataset",
            dataset,
            "--config",
            "terminological_similar",
            "--prober",
            "pair-classifier",
            "--model",
            model,
            "--diseases",
            str(diseases),
            "--epochs",
            str(epochs),
            "--device",
            "cpu",
            "--out",
            str(out / f"disknE_{n}.json"),
        ]
        seconds[n] = medprobe(args, n)
        print(record_phases(out / f"disknE_{n}.json", f"DisKnE, {n} process(es): time per phase"), flush=True)
    same = disease_records(out / "disknE_1.json") == disease_records(out / f"disknE_{nproc}.json")
    return seconds[1], seconds[nproc], same


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["medlama", "disknE", "both"], default="both")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--epochs", type=float, default=1, help="DisKnE's epochs per disease")
    parser.add_argument("--diseases", type=int, default=2, help="DisKnE's diseases (one training each, 1 seed)")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--medlama", help="a built MedLAMA folder (default: build the release into /tmp/medlama_full)")
    parser.add_argument(
        "--disknE", help="a built DisKnE folder (default: synthetic text, built into /tmp/disknE_synthetic_built)"
    )
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-distributed-") as folder:
        out = Path(folder)
        if args.part in ("medlama", "both"):
            rows.append(
                (
                    "MedLAMA full, contrastive (untuned)",
                    "predictions bytes",
                    *bench_medlama(built_medlama(args.medlama, environment()), args.model, args.nproc, out),
                )
            )
        if args.part in ("disknE", "both"):
            label = f"DisKnE {args.diseases} diseases, {args.epochs:g} epochs"
            dataset = built_disknE(args.disknE)
            rows.append(
                (label, "per-disease records", *bench_disknE(dataset, args.model, args.diseases, args.epochs, args.nproc, out))
            )
    width = max(len(row[0]) for row in rows)
    print(f"{'run':<{width}}  {'1 process':>10}  {f'{args.nproc} processes':>12}  {'ratio':>6}  results")
    for label, compared, one, many, same in rows:
        print(
            f"{label:<{width}}  {one:>8.1f} s  {many:>10.1f} s  {one / many:>5.2f}x  {compared} {'equal' if same else 'DIFFER'}"
        )


if __name__ == "__main__":
    main()
