"""One line of progress for a long step of a command; what the libraries print goes to a log file.

Inside `with StepProgress(label, log) as step:`, the output of the libraries a step drives (tqdm
bars of transformers, datasets and medprobe, the Trainer's loss dictionaries, `wrote ...` lines)
is appended to `log` instead of the terminal. On a terminal one line shows the seconds so far and
the latest progress a library reported ("training heads 2/5", "step 13/30"), rewritten in place
twice a second; `step.say(text)` prints above it. When the step ends, that line becomes
`  label: done in 12.3 s`, the one line a pipe or a log file gets for the step.

Warnings are never hidden in the log: they are printed on the real stderr (the known harmless ones
are filtered before that, medprobe/cli/quiet.py). Errors propagate as they would without it.
"""

from __future__ import annotations

import re
import shutil
import sys
import threading
import time
import warnings
from contextlib import ExitStack, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import TextIO

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# a tqdm bar: "desc:  43%|████▎     | 13/30 [00:57<00:52,  3.09s/it]" or, without a total, "desc: 13 examples [...]"
TQDM_BAR = re.compile(r"^(?:(?P<desc>.*?):\s*)?(?:\d+%\|[^|]*\|\s*)?(?P<n>\d+)(?:/(?P<total>\d+))?\s*\w*\s*\[")


def status_of(fragment: str) -> str:
    """The progress a library's output fragment reports, in a few words ('' for blank output)."""
    text = ANSI.sub("", fragment).strip()
    bar = TQDM_BAR.match(text)
    if bar is None:
        return text
    done = f"{bar['n']}/{bar['total']}" if bar["total"] else bar["n"]
    return f"{(bar['desc'] or '').strip() or 'step'} {done}"


class _Capture:
    """A text stream that appends to the log and keeps the latest status for the progress line."""

    def __init__(self, step: StepProgress) -> None:
        self.step = step

    def write(self, text: str) -> int:
        if self.step.finished:  # a logging handler made during the step keeps this stream: after it, stderr
            return self.step.errors.write(text)
        if self.step.log_file is not None:
            self.step.log_file.write(text)
        for fragment in reversed(re.split(r"[\r\n]", text)):
            status = status_of(fragment)
            if status:
                self.step.status = status
                break
        return len(text)

    def flush(self) -> None:
        if self.step.log_file is not None:
            self.step.log_file.flush()

    def close(self) -> None:  # logging.shutdown closes the handlers made during the step; the log has its own end
        pass

    def isatty(self) -> bool:  # libraries draw their bars as for a file: whole lines, no cursor movement
        return False


class StepProgress:
    """The context of one step: its library output captured, one progress line shown."""

    def __init__(self, label: str, log: Path | None = None, *, interval: float = 0.5) -> None:
        self.label, self.log, self.interval = label, log, interval
        self.status = ""
        self.finished = False
        self.log_file: TextIO | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._stack = ExitStack()

    def __enter__(self) -> StepProgress:
        self.stream, self.errors = sys.stdout, sys.stderr
        self.tty = self.stream.isatty()
        if self.log is not None:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            self.log_file = self._stack.enter_context(self.log.open("a", encoding="utf-8"))
            self.log_file.write(f"\n== {self.label}\n")
        capture = _Capture(self)
        self._stack.enter_context(redirect_stdout(capture))  # type: ignore[type-var]
        self._stack.enter_context(redirect_stderr(capture))  # type: ignore[type-var]
        self._stack.enter_context(warnings.catch_warnings())
        warnings.showwarning = self._show_warning
        self.start = time.perf_counter()
        if self.tty:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self._stop.set()
        if self.tty:
            self._ticker.join()
        self._stack.close()
        self.finished, self.log_file = True, None
        seconds = time.perf_counter() - self.start
        outcome = "done" if exc_type is None else ("interrupted" if issubclass(exc_type, KeyboardInterrupt) else "failed")
        where = f" (library output in {self.log})" if self.log is not None and exc_type is not None else ""
        self._write(f"  {self.label}: {outcome} in {seconds:.1f} s{where}\n")

    def say(self, text: str) -> None:
        """Print `text` on the terminal, above the progress line."""
        self._write(text + "\n", redraw=True)

    def phase(self, text: str) -> None:
        """What the step is doing now, shown on the progress line until a library reports more."""
        self.status = text

    def _line(self) -> str:
        width = shutil.get_terminal_size((100, 20)).columns - 1
        return f"  {self.label}: {time.perf_counter() - self.start:.0f} s  {self.status}"[:width]

    def _write(self, text: str, redraw: bool = False) -> None:
        with self._lock:
            clear = "\r\x1b[K" if self.tty else ""
            self.stream.write(clear + text + (self._line() if redraw and self.tty and not self._stop.is_set() else ""))
            self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                self.stream.write("\r\x1b[K" + self._line())
                self.stream.flush()

    def _show_warning(self, message, category, filename, lineno, file=None, line=None) -> None:
        text = warnings.formatwarning(message, category, filename, lineno, line)
        with self._lock:
            self.errors.write(("\r\x1b[K" if self.tty else "") + text)
            self.errors.flush()
