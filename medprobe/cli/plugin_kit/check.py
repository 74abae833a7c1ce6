"""`medprobe plugin check DIST`: the conformance rules on the entries one installed distribution declares.

The registry checked is medprobe's built-ins plus that distribution's entry points only: another installed
plugin neither helps nor breaks the check. An entry point that does not register (it does not load, names
no entry, or takes a name already taken) is the first failure, and nothing else is checked.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path

from medprobe.cli.plugin_kit.conformance import Checker, Failure, rules_for
from medprobe.contracts import UserError
from medprobe.registry import KIND_OF_GROUP, PLUGIN_GROUPS, PluginError, Registry

REGISTERS = "entry-points"
REGISTERS_SAYS = "each entry point loads, names one entry of its group, is named after it, and takes a free name"


def plugin_distribution(name: str) -> Distribution:
    """The installed distribution `name` that declares medprobe entry points (UserError otherwise)."""
    try:
        found = distribution(name)
    except PackageNotFoundError:
        raise UserError(
            f"no distribution {name!r} is installed here; pip install it (pip install -e FOLDER) and check again"
        ) from None
    if not [point for point in found.entry_points if point.group in PLUGIN_GROUPS]:
        raise UserError(
            f"{found.metadata['Name']} {found.version} declares no entry point in {' or '.join(PLUGIN_GROUPS)}: it is no medprobe plugin"
        )
    return found


def check_distribution(
    name: str, *, on_each: Callable[[str], None] = lambda line: None, workdir: Path | None = None
) -> list[Failure]:
    """Every conformance rule on every entry the distribution `name` declares; the failures (none: it conforms).
    `on_each` receives one line per rule checked."""
    found = plugin_distribution(name)
    points = [point for point in found.entry_points if point.group in PLUGIN_GROUPS]
    label = f"distribution {found.metadata['Name']} {found.version}"
    try:
        checked = Registry.build(points)
    except PluginError as err:
        return [Failure(label, REGISTERS, REGISTERS_SAYS, str(err))]
    names = {kind: [point.name for point in points if KIND_OF_GROUP[point.group] == kind] for kind in ("task", "prober")}
    with tempfile.TemporaryDirectory(prefix="medprobe-plugin-check-") as scratch:
        checker = Checker(checked, workdir or Path(scratch))
        return checker.failures(rules_for(names["task"], names["prober"]), on_each)
