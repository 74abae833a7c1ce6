"""Phase timestamps since the process started, for finding where a run's time goes.

    MEDPROBE_TIMINGS=1 medprobe probe --prober contrastive --dataset out/medlama --model minilm
    [medprobe   2.41 s] dataset loaded
    ...

`mark(label)` prints one such line to stderr when MEDPROBE_TIMINGS is set and does nothing
otherwise; the clock starts when the process started (Linux /proc), so interpreter start-up and
imports are counted, not only what follows the first medprobe import. `first(label)` marks a
label once per process (e.g. the first forward pass).
"""

from __future__ import annotations

import os
import sys
import time

_IMPORTED = time.perf_counter()
_seen: set[str] = set()


def process_start_offset() -> float:
    """Seconds from the process start to this module's import (0.0 where /proc cannot say)."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            fields = stat.read().rsplit(")", 1)[1].split()
            started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of stat: start time in ticks since boot
            since_boot = float(uptime.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, since_boot - started - (time.perf_counter() - _IMPORTED))


_OFFSET = process_start_offset()


def enabled() -> bool:
    return bool(os.environ.get("MEDPROBE_TIMINGS"))


def since_start() -> float:
    """Seconds since the process started (to 10 ms: the kernel's tick)."""
    return _OFFSET + time.perf_counter() - _IMPORTED


def mark(label: str) -> None:
    """Print `[medprobe  T s] label` to stderr when MEDPROBE_TIMINGS is set."""
    if enabled():
        print(f"[medprobe {since_start():6.2f} s] {label}", file=sys.stderr, flush=True)


def first(label: str) -> None:
    """`mark(label)` the first time it is called with this label in this process."""
    if label not in _seen:
        _seen.add(label)
        mark(label)
