"""A builder folder may hold several modules: `datasets/<b>/<b>.py` is loaded by path as a package.

medprobe/resources.py's load_builder_module registers the entry module under a private name
(`_medprobe_builder_<b>`) with `__path__` = its folder, so that it can import its siblings
relatively and never shadows the Hugging Face `datasets` library.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import medprobe.resources
from medprobe.resources import available, dataset_folder, load_builder_module


@pytest.fixture
def resources(tmp_path, monkeypatch) -> Path:
    """An empty resource root (datasets/, metrics/, hub_cards/) that load_builder_module reads."""
    monkeypatch.setattr(medprobe.resources, "resource_root", lambda: tmp_path)
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("_medprobe_builder_toy")]:
        del sys.modules[name]


def write_builder(root: Path, name: str, files: dict[str, str]) -> Path:
    folder = root / "datasets" / name
    folder.mkdir(parents=True)
    for file, text in files.items():
        (folder / file).write_text(text, encoding="utf-8")
    return folder


def test_a_builder_imports_its_sibling_modules_relatively_under_a_private_name(resources):
    folder = write_builder(
        resources,
        "toy",
        {
            "toy.py": "import datasets\nfrom . import rows\nfrom .rows import ROWS\nLIBRARY = datasets.__file__\n",
            "rows.py": "ROWS = [1, 2, 3]\n",
        },
    )
    module = load_builder_module("toy")
    assert module.__name__ == "_medprobe_builder_toy" and module.__path__ == [str(folder)]
    assert module.ROWS == [1, 2, 3] and module.rows is sys.modules["_medprobe_builder_toy.rows"]
    assert "site-packages" in module.LIBRARY and not module.LIBRARY.startswith(str(resources))  # the library, not datasets/
    assert load_builder_module("toy") is module  # loaded once


def test_a_builder_that_fails_to_import_leaves_nothing_half_imported(resources):
    folder = write_builder(resources, "toy_broken", {"toy_broken.py": "from . import rows\n", "rows.py": "ROWS = 1 / 0\n"})
    with pytest.raises(ZeroDivisionError):
        load_builder_module("toy_broken")
    assert not [m for m in sys.modules if m.startswith("_medprobe_builder_toy_broken")]
    (folder / "rows.py").write_text("ROWS = 1\n", encoding="utf-8")
    assert load_builder_module("toy_broken").rows.ROWS == 1  # fixed: the next load imports it afresh


@pytest.mark.parametrize("benchmark", available("datasets"))
def test_every_module_of_a_shipped_builder_loads_and_says_what_it_holds(benchmark):
    package = load_builder_module(benchmark)
    for path in sorted(dataset_folder(benchmark).glob("*.py")):
        assert ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))), f"{path} has no module docstring"
        if path.stem == benchmark:
            continue
        module = sys.modules.get(f"{package.__name__}.{path.stem}")
        assert module is not None and module.__file__ == str(path), f"{path} is not imported by its builder (nothing uses it?)"
        # tests and tools reach a sibling as an attribute of the package: no name of the package may hide it
        assert getattr(package, path.stem) is module, f"{benchmark}.{path.stem} is not the module {path.name}"
