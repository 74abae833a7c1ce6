"""A reader that stops reading (`medprobe compare ... | head -2`) ends the program quietly, as it ends cat or grep:
no message, the status 141 (128 + SIGPIPE), for every command (medprobe.cli.main catches it once).

Measured before (issue 37): `compare ... | head -2` ended, some of the time, with "medprobe: error: [Errno 32] Broken
pipe" and a failure status. Some of the time: with a pipe of 64 KB the output may all fit before the reader leaves.
Here the pipe holds 4 KB and the output is larger, so the program is still writing when its reader leaves.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from synthetic_runs import write_medlama_run

REPO_ROOT = Path(__file__).resolve().parents[1]
fcntl = pytest.importorskip("fcntl")
SET_PIPE_SIZE = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux
PIPE_BYTES = 4096


def environment() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("MEDPROBE_DEBUG", None)
    return env


def first_lines_then_close(argv: list[str], lines: int) -> tuple[bytes, int, str]:
    """`medprobe ARGV` with stdout a small pipe whose reader takes `lines` lines and closes it (0: closed before the
    program starts): (the lines read, the exit status, what the program wrote on stderr)."""
    read_end, write_end = os.pipe()
    if SET_PIPE_SIZE is not None:
        fcntl.fcntl(write_end, SET_PIPE_SIZE, PIPE_BYTES)
    if not lines:
        os.close(read_end)
    process = subprocess.Popen(
        [sys.executable, "-m", "medprobe", *argv], stdout=write_end, stderr=subprocess.PIPE, env=environment(), cwd=REPO_ROOT
    )
    os.close(write_end)
    read = b""
    while read.count(b"\n") < lines:
        byte = os.read(read_end, 1)
        assert byte, f"the program wrote fewer than {lines} lines"
        read += byte
    if lines:
        os.close(read_end)  # the reader leaves, as `head -n LINES` does
    _, err = process.communicate(timeout=120)
    return read, process.returncode, err.decode()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[str]:
    """Twelve made-up MedLAMA runs: `compare` prints about 18 KB of them, more than stdout's buffer and the pipe hold."""
    folder = tmp_path_factory.mktemp("runs")
    return [str(write_medlama_run(folder / f"run{n}.json", 0.5, seed=n)) for n in range(12)]


@pytest.mark.skipif(SET_PIPE_SIZE is None, reason="needs F_SETPIPE_SZ (Linux) to make the pipe smaller than the output")
def test_a_reader_that_leaves_after_two_lines_ends_compare_quietly_with_141(runs):
    full = subprocess.run(
        [sys.executable, "-m", "medprobe", "compare", *runs], capture_output=True, env=environment(), timeout=120
    )
    # more than stdout's buffer (8 KB) and the pipe hold: the program is still writing when the reader leaves
    assert full.returncode == 0 and len(full.stdout) > 8192 + 2 * PIPE_BYTES
    lines, code, err = first_lines_then_close(["compare", *runs], lines=2)
    assert lines == b"".join(full.stdout.splitlines(keepends=True)[:2])
    assert (code, err) == (141, "")


def test_a_reader_gone_before_the_first_line_ends_compare_quietly_with_141(runs):
    """The same on any system: the pipe is closed before the program writes anything."""
    _, code, err = first_lines_then_close(["compare", *runs], lines=0)
    assert (code, err) == (141, "")
