"""Output files that are complete or absent: written under a temporary name, renamed into place.

    check_writable("out/results.json", "--out")        # before any model loads: fail in seconds
    with atomic_output("out/results.json") as temp:     # after the run
        temp.write_text(...)                             # renamed over the target only on success

A run that fails or is killed while writing leaves the target as it was, byte for byte: the
temporary file sits in the target's own folder (so `os.replace` is an atomic rename on the same
file system), is flushed to disk before the rename, and is removed on any exception, Ctrl-C
included. Only a SIGKILL or a power cut during the write can leave it behind, as a hidden
`.<stem>-tmp-<pid><suffix>` file beside the target.

Imports (docs/architecture.md): only foundation modules (api); every layer may import it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from medprobe.api import UserError


class UnwritableOutput(UserError):
    """An output path that cannot be written; the message names the option and the path."""


def temporary_sibling(target: Path) -> Path:
    """A hidden name beside `target`, unique to this process, with the target's suffix (tools that
    pick a format from the suffix see the same one)."""
    return target.with_name(f".{target.stem}-tmp-{os.getpid()}{target.suffix}")


@contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces `path`, on any exception it is removed."""
    target = Path(path)
    if target.is_dir():
        raise UnwritableOutput(f"{target} is a folder; expected a file path")
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = temporary_sibling(target)
    try:
        yield temp
        if not temp.is_file():
            raise RuntimeError(f"nothing was written to {temp} for {target}")
        with open(temp, "rb") as handle:  # on disk before the rename, so a power cut cannot leave an empty target
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def write_text_atomically(path: str | Path, text: str) -> Path:
    with atomic_output(path) as temp:
        temp.write_text(text, encoding="utf-8")
    return Path(path)


Writer = Callable[[Path], object]  # writes one output file at the path it is given


def write_all_atomically(writers: Iterable[tuple[str | Path | None, Writer]]) -> list[Path]:
    """Call every `writer(temporary_path)`, then rename all the files into place; None targets are skipped.

    The outputs of one run (results JSON, plot, predictions) change together: if any writer
    fails, every temporary file is removed and no target is touched. (Only a failing rename,
    after all were written, could leave some renamed and some not.)
    """
    targets = [(Path(target), write) for target, write in writers if target]
    resolved = [target.expanduser().resolve() for target, _ in targets]
    for index, path in enumerate(resolved):
        if path in resolved[:index]:
            raise UnwritableOutput(f"two outputs of this run would be written to the same file {targets[index][0]}")
    with ExitStack() as stack:
        for target, write in targets:
            write(stack.enter_context(atomic_output(target)))
    return [target for target, _ in targets]


def nearest_existing(path: Path) -> Path:
    """`path` or its closest ancestor that exists."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(".")


def check_writable(path: str | Path, option: str) -> Path:
    """Fail at once, with one line naming `option`, if a file cannot be written at `path`.

    Checks what an atomic write needs: the target is not a folder, its folder exists or can be
    created (no ancestor is a file), and a file can be created in that folder (tried for real:
    permissions, read-only mounts and ACLs all show up). Creates nothing that stays.
    """
    if not str(path).strip():
        raise UnwritableOutput(f"{option}: an empty path")
    target = Path(path).expanduser()
    if target.is_dir():
        raise UnwritableOutput(f"{option} {target} is a folder; give a file path, e.g. {target / default_name(option)}")
    return check_creatable(target, option)


def check_creatable(target: Path, option: str) -> Path:
    """Fail at once, with one line naming `option`, if nothing can be created at `target` (a file, or
    a folder written beside itself): an ancestor is a file, or its nearest existing folder cannot be
    written (tried for real: permissions, read-only mounts and ACLs all show up). Creates nothing that stays."""
    folder = nearest_existing(target.parent)
    if not folder.is_dir():
        raise UnwritableOutput(f"{option} {target}: cannot create its folder, {folder} is a file")
    try:
        handle, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".check", dir=folder)
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise UnwritableOutput(f"{option} {target}: cannot write in {folder} ({reason}); choose another path") from None
    os.close(handle)
    os.unlink(probe)
    return target


def check_distinct_outputs(outputs: dict[str, str | Path | None]) -> None:
    """Two options naming the same file would overwrite one output with another."""
    seen: dict[Path, str] = {}
    for option, path in outputs.items():
        if not path:
            continue
        resolved = Path(path).expanduser().resolve()
        if resolved in seen:
            raise UnwritableOutput(f"{seen[resolved]} and {option} name the same file {path}; give each its own")
        seen[resolved] = option


def default_name(option: str) -> str:
    return {"--out": "results.json", "--predictions": "predictions.jsonl", "--plot": "plot.png"}.get(option, "output")
