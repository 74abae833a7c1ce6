"""`medprobe.api` was the name of medprobe.contracts before 0.2 (it read as the public API, which is
medprobe.python_api: `import medprobe`). It keeps working for this release, with a DeprecationWarning, and is
removed in 0.3 (docs/changelog.md)."""

import warnings

from medprobe.contracts import *  # noqa: F403 - the same objects, so an isinstance check against either holds
from medprobe.contracts import __all__  # noqa: F401

warnings.warn(
    "medprobe.api is now medprobe.contracts: write `from medprobe.contracts import ...` (the old name goes in medprobe 0.3)",
    DeprecationWarning,
    stacklevel=2,
)
