"""Plugins: a benchmark and a prober from another installed package, touching no file of medprobe.

tests/toy_plugin is such a package (toy-medprobe): the benchmark toy_facts (a builder, a card
template, a task, an lm-eval export hook and one TaskEntry with its ProfilePlan) and the prober
toy_order (a class and one ProberEntry), declared by two entry points in its pyproject.toml. It is
installed as a distribution (its package and dist-info) into a temporary folder, which the
`medprobe` commands run here find on PYTHONPATH, so medprobe discovers it as it would any installed
distribution: in `medprobe probe
--help`, a `medprobe probe` run, `medprobe profile`'s plan and table, `medprobe export lm-eval`
and the conformance tests (tests/test_registry_conformance.py, run on the toy's entries in a
subprocess: the registry reads the entry points once, when it is imported, as a user's process does).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from medprobe.registry import PluginError, Registry, registry

REPO_ROOT = Path(__file__).resolve().parents[1]
TOY_PLUGIN = Path(__file__).resolve().parent / "toy_plugin"


def with_path(*folders: Path) -> dict[str, str]:
    """The environment of a subprocess that finds these folders (and this checkout) first, plugins on."""
    paths = [*map(str, folders), str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), "MEDPROBE_DISABLE_PLUGINS": ""}


def medprobe(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "medprobe", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )


def install(project: Path, site: Path) -> None:
    """Install a pure-Python project into `site` as pip would (its package and NAME-VERSION.dist-info with
    METADATA, entry_points.txt and RECORD), from its pyproject.toml: no build backend, no network.
    (`pip install --no-deps --no-build-isolation --target SITE` does the same in 1 s where setuptools is
    installed; a fresh venv of Python 3.12 has none.)"""
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    meta = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    name, version = meta["project"]["name"], meta["project"]["version"]
    for package in meta["tool"]["setuptools"]["packages"]:
        shutil.copytree(project / package, site / package, ignore=shutil.ignore_patterns("__pycache__"))
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    groups = meta["project"].get("entry-points", {})
    lines = [f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in points.items()) for group, points in groups.items()]
    (info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    files = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    (info / "RECORD").write_text("".join(f"{path},,\n" for path in [*files, f"{info.name}/RECORD"]), encoding="utf-8")


@pytest.fixture(scope="module")
def toy_env(tmp_path_factory) -> dict[str, str]:
    """The environment in which the toy plugin is installed (into a temporary folder on PYTHONPATH)."""
    site = tmp_path_factory.mktemp("toy_plugin") / "site"
    install(TOY_PLUGIN, site)
    found = subprocess.run(
        [sys.executable, "-c", "from importlib.metadata import distribution as d; print(d('toy-medprobe').entry_points)"],
        env=with_path(site),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "name='toy_facts', value='toy_medprobe.entries:TOY_FACTS', group='medprobe.tasks'" in found.stdout, found.stderr
    return with_path(site)


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory) -> str:
    from tiny_bert import save_tiny_bert

    return str(save_tiny_bert(tmp_path_factory.mktemp("encoder") / "model"))


def test_the_plugin_shows_in_every_help(toy_env):
    probe = medprobe(toy_env, "probe", "--help").stdout
    assert re.search(r"^  toy_order +ranks the candidates in alphabetical order.*tasks: medlama, toy_facts$", probe, re.M)
    assert re.search(r"^  toy_facts +toy facts: rank the answer space", probe, re.M)
    own = medprobe(toy_env, "probe", "--prober", "toy_order", "--help").stdout
    assert "--reverse" in own and "--limit N" in own and "--num-masks" not in own
    assert "toy_facts" in medprobe(toy_env, "build", "--help").stdout
    profile = medprobe(toy_env, "profile", "--help").stdout
    assert (
        "disknE, toy_facts; default: all" in profile and "toy_facts (facts): encoder: toy_order, each with a floor run" in profile
    )
    export = medprobe(toy_env, "export", "lm-eval", "--help").stdout
    assert "toy_facts: one multiple_choice task (medprobe_toy_facts)" in export
    # and nowhere without it
    assert "toy_order" not in medprobe(with_path(), "probe", "--help").stdout


def test_a_toy_benchmark_builds_probes_profiles_and_exports(toy_env, tiny_encoder, tmp_path):
    from datasets import load_dataset

    done = medprobe(toy_env, "build", "toy_facts", "--out", "data", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "# Toy facts" in (tmp_path / "data" / "README.md").read_text()  # the plugin's card template
    assert load_dataset(str(tmp_path / "data"), "facts", split="test").num_rows == 7

    done = medprobe(toy_env, "probe", "--prober", "toy_order", "--dataset", "data", "--model", tiny_encoder, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "results.json").read_text())
    assert (record["benchmark"], record["task"], record["prober"]) == ("toy_facts", "toy_facts", "toy_order")
    assert record["metrics"]["acc@1"] == pytest.approx(1 / 7)  # alphabetically first of 7 answers: bitter, for coffee
    assert record["chance"]["acc@1"]["value"] == pytest.approx(1 / 7) and record["intervals"]["acc@1"]["n"] == 7

    done = medprobe(
        toy_env, "profile", "--model", tiny_encoder, "--out", "profile", "--benchmarks", "toy_facts", "--quick", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    profile = json.loads((tmp_path / "profile" / "profile.json").read_text())
    assert [run["label"] for run in profile["runs"]] == ["toy_facts-facts-toy_order", "toy_facts-facts-toy_order-reverse"]
    assert profile["settings"]["quick_settings"]["toy_facts"] == {"task": {"limit": 3}, "build": {"per_group": 2}}
    [row] = profile["headline"]
    assert (row["benchmark"], row["metric"], row["n"]) == ("toy_facts", "acc@1", 3) and row["chance"] is not None
    assert row["floor_source"] == "the reverse alphabetical order (--reverse), run toy_facts-facts-toy_order-reverse"
    assert "| toy_facts | facts | toy_order | acc@1 |" in (tmp_path / "profile" / "profile.md").read_text()
    plan = subprocess.run(
        [sys.executable, "-c", "from medprobe.profiling.plan import plan_runs; print(plan_runs('seq2seq', ('toy_facts',))[1])"],
        env=toy_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "not profiled on seq2seq models" in plan.stdout and "wrong model kind: the model is a seq2seq" in plan.stdout

    done = medprobe(toy_env, "export", "lm-eval", "toy_facts", "--dataset", "data", "--out", "tasks", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "tasks").iterdir()) == [
        "README.md",
        "_medprobe_toy.yaml",
        "medprobe_toy_facts.yaml",
        "utils.py",
    ]
    assert f'dataset_path: "{tmp_path / "data"}"' in (tmp_path / "tasks" / "medprobe_toy_facts.yaml").read_text()
    assert "--tasks medprobe_toy" in done.stdout


def test_the_conformance_tests_check_the_plugins_entries(toy_env):
    """The same checks as every built-in entry's, with no edit of the conformance tests."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-k", "toy_facts or toy_order"]
        + [str(REPO_ROOT / "tests" / "test_registry_conformance.py")],
        env=toy_env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    outcomes = re.findall(r"::(\w+)\[(toy_facts|toy_order)\] (PASSED|FAILED|SKIPPED|ERROR)", done.stdout)
    assert {name for _, name, _ in outcomes} == {"toy_facts", "toy_order"} and {o for _, _, o in outcomes} == {"PASSED"}
    assert any(test.startswith("test_task_runs") for test, name, _ in outcomes if name == "toy_facts")
    assert any(test.startswith("test_prober_built_by_make_prober") for test, name, _ in outcomes if name == "toy_order")


# --- plugins that cannot be registered ------------------------------------------------------------


def write_distribution(site: Path, name: str, entry_points: str) -> None:
    """A distribution as importlib.metadata finds it: NAME-0.1.dist-info with its METADATA and entry points."""
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    (info / "RECORD").write_text("")


def test_a_name_taken_twice_is_an_error_naming_both_distributions(toy_env, tmp_path):
    site = tmp_path / "site"
    write_distribution(site, "other-medprobe", "[medprobe.tasks]\ntoy_facts = toy_medprobe.entries:TOY_FACTS\n")
    env = {**toy_env, "PYTHONPATH": os.pathsep.join([str(site), toy_env["PYTHONPATH"]])}
    done = medprobe(env, "--help")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert "two tasks are named 'toy_facts': one of other-medprobe 0.1 and one of toy-medprobe 0.1" in done.stderr
    # a plugin cannot take a built-in name either
    clash = tmp_path / "clash"
    write_distribution(clash, "clash-medprobe", "[medprobe.probers]\ncontrastive = clash_entries:CONTRASTIVE\n")
    (clash / "clash_entries.py").write_text(
        "import dataclasses\nfrom toy_medprobe.entries import TOY_ORDER\n\n"
        "CONTRASTIVE = dataclasses.replace(TOY_ORDER, name='contrastive')\n"
    )
    env = {**toy_env, "PYTHONPATH": os.pathsep.join([str(clash), toy_env["PYTHONPATH"]])}
    done = medprobe(env, "probe", "--help")
    assert "two probers are named 'contrastive': one of medprobe (built in) and one of clash-medprobe 0.1" in done.stderr
    # a broken plugin stops every command with its name, until it is fixed or plugins are switched off
    write_distribution(tmp_path / "broken", "broken-medprobe", "[medprobe.tasks]\nbroken = no_such_module:ENTRY\n")
    env = with_path(tmp_path / "broken")
    done = medprobe(env, "--help")
    assert (
        done.returncode == 2
        and "entry point broken = no_such_module:ENTRY (group medprobe.tasks) of broken-medprobe 0.1" in done.stderr
    )
    assert "does not load (ModuleNotFoundError" in done.stderr and "MEDPROBE_DISABLE_PLUGINS=1" in done.stderr
    assert medprobe({**env, "MEDPROBE_DISABLE_PLUGINS": "1"}, "--help").returncode == 0


NOT_AN_ENTRY = object()
MISNAMED = dataclasses.replace(registry().tasks["mst"], name="mst2")


def test_an_entry_point_names_one_entry_of_its_group_and_is_named_after_it():
    def points(name: str, value: str) -> list[EntryPoint]:
        return [EntryPoint(name=name, value=f"{__name__}:{value}", group="medprobe.tasks")]

    with pytest.raises(PluginError, match="names a object, expected a medprobe.registry.TaskEntry"):
        Registry.build(points("odd", "NOT_AN_ENTRY"))
    with pytest.raises(PluginError, match="names the entry 'mst2': an entry point is named after its entry"):
        Registry.build(points("other", "MISNAMED"))
    built = Registry.build(points("mst2", "MISNAMED"))
    assert list(built.tasks)[-1] == "mst2" and built.tasks["mst2"] is MISNAMED and "mst2" not in registry().tasks
