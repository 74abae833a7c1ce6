"""Build the benchmarks' official data and print the sha256 of each data file, beside what medprobe.official_data holds.

    python scripts/official_fingerprints.py --medlama-dir ../shared/data/medlama   # exit 1 if a file differs

MedLAMA is built from its release files (skipped without --medlama-dir); MST and context variance from
their seeded generators and shipped inputs. Each line is `<config>/<split>/<file> <sha256>`, the form
medprobe/official_data.py lists them in.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from medprobe.building.build import build
from medprobe.digests import sha256_file
from medprobe.official_data import OFFICIAL_DATA


def built_files(benchmark: str, out: Path, data_dir: str | None) -> dict[str, str]:
    """{`<config>/<split>/<file>`: sha256} of a fresh build of `benchmark` into `out`."""
    build(benchmark, out, data_dir=data_dir)
    return {
        f"{path.parent.name}/{path.name.split('-', 1)[0]}/{path.name}": sha256_file(path)
        for path in sorted(out.glob("*/*.parquet"))
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--medlama-dir", help="the MedLAMA release folder (prompts.csv, 2021AA/)")
    args = parser.parse_args(argv)
    sources = {"mst": None, "context_variance": None, **({"medlama": args.medlama_dir} if args.medlama_dir else {})}
    differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        for benchmark, data_dir in sources.items():
            found = built_files(benchmark, Path(tmp) / benchmark, data_dir)
            print(f"# {benchmark}")
            for name, digest in found.items():
                print(f"{name} {digest}")
            if found != OFFICIAL_DATA[benchmark].files:
                differ += 1
                print(f"# {benchmark}: differs from medprobe/official_data.py", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
