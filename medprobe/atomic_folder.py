"""Output folders that are complete or absent: a lock, a staging folder beside the target, one swap.

Every command that writes a whole folder writes it through `staged_folder` (medprobe build, profile,
export lm-eval, review export); single files use medprobe/atomic.py.

    with staged_folder(out, "build", refuse=ours, overwrite=False) as folder:   # checks, lock, staging folder
        (folder.staged / "README.md").write_text(...)                           # the whole new OUT, then checked
    # leaving the block: folder.staged becomes OUT in one swap; an exception leaves OUT as it was

What it does, in order:

- `check_output_folder(out)` and OUT's parent created (`prepare_parent`): a file, a mount point, a
  read-only or immutable folder is one line before any work.
- `out_lock(out, command)`: an exclusive lock on `.OUT.medprobe-lock` beside OUT (never inside it:
  a published folder holds only its card and data); a second writer stops at once, told which
  command and process holds it. SIGTERM raises like Ctrl-C from here on (`sigterm_raises`), so the
  same cleanup runs.
- under the lock, the staging folders killed writers left beside OUT are removed (`clean_leftovers`,
  which also undoes a two-rename swap cut in half); a resumable writer (profile) keeps the one it
  resumes from (`resume`), which it takes runs from and drops.
- `refuse(out)`: the command's own test of what OUT holds (each command knows its files in its own
  way: a build's card record, a profile.json's or a leaderboard's site-files.json sha256, an export's
  file names, an empty folder); it raises a UserError naming what it did not write, and is skipped
  under `overwrite`. Where a command records the sha256 of each file it wrote, `foreign_files` says
  which files of OUT it did not write and which it wrote but were changed since.
- a staging folder `.OUT.medprobe-tmp-<pid>` beside OUT (`stage_prefix`); the block writes the new
  OUT into its `out/` and checks it. The block ending without an exception swaps it in
  (`swap_into_place`: one atomic exchange where Linux offers it, renameat2, else two renames whose
  half-done state `clean_leftovers` undoes); any exception, Ctrl-C and SIGTERM included, removes
  the staging folder, except that a resumable writer (profile) stopped by Ctrl-C or SIGTERM keeps
  one holding finished runs for the next writer to resume (`resumable`). The swap and every cleanup
  run with SIGINT and SIGTERM held (`signals_deferred`), so neither is cut in half; a signal held
  then takes effect when they are done.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medprobe.atomic import UnwritableOutput, check_creatable, naming_the_output, signals_deferred, sigterm_raises
from medprobe.contracts import UserError

try:  # POSIX; where it is missing (Windows) writers into one OUT are not locked against each other
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

STAGE_MARK = ".medprobe-tmp-"  # .<OUT name>.medprobe-tmp-<pid>: a write in progress, or what a killed one left
LOCK_MARK = ".medprobe-lock"  # .<OUT name>.medprobe-lock


class FolderLocked(UserError):
    """Another process holds the lock on the output folder; the message says which and what to do."""


# --- the lock, the staging folder and the swap ---------------------------------------------------


def check_output_folder(out: Path, option: str = "--out") -> Path:
    """Fail at once, with one line naming `option`, when OUT cannot be written as a folder: it is a file, a
    mount point (a folder medprobe replaces whole is renamed, which a mount point cannot be), a folder nothing
    can be created in (read-only, immutable: tried for real), or its parent cannot take the staging folder and
    lock beside it. Creates nothing that stays; call it before any work."""
    out = Path(out).expanduser()
    if os.path.lexists(out) and not out.is_dir():
        raise UnwritableOutput(f"{option} {out} is a file; give a folder")
    if out.is_dir():
        if os.path.ismount(out):
            raise UnwritableOutput(
                f"{option} {out} is a mount point, which cannot be replaced by a rename as medprobe replaces an output "
                f"folder; give a folder inside it, e.g. {out / 'out'}"
            )
        try:
            handle, probe = tempfile.mkstemp(prefix=".medprobe-", suffix=".check", dir=out)
        except OSError as err:
            raise UnwritableOutput(
                f"{option} {out}: cannot write in it ({err.strerror or type(err).__name__}: read-only or immutable); "
                "choose another folder"
            ) from None
        os.close(handle)
        os.unlink(probe)
    return check_creatable(out, option)


def prepare_parent(out: Path, option: str = "--out") -> None:
    """Create OUT's folder; one line (a UserError) when an ancestor is a file or it cannot be written."""
    check_output_folder(out, option)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:  # changed since the check
        raise UnwritableOutput(f"{option} {out}: cannot create its folder ({err.strerror or err}); choose another path") from None


@contextmanager
def out_lock(out: Path, command: str = "build") -> Iterator[None]:
    """Hold an exclusive lock on `.OUT.medprobe-lock` beside OUT; a second writer stops at once.

    The lock file is beside OUT, not in it (a published folder holds only its card and data), holds
    the pid and the command (`build`, `profile`, ...) of its holder, and is removed on release. A
    writer that opened the file just before it was removed would lock a file no longer in the
    folder: it checks that the path still names what it locked, else retries.
    """
    if fcntl is None:  # pragma: no cover
        yield
        return
    path = out.parent / f".{out.name}{LOCK_MARK}"
    for _ in range(5):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise UnwritableOutput(
                f"{out}: cannot create the lock {path} ({err.strerror or err}); choose another --out"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid, _, holder = (os.read(fd, 200).decode(errors="replace").strip() or "unknown").partition(" ")
            os.close(fd)
            raise FolderLocked(
                f"{out}: another `medprobe {holder or 'build'}` (pid {pid}) is writing this folder (lock {path.name} "
                "beside it); wait for it to finish, or choose another --out"
            ) from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    else:  # pragma: no cover - five writers in a row released the lock under us
        raise FolderLocked(f"{out}: could not take the lock {path}; another medprobe process keeps replacing it")
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {command}".encode())
        yield
    finally:
        with suppress(FileNotFoundError):  # removed by hand meanwhile: nothing to do
            os.unlink(path)  # still locked: a writer that opened it meanwhile sees another inode and retries
        os.close(fd)


def stage_prefix(out: Path) -> str:
    return f".{out.name}{STAGE_MARK}"


def leftover_stages(out: Path) -> list[Path]:
    """The staging folders beside OUT (under the lock: all left by killed processes), oldest name first."""
    return sorted(p for p in out.parent.iterdir() if p.name.startswith(stage_prefix(out)))


def clean_leftovers(out: Path, keep: Path | None = None) -> list[str]:
    """Remove the staging folders killed writers left beside OUT, but `keep`; say what was done.

    Called under the lock, so no process owns them any more. A staging folder with `old/` and no OUT
    is a fallback swap killed between its two renames: `old` is the previous OUT and goes back.
    """
    notes = []
    for stage in leftover_stages(out):
        aside = stage / "old"
        if not os.path.lexists(out) and aside.is_dir():
            os.rename(aside, out)
            notes.append(f"restored {out} from {stage.name}: a medprobe process was killed while swapping it")
        if stage != keep:
            shutil.rmtree(stage)
            notes.append(f"removed {stage.name}, left beside {out.name} by a killed medprobe process")
    return notes


RENAME_EXCHANGE = 2  # linux/fs.h
AT_FDCWD = -100


def exchange(a: Path, b: Path) -> None:
    """Swap two paths in one step (Linux renameat2 with RENAME_EXCHANGE); OSError where unsupported."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available")
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(a))


def swap_into_place(stage: Path, out: Path) -> None:
    """Make `stage/out` OUT; the previous OUT, if any, ends up inside `stage` (deleted with it)."""
    new = stage / "out"
    if not os.path.lexists(out):
        os.rename(new, out)
        return
    try:
        exchange(new, out)  # one atomic step: OUT is the new folder, stage/out the old one
        return
    except OSError:
        pass  # not Linux, or a filesystem without RENAME_EXCHANGE: two renames
    aside = stage / "old"
    os.rename(out, aside)  # OUT is absent until the next rename; a kill here is undone by clean_leftovers
    try:
        os.rename(new, out)
    except BaseException:
        os.rename(aside, out)
        raise


# --- what OUT holds ----------------------------------------------------------------------------------


def files_under(folder: Path) -> list[str]:
    """Every file (and link) under `folder`, as sorted relative POSIX paths."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink())


def listing(names: list[str], shown: int = 5) -> str:
    return ", ".join(names[:shown]) + (" ..." if len(names) > shown else "")


def foreign_files(out: Path, recorded: dict[str, str], own: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """(files of OUT that `recorded` (relative path -> sha256) does not name, besides the record's own files `own`;
    recorded files whose bytes are no longer the ones written: edited since). A replace deletes both kinds."""
    from medprobe.digests import sha256_file

    files = files_under(out)
    stray = [name for name in files if name not in own and name not in recorded]
    changed = [name for name in files if name in recorded and sha256_file(out / name) != recorded[name]]
    return stray, changed


# --- the one staged writer -------------------------------------------------------------------------


@dataclass
class StagedFolder:
    """What the block of `staged_folder` writes: `staged` (the new OUT), inside `stage` beside OUT."""

    out: Path  # OUT, absolute
    stage: Path  # .OUT.medprobe-tmp-<pid>: `staged` and whatever else the writer keeps there (caches, a journal)
    previous: Path | None = None  # a killed writer's staging folder this one resumes from (resumable writers only)
    owned: Any = None  # what `refuse` returned of OUT (build: its card's YAML); None under overwrite

    @property
    def staged(self) -> Path:
        return self.stage / "out"

    def write_texts(self, files: dict[str, str]) -> None:
        """Write each text under its relative path in the new OUT (UTF-8)."""
        for name, text in files.items():
            path = self.staged / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")

    def drop_previous(self) -> None:
        """Remove the killed writer's staging folder once nothing more is taken from it."""
        if self.previous is not None:
            with signals_deferred():
                shutil.rmtree(self.previous, ignore_errors=True)
            self.previous = None


@contextmanager
def staged_folder(
    out: str | Path,
    command: str,
    *,
    refuse: Callable[[Path], Any] | None = None,
    overwrite: bool = False,
    resume: Callable[[list[Path]], Path | None] | None = None,
    notes: Callable[[str], None] | None = None,
    option: str = "--out",
) -> Iterator[StagedFolder]:
    """Lock OUT, check what it holds, stage the new OUT beside it; swap it in when the block ends (see the module).

    `command` names the holder of the lock in a second writer's error (`build`, `profile`, ...). `refuse(out)` raises
    when OUT holds what `command` did not write; it runs under the lock unless `overwrite`, and what it returns is
    `owned`. `resume(stages)` picks, among the staging folders killed writers left, the one a resumable writer takes
    runs from (kept as `previous`, the others removed). `notes` is told of each leftover cleaned up.
    """
    out = Path(out).absolute()
    prepare_parent(out, option)
    stage = out.parent / f"{stage_prefix(out)}{os.getpid()}"
    # a disk that fills (the lock, the new OUT) names no file, or one of the staging folder: both are shown as OUT
    with naming_the_output(stage), sigterm_raises(), out_lock(out, command):
        previous = resume(leftover_stages(out)) if resume is not None else None
        for note in clean_leftovers(out, keep=previous):
            if notes is not None:
                notes(note)
        owned = refuse(out) if refuse is not None and not overwrite else None
        if previous == stage:  # left by a killed process that had this pid
            previous = previous.rename(stage.with_name(f"{stage.name}-killed"))
        folder = StagedFolder(out, stage, previous=previous, owned=owned)
        try:
            folder.staged.mkdir(parents=True)
            yield folder
            with signals_deferred():  # a Ctrl-C or SIGTERM now waits: OUT is swapped whole or not at all
                swap_into_place(stage, out)
                shutil.rmtree(stage)
                folder.drop_previous()
        except BaseException as err:
            with signals_deferred():
                if resumable(err, stage, resume):
                    if notes is not None:
                        notes(
                            f"kept {stage.name} beside {out.name}: the next `medprobe {command}` into {out.name} resumes from it"
                        )
                else:
                    shutil.rmtree(stage, ignore_errors=True)
            raise


def resumable(err: BaseException, stage: Path, resume: Callable[[list[Path]], Path | None] | None) -> bool:
    """Whether a writer stopped by Ctrl-C or SIGTERM leaves its staging folder for the next one to resume: it is a
    resumable writer's (`resume`) and holds what that writer resumes from (profile: runs it journaled). A signal
    that came while a run's files were renamed into place takes effect once they all are, so the run it stopped
    after is complete (medprobe.atomic.signals_deferred). Any other failure removes the staging folder."""
    return isinstance(err, KeyboardInterrupt) and resume is not None and resume([stage]) == stage
