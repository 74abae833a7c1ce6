"""A disk that fills: run the `medprobe` command line with writes under a chosen folder refused after N bytes.

    python tests/full_disk.py PART BYTES [ERRNO] -- ARGV...       # writes to paths holding PART: ENOSPC after BYTES
    python tests/full_disk.py --fsize BYTES -- ARGV...              # every file: the kernel's EFBIG past BYTES (ulimit -f)
    python tests/full_disk.py --fake-runs PART BYTES -- ARGV...     # a profile whose runs are stood in for (fake_runs)

A tiny file system is not at hand in a test (mounting one takes root), so the disk is simulated in the process
that writes. `fill` counts the bytes written to every file whose absolute path holds PART (a folder, or a part of
a path such as `/cache/check/`, whose staging folder's name is not known in advance) and, once BYTES are
written, refuses the rest as a full disk does: the write that passes the bound writes what fits and raises
OSError(ENOSPC) naming no file, and `shutil.disk_usage` says how much room is left (datasets checks it, and
refuses with its own "Not enough disk space" when there is none). It covers Python's file objects (open, Path.write_text, fsspec's local files:
datasets' Arrow and Parquet writers, numpy's savez) and os.write on a descriptor; a library writing from C
through its own descriptors (pyarrow given a path string) is not seen.

`--fsize` is the real thing for one limit: RLIMIT_FSIZE, the limit `ulimit -f` sets, for the whole process (every
file, outputs and caches alike); a write past it fails with EFBIG (SIGXFSZ, which would kill the process, is
ignored, as Python does by default).
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import resource
import shutil
import signal
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def fill(part: str, after: int, code: int = errno.ENOSPC) -> None:
    """From now on, in this process, writes to files whose path holds `part` fail with `code` past `after` bytes
    (counted over all of them together, as on one disk)."""
    written = [0]

    def take(size: int) -> int:
        """How many of `size` bytes fit; raise (after the caller wrote those) when not all do."""
        room = max(0, after - written[0])
        written[0] += min(size, room)
        return min(size, room)

    def full() -> OSError:
        return OSError(code, os.strerror(code))

    real_open = io.open

    def filling_open(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        if isinstance(file, int) or not any(flag in mode for flag in "wax+") or part not in os.path.abspath(file):
            return handle
        real_write = handle.write

        def write(data):
            fits = take(len(data))
            if fits < len(data):
                real_write(data[:fits])
                raise full()
            return real_write(data)

        handle.write = write
        return handle

    real_os_write = os.write

    def filling_os_write(fd, data):
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            path = ""
        if part not in path:
            return real_os_write(fd, data)
        fits = take(len(data))
        if fits == 0 and len(data):
            raise full()
        return real_os_write(fd, bytes(data)[:fits])

    real_disk_usage = shutil.disk_usage

    def filling_disk_usage(path):  # what datasets asks before it prepares a dataset: the room left
        usage = real_disk_usage(path)
        if part not in os.path.abspath(path):
            return usage
        return type(usage)(usage.total, usage.used, max(0, after - written[0]))

    io.open = builtins.open = filling_open
    os.write = filling_os_write
    shutil.disk_usage = filling_disk_usage  # (datasets imports it by name: fill before datasets is imported)


def limit_file_size(size: int) -> None:
    """RLIMIT_FSIZE (`ulimit -f`) for this process: a write past `size` bytes of any file fails with EFBIG."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel's SIGXFSZ ends the process
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


if __name__ == "__main__":
    sys.path.insert(0, str(TESTS))
    options, argv = sys.argv[1 : sys.argv.index("--")], sys.argv[sys.argv.index("--") + 1 :]
    if options[0] == "--fake-runs":
        import fake_runs

        fake_runs.install()
        options = options[1:]
    if options[0] == "--fsize":
        limit_file_size(int(options[1]))
    else:
        fill(options[0], int(options[1]), *(int(code) for code in options[2:]))
    from medprobe.cli import main

    sys.argv = ["medprobe", *argv]
    sys.exit(main())  # as the `medprobe` program runs (its progress policy, its exit)
