"""`probers` was medprobe's package name before 0.2; it is `medprobe` now.

`import probers` and `from probers.X import Y` keep working for this release, with a
DeprecationWarning: `probers` is the package `medprobe` and every `probers.X` the module
`medprobe.X` itself (the same objects, so a patch of one is a patch of the other).
"""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

warnings.warn(
    "the package `probers` is now `medprobe`: write `import medprobe` (the old name goes in medprobe 0.3)",
    DeprecationWarning,
    stacklevel=2,
)


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `probers.X` as the already importable `medprobe.X`."""

    def find_spec(self, fullname, path, target=None):
        if fullname.startswith("probers."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("medprobe" + spec.name[len("probers") :])

    def exec_module(self, module):
        pass  # the module is medprobe's, already executed


if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
    sys.meta_path.insert(0, _Alias())
sys.modules[__name__] = importlib.import_module("medprobe")
