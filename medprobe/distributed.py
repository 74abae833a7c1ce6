"""Runs over several processes, through accelerate (and torchrun under it), never a scheduler of our own.

    accelerate launch --multi_gpu --num_processes 2 -m medprobe.cli probe ...  # 2 processes; on a CPU-only machine: gloo
    accelerate launch --num_processes 4 -m medprobe.cli probe ...            # 4 GPUs
    torchrun --nproc_per_node 2 -m medprobe.cli probe ...

A plain `medprobe probe` is one process and touches none of this (accelerate's state is never
created: `launched()` is False). Under a launch every process runs the same run loop on the same
data, and each step that costs time is split:

- `split(items)`: this process's contiguous share of a list (accelerate's `split_between_processes`);
  `gather(local)` puts the shares back together in process order, on every process, so split +
  gather gives back the single-process list in its original order.
- ranking probers: the tasks rank (or score) each process's share of the queries
  (`rank_in_shards`, the context-variance task's `score_queries`); a prober that spreads its own work (`collective = True`, Contrastive-Probe:
  its encoder splits whole batches of names and queries) is called with all queries everywhere.
- independent trainings (DisKnE's (disease, seed) jobs, MST's (task, seed) fits) are split as
  whole jobs; each trains alone (`local_training`), results are gathered into one record.
- one training (Contrastive-Probe's rewiring) uses the Trainer's own data parallelism.
- only the main process writes files and prints tables (`is_main_process`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

# what accelerate launch / torchrun set in each process; a process that has them is one of several
LAUNCH_VARIABLES = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK", "ROLE_WORLD_SIZE")


def launched() -> bool:
    """True in a process started by `accelerate launch` or `torchrun` with more than one process."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def state() -> Any:
    """accelerate's PartialState: created (and the process group joined) on first use under a launch.

    On a machine without a GPU it is asked for CPU processes (gloo): accelerate would otherwise
    treat a launch without GPUs as one process. Later calls return the same shared state.
    """
    import torch
    from accelerate import PartialState

    return PartialState(cpu=not torch.cuda.is_available())


def num_processes() -> int:
    return state().num_processes if launched() else 1


def process_index() -> int:
    return state().process_index if launched() else 0


def is_main_process() -> bool:
    return not launched() or state().is_main_process


def device() -> Any:
    """The device of this process under a launch (its own GPU: cuda:<local rank>, or cpu)."""
    return state().device


def split(items: Sequence[T]) -> list[T]:
    """This process's contiguous share of `items` (the first processes get one more when uneven)."""
    if not launched():
        return list(items)
    with state().split_between_processes(list(items)) as share:
        return list(share)


def round_robin(items: Sequence[T]) -> list[T]:
    """Every `num_processes()`-th item from this process's index: a balanced share of a sorted list
    (e.g. length-sorted batches, where contiguous shares would give one process all the long ones)."""
    return list(items)[process_index() :: num_processes()] if launched() else list(items)


def gather(local: list[T]) -> list[T]:
    """Every process's `local` list, concatenated in process order, on every process."""
    if not launched():
        return local
    from accelerate.utils import gather_object

    state()  # gather_object reads the shared state: make sure it is ours (a Trainer may have reset it)
    return gather_object(local)


def map_split(function: Callable[[list[T]], list[Any]], items: Sequence[T]) -> list[Any]:
    """`function(items)` computed share by share over the processes, in the original order.
    `function` maps a list to a list of the same length and is not called on an empty share."""
    share = split(items)
    return gather(function(share) if share else [])


def train_in_shares(
    jobs: Sequence[T],
    train_one: Callable[[T], Any],
    *,
    desc: str,
    unit: str,
    progress: bool = True,
    postfix: Callable[[T], str] | None = None,
) -> list[Any]:
    """`train_one(job)` for every job, in the order of `jobs`, each process training a contiguous share.

    Each job trains alone, its Trainer a single-process one (`local_training`), and the results are
    gathered back in job order on every process: the same list as one process makes, as long as a
    job depends only on itself (it seeds its own model, Trainer and data order). One bar, on the
    main process, counts its own share (`postfix(job)` names the job being trained)."""
    from medprobe.progress import progress_bar

    share = split(jobs)
    processes, main = num_processes(), is_main_process()  # asked before local_training hides the launch
    desc = f"{desc} (process 1 of {processes}'s share)" if processes > 1 else desc
    local = []
    with local_training(), progress_bar(total=len(share), desc=desc, unit=unit, disable=not (progress and main)) as bar:
        for job in share:
            if postfix is not None:
                bar.set_postfix_str(postfix(job))
            local.append(train_one(job))
            bar.update()
    return gather(local)


def rank_in_shards(prober: Any, queries: Sequence[str], candidates: Sequence[str], k: int) -> list[Any]:
    """`prober.rank(queries, candidates, k)` (per query its (name, score) pairs, or an older prober's names), each
    process ranking its share of the queries."""
    if not launched() or getattr(prober, "collective", False):
        return prober.rank(queries, candidates, k)
    return map_split(lambda share: prober.rank(share, candidates, k), list(queries))


def finish() -> None:
    """End a launched run that succeeded: wait for every process, then leave the process group.

    A process that exits with the group still open can abort in gloo's threads ("terminate called
    without an active exception", seen in CI). Not called after an error: the launcher stops the
    other processes then, and a barrier could wait for a process that will never reach it.
    """
    if not launched():
        return
    import torch.distributed

    if torch.distributed.is_initialized():
        state().wait_for_everyone()
        torch.distributed.destroy_process_group()


def wait_for_everyone() -> None:
    if launched():
        state().wait_for_everyone()


PROGRESS_SWITCHES = ("progress", "show_progress", "trainer_progress")


def quiet_other_processes(*objects: Any) -> None:
    """On a process other than the main one: no prints (stdout goes to /dev/null; errors still reach
    stderr), no datasets progress bars, and the progress switches of `objects` (a prober, the
    scorer inside it) turned off. The main process shows the run as one process would."""
    if is_main_process():
        return
    import sys

    if sys.stdout is sys.__stdout__:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (kept open for the life of the process)
    if "datasets" in sys.modules:
        sys.modules["datasets"].disable_progress_bars()
    os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"  # read when datasets is first imported
    for obj in objects:
        for name in PROGRESS_SWITCHES:
            if isinstance(getattr(obj, name, None), bool):
                setattr(obj, name, False)


@contextmanager
def main_process_first() -> Iterator[None]:
    """The main process runs the block first (e.g. a download or a build), the others after it."""
    if not launched():
        yield
        return
    with state().main_process_first():
        yield


@contextmanager
def local_training() -> Iterator[None]:
    """Train inside the block as one process would, while the other processes train other jobs.

    TrainingArguments reads the launch variables and makes every Trainer a DistributedDataParallel
    one: it would broadcast the main process's weights and average gradients across processes that
    are training different models. Inside the block the variables are hidden and accelerate's state
    is reset, so each Trainer is a single-process one; afterwards they are restored and the next
    `state()` joins the process group again (it stays initialised throughout).
    """
    if not launched():
        yield
        return
    from accelerate.state import AcceleratorState
    from transformers.training_args import logger as training_args_logger

    saved = {name: os.environ.pop(name) for name in LAUNCH_VARIABLES if name in os.environ}
    AcceleratorState._reset_state(reset_partial_state=True)
    level = training_args_logger.level
    # its warning "process group is initialized, but parallel_mode != DISTRIBUTED" is this block's intent
    training_args_logger.setLevel("ERROR")
    try:
        yield
    finally:
        training_args_logger.setLevel(level)
        os.environ.update(saved)
        AcceleratorState._reset_state(reset_partial_state=True)


def pin_training_device(args: Any, device: Any) -> Any:
    """Make the Trainer of `args` (TrainingArguments) train on `device` alone when it is one GPU (cuda:K).

    Inside `local_training` the launch is hidden, and TrainingArguments of a process that is not
    launched takes cuda:0 and every visible GPU (nn.DataParallel over all of them): the processes
    of a 4-GPU launch would all train on GPU 0 and each spread its batches over the 4 GPUs. A
    prober resolves its device under the launch (cuda:<local rank>, `medprobe.models.resolve_device`)
    and pins its arguments to it here: the model goes to `args.device`, and the Trainer's
    accelerator places batches on the current CUDA device, which is set to the same GPU. A CPU
    device, or a bare "cuda" (one process, all GPUs: the Trainer's own choice), is left as it is.
    """
    if device.type != "cuda" or device.index is None:
        return args
    import torch

    torch.cuda.set_device(device)
    args.__dict__["_setup_devices"] = device  # TrainingArguments.device is this cached property
    args._n_gpu = 1
    return args
