"""Output files that are complete or absent: written under a temporary name, renamed into place.

    check_writable("out/results.json", "--out")        # before any model loads: fail in seconds
    with atomic_output("out/results.json") as temp:     # after the run
        temp.write_text(...)                             # renamed over the target only on success

A run that fails or is killed while writing leaves the target as it was, byte for byte: the
temporary file sits in the target's own folder (so `os.replace` is an atomic rename on the same
file system), is flushed to disk before the rename, and is removed on any exception, Ctrl-C
included. Only a SIGKILL or a power cut during the write can leave it behind, as a hidden
`.<stem>-tmp-<pid><suffix>` file beside the target.

Several files of one run (results JSON, outcomes, predictions, plot) are one unit: `write_all_atomically`
writes every one under its temporary name first, then renames them in the order given (the results
JSON last, naming the sha256 of the others) with SIGINT and SIGTERM held off (a signal held takes
effect once the last rename is done), and puts the previous files back if a rename fails. A SIGKILL
between two renames leaves a JSON whose named files do not match: `medprobe.records` reads that as an
interrupted write, never as a run.

A full disk raises from a write naming no file, often wrapped by the library that wrote (datasets):
`naming_the_output` raises it as its OSError, naming what the write was for, and the CLI says in one
line which folder filled (medprobe.cli.disk_error_text).
"""

from __future__ import annotations

import errno
import os
import re
import signal
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from medprobe.contracts import UserError


class UnwritableOutput(UserError):
    """An output path that cannot be written; the message names the option and the path."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that the same cleanup runs (the CLI exits 143 on it, 130 on Ctrl-C)."""


# --- signals -------------------------------------------------------------------------------------


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()  # signal handlers can only be set there


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """SIGTERM raises `Terminated` (a KeyboardInterrupt) so that `finally` blocks clean up."""
    if not _in_main_thread():
        yield
        return

    def terminated(signum: int, frame: object) -> None:
        raise Terminated(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


@contextmanager
def signals_deferred() -> Iterator[list[int]]:
    """SIGINT and SIGTERM are held until the block ends, so a swap, a commit or a cleanup is never cut in half.

    The signals that arrived are listed in the yielded list and delivered again when the block ends, to the
    handlers of before (the CLI's: Ctrl-C raises KeyboardInterrupt, SIGTERM `Terminated`; without them, the
    default: the process ends by the signal): the block's outcome stands (a swap that finished is a finished
    write; a cleanup runs because the write failed), and then the signal takes effect, as if it had come just
    after. Held signals never pass unnoticed: a command that went on (the next run of a profile) after a
    SIGTERM that came during a commit would end with exit 0 and its outputs written. Nested blocks hand
    their signals to the outer block, which delivers them when it ends.
    """
    received: list[int] = []
    if not _in_main_thread():
        yield received
        return
    previous = {s: signal.signal(s, lambda signum, frame: received.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        for signum in dict.fromkeys(received):  # once each, in the order they came; the first that raises ends it
            signal.raise_signal(signum)


# --- files ---------------------------------------------------------------------------------------


TEMPORARY_FILE = re.compile(r"^\.(?P<stem>.+)-tmp-\d+(?P<suffix>\.[^.]*)?$")  # temporary_sibling's names
STAGED = re.compile(r"/\.(?P<out>[^/]+)\.medprobe-tmp-\d+[^/]*/out(?=/|$)")  # atomic_folder's staging folders
STAGING = re.compile(r"/\.(?P<out>[^/]+)\.medprobe-tmp-\d+[^/]*(/.*)?$")  # anything else in one


def shown_path(path: str | Path) -> str:
    """A path as the user named it: a temporary file as its target, a file in a staging folder as it will be in
    OUT, and one of the staging folder's own (a build's caches) as OUT itself (messages never show a name that
    is gone when the command ends)."""
    text = STAGED.sub(lambda m: f"/{m['out']}", str(path))
    text = STAGING.sub(lambda m: f"/{m['out']}", text)  # the staging folder's own files (a build's caches): OUT
    folder, _, name = text.rpartition("/")
    found = TEMPORARY_FILE.match(name)
    if found:
        name = f"{found['stem']}{found['suffix'] or ''}"
    return f"{folder}/{name}" if folder or text.startswith("/") else name


def temporary_sibling(target: Path) -> Path:
    """A hidden name beside `target`, unique to this process, with the target's suffix (tools that
    pick a format from the suffix see the same one)."""
    return target.with_name(f".{target.stem}-tmp-{os.getpid()}{target.suffix}")


# What the file system says when a write is refused for want of room or by the disk itself, as the CLI says it
# (medprobe.cli.disk_error_text names the folder that filled: an output, a cache).
DISK_ERRORS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EFBIG: "a file would pass the file size limit (ulimit -f)",
    errno.EROFS: "the file system is read-only",
    errno.EBUSY: "it is busy (a mount point?)",
    errno.EIO: "an input/output error",
}


FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # no room: what a library may wrap in an error of its own
DATASETS_NO_SPACE = "Not enough disk space."  # datasets' OSError when the cache's disk has no room left (no errno)


def disk_error(err: BaseException | None) -> OSError | None:
    """`err` when it is an OSError of DISK_ERRORS, else the full disk (FULL) it was raised from or while handling,
    however deep (datasets raises it as its DatasetGenerationError); None when there is none. The chain is
    followed as Python shows it (a context raised `from None` is not)."""
    if isinstance(err, OSError) and err.errno in DISK_ERRORS:
        return err
    pending, seen = [err], set()
    while pending:
        current = pending.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in FULL:
            return current
        if isinstance(current, OSError) and current.errno is None and str(current).startswith(DATASETS_NO_SPACE):
            current.errno = errno.ENOSPC  # datasets' own check before it writes a dataset: a full disk without errno
            return current
        pending += [current.__cause__, None if current.__suppress_context__ else current.__context__]
    return None


@contextmanager
def naming_the_output(target: str | Path) -> Iterator[None]:
    """A disk error raised in the block, however wrapped, is raised as its OSError, naming `target` when it names
    no file: a write through pyarrow or numpy fills a disk naming none. Wrap a write with what it writes to (an
    output, a cache folder); the innermost name is kept."""
    try:
        yield
    except Exception as err:  # not Ctrl-C nor SIGTERM, whatever they were raised while handling
        found = disk_error(err)
        if found is None:
            raise
        if found.filename is None:
            found.filename = str(target)
        if found is err:
            raise
        raise found from err


def flush_written(temp: Path, target: Path) -> None:
    """Check that `temp` was written and put it on disk, so a power cut after the rename cannot leave an empty target."""
    if not temp.is_file():
        raise RuntimeError(f"nothing was written to {temp} for {target}")
    with open(temp, "rb") as handle:
        os.fsync(handle.fileno())


@contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces `path`, on any exception it is removed."""
    target = Path(path)
    if target.is_dir():
        raise UnwritableOutput(f"{target} is a folder; expected a file path")
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = temporary_sibling(target)
    try:
        with naming_the_output(target):
            yield temp
        flush_written(temp, target)
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
    """Call every `writer(temporary_path)` in order, then rename all the files into place, in the same
    order; None targets are skipped. The outputs of one run change together:

    - a writer that fails removes every temporary file and touches no target;
    - the renames run with SIGINT and SIGTERM held (`signals_deferred`), and a rename that fails puts
      back the files already replaced (each previous file is kept as a hard link until the end) and
      removes the new ones that had no predecessor;
    - only a SIGKILL or a power cut between two renames can leave some files new and some old; the
      caller that must tell (a run) names the other files' sha256 in the file it renames last.
    """
    targets = [(Path(target), write) for target, write in writers if target]
    resolved = [target.expanduser().resolve() for target, _ in targets]
    for index, path in enumerate(resolved):
        if path in resolved[:index]:
            raise UnwritableOutput(f"two outputs of this run would be written to the same file {targets[index][0]}")
    staged: list[tuple[Path, Path]] = []  # (temporary file, target)
    try:
        for target, write in targets:
            if target.is_dir():
                raise UnwritableOutput(f"{target} is a folder; expected a file path")
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = temporary_sibling(target)
            staged.append((temp, target))
            with naming_the_output(target):
                write(temp)
            flush_written(temp, target)
        with signals_deferred():
            rename_all(staged)
    except BaseException:
        for temp, _ in staged:
            temp.unlink(missing_ok=True)
        raise
    return [target for target, _ in targets]


def rename_all(staged: list[tuple[Path, Path]]) -> None:
    """Rename each (temporary file, target) in order; if one fails, undo the ones done before it."""
    done: list[tuple[Path, Path | None]] = []  # (target, the hard link keeping its previous file, or None)
    kept: list[Path] = []
    try:
        for temp, target in staged:
            previous = keep_previous(target)
            if previous is not None:
                kept.append(previous)
            os.replace(temp, target)
            done.append((target, previous))
    except BaseException:
        for target, previous in reversed(done):
            with suppress(OSError):  # best effort: what cannot be put back is caught by the reader's hash checks
                if previous is not None:
                    os.replace(previous, target)
                else:
                    target.unlink()
        raise
    finally:
        for previous in kept:
            with suppress(OSError):
                previous.unlink(missing_ok=True)


def keep_previous(target: Path) -> Path | None:
    """A hard link to the file now at `target` (None: there is none, or the file system has no hard links)."""
    if not target.is_file():
        return None
    link = target.with_name(f".{target.stem}-old-{os.getpid()}{target.suffix}")
    with suppress(FileNotFoundError):
        link.unlink()
    try:
        os.link(target, link)
    except OSError:
        return None
    return link


def refuse_unrecorded(
    folder: Path, recorded: dict[str, str], *, command: str, option: str = "--out", only: Iterable[str] | None = None
) -> None:
    """Refuse (one line) a `folder` holding files that `command` did not record writing there: a file missing from
    `recorded` (relative path -> sha256, what the command wrote last time; "" for its own record file, not compared)
    or changed since. `only`: the names the command writes (a command that writes a few files into a folder of the
    user's leaves the others alone); default every file under the folder. The caller skips this under --overwrite."""
    from medprobe.digests import sha256_file

    if not folder.is_dir():
        return
    if only is None:
        found = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink())
    else:
        found = sorted(name for name in only if os.path.lexists(folder / name))
    foreign = [name for name in found if name not in recorded]
    changed = [name for name in found if name in recorded and recorded[name] and sha256_file(folder / name) != recorded[name]]
    if not foreign and not changed:
        return
    shown = ", ".join((foreign + changed)[:8]) + (" ..." if len(foreign) + len(changed) > 8 else "")
    what = "files it did not write" if foreign else "files changed since it wrote them"
    if foreign and changed:
        what = "files it did not write or that changed since"
    raise UnwritableOutput(
        f"{option} {folder} holds {what} ({shown}); `medprobe {command}` would write over them: move them away, "
        "choose another folder, or pass --overwrite"
    )


def refuse_foreign_files(outputs: dict[str, str | Path | None], ours: Callable[[str, Path], bool], *, command: str) -> None:
    """Refuse (one line) the first output path that holds a file `ours(option, path)` does not recognise as one medprobe
    wrote: a file the command would replace. `outputs`: option (or how a companion is named, e.g. "--out's outcomes
    file") -> path, None for one not written. A folder or an absent path is check_writable's. The caller skips this
    under --overwrite."""
    for option, path in outputs.items():
        if not path or not os.path.lexists(path) or Path(path).is_dir():
            continue
        if not ours(option, Path(path)):
            flag = option.split("'")[0].split(" ")[0]  # "--out's outcomes file": the option that places it is --out
            raise UnwritableOutput(
                f"{option} {path} is a file medprobe did not write; `medprobe {command}` would replace it: move it away, "
                f"choose another {flag}, or pass --overwrite"
            )


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
    permissions, read-only mounts and ACLs all show up), and an existing file there can be replaced
    (not a mount point, immutable or append-only). Creates nothing that stays.
    """
    if not str(path).strip():
        raise UnwritableOutput(f"{option}: an empty path")
    target = Path(path).expanduser()
    if target.is_dir():
        raise UnwritableOutput(f"{option} {target} is a folder; give a file path, e.g. {target / default_name(option)}")
    check_replaceable(target, option)  # an existing file a rename cannot replace: now, not after the run
    return check_creatable(target, option)


FS_IOC_GETFLAGS = 0x80086601  # linux/fs.h, read through an int
FS_IMMUTABLE_FL, FS_APPEND_FL = 0x10, 0x20


def file_flags(path: Path) -> int:
    """The file's Linux inode flags (chattr's), 0 where they cannot be read (not Linux, a file system without them)."""
    try:
        import fcntl
        import struct

        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (ImportError, OSError):
        return 0
    try:
        return struct.unpack("i", fcntl.ioctl(fd, FS_IOC_GETFLAGS, b"\0" * 4))[0]
    except OSError:
        return 0
    finally:
        os.close(fd)


def check_replaceable(path: str | Path, option: str) -> None:
    """Fail at once, with one line naming `option`, when an existing file at `path` cannot be replaced by a rename
    (as every output is written): it is a mount point, or immutable or append-only (chattr +i / +a: refused even to
    root). Nothing to check when there is no file; a folder is check_writable's."""
    target = Path(path).expanduser()
    if not os.path.lexists(target) or target.is_dir():
        return
    if os.path.ismount(target):
        raise UnwritableOutput(
            f"{option} {path} is a mount point, which cannot be replaced by a rename as medprobe writes its outputs; "
            "choose another path"
        )
    flags = file_flags(target)
    if flags & (FS_IMMUTABLE_FL | FS_APPEND_FL):
        kind, flag = ("immutable", "i") if flags & FS_IMMUTABLE_FL else ("append-only", "a")
        raise UnwritableOutput(
            f"{option} {path}: cannot be replaced ({kind}: chattr +{flag}); lift it (chattr -{flag}) or choose another path"
        )


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
