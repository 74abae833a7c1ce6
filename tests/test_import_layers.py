"""The one-way imports of docs/architecture.md: each module of medprobe/ sits in a layer and imports only
from its own layer and those below it, so the data never depends on the probers, the probers never on
the run, and nothing but the commands on the CLI.

The layers are listed here and drawn in docs/architecture.md; change both together. Every import
statement counts, lazy ones inside functions too (an import that runs late is still a dependency), except
those under `if TYPE_CHECKING:` (the graph is tests/test_imports.py's). A module that no layer names fails
the test: a new module is placed on purpose, not by default. Imports by name at run time
(`registry.load("module:Class")`, `import_module`) are not import statements and are not checked: that is
how the run reaches tasks and probers, plugins' included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from test_imports import import_graph, imported_names

ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
MAP_MARK = "<!-- layers: read by tests/test_import_layers.py, top layer first -->"


def read_layers(page: Path = ARCHITECTURE) -> list[tuple[str, tuple[str, ...]]]:
    """Bottom to top: each layer's modules, or packages whose modules all belong to it, as docs/architecture.md
    lists them (the one copy of the map): the fenced block after MAP_MARK, one `layer: name name ...` line each,
    top layer first; a name is relative to medprobe/ (`medprobe` alone is the package itself)."""
    text = page.read_text(encoding="utf-8")
    block = text.split(MAP_MARK, 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    layers = []
    for line in block.strip().splitlines():
        name, _, modules = line.partition(":")
        layers.append((name.strip(), tuple(m if m == "medprobe" else f"medprobe.{m}" for m in modules.split())))
    return layers[::-1]


LAYERS = read_layers()

# Imports that break a rule today, each with why and what removes it. An entry that no import uses any
# more fails the test too, so that this list only shrinks.
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {}

# Modules that import no other module of medprobe: everything may import them, and they stay small.
LEAVES = ("medprobe.contracts", "medprobe.stats")
# The run loop reaches tasks and probers only through the registry (by name), as it reaches a plugin's.
RUN_DOES_NOT_IMPORT = ("medprobe.contrastive", "medprobe.lm", "medprobe.tasks")


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def holds(name: str, module: str) -> bool:
    """Whether the LAYERS name `name` covers `module`: itself, or a module of the package `name`
    (the top package "medprobe" only itself: its modules are placed one by one)."""
    return module == name or (name != "medprobe" and within(module, name))


def layer_of(module: str) -> int | None:
    """The index of the layer of `module` (None: no layer names it)."""
    found = [index for index, (_, names) in enumerate(LAYERS) for name in names if holds(name, module)]
    return found[0] if found else None


# An installed wheel carries the builders, metrics and card templates as data under medprobe/_resources
# (pyproject's force-include): Hub repos loaded by path, not modules of the package; their own rule is
# test_builders_and_metrics_import_nothing_of_medprobe.
RESOURCES = "medprobe._resources"


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return {module: imports for module, imports in import_graph().items() if not within(module, RESOURCES)}


def test_every_module_has_a_layer(graph):
    unplaced = sorted(module for module in graph if layer_of(module) is None)
    assert not unplaced, f"place these modules in a layer of LAYERS here and in docs/architecture.md: {unplaced}"


def test_layer_of_takes_the_most_specific_name():
    assert layer_of("medprobe") == 0 and layer_of("medprobe.contracts") == 0 and layer_of("medprobe.hub.checks") == 4
    assert layer_of("medprobe.cli.probe") == 5 and layer_of("medprobe.runner") is None  # a prefix is not a package


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {
        (module, imported)
        for module, imports in graph.items()
        for imported in imports
        if layer_of(module) is not None and layer_of(imported) is not None and layer_of(imported) > layer_of(module)
    }


def test_a_module_imports_only_its_own_layer_and_those_below(graph):
    upward = upward_imports(graph)
    breaking = sorted(upward - KNOWN_EXCEPTIONS.keys())
    lines = [f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})" for a, b in breaking]
    assert not breaking, "imports against the layers of docs/architecture.md:\n" + "\n".join(lines)
    stale = sorted(KNOWN_EXCEPTIONS.keys() - upward)
    assert not stale, f"these imports are gone: remove them from KNOWN_EXCEPTIONS: {stale}"


def test_the_check_sees_an_upward_import():
    """The rule is not vacuous: a data module importing the CLI is caught, the run importing a lower layer is not."""
    made_up = {"medprobe.building.build": {"medprobe.cli.probe", "medprobe.contracts"}, "medprobe.run": {"medprobe.lm.loading"}}
    assert upward_imports(made_up) == {("medprobe.building.build", "medprobe.cli.probe")}


def test_nothing_below_the_commands_imports_the_cli(graph):
    """The CLI's users are the commands' layer only (cli, __main__, and plugin_kit, whose rules run `medprobe probe`)."""
    users = sorted(module for module, imports in graph.items() if any(within(i, "medprobe.cli") for i in imports))
    commands = len(LAYERS) - 1
    assert all(layer_of(user) == commands for user in users), users


@pytest.mark.parametrize("leaf", LEAVES)
def test_leaves_import_nothing_of_medprobe(graph, leaf):
    assert graph[leaf] == set(), f"{leaf} imports {sorted(graph[leaf])}"


def test_the_run_reaches_tasks_and_probers_only_through_the_registry(graph):
    direct = sorted(i for i in graph["medprobe.run"] if any(within(i, package) for package in RUN_DOES_NOT_IMPORT))
    assert not direct, f"medprobe.run imports {direct}: name them in the registry and load them with registry.load"


def test_builders_and_metrics_import_nothing_of_medprobe():
    """datasets/<benchmark>/ and metrics/<metric>/ are Hub repos: loaded by path, self-contained."""
    root = Path(__file__).resolve().parents[1]  # the checkout's folders (an installed wheel has copies)
    found = []
    for path in sorted([*(root / "datasets").rglob("*.py"), *(root / "metrics").rglob("*.py")]):
        names = imported_names(ast.parse(path.read_text(encoding="utf-8")), path.stem, is_package=False)
        found += [f"{path.relative_to(root)}: {name}" for name in names if within(name, "medprobe")]
    assert (root / "datasets" / "medlama" / "medlama.py").is_file()  # the folders are the checkout's
    assert not found, found


def test_every_name_of_the_map_is_a_module_or_package_of_medprobe(graph):
    """The map on the architecture page names what exists: a renamed or removed module is taken off it."""
    names = [name for _, names in LAYERS for name in names]
    stale = [name for name in names if not any(holds(name, module) for module in graph)]
    assert [layer for layer, _ in LAYERS] == ["foundation", "data", "probers and tasks", "run", "uses of runs", "commands"]
    assert not stale, f"docs/architecture.md's layer map names modules that do not exist: {stale}"


def room_of(module: str) -> str | None:
    """The most specific name of the map that holds `module` (its room: a package, or a module placed by name)."""
    names = [name for _, names in LAYERS for name in names if holds(name, module)]
    return max(names, key=len) if names else None


def room_cycle(graph: dict[str, set[str]]) -> list[str]:
    """A loop of rooms that import each other (directly or around), or [] when the rooms' imports are one-way."""
    edges: dict[str, set[str]] = {}
    for module, imports in graph.items():
        source = room_of(module)
        for imported in imports:
            target = room_of(imported)
            if source and target and target != source:
                edges.setdefault(source, set()).add(target)
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(room: str, path: list[str]) -> list[str]:
        state[room] = 1
        for nxt in sorted(edges.get(room, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt] if nxt in path else [room, nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[room] = 2
        return []

    for room in sorted(edges):
        if room not in state and (found := visit(room, [room])):
            return found
    return []


def test_the_rooms_of_the_map_import_each_other_one_way_only(graph):
    """Within a layer rooms may import each other, but never both ways: tasks imported export's shared code and
    export imported tasks' loading (measured before: the tasks <-> export loop); loading now sits below both."""
    assert room_cycle(graph) == [], f"rooms that import each other: {' -> '.join(room_cycle(graph))}"


def test_the_room_check_sees_a_loop():
    made_up = {"medprobe.tasks.medlama_lm_eval": {"medprobe.export.lm_eval"}, "medprobe.export.lm_eval": {"medprobe.tasks.base"}}
    assert room_cycle(made_up) in (
        ["medprobe.tasks", "medprobe.export", "medprobe.tasks"],
        ["medprobe.export", "medprobe.tasks", "medprobe.export"],
    )
