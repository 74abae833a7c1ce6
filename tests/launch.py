"""Run `python -m medprobe.cli ...` as several CPU processes (gloo), as a user's launch would.

    result = launch_cli(["probe", "--prober", ...], tmp_path)                      # torchrun --standalone
    result = launch_cli([...], tmp_path, launcher="accelerate")                    # accelerate launch --multi_gpu

Used by the tests that check a 2-process run equals the 1-process run.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import warnings
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch_command(target: list[str], nproc: int = 2, launcher: str = "torchrun") -> list[str]:
    """`target` is what follows the launcher: ["-m", "medprobe.cli", ...] or [script, ...]."""
    if launcher == "torchrun":
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc), *target]
    if launcher == "accelerate":
        return [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--multi_gpu",
            "--num_processes",
            str(nproc),
            "--num_machines",
            "1",
            "--mixed_precision",
            "no",
            "--dynamo_backend",
            "no",
            "--main_process_port",
            str(free_port()),
            *target,
        ]
    raise ValueError(f"unknown launcher {launcher!r}")


def launch_cli(
    args: list[str], cwd: Path, nproc: int = 2, launcher: str = "torchrun", timeout: int = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run `python -m medprobe.cli ARGS` under the launcher (see `launch`)."""
    return launch(["-m", "medprobe.cli", *args], cwd, nproc, launcher, timeout, env)


GLOO_EXIT_ABORT = "terminate called without an active exception"


def launch(
    target: list[str],
    cwd: Path,
    nproc: int = 2,
    launcher: str = "torchrun",
    timeout: int = 600,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """Run `target` under the launcher; fails the test with both processes' output when it exits non-zero."""
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        **(env or {}),
    }
    command = launch_command(target, nproc, launcher)
    result = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0 and GLOO_EXIT_ABORT in result.stderr:
        # gloo's worker threads can abort a process at interpreter exit, after its work and the group's
        # destruction (pytorch/pytorch#179291; about one launch in several hundred on a loaded 2-core machine):
        # run it once more, and say so, rather than fail on a teardown the code under test does not own
        warnings.warn(f"a launched process aborted at exit ({GLOO_EXIT_ABORT!r}); launched once more", stacklevel=2)
        result = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"launch failed ({result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-6000:]}"
    return result
