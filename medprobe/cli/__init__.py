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

from medprobe import distributed, timeline
from medprobe.atomic import Terminated, sigterm_raises
from medprobe.cli.quiet import filter_known_warnings
from medprobe.contracts import UserError

# Errors raised on purpose with a message for the user (UserError, and the OS's own errors about files and the
# network); anything else, a bare ValueError included, is a bug and keeps its traceback.
USER_ERRORS = (UserError, FileNotFoundError, NotADirectoryError, ConnectionError, PermissionError)
# What the file system says when outputs cannot be written (every output is written under a temporary name and
# renamed: the previous files are left as they were)
DISK_ERRORS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EBUSY: "it is busy (a mount point?)",
    errno.EIO: "an input/output error",
}


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
    code = run_command(sys.argv[1:] if argv is None else list(argv), whole_process=argv is None)
    if argv is None:
        exit_without_teardown(code)
    return code


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
    except USER_ERRORS as err:
        if os.environ.get("MEDPROBE_DEBUG"):
            raise
        print(f"medprobe: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        if err.errno not in DISK_ERRORS or os.environ.get("MEDPROBE_DEBUG"):
            raise
        print(f"medprobe: error: {disk_error_text(err)}", file=sys.stderr)
        return 2


def disk_error_text(err: OSError) -> str:
    """One line for an output the file system refused, naming it as the user did (never a temporary name)."""
    from medprobe.atomic import shown_path

    where = f"cannot write {shown_path(err.filename)}" if err.filename else "cannot write the outputs"
    return f"{where}: {DISK_ERRORS[err.errno]}; the outputs there before are as they were: free space, or choose another --out"


if __name__ == "__main__":
    sys.exit(main())
