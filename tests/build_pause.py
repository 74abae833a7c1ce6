"""Run the `medprobe` command line, pausing a build at a chosen step so that a test can signal it there.

    python tests/build_pause.py STEP build medlama --data-dir DIR --out OUT

STEP names a function of probers.hub.build (`write_config`, `write_card`, `check_staged_build`):
after its first call returns, the process prints `PAUSED after STEP` and sleeps, so the signal
lands at a known point of a real build, not after a guessed delay.
"""

from __future__ import annotations

import sys
import time

import probers.hub.build as build_module
from probers.cli import main


def pause_after(step: str) -> None:
    original = getattr(build_module, step)

    def paused(*args, **kwargs):
        result = original(*args, **kwargs)
        print(f"PAUSED after {step}", flush=True)
        time.sleep(120)
        return result

    setattr(build_module, step, paused)


if __name__ == "__main__":
    pause_after(sys.argv[1])
    sys.exit(main(sys.argv[2:]))
