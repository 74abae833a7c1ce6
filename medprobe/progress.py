"""One progress policy for every command and the Python API: a bar on a terminal, a plain line every few seconds
otherwise, nothing when quiet.

    with progress_bar(total=len(texts), desc="encoding", unit="text") as bar:
        for batch in batches:
            ...
            bar.update(len(batch))
    for item in progress_bar(items, desc="scoring", unit="batch"):
        ...

On a terminal (stderr is a TTY) a `progress` is a tqdm bar redrawn in place. Redirected to a file or a pipe, a
bar's carriage-return frames would fill the log (22 KB of frames for one MedLAMA probe), so it is one plain
line every `INTERVAL` seconds and one when it ends, as pip and huggingface_hub keep their logs readable.
Under `quiet()` (`medprobe ... --quiet`, `medprobe.probe(..., quiet=True)`) it shows nothing, and neither do the
bars of the libraries medprobe drives (datasets' "Generating ... split", transformers' "Loading weights").
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

INTERVAL = 10.0  # seconds between plain lines when stderr is not a terminal
_QUIET = [False]  # set by quiet(); a list so that the flag is shared, not copied, by importers


def is_quiet() -> bool:
    return _QUIET[0]


def on_terminal() -> bool:
    """Whether bars can redraw in place: stderr is a terminal, or a notebook shows tqdm's widgets
    (MEDPROBE_PROGRESS=lines forces plain lines)."""
    if os.environ.get("MEDPROBE_PROGRESS") == "lines":
        return False
    if "ipykernel" in sys.modules:
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without isatty, or closed
        return False


class LineProgress:
    """The tqdm calls medprobe uses (update, close, iteration, `with`, n, total, set_postfix_str), written as one
    plain line every INTERVAL seconds and one at the end: `encoding: 1,280/22,810 texts (6%), 12 s`."""

    def __init__(self, iterable: Iterable | None = None, *, total: int | None = None, desc: str = "", unit: str = "it", **_: Any):
        self.iterable = iterable
        self.total = total if total is not None else (len(iterable) if hasattr(iterable, "__len__") else None)
        self.desc, self.unit, self.n, self.postfix = desc, unit, 0, ""
        self.start = self.last = time.monotonic()
        self.closed = False

    def __iter__(self) -> Iterator:
        for item in self.iterable or ():
            yield item
            self.update(1)
        self.close()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self.total or 0

    def line(self, done: bool = False) -> str:
        count = f"{self.n:,}/{self.total:,}" if self.total else f"{self.n:,}"
        share = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        extra = f", {self.postfix}" if self.postfix else ""
        head = f"{self.desc}: " if self.desc else ""
        return f"{head}{'done, ' if done else ''}{count} {self.unit}s{share}, {time.monotonic() - self.start:.0f} s{extra}"

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.last >= INTERVAL:
            self.last = now
            print(self.line(), file=sys.stderr, flush=True)

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfix = text

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        self.desc = desc or ""

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            print(self.line(done=True), file=sys.stderr, flush=True)


class Silent(LineProgress):
    """A progress that counts and shows nothing (quiet, or a bar its caller switched off)."""

    def update(self, n: int = 1) -> None:
        self.n += n

    def close(self) -> None:
        self.closed = True


def progress_bar(iterable: Iterable | None = None, *, disable: bool = False, **options: Any) -> Any:
    """A progress over `iterable` (or `total` units advanced with `update`): a tqdm bar on a terminal, plain lines
    otherwise, nothing when `disable` or quiet. Options are tqdm's (`total`, `desc`, `unit`, `leave`)."""
    if disable or is_quiet():
        return Silent(iterable, **options)
    if not on_terminal():
        return LineProgress(iterable, **options)
    from tqdm.auto import tqdm

    return tqdm(iterable, **options)


def library_bars_shown() -> bool:
    """Whether a library's own bars (the Trainer's) may show: only where they redraw in place, and not quiet."""
    return on_terminal() and not is_quiet()


# read by datasets and huggingface_hub (and transformers, through huggingface_hub) when they are imported
BARS_OFF = {"HF_DATASETS_DISABLE_PROGRESS_BARS": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


@contextmanager
def policy(quiet_flag: bool = False, *, whole_process: bool = False, import_libraries: bool = False) -> Iterator[None]:
    """The policy for one command or one call of the Python API: quiet, nothing; on a terminal, bars; otherwise the
    libraries' bars off (their carriage-return frames would fill a log) and medprobe's own as plain lines.

    `whole_process`: the `medprobe` program, which ends with its command: the libraries not imported yet are
    switched off through their environment (read once, at import), which costs no import now (`--help` and
    `env` stay fast). `import_libraries` (the Python API, which loads a dataset anyway): datasets and
    huggingface_hub are imported to be switched off now and back after; else only those imported by now are."""
    if not quiet_flag and on_terminal():
        yield
        return
    if whole_process:
        os.environ.update(BARS_OFF)
    restore = library_bars_off(import_them=import_libraries and not whole_process)
    previous, _QUIET[0] = _QUIET[0], quiet_flag or _QUIET[0]
    try:
        yield
    finally:
        _QUIET[0] = previous
        restore()


@contextmanager
def quiet(enabled: bool = True) -> Iterator[None]:
    """No progress of medprobe's, datasets' or transformers' while the block runs (each restored after)."""
    if not enabled:
        yield
        return
    with policy(True, import_libraries=True):
        yield


def library_bars_off(import_them: bool = False) -> Any:
    """Switch off the bars of datasets, huggingface_hub and transformers (those imported; all three after importing
    datasets and huggingface_hub with `import_them`), returning what puts each back as it was. transformers, not
    imported yet, takes huggingface_hub's setting when it is; imported meanwhile, it is put back to what
    huggingface_hub is put back to (what its import would have taken outside the block)."""
    if import_them:
        import datasets  # noqa: F401 - imported so that its switch exists
        import huggingface_hub  # noqa: F401

    switches = library_switches()
    were_off = {name: is_off() for name, (is_off, _off, _on) in switches.items()}
    for _is_off, off, _on in switches.values():
        off()

    def restore() -> None:
        now = library_switches()
        for name, (_is_off, off, on) in now.items():
            if name in were_off:
                (off if were_off[name] else on)()
        if "transformers" in now and "transformers" not in were_off and "huggingface_hub" in were_off:
            _is_off, off, on = now["transformers"]
            (off if were_off["huggingface_hub"] else on)()

    return restore


@contextmanager
def library_bars_hidden() -> Iterator[None]:
    """The libraries' bars off while the block runs (a prober's from_pretrained, repeated per seed or disease), each
    put back as it was after it: the one way code below the commands switches them, so that none is switched on
    where the policy switched it off (`library_switches` never calls an `enable` its environment forbids)."""
    restore = library_bars_off()
    try:
        yield
    finally:
        restore()


def library_switches() -> dict[str, tuple]:
    """(is off, switch off, switch on) of the progress bars of each of the libraries imported by now.

    A library's `enable` where its environment variable (HF_DATASETS_DISABLE_PROGRESS_BARS,
    HF_HUB_DISABLE_PROGRESS_BARS: what `policy(whole_process=True)` sets) keeps the bars off changes nothing and
    warns "Cannot enable progress bars: environment variable ... is set"; transformers' enable calls
    huggingface_hub's. So "switch on" is a no-op there: the bars stay off, as the variable says."""
    switches: dict[str, tuple] = {}
    hub_forbids = False
    if "huggingface_hub" in sys.modules:
        from huggingface_hub import constants as hub_constants
        from huggingface_hub import utils as hub

        hub_forbids = bool(hub_constants.HF_HUB_DISABLE_PROGRESS_BARS)
        switches["huggingface_hub"] = (
            hub.are_progress_bars_disabled,
            hub.disable_progress_bars,
            unless(hub_forbids, hub.enable_progress_bars),
        )
    if "datasets" in sys.modules:
        import datasets

        forbids = bool(datasets.config.HF_DATASETS_DISABLE_PROGRESS_BARS)
        switches["datasets"] = (
            datasets.are_progress_bars_disabled,
            datasets.disable_progress_bars,
            unless(forbids, datasets.enable_progress_bars),
        )
    if "transformers" in sys.modules:
        from transformers.utils import logging as transformers_logging

        switches["transformers"] = (
            lambda: not transformers_logging.is_progress_bar_enabled(),
            transformers_logging.disable_progress_bar,
            unless(hub_forbids, transformers_logging.enable_progress_bar),
        )
    return switches


def unless(forbidden: bool, enable: Any) -> Any:
    """`enable`, or nothing where the environment forbids it."""
    return (lambda: None) if forbidden else enable
