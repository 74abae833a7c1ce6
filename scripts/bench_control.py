"""What the prompt-bias control costs a run (issue 39: <= 5% of a plain run): `medprobe probe` on MedLAMA with and
without the control, each from a cold embedding cache, and the cost of the control's own rank call as the run records
it (`timings.facet_queries`).

    python scripts/bench_control.py --dataset /tmp/medlama [--config hard] [--model minilm] [--base CHECKOUT]

With --base (a checkout of medprobe before the facets, e.g. `git archive` of the commit branched from), the plain run
is that checkout's; else it is this one's with --no-control. Runs alternate (plain, control, plain, control, ...) so
that a machine shared with other work loads both alike; the load average is printed before and after each, and the
prober's own phase timings (encoding names and queries, the search) beside the wall time, which the other work on
the machine inflates. The predictions of the two must be the same file.
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

REPO_ROOT = Path(__file__).resolve().parents[1]
PHASES = ("probe", "encode_candidates", "encode_queries", "search", "facet_queries", "intervals")


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def probe(checkout: Path, args: argparse.Namespace, out: Path, control: bool | None) -> dict:
    """One `medprobe probe` run from `checkout`, cold embedding cache; its record and wall seconds."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env["HF_EVALUATE_OFFLINE"] = "1"
    env["MEDPROBE_EMBEDDING_CACHE"] = str(out.parent / f"cache-{out.stem}")
    command = [sys.executable, "-m", "medprobe", "probe", "--prober", "contrastive", "--dataset", args.dataset]
    command += [
        "--config",
        args.config,
        "--model",
        args.model,
        "--out",
        str(out),
        "--predictions",
        str(out.with_suffix(".jsonl")),
    ]
    if control is False:
        command.append("--no-control")
    before = load_average()
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    record = json.loads(out.read_text(encoding="utf-8"))
    return {"wall": wall, "load": f"{before} -> {load_average()}", "timings": record["timings"], "metrics": record["metrics"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="a MedLAMA folder (medprobe build medlama ...)")
    parser.add_argument("--config", default="hard")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--base", help="a checkout of medprobe before the facets: its run is the plain one")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for repeat in range(args.repeats):
            plain = probe(
                Path(args.base) if args.base else REPO_ROOT, args, folder / f"plain{repeat}.json", None if args.base else False
            )
            control = probe(REPO_ROOT, args, folder / f"control{repeat}.json", True)
            same = (folder / f"plain{repeat}.jsonl").read_bytes() == (folder / f"control{repeat}.jsonl").read_bytes()
            for name, run in (("plain", plain), ("control", control)):
                phases = "  ".join(f"{p} {run['timings'][p]:.1f}" for p in PHASES if p in run["timings"])
                print(f"{name:<8} wall {run['wall']:7.1f} s  load {run['load']}  |  {phases}")
            cost = control["timings"].get("facet_queries", 0.0)
            print(
                f"control's own rank call: {cost:.2f} s = {100 * cost / plain['timings']['probe']:.2f}% of the plain run's probe "
                f"({100 * cost / plain['wall']:.2f}% of its wall); predictions the same: {same}; "
                f"acc@10 {plain['metrics']['acc@10']:.4f} vs {control['metrics']['acc@10']:.4f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
