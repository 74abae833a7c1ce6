"""Run the same commands with two checkouts of medprobe and compare every output file, byte for byte.

    python scripts/check_same_outputs.py --base /tmp/base-checkout [--new CHECKOUT] [--work DIR] [--only probe,builds]
    python scripts/check_same_outputs.py --base /tmp/base-checkout --work DIR --compare-only   # compare again, run nothing

What runs, once per checkout (that checkout first on PYTHONPATH, offline, in the same working folder, so
that every relative and work path is the same; each checkout gets its own embedding and datasets caches):

- probe:   README.md's "From Python" example (medprobe.probe("contrastive", dataset=medprobe.sample("medlama"),
           config="hard", model="minilm", out="runs/hard.json", quiet=True)) and what it prints;
- profile: `medprobe profile --model minilm --out profile --quick` (the packaged MiniLM, the shipped
           sample and the builds the plan makes);
- builds:  `medprobe build` of every builder that needs no licensed data: mst (generated, default sizes),
           context_variance (its shipped sample) and medlama (the synthetic release of tests/synthetic_medlama.py,
           written once into the work folder and given to both checkouts); then `medprobe export lm-eval mst`
           of the mst build (another folder writer).

Every file under both output folders is compared: the same relative paths, and the same bytes (Parquet,
PNG), except for what differs from one run to the next, or from one checkout to the other, whatever the
code does:

- in JSON files (.json, .jsonl), these keys wherever they are: `timings`, `seconds` (how long things took),
  `created` (when), and `source.commit` / `source.dirty` (medprobe's git commit and whether it had edits);
- in JSON files, the sha256 values of a `files` map (profile.json's digest of each file it records): those
  files hold the fields above, and each is compared itself;
- in every text file, the checkout's own absolute path (where medprobe.sample() and the packaged model
  live, named in results, profile.json and the repeat commands) read as "<checkout>", and in text that is
  not JSON an ISO time (profile.md's "created" in its heading) read as "<time>".

Exit 0 when every file is the same, 1 with a line per difference otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
STEPS = ("probe", "profile", "builds")
IGNORED_KEYS = {"timings", "seconds", "created"}  # anywhere in a JSON document
IGNORED_SOURCE_KEYS = {"commit", "dirty"}  # in a `source` object: medprobe's git commit and whether it had edits
DIGEST = re.compile(r"^[0-9a-f]{64}$")
ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:\d{2}|Z)?")
TEXT_SUFFIXES = {".json", ".jsonl", ".md", ".txt", ".yaml", ".yml", ".csv", ".svg", ".html", ".py", ".xml"}
CACHES = ".caches"  # in the run folder: per-checkout caches, not outputs
README_PROBE = """
import medprobe

sample = medprobe.sample("medlama")  # the MedLAMA-format sample shipped with medprobe (not MedLAMA)
record = medprobe.probe("contrastive", dataset=sample, config="hard", model="minilm", out="runs/hard.json", quiet=True)
low, high = record.intervals["acc@10"]["low"], record.intervals["acc@10"]["high"]
print(
    f"acc@10 {record.metrics['acc@10']:.2%} (95% interval {low:.2%} to {high:.2%}), chance {record.chance['acc@10']['value']:.2%}"
)
print(record.command)  # the `medprobe probe` line that repeats the run
"""


def commands(release: Path) -> dict[str, list[list[str]]]:
    """Per step, the Python invocations (after the interpreter) run in the run folder."""
    build = [sys.executable, "-m", "medprobe.cli", "build"]
    return {
        "probe": [[sys.executable, "-c", README_PROBE]],
        "profile": [[sys.executable, "-m", "medprobe.cli", "profile", "--model", "minilm", "--out", "profile", "--quick"]],
        "builds": [
            [*build, "mst", "--out", "builds/mst"],
            [*build, "context_variance", "--out", "builds/context_variance"],
            [*build, "medlama", "--data-dir", str(release), "--set", "rows_per_relation=3", "--out", "builds/medlama"],
            [sys.executable, "-m", "medprobe.cli", "export", "lm-eval", "mst", "--dataset", "builds/mst", "--out", "lm-eval-mst"],
        ],
    }


def produce(checkout: Path, run: Path, steps: list[str], release: Path) -> None:
    """Every step's outputs in `run`, made by `checkout`; stdout of each command saved as <step>-<n>.stdout.txt."""
    env = {
        **os.environ,
        "PYTHONPATH": str(checkout),
        "MEDPROBE_EMBEDDING_CACHE": str(run / CACHES / "embeddings"),
        "HF_DATASETS_CACHE": str(run / CACHES / "datasets"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_EVALUATE_OFFLINE": "1",
        "MEDPROBE_DISABLE_PLUGINS": "1",  # installed plugins are not the checkout's
    }
    for step in steps:
        for number, argv in enumerate(commands(release)[step], start=1):
            done = subprocess.run(argv, cwd=run, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"{checkout}: {step} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
            if step == "probe":  # the README shows what it prints; the other commands print their timings
                (run / f"{step}-{number}.stdout.txt").write_text(done.stdout, encoding="utf-8")


def normalised(value: object, inside_source: bool = False) -> object:
    """`value` without the ignored keys, through dicts and lists."""
    if isinstance(value, dict):
        return {
            key: digests_named(item) if key == "files" else normalised(item, key == "source")
            for key, item in value.items()
            if key not in IGNORED_KEYS and not (inside_source and key in IGNORED_SOURCE_KEYS)
        }
    if isinstance(value, list):
        return [normalised(item) for item in value]
    return value


def digests_named(files: object) -> object:
    """A `files` map (relative path -> sha256) as its paths: each of those files is compared itself."""
    if isinstance(files, dict) and all(isinstance(v, str) and DIGEST.match(v) for v in files.values()):
        return {name: "<sha256>" for name in files}
    return normalised(files)


def comparable(path: Path, checkout: Path) -> bytes | object:
    """What is compared of a file: its bytes, or for text its text with the checkout read as <checkout> (JSON
    without the ignored keys)."""
    if path.suffix not in TEXT_SUFFIXES:
        return path.read_bytes()
    text = path.read_text(encoding="utf-8").replace(str(checkout.resolve()), "<checkout>").replace(str(checkout), "<checkout>")
    if path.suffix == ".json":
        return normalised(json.loads(text))
    if path.suffix == ".jsonl":
        return [normalised(json.loads(line)) for line in text.splitlines() if line.strip()]
    return ISO_TIME.sub("<time>", text)


def files_under(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and CACHES not in p.parts}


def differences(base: Path, new: Path, base_checkout: Path, new_checkout: Path) -> list[str]:
    found, a, b = [], files_under(base), files_under(new)
    found += [f"only with --base: {name}" for name in sorted(a - b)]
    found += [f"only with --new: {name}" for name in sorted(b - a)]
    for name in sorted(a & b):
        if comparable(base / name, base_checkout) != comparable(new / name, new_checkout):
            found.append(f"differs: {name}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the checkout to compare with (e.g. the commit branched from)")
    parser.add_argument("--new", type=Path, default=REPO_ROOT, help="the checkout under test (default: this one)")
    parser.add_argument("--work", type=Path, help="where outputs go (default: a new temporary folder, kept)")
    parser.add_argument("--only", default=",".join(STEPS), help=f"comma-separated steps of {', '.join(STEPS)} (default: all)")
    parser.add_argument("--compare-only", action="store_true", help="compare the outputs already in --work, run nothing")
    args = parser.parse_args()
    steps = [step for step in args.only.split(",") if step]
    unknown = [step for step in steps if step not in STEPS]
    if unknown:
        parser.error(f"--only: unknown step(s) {', '.join(unknown)}; choose from {', '.join(STEPS)}")
    work = (args.work or Path(tempfile.mkdtemp(prefix="medprobe-same-outputs-"))).resolve()
    release = work / "inputs" / "medlama-release"
    if "builds" in steps and not release.is_dir():
        sys.path.insert(0, str(REPO_ROOT / "tests"))
        sys.path.insert(0, str(REPO_ROOT))
        from synthetic_medlama import write_release

        write_release(release)
    run = work / "run"  # both checkouts run here, one after the other: every work path is the same
    for label, checkout in () if args.compare_only else (("base", args.base.resolve()), ("new", args.new.resolve())):
        shutil.rmtree(run, ignore_errors=True)
        shutil.rmtree(work / label, ignore_errors=True)
        run.mkdir(parents=True)
        started = time.perf_counter()
        produce(checkout, run, steps, release)
        run.rename(work / label)
        print(f"{label}: {checkout}: {', '.join(steps)} ({time.perf_counter() - started:.0f} s)", flush=True)
    found = differences(work / "base", work / "new", args.base.resolve(), args.new.resolve())
    compared = len(files_under(work / "new"))
    for line in found:
        print(line)
    print(f"{compared} files compared in {work}: {'all the same' if not found else f'{len(found)} differ'}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
