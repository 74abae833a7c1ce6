"""Kill `medprobe build` at fixed times over a good build and check that OUT is unchanged, byte for byte.

For MedLAMA (the real release from --data-dir) and for an MST reseed (`--set seed=7` over a seed-42
build), the script builds OUT once, records the sha256 of every file in it, then for each signal
(SIGKILL, SIGINT) and each time (1, 3, 4.5 s) starts a rebuild into OUT, sends the signal at that
time and compares OUT with the record; for MedLAMA it also kills a first build into a new OUT,
which must leave no OUT (not a half-built folder that loads). It prints one row per run: the exit code, whether the
build was still staging when the signal came (its `.OUT.medprobe-tmp-*` folder existed), whether
OUT is byte-identical, and what is left beside OUT (a SIGKILL leaves its staging folder and lock
file; the next build removes them before it starts, so a run killed before that point shows the
previous run's). A last, uninterrupted build checks that it removes what the killed ones left.
The MedLAMA rebuild reads the same files, so a rebuild that completed would also give the same
bytes: the "staging" column says the signal came mid-build. Exit 130 is the CLI's answer to
Ctrl-C; -2 (death by SIGINT, which a shell also reports as 130) happens when the signal lands
inside a C extension's import, after the CLI has printed `interrupted`.

    python scripts/check_kill_safety.py [--data-dir ../shared/data/medlama] [--work DIR] [--repo CHECKOUT] [--times 1 3 4.5]

--repo runs the `medprobe` of another checkout (e.g. an older commit, to see the failures this
catches); the command is `python -m medprobe.cli` run in that checkout (first on sys.path).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
TIMES = (1.0, 3.0, 4.5)
SIGNALS = (signal.SIGKILL, signal.SIGINT)
# MST sizes large enough that a reseed is still running at 4.5 s on 2 cores (the defaults take ~4 s)
MST_SIZES = ["--set", "train_size=8000", "--set", "validation_size=2000", "--set", "test_size=4000"]


def snapshot(folder: Path) -> dict[str, str]:
    if not folder.exists():
        return {}
    return {
        p.relative_to(folder).as_posix(): "folder" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
    }


def beside(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def command(repo: Path, args: list[str]) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])}
    env.setdefault("HF_DATASETS_OFFLINE", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")
    return [sys.executable, "-m", "medprobe.cli", "build", *args], env


def run(repo: Path, args: list[str]) -> float:
    argv, env = command(repo, args)
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=repo, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def interrupted_run(repo: Path, args: list[str], out: Path, signum: int, after: float) -> dict:
    argv, env = command(repo, args)
    process = subprocess.Popen(
        argv,
        env=env,
        cwd=repo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # SIGINT as from a terminal's Ctrl-C
    )
    earlier = set(beside(out))  # what killed runs before this one left
    time.sleep(after)
    finished = process.poll() is not None
    staging = any(".medprobe-tmp-" in name and name not in earlier for name in beside(out))
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    last = err.strip().splitlines()[-1] if err.strip() else ""
    return {"code": process.returncode, "finished": finished, "staging": staging, "last": last}


def check(label: str, repo: Path, args: list[str], good_args: list[str], out: Path, times: list[float]) -> bool:
    seconds = run(repo, good_args)
    before = snapshot(out)
    print(f"\n{label}: good build {seconds:.1f} s, {len(before)} paths in {out}")
    print(
        f"{'signal':8} {'t (s)':>6} {'exit':>5} {'done?':>6} {'staging':>8} {'OUT identical':>14}  left beside OUT / last stderr line"
    )
    all_identical = True
    for signum in SIGNALS:
        for after in times:
            result = interrupted_run(repo, args, out, signum, after)
            identical = snapshot(out) == before
            all_identical &= identical or result["finished"]
            print(
                f"{signal.Signals(signum).name:8} {after:6.1f} {result['code']:5d} {str(result['finished']):>6} "
                f"{str(result['staging']):>8} {str(identical):>14}  {', '.join(beside(out)) or '-'} / {result['last'][:80]!r}"
            )
    run(repo, good_args)
    print(
        f"after one more complete build: left beside OUT: {', '.join(beside(out)) or 'nothing'}; "
        f"OUT identical to the good build: {snapshot(out) == before}"
    )
    return all_identical


def loads_as(out: Path) -> str:
    """What `load_dataset(OUT, split="test")` gives for a folder a killed first build left."""
    if not out.exists():
        return "no OUT"
    import datasets

    datasets.disable_progress_bars()
    try:
        with tempfile.TemporaryDirectory() as cache:
            return f"loads {datasets.load_dataset(str(out), split='test', cache_dir=cache).num_rows:,} rows"
    except Exception as err:  # noqa: BLE001 - any failure to load is the answer
        return f"does not load ({type(err).__name__})"


def check_first_build(repo: Path, args: list[str], work: Path, times: list[float]) -> bool:
    """A first build into a new OUT, killed: OUT must not exist afterwards (nothing half-built to load)."""
    print("\nmedlama first build into a new OUT")
    print(f"{'signal':8} {'t (s)':>6} {'exit':>5} {'done?':>6}  what is at OUT")
    clean = True
    for signum in SIGNALS:
        for after in times:
            out = work / f"{signal.Signals(signum).name}-{after}" / "OUT"
            out.parent.mkdir(parents=True)
            result = interrupted_run(repo, [*args, "--out", str(out)], out, signum, after)
            found = loads_as(out)
            clean &= found == "no OUT" or result["finished"]
            print(f"{signal.Signals(signum).name:8} {after:6.1f} {result['code']:5d} {str(result['finished']):>6}  {found}")
    return clean


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shared = Path(os.environ.get("MEDPROBE_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
    parser.add_argument("--data-dir", type=Path, default=shared / "medlama", help="the MedLAMA release folder")
    parser.add_argument("--work", type=Path, help="where OUT folders go (default: a temporary folder)")
    parser.add_argument("--repo", type=Path, default=REPO_ROOT, help="checkout whose medprobe to run")
    parser.add_argument("--times", type=float, nargs="+", default=list(TIMES), help="seconds after the start to signal")
    args = parser.parse_args()
    args.repo = args.repo.resolve()
    work = args.work or Path(tempfile.mkdtemp(prefix="medprobe-kill-"))
    print(f"medprobe from {args.repo.resolve()}; work folder {work}")
    ok = True
    if args.data_dir.is_dir():
        out = work / "medlama" / "OUT"
        medlama = ["medlama", "--data-dir", str(args.data_dir), "--out", str(out)]
        ok &= check("medlama rebuild", args.repo, medlama, medlama, out, args.times)
        ok &= check_first_build(args.repo, medlama[:-2], work / "medlama-first", args.times)
    else:
        print(f"{args.data_dir} is absent: MedLAMA skipped")
    out = work / "mst" / "OUT"
    ok &= check(
        "mst reseed (--set seed=7 over seed 42)",
        args.repo,
        ["mst", "--out", str(out), "--set", "seed=7", *MST_SIZES],
        ["mst", "--out", str(out), *MST_SIZES],
        out,
        args.times,
    )
    print("\nevery interrupted build left OUT byte-identical" if ok else "\nSOME INTERRUPTED BUILD CHANGED OUT")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
