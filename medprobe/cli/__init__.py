"""The `medprobe` command line: one module per subcommand (build, probe, profile, compare, publish, cite, plugin, ...).

Every subcommand module has `add_<name>_command(subparsers)` that registers its parser and sets
`func` (`probe` parses its own arguments in two stages, see medprobe/cli/probe.py). Errors a user
can fix (medprobe.contracts.UserError: missing files, bad arguments, malformed data) are printed as one
message without a traceback (set MEDPROBE_DEBUG=1 to see it).
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from pathlib import Path

from medprobe import distributed, timeline
from medprobe.atomic import DISK_ERRORS, Terminated, disk_error, sigterm_raises
from medprobe.cli.quiet import filter_known_warnings
from medprobe.contracts import UserError

# Errors raised on purpose with a message for the user (UserError, and the OS's own errors about files and the
# network); anything else, a bare ValueError included, is a bug and keeps its traceback.
USER_ERRORS = (UserError, FileNotFoundError, NotADirectoryError, ConnectionError, PermissionError)


def build_parser() -> argparse.ArgumentParser:
    # Imported here, not at the top, so that Ctrl-C while they load is caught by `main` too.
    from medprobe import __version__
    from medprobe.cli.build import add_build_command
    from medprobe.cli.cache import add_cache_command
    from medprobe.cli.cite import add_cite_command
    from medprobe.cli.compare import add_compare_command
    from medprobe.cli.demo import add_demo_command
    from medprobe.cli.env import add_env_command
    from medprobe.cli.export import add_export_command
    from medprobe.cli.imports import add_import_command
    from medprobe.cli.leaderboard import add_leaderboard_command
    from medprobe.cli.plugin import add_plugin_command
    from medprobe.cli.probe import add_probe_command
    from medprobe.cli.profile import add_profile_command
    from medprobe.cli.publish import add_publish_command
    from medprobe.cli.reproduce import add_reproduce_command
    from medprobe.cli.review import add_review_command
    from medprobe.cli.umls_names import add_umls_names_command

    parser = argparse.ArgumentParser(
        prog="medprobe",
        description="Probe what pre-trained language models know about biomedicine.",
    )
    parser.add_argument("--version", action="version", version=f"medprobe {__version__}")
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress, neither bars nor lines (any command, anywhere on the line); results are still printed. "
        "Redirected to a file or a pipe, progress is a plain line every 10 s instead of a bar",
    )
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    add_build_command(subparsers)
    add_probe_command(subparsers)
    add_profile_command(subparsers)
    add_compare_command(subparsers)
    add_leaderboard_command(subparsers)
    add_publish_command(subparsers)
    add_umls_names_command(subparsers)
    add_demo_command(subparsers)
    add_export_command(subparsers)
    add_import_command(subparsers)
    add_cite_command(subparsers)
    add_reproduce_command(subparsers)
    add_review_command(subparsers)
    add_cache_command(subparsers)
    add_env_command(subparsers)
    add_plugin_command(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; Ctrl-C anywhere prints `interrupted` and exits 130, SIGTERM prints `terminated`
    and exits 143 (the shell's codes for the two signals), after the same cleanup: temporary files and
    staging folders are removed on the way out.

    Called without `argv` (the `medprobe` program, `python -m medprobe`), the process then ends without
    the interpreter's teardown (`exit_without_teardown`); called with a list (tests, the Python API's
    callers) it returns the exit code."""
    if argv is None:  # the program: this process is ours alone (see medprobe.resources.LEAN_EVALUATE)
        from medprobe import resources

        resources.LEAN_EVALUATE = True
        rarer_full_collections()
    if argv is not None:
        return run_command(list(argv))
    try:
        code = run_command(sys.argv[1:], whole_process=True)
    except SystemExit as done:  # argparse, after --help or a usage error: its output is flushed below too
        code = exit_status(done)
    try:  # what is still buffered: a reader that left (`| head`) ends the program here too, quietly
        sys.stdout.flush()
    except BrokenPipeError:
        code = reader_gone()
    exit_without_teardown(code)
    return code


def exit_status(done: SystemExit) -> int:
    """The status `sys.exit(...)` would end with (a message, printed as it would print it: 1)."""
    if done.code is None or isinstance(done.code, int):
        return done.code or 0
    print(done.code, file=sys.stderr)
    return 1


CLOSED_STDOUT = 141  # 128 + SIGPIPE: what the shell reports for cat, grep or git when the reader of their output left


def reader_gone() -> int:
    """stdout is a pipe whose reader has gone (`medprobe compare ... | head -2`): end quietly, as other command-line
    tools do, with the status they end with (CLOSED_STDOUT, so that `set -o pipefail` treats medprobe as it treats
    them). What is still buffered, and anything printed while the program winds down, goes to /dev/null instead of
    raising again (and instead of the interpreter's "Exception ignored ... BrokenPipeError" at exit); stderr too when
    it is the same pipe (`2>&1 | head`)."""
    targets = [1, 2] if same_file(1, 2) else [1]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in targets:
            os.dup2(devnull, fd)
    finally:
        os.close(devnull)
    return CLOSED_STDOUT


def stdout_reader_gone() -> bool:
    """Whether fd 1 is a pipe whose reader has closed it (poll says POLLERR), so that a BrokenPipeError of another
    pipe or socket (a network connection) is still reported as an error. Where poll is missing (Windows): assume so."""
    import select

    if not hasattr(select, "poll"):
        return True
    poller = select.poll()
    poller.register(1, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _fd, events in poller.poll(0))


def same_file(first: int, second: int) -> bool:
    try:
        one, two = os.fstat(first), os.fstat(second)
    except OSError:
        return False
    return (one.st_dev, one.st_ino) == (two.st_dev, two.st_ino)


FULL_COLLECTION_THRESHOLD = 100  # young collections between full ones (Python's default is 10)


def rarer_full_collections() -> None:
    """In the program, full garbage collections ten times rarer; young objects are collected as often.

    Importing torch, datasets and transformers leaves about a million long-lived objects, and each full
    collection walks them all: a measurable share of a warm MedLAMA probe (docs/scaling.md, measured with
    gc.callbacks). Cyclic garbage that survives into the oldest generation waits longer to be freed, which
    a command that ends costs nothing; the Python API leaves the caller's settings alone."""
    import gc

    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_THRESHOLD)


def exit_without_teardown(code: int) -> None:
    """End the process with `code` as the interpreter would, minus its teardown: finalizing ~3,000 modules
    (torch, pyarrow, transformers, ...) and freeing what they hold takes about a second after a probe has
    written everything (docs/scaling.md). atexit handlers still run (logging flushes, file locks are
    released) and the standard streams are flushed. While a thread that the ordinary exit would wait for
    still runs, or the code is not an integer, this returns and the ordinary exit follows."""
    import atexit
    import threading

    waited_for = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon and t.is_alive()]
    if waited_for or not isinstance(code, int):
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (medprobe ... | head) or stream: nothing more to write
            pass
    os._exit(code)


def run_command(argv: list[str], whole_process: bool = False) -> int:
    """One command, its errors turned into exit codes (see `main`); `whole_process`: the `medprobe` program."""
    filter_known_warnings()  # known, harmless library warnings (medprobe/cli/quiet.py says which and why)
    if distributed.launched():  # one of several processes (accelerate launch / torchrun): the main one reports
        distributed.quiet_other_processes()
    from medprobe.progress import policy

    quiet = "--quiet" in argv  # anywhere on the line, for every command: no progress, bars or lines
    argv = [word for word in argv if word != "--quiet"]
    try:
        with (
            sigterm_raises(),
            policy(quiet, whole_process=whole_process),
        ):  # SIGTERM raises Terminated (a KeyboardInterrupt): `finally` blocks run
            if argv[:1] == ["probe"]:  # parsed in two stages: the options depend on --prober and --task
                from medprobe.cli.probe import run_probe_command

                code = run_probe_command(argv[1:])
            elif argv[:1] == ["env"] and len(argv) == 1:  # without the registry: a broken plugin must not stop it
                from medprobe.cli.env import run_env

                code = run_env()
            elif argv[:1] == ["plugin"]:  # parsed alone: the other parsers read the plugins it may be checking
                from medprobe.cli.plugin import run_plugin_command

                code = run_plugin_command(argv[1:])
            else:
                args = build_parser().parse_args(argv)
                code = args.func(args)
            distributed.finish()  # under a launch: every process done, then the process group closed
        timeline.mark("command done (the interpreter exits next)")
        return code
    except KeyboardInterrupt as err:  # Ctrl-C, or SIGTERM (medprobe.atomic.Terminated)
        if os.environ.get("MEDPROBE_DEBUG"):
            raise
        terminated = isinstance(err, Terminated)
        print("terminated" if terminated else "interrupted", file=sys.stderr)
        return 143 if terminated else 130
    except BrokenPipeError as err:  # before the handler below: a ConnectionError, which USER_ERRORS hold
        if os.environ.get("MEDPROBE_DEBUG"):
            raise
        if stdout_reader_gone():  # the reader of our output left: no error of anyone's
            return reader_gone()
        print(f"medprobe: error: {err}", file=sys.stderr)  # another pipe or a connection: as USER_ERRORS say it
        return 2
    except Exception as err:
        if os.environ.get("MEDPROBE_DEBUG"):
            raise
        disk = disk_error(err)  # a full disk, however a library wrapped it (datasets' DatasetGenerationError)
        if disk is None and not isinstance(err, USER_ERRORS):
            raise  # a bug: its traceback
        print(f"medprobe: error: {disk_error_text(disk) if disk is not None else err}", file=sys.stderr)
        return 2


def disk_error_text(err: OSError) -> str:
    """One line for a write the file system refused: the folder that filled and which it is (an output, the Hugging
    Face datasets cache, the embedding cache), named as the user knows it (never a temporary name), and what to do."""
    from medprobe.atomic import STAGED, STAGING, shown_path

    reason = DISK_ERRORS[err.errno]
    fix = {errno.EFBIG: "raise the limit", errno.EROFS: "make it writable", errno.EIO: "check the disk"}.get(
        err.errno, "free space"
    )
    path = os.fsdecode(err.filename) if err.filename else ""
    for root, what, elsewhere in caches():
        if path and inside(path, root):
            return f"cannot write {what} {root}: {reason}; the outputs are as they were: {fix} there, or {elsewhere}"
    # a file of a staged OUT is shown where it will be, one of a staging folder's own (a build's caches) as OUT
    staging = STAGING.search(STAGED.sub(lambda m: f"/{m['out']}", path))
    where = f"the output{' folder' if staging else ''} {shown_path(path)}" if path else "the outputs"
    return f"cannot write {where}: {reason}; the outputs there before are as they were: {fix}, or choose another --out"


def caches() -> list[tuple[Path, str, str]]:
    """(folder, what it is, how to move it) of each cache medprobe writes through, the innermost first."""
    from huggingface_hub import constants

    from medprobe.digests import cache_root

    if "datasets" in sys.modules:  # as datasets read it at import (HF_DATASETS_CACHE, else HF_HOME/datasets)
        import datasets

        datasets_cache = Path(datasets.config.HF_DATASETS_CACHE)
    else:
        datasets_cache = Path(os.environ.get("HF_DATASETS_CACHE") or Path(constants.HF_HOME) / "datasets")
    elsewhere = "set {} to a folder on a disk with room".format
    return [
        (cache_root(), "the embedding cache", f"{elsewhere('MEDPROBE_EMBEDDING_CACHE')}, or pass --no-cache"),
        (datasets_cache, "the Hugging Face datasets cache", elsewhere("HF_DATASETS_CACHE")),
        (Path(constants.HF_HOME), "the Hugging Face cache", elsewhere("HF_HOME")),
    ]


def inside(path: str, folder: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder.expanduser()))


if __name__ == "__main__":
    sys.exit(main())
