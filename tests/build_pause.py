"""Run the `medprobe` command line, pausing it at a chosen step so that a test can signal it there.

    python tests/build_pause.py STEP build medlama --data-dir DIR --out OUT
    python tests/build_pause.py medprobe.run:run profile --model M --out P
    python tests/build_pause.py replace:results.json probe --prober ... --out results.json
    python tests/build_pause.py --fake-runs medprobe.run:run@2 profile --model M --out P

STEP is where the command pauses, printing `PAUSED after STEP` and sleeping, so the signal lands at
a known point of a real run, not after a guessed delay:
- `NAME`: after the first call of the function NAME of medprobe.building.build (`write_config`,
  `write_card`, `check_staged_build`) returns;
- `MODULE:FUNCTION`: after the first call of that function returns (e.g. `medprobe.run:run`, one run
  of a profile); `@N` after either form: after the N-th call;
- `replace:NAME`: just before the file NAME is renamed into place (its temporary file is complete
  beside it; medprobe.atomic writes every output file this way);
- `before:MODULE:FUNCTION`: just before the first call of that function (e.g.
  `before:medprobe.atomic:signals_deferred`: a run's files are all written under temporary names, and
  their renames, during which signals wait, are about to begin).

`SIGNAL:NAME[@N]` (SIGNAL one of SIGTERM, SIGINT) does not pause: the process sends itself SIGNAL just
before the file NAME is renamed into place (its N-th rename, default the first), so the signal lands
in the middle of a commit, where it waits; the command then runs on to its exit code.

`--fake-runs` (first) replaces medprobe.run.run by a stand-in that writes a made-up results JSON
(tests/fake_runs.py), for the profile tests where the model is not the point.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import time
from pathlib import Path

from medprobe.cli import main


def paused(step: str, original, after: int = 1):
    calls = []

    def wrapper(*args, **kwargs):
        result = original(*args, **kwargs)
        calls.append(1)
        if len(calls) == after:
            print(f"PAUSED after {step}", flush=True)
            time.sleep(120)
        return result

    return wrapper


def paused_before(step: str, original):
    calls = []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:  # the first call only: the cleanup after the signal may call it again
            print(f"PAUSED after {step}", flush=True)
            time.sleep(120)
        return original(*args, **kwargs)

    return wrapper


def pause_before_replace(step: str, name: str) -> None:
    original = os.replace

    def replace(src, dst, *args, **kwargs):
        if Path(dst).name == name:
            print(f"PAUSED after {step}", flush=True)
            time.sleep(120)
        return original(src, dst, *args, **kwargs)

    os.replace = replace


def signal_at_replace(signum: int, name: str, at: int = 1) -> None:
    original, seen = os.replace, []

    def replace(src, dst, *args, **kwargs):
        if Path(dst).name == name:
            seen.append(dst)
            if len(seen) == at:
                os.kill(os.getpid(), signum)
        return original(src, dst, *args, **kwargs)

    os.replace = replace


def pause_after(step: str) -> None:
    if step.startswith(("SIGTERM:", "SIGINT:")):
        signame, _, target = step.partition(":")
        name, _, at = target.partition("@")
        signal_at_replace(getattr(signal, signame), name, int(at or 1))
        return
    if step.startswith("replace:"):
        pause_before_replace(step, step.partition(":")[2])
        return
    if step.startswith("before:"):
        module_name, _, function = step.partition(":")[2].rpartition(":")
        module = importlib.import_module(module_name)
        setattr(module, function, paused_before(step, getattr(module, function)))
        return
    target, _, count = step.partition("@")
    module_name, _, function = target.rpartition(":")
    module = importlib.import_module(module_name or "medprobe.building.build")
    setattr(module, function, paused(step, getattr(module, function), int(count or 1)))


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[0] == "--fake-runs":
        import fake_runs

        fake_runs.install()
        argv = argv[1:]
    pause_after(argv[0])
    sys.exit(main(argv[1:]))
