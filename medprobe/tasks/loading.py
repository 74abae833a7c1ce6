"""`medprobe.tasks.loading` was the name of medprobe.loading before 0.2 (loading a built folder is the data
layer's job, below the tasks and the exports that both use it). It keeps working for this release, with a
DeprecationWarning, and is removed in 0.3 (docs/changelog.md)."""

import warnings

from medprobe.loading import *  # noqa: F403 - the same functions
from medprobe.loading import (  # noqa: F401 - the names a plugin used, spelled out for readers and linters
    check_fields,
    column,
    load_probe_dataset,
    row_digests,
)

warnings.warn(
    "medprobe.tasks.loading is now medprobe.loading: write `from medprobe.loading import ...` "
    "(the old name goes in medprobe 0.3)",
    DeprecationWarning,
    stacklevel=2,
)
