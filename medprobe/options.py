"""Options several commands share, declared once: flag, destination, type (the check and its message on the
command line), default and metavar. The CLI adds them (`add`, each command with its own help), the Python
API and the library functions take their defaults from here and check values given in Python with
`check_positive`, so `--resamples 0` and `resamples=0` are refused the same way by probe, compare and review.

    RESAMPLES_OPTION  --resamples N  bootstrap resamples (probe, compare, review import)
    SEED_OPTION       --seed S       seed of the resampling or the sample (compare, review export and import)
    K_OPTION          --k K,...      acc@k cut-offs (the medlama and context-variance tasks; declared in medprobe.registry)

Light, as the registry is: the CLI parsers import it. medprobe.stats keeps its own RESAMPLES and SEED (it
imports no other module of medprobe); tests/test_options.py checks that they are these defaults.
"""

from __future__ import annotations

import argparse

from medprobe.contracts import UserError
from medprobe.registry import K_OPTION, Option, positive_int

__all__ = ["K_OPTION", "RESAMPLES_OPTION", "SEED_OPTION", "add", "check_positive"]

RESAMPLES_OPTION = Option("--resamples", "resamples", "bootstrap resamples", type=positive_int, default=1000, metavar="N")
SEED_OPTION = Option("--seed", "seed", "seed of the resampling", type=int, default=0)


def add(parser: argparse._ActionsContainer, option: Option, help: str, *, default: bool = True) -> None:
    """Add a shared option to one command's parser, with that command's `help` (`%(default)s` names the default).

    `default=False`: left out, the option is not set at all (the code's own default applies, as for the
    registry's options), so `help` names the default itself."""
    parser.add_argument(
        option.flag,
        dest=option.dest,
        type=option.type,
        default=option.default if default else None,
        metavar=option.metavar,
        help=help,
    )


def check_positive(option: Option, value: int) -> int:
    """A positive-integer option given in Python (the command line checked it already): one line naming the flag."""
    if value < 1:
        raise UserError(f"{option.flag} must be a positive integer, got {value}")
    return value
