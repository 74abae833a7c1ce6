"""Import hygiene of the package: no import cycle inside medprobe/, a light `import medprobe`,
registry and CLI parsers (what keeps `medprobe --help` fast), and every registered class exported."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import medprobe
from medprobe.registry import BUILTIN_PROBERS, BUILTIN_TASKS, load, registry

PACKAGE = Path(medprobe.__file__).resolve().parent
HEAVY = ("torch", "transformers", "datasets", "evaluate", "huggingface_hub")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_names(tree: ast.AST, module: str, is_package: bool) -> list[str]:
    """Every module named by an import statement anywhere in the file (inside functions too: lazy
    imports hid the old probe <-> runners cycle), except in `if TYPE_CHECKING:` blocks."""
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package of this module, up level - 1 more
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            found.append(source)
            found.extend(f"{source}.{alias.name}" for alias in node.names)  # `from pkg import submodule`
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the modules of medprobe/ it imports (only names that are modules of medprobe/)."""
    files = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        names = imported_names(tree, module, path.name == "__init__.py")
        graph[module] = {name for name in names if name in files and name != module}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None (depth-first search; the graph has ~60 modules)."""
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        if module in path:
            return path[path.index(module) :] + [module]
        if module in done:
            return None
        path.append(module)
        for following in sorted(graph.get(module, ())):
            cycle = visit(following)
            if cycle:
                return cycle
        path.pop()
        done.add(module)
        return None

    for start in sorted(graph):
        cycle = visit(start)
        if cycle:
            return cycle
    return None


def test_the_import_graph_sees_lazy_imports_and_skips_type_checking_blocks():
    source = (
        "from typing import TYPE_CHECKING\nimport medprobe.contracts\nif TYPE_CHECKING:\n    from medprobe import run\n"
        "def f():\n    from medprobe.lm import loading\n    from . import probe\n"
    )
    names = imported_names(ast.parse(source), "medprobe.cli.demo", is_package=False)
    assert {"medprobe.contracts", "medprobe.lm.loading", "medprobe.cli.probe"} <= set(names) and "medprobe.run" not in names
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle_inside_medprobe():
    graph = import_graph()
    assert "medprobe.run" in graph and "medprobe.registry" in graph["medprobe.run"]  # the graph is the package's
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def loaded_after(code: str) -> list[str]:
    """The heavy libraries in sys.modules after running `code` in a fresh interpreter."""
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "code",
    [
        "import medprobe",
        "import medprobe.registry",
        "import medprobe.cli; medprobe.cli.build_parser()",
        # what `medprobe probe --prober X --task T --help` builds, for every prober and task
        "from medprobe.cli.probe import probe_parser; from medprobe.registry import registry, tasks_for\n"
        "for p in registry().probers:\n    for t in tasks_for(p): probe_parser(p, t).format_help()",
    ],
    ids=["medprobe", "registry", "cli-parser", "probe-parsers"],
)
def test_light_imports_load_no_torch_transformers_or_datasets(code):
    assert loaded_after(code) == []


def test_importing_medprobe_reads_no_entry_point_until_the_registry_is_first_used():
    """No import side effect: the registry (and the plugins' entry points) is read on first use, not on import."""
    code = (
        "import importlib.metadata as metadata\n"
        "read = []\nreal = metadata.entry_points\n"
        "metadata.entry_points = lambda **kw: read.append(kw) or real(**kw)\n"
        "import medprobe, medprobe.registry, medprobe.run, medprobe.citations, medprobe.profiling.plan, medprobe.cli.probe\n"
        "assert read == [] and medprobe.registry._current is None, read\n"
        "medprobe.registry.registry()\n"
        "assert [kw['group'] for kw in read] == ['medprobe.tasks', 'medprobe.probers'], read\n"
        "medprobe.registry.registry()\n"
        "assert len(read) == 2, read  # built once\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "MEDPROBE_DISABLE_PLUGINS": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def subcommand_helps() -> list[list[str]]:
    """The argv of every `medprobe ... --help`: each command and each subcommand of those that have some."""
    import argparse

    from medprobe.cli import build_parser

    def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return dict(found[0].choices) if found else {}

    helps = [["--help"]]
    for name, sub in commands(build_parser()).items():
        helps.append([name, "--help"])
        helps += [[name, inner, "--help"] for inner in commands(sub)]
    return helps


def test_no_help_of_any_command_loads_a_heavy_library():
    helps = subcommand_helps()
    assert ["publish", "results", "--help"] in helps and ["export", "lm-eval", "--help"] in helps
    code = (
        "from medprobe.cli import main\n"
        f"for argv in {helps!r}:\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass"
    )
    assert loaded_after(code) == []


def test_probe_help_of_every_prober_and_task_loads_no_heavy_library():
    """`medprobe probe --prober X [--task T] --help` goes through the command (run_probe_command), not only
    the parser: neither it nor anything it reaches on the way may import evaluate, transformers, torch, ..."""
    code = (
        "import contextlib, io\nfrom medprobe.cli import main\nfrom medprobe.registry import registry, tasks_for\n"
        "shown = 0\n"
        "for p in registry().probers:\n"
        "    for extra in [[], *[['--task', t] for t in tasks_for(p)]]:\n"
        "        out = io.StringIO()\n"
        "        with contextlib.redirect_stdout(out):\n"
        "            try:\n                main(['probe', '--prober', p, *extra, '--help'])\n"
        "            except SystemExit:\n                pass\n"
        "        shown += out.getvalue().startswith('usage: medprobe probe')\n"
        "print('shown', shown, file=__import__('sys').stderr)\n"
        "assert shown >= len(registry().probers) * 2, shown"
    )
    assert loaded_after(code) == []


def test_every_registered_class_and_the_python_api_are_exported_lazily():
    builtins = [*BUILTIN_PROBERS, *BUILTIN_TASKS]
    assert builtins == [*registry().probers.values(), *registry().tasks.values()]  # the suite's registry: built-ins only
    registered = {target.split(":")[1]: target.split(":")[0] for target in (e.target for e in builtins)}
    assert registered.items() <= medprobe._LAZY.items()
    assert medprobe._LAZY["ShortlistProber"] == "medprobe.lm.candidate_scoring"
    assert {name for name, module in medprobe._LAZY.items() if module == "medprobe.python_api"} == set(medprobe.API)
    assert set(medprobe.__all__) == {"__version__", *medprobe._LAZY}
    for entry in builtins:
        cls = getattr(medprobe, entry.target.split(":")[1])
        assert cls is load(entry.target)
    assert medprobe.ShortlistProber.__name__ == "ShortlistProber" and "ShortlistProber" in dir(medprobe)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchProbe'"):
        medprobe.NoSuchProbe  # noqa: B018


def test_the_api_functions_are_not_shadowed_by_submodules():
    """`import medprobe.X` sets the attribute X of the package: no submodule may share an API function's name."""
    import medprobe.comparison  # noqa: F401
    import medprobe.profiling  # noqa: F401

    for name in medprobe.API:
        assert not (PACKAGE / f"{name}.py").exists() and not (PACKAGE / name).is_dir(), name
        assert callable(getattr(medprobe, name)) and getattr(medprobe, name).__module__ == "medprobe.python_api"


def test_the_old_package_name_is_an_alias_with_a_deprecation_warning():
    script = (
        "import warnings\nwarnings.simplefilter('error', DeprecationWarning)\n"
        "try:\n    import probers\nexcept DeprecationWarning as warning:\n    print('warned:', warning)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "warned: the package `probers` is now `medprobe`" in done.stdout, done.stderr
    script = (
        "import warnings\nwarnings.simplefilter('ignore')\nimport probers.run, medprobe.run\n"
        "print(probers.run is medprobe.run, probers is medprobe)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "True"], done.stderr


def test_importing_a_submodule_reads_no_registry():
    """`from medprobe import distributed` first asks the package for the attribute: that lookup must not
    import the registry (and with it every installed plugin) on the way to the submodule."""
    script = "import sys\nfrom medprobe import distributed, api\nprint('medprobe.registry' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False"], done.stderr


def test_evaluate_loads_a_metric_without_transformers_model_code():
    """medprobe.resources.import_evaluate in the `medprobe` program (LEAN_EVALUATE): evaluate's Evaluator would
    import transformers.pipelines (and its model code, 1.5 s); a metric loads and computes without it, and the
    pipelines import normally afterwards."""
    env = {**os.environ, "HF_EVALUATE_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    for before in ("", "import transformers\n"):  # transformers not imported yet (a warm probe), or without its pipelines
        script = (
            f"import sys\n{before}from medprobe import resources\nfrom medprobe.resources import import_evaluate, metric_path\n"
            "resources.LEAN_EVALUATE = True\n"
            "metric = import_evaluate().load(metric_path('acc_at_k'))\n"
            "scores = metric.compute(predictions=[['a', 'b']], references=[['b']], groups=['r'], k=[1, 2])\n"
            "print(scores['acc@2'], 'transformers.modeling_utils' in sys.modules, 'transformers' in sys.modules)\n"
            "import transformers.pipelines\nprint('transformers.modeling_utils' in sys.modules)"
        )
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split()[-4:] == ["1.0", "False", str(bool(before)), "True"]


def test_from_python_evaluate_is_imported_whole():
    """Outside the `medprobe` program (the Python API, a notebook) evaluate keeps its Evaluator: the user's own
    `evaluate.evaluator(...)` finds transformers in the same process after medprobe loaded a metric (evaluate
    decides that once, when it is imported; the lean import of the program makes it False)."""
    env = {**os.environ, "HF_EVALUATE_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    script = (
        "from medprobe.resources import import_evaluate, metric_path\n"
        "evaluate = import_evaluate()\nevaluate.load(metric_path('acc_at_k'))\n"
        "import sys\nprint(sys.modules['evaluate.evaluator.base'].TRANSFORMERS_AVAILABLE)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "True"


def test_the_program_makes_full_collections_rarer_and_the_python_api_does_not():
    """The `medprobe` program (cli.main without argv) sets the oldest generation's threshold to
    FULL_COLLECTION_THRESHOLD (full collections over torch's and datasets' objects cost 0.56 s of a warm
    probe); main(argv) as the Python API and the tests call it leaves the interpreter's setting alone."""
    script = (
        "import atexit, gc, sys\nfrom medprobe import cli\n"
        "atexit.register(lambda: print('after', gc.get_threshold()[2], flush=True))\n"
        "cli.main(['cite', 'medlama'])\nprint('api', gc.get_threshold()[2], flush=True)\n"
        "sys.argv = ['medprobe', 'cite', 'medlama']\ncli.main()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = [line.split() for line in done.stdout.splitlines() if line.startswith(("api ", "after "))]
    assert found == [["api", "10"], ["after", "100"]], done.stdout[-2000:]


@pytest.mark.parametrize(
    "old, new, name",
    [("medprobe.api", "medprobe.contracts", "RankingProber"), ("medprobe.tasks.loading", "medprobe.loading", "row_digests")],
)
def test_a_moved_module_keeps_its_old_name_with_a_deprecation_warning(old, new, name):
    script = (
        "import importlib, warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    old = importlib.import_module({old!r})\n"
        f"new = importlib.import_module({new!r})\n"
        f"print(getattr(old, {name!r}) is getattr(new, {name!r}))\n"
        "print(any(w.category is DeprecationWarning and " + repr(new) + " in str(w.message) for w in caught))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "True"], done.stderr
