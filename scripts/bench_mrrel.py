"""Throughput of the streamed MRREL.RRF and MRCONSO.RRF readers behind `medprobe build medlama --umls-dir`.

Writes a synthetic MRREL.RRF (made-up rows in the real 16-field layout, about 95 bytes a line like
the real file; 1 line in 100 carries one of the 19 MedLAMA relations in a selected source, as about
600,000 of a release's tens of millions do) and a synthetic MRCONSO.RRF (18 fields; 1 line in 10
belongs to a concept of a kept row), then times:
- `read_mrrel`: splits every line as bytes, checks its field count, decodes only the kept rows;
- a naive reader that decodes and splits every line, for the ratio;
- `read_concept_names`: compares each line's CUI prefix and decodes only wanted lines.
A 2025 MRREL.RRF is about 6 GB and MRCONSO.RRF about 2.3 GB; the last lines extrapolate to those
sizes. Peak memory is the process's maximum resident set size after each step.

    python scripts/bench_mrrel.py [--lines 5000000] [--mrconso-lines 2000000] [--kept-every 100]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from phases import Phases  # noqa: E402

from medprobe.resources import load_builder_module  # noqa: E402

MRREL_GB, MRCONSO_GB = 6.0, 2.3
OTHER_RELA = ("", "", "", "", "isa", "inverse_isa", "has_finding_site", "finding_site_of", "mapped_to", "has_part")
OTHER_SAB = ("SNOMEDCT_US", "MSH", "NCI", "MEDCIN", "RXNORM", "MDR", "LNC")


def write_mrrel(path: Path, lines: int, relations: tuple[str, ...], kept_every: int = 100) -> int:
    rng = random.Random(0)
    kept = 0
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(lines):
            if i % kept_every == 0:
                rela, sab = relations[i % len(relations)], ("SNOMEDCT_US", "NCI", "MED-RT")[i % 3]
                kept += 1
            else:
                rela, sab = OTHER_RELA[i % len(OTHER_RELA)], OTHER_SAB[i % len(OTHER_SAB)]
            cui1, cui2 = f"C{rng.randrange(5_000_000):07d}", f"C{rng.randrange(5_000_000):07d}"
            fields = [
                cui1,
                f"A{i:08d}",
                "SCUI",
                "RO",
                cui2,
                f"A{i + 7:08d}",
                "SCUI",
                rela,
                f"R{i:09d}",
                "",
                sab,
                sab,
                str(i % 5),
                "Y",
                "N",
                "256",
            ]
            handle.write("|".join(fields) + "|\n")
    return kept


def write_mrconso(path: Path, lines: int, wanted_every: int = 10) -> tuple[set[str], set[str]]:
    cuis, auis = set(), set()
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(lines):
            cui, aui = f"C{i // 8:07d}", f"A{i:08d}"
            if (i // 8) % wanted_every == 0:
                cuis.add(cui)
                auis.add(aui)
            fields = [
                cui,
                "ENG" if i % 3 else "FRE",
                "P" if i % 8 == 0 else "S",
                "L0000001",
                "PF",
                "S0000001",
                "Y",
                aui,
                "",
                str(10_000 + i),
                "",
                "SNOMEDCT_US",
                "PT",
                str(10_000 + i),
                f"made-up name number {i} of a concept",
                "0",
                "N",
                "256",
            ]
            handle.write("|".join(fields) + "|\n")
    return cuis, auis


def naive_read(path: Path, relations: set[str]) -> int:
    kept = 0
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            kept += line.split("|")[7] in relations
    return kept


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def report(label: str, megabytes: float, seconds: float, lines: int, full_gb: float | None = None) -> None:
    rate = megabytes / seconds
    extra = f"; {full_gb:.1f} GB would take {full_gb * 1000 / rate:.0f} s" if full_gb else ""
    print(f"{label}: {seconds:.2f} s, {rate:.0f} MB/s, {lines / seconds / 1e6:.2f} M lines/s{extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=5_000_000, help="MRREL lines to generate")
    parser.add_argument("--mrconso-lines", type=int, default=2_000_000, help="MRCONSO lines to generate")
    parser.add_argument("--kept-every", type=int, default=100, help="1 MRREL line in this many is kept (memory: try 10)")
    args = parser.parse_args()
    medlama = load_builder_module("medlama")
    with tempfile.TemporaryDirectory() as folder:
        settings = medlama.umls_inputs.umls_settings(medlama.MedlamaConfig(umls_dir=folder))
        mrrel, mrconso = Path(folder) / "MRREL.RRF", Path(folder) / "MRCONSO.RRF"
        phases = Phases()
        with phases.phase("write synthetic MRREL.RRF", args.lines, "line"):
            kept = write_mrrel(mrrel, args.lines, settings.relations, args.kept_every)
        with phases.phase("write synthetic MRCONSO.RRF", args.mrconso_lines, "line"):
            cuis, auis = write_mrconso(mrconso, args.mrconso_lines)
        rel_mb, conso_mb = os.path.getsize(mrrel) / 1e6, os.path.getsize(mrconso) / 1e6
        print(
            f"MRREL.RRF: {args.lines:,} lines, {rel_mb:,.0f} MB ({rel_mb * 1e6 / args.lines:.0f} bytes a line), {kept:,} kept rows"
        )
        before = peak_mb()
        start = time.perf_counter()
        scan = medlama.rrf.read_mrrel(str(mrrel), settings, progress=False)
        ours = time.perf_counter() - start
        phases.add("read_mrrel", ours, args.lines, "line")
        assert sum(len(e) for e in scan.edges.values()) == kept
        report("read_mrrel", rel_mb, ours, args.lines, MRREL_GB)
        print(f"  peak resident memory {peak_mb():,.0f} MB ({peak_mb() - before:+,.0f} MB for {kept:,} kept rows)")
        start = time.perf_counter()
        naive_kept = naive_read(mrrel, set(settings.relations))
        phases.add("naive MRREL reader", time.perf_counter() - start, args.lines, "line")
        report("naive text reader (decode + split every line)", rel_mb, phases.done[-1].seconds, args.lines)
        assert naive_kept >= kept
        print(f"MRCONSO.RRF: {args.mrconso_lines:,} lines, {conso_mb:,.0f} MB, {len(cuis):,} wanted CUIs")
        start = time.perf_counter()
        medlama.rrf.read_concept_names(str(mrconso), cuis, auis, drop_suppressed=False, progress=False)
        phases.add("read_concept_names", time.perf_counter() - start, args.mrconso_lines, "line")
        report("read_concept_names", conso_mb, phases.done[-1].seconds, args.mrconso_lines, MRCONSO_GB)
        print(f"  peak resident memory {peak_mb():,.0f} MB")
        print(phases.report())


if __name__ == "__main__":
    main()
