"""Throughput of the MRCONSO.RRF reader behind `medprobe umls-names` and the DisKnE build.

Writes a synthetic MRCONSO.RRF (made-up rows in the real 18-field layout; 1 row in 1,000 belongs
to a wanted CUI, as a few hundred disease CUIs are among millions), then times:
- `read_mrconso`: compares the CUI prefix of each raw line and decodes only wanted lines;
- a naive reader that decodes and splits every line, for the ratio.
MRCONSO of a full UMLS release is about 2 GB; the last line extrapolates to that size.

    python scripts/bench_umls_names.py [--lines 2000000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from phases import Phases  # noqa: E402

from medprobe.resources import load_builder_module  # noqa: E402


def write_mrconso(path: Path, lines: int, wanted_every: int = 1000) -> set[str]:
    wanted = set()
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(lines):
            cui = f"C{i // 8:07d}"
            if i % wanted_every == 0:
                wanted.add(cui)
            lat = "ENG" if i % 3 else "FRE"
            fields = [
                cui,
                lat,
                "S",
                "L0000001",
                "VO",
                "S0000001",
                "N",
                f"A{i:08d}",
                "",
                str(10_000 + i),
                "",
                "SNOMEDCT_US",
                "SY",
                str(10_000 + i),
                f"made-up name number {i} of a concept",
                "0",
                "N",
                "256",
            ]
            handle.write("|".join(fields) + "|\n")
    return wanted


def naive_read(path: Path, cuis: set[str]) -> int:
    kept = 0
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            fields = line.split("|")
            kept += fields[0] in cuis and fields[1] == "ENG"
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2_000_000)
    args = parser.parse_args()
    disknE = load_builder_module("disknE")
    phases = Phases()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "MRCONSO.RRF"
        with phases.phase("write synthetic MRCONSO.RRF", args.lines, "line"):
            cuis = write_mrconso(path, args.lines)
        megabytes = os.path.getsize(path) / 1e6
        with phases.phase("read_mrconso", args.lines, "line"):
            names = disknE.read_mrconso(path, cuis, progress=False)
        with phases.phase("naive reader (for the ratio)", args.lines, "line"):
            naive_kept = naive_read(path, cuis)
    ours, naive = phases.done[1].seconds, phases.done[2].seconds
    kept = sum(map(len, names.values()))
    assert kept == naive_kept, (kept, naive_kept)
    print(
        f"synthetic MRCONSO.RRF: {args.lines:,} lines, {megabytes:,.0f} MB, {len(cuis):,} wanted CUIs, {kept:,} English names kept"
    )
    print(f"read_mrconso: {ours:.1f} s = {megabytes / ours:,.0f} MB/s, {args.lines / ours / 1e6:.2f} M lines/s")
    print(f"naive (decode and split every line): {naive:.1f} s = {megabytes / naive:,.0f} MB/s; ratio {naive / ours:.1f}x")
    print(f"a 2,000 MB MRCONSO.RRF would take about {2000 / (megabytes / ours):.0f} s")
    print(phases.report())


if __name__ == "__main__":
    main()
