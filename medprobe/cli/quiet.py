"""Library warnings that are known and harmless on medprobe's commands, silenced in this one place.

Each entry is narrow: one category and the start of one message, with the reason it is harmless.
A warning that is ours to fix is fixed at its cause instead (e.g. TrainingArguments created with
`dataloader_pin_memory=False` on CPU). `main` installs the filters; the Python API leaves the
caller's warnings alone.
"""

from __future__ import annotations

import warnings

# (category, regular expression matched at the start of the message, why it is harmless)
KNOWN_WARNINGS: tuple[tuple[type[Warning], str, str], ...] = (
    (
        UserWarning,
        r"'pin_memory' argument is set as true but no accelerator is found",
        "torch's DataLoader on a CPU-only machine: pinning is skipped, nothing else changes. medprobe's own "
        "Trainers pass use_cpu=True there (it turns dataloader_pin_memory off); a plugin's may not",
    ),
)


def filter_known_warnings() -> None:
    """Ignore the KNOWN_WARNINGS for the rest of the process (other warnings still show)."""
    for category, message, _why in KNOWN_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)
