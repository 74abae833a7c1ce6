"""Plugins: a benchmark and a prober from another installed distribution, touching no file of medprobe.

The plugin is what `medprobe plugin init toy` writes (medprobe-toy: the benchmark and task `toy` with its
builder, card, task, own evaluate metric, lm-eval hook and BibTeX, the prober `toy_order`), installed as a
distribution (its package and dist-info) into a temporary folder. `medprobe plugin check` runs on it as
installed, in a subprocess that discovers it as any installed distribution; the other commands run here,
with a registry built from medprobe's built-ins and that distribution's entry points only
(`Registry.build`), so another plugin installed beside medprobe changes nothing of what they see.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import EntryPoint, distributions
from pathlib import Path

import pytest

from medprobe.cli import main
from medprobe.registry import PLUGIN_GROUPS, PluginError, Registry, registry, using

REPO_ROOT = Path(__file__).resolve().parents[1]


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
    (`pip install --no-deps --target SITE` does the same where its build backend can be fetched.)"""
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
def toy(tmp_path_factory) -> Path:
    """`medprobe plugin init toy`, as a user runs it: the distribution's source folder."""
    out = tmp_path_factory.mktemp("plugin") / "medprobe-toy"
    assert main(["plugin", "init", "toy", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def toy_site(toy, tmp_path_factory) -> Path:
    """The toy plugin installed into a folder of its own, importable from this process while the module runs."""
    site = tmp_path_factory.mktemp("toy_site")
    install(toy, site)
    sys.path.insert(0, str(site))
    yield site
    sys.path.remove(str(site))
    for name in [name for name in sys.modules if name == "medprobe_toy" or name.startswith("medprobe_toy.")]:
        del sys.modules[name]


@pytest.fixture(scope="module")
def toy_registry(toy_site) -> Registry:
    """medprobe's built-ins and the toy distribution's entry points: nothing else installed counts."""
    [dist] = distributions(path=[str(toy_site)])
    return Registry.build([point for point in dist.entry_points if point.group in PLUGIN_GROUPS])


def test_plugin_init_writes_a_distribution_that_installs_and_passes_plugin_check(toy, toy_site):
    assert sorted(p.relative_to(toy).as_posix() for p in toy.rglob("*") if p.is_file()) == [
        "README.md",
        "medprobe_toy/__init__.py",
        "medprobe_toy/builder.py",
        "medprobe_toy/card.md",
        "medprobe_toy/citations.bib",
        "medprobe_toy/entries.py",
        "medprobe_toy/lm_eval.py",
        "medprobe_toy/metrics/toy_accuracy/README.md",
        "medprobe_toy/metrics/toy_accuracy/toy_accuracy.py",
        "medprobe_toy/prober.py",
        "medprobe_toy/task.py",
        "pyproject.toml",
        "tests/test_medprobe_toy.py",
    ]
    # from the installed distribution, found as any installed one: every rule of the built-ins' is kept
    done = medprobe(with_path(toy_site), "plugin", "check", "medprobe-toy")
    assert done.returncode == 0 and done.stdout == "medprobe-toy 0.1.0: every conformance rule kept\n", done.stdout + done.stderr
    # an installed plugin shows where medprobe lists its probers, and is left out with the switch
    assert re.search(r"^  toy_order +ranks the candidates", medprobe(with_path(toy_site), "probe", "--help").stdout, re.M)
    assert "toy_order" not in medprobe({**with_path(toy_site), "MEDPROBE_DISABLE_PLUGINS": "1"}, "probe", "--help").stdout


def test_plugin_init_refuses_a_bad_name_a_taken_name_and_a_full_folder(tmp_path, capsys):
    assert main(["plugin", "init", "Toy"]) == 2 and "lower-case letters, digits and _" in capsys.readouterr().err
    assert main(["plugin", "init", "medlama", "--out", str(tmp_path / "m")]) == 2
    assert "its benchmark and task 'medlama' would be named like the registered benchmark 'medlama'" in capsys.readouterr().err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("mine")
    assert main(["plugin", "init", "toy", "--out", str(tmp_path / "full")]) == 2
    assert "is not a new or empty folder" in capsys.readouterr().err and os.listdir(tmp_path / "full") == ["mine.txt"]


@pytest.mark.parametrize(
    "name, taken",
    [
        ("contrastive", "its benchmark and task 'contrastive' would be named like the registered prober 'contrastive'"),
        ("mlm_head", "its benchmark and task 'mlm_head' would be named like the registered prober 'mlm-head'"),
    ],
)
def test_plugin_init_refuses_a_name_like_a_registered_prober_in_one_line(tmp_path, name, taken):
    """Measured before (issue 37): `plugin init contrastive` wrote medprobe-contrastive, whose task would be
    `--task contrastive` beside medprobe's `--prober contrastive`."""
    done = medprobe(with_path(), "plugin", "init", name, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    assert done.stderr == f"medprobe: error: plugin name {name!r}: {taken}; choose another NAME\n"
    assert os.listdir(tmp_path) == []


def test_plugin_init_refuses_a_name_whose_prober_name_is_registered(tmp_path, capsys):
    """NAME is free but NAME_order is a registered name (here a task's): refused too."""
    taken = dataclasses.replace(registry().task("medlama"), name="drug_order")
    with using(registry().with_entries(taken)):
        assert main(["plugin", "init", "drug", "--out", str(tmp_path / "drug")]) == 2
    assert "its prober 'drug_order' would be named like the registered task 'drug_order'" in capsys.readouterr().err
    assert not (tmp_path / "drug").exists()


def test_plugin_check_prints_each_broken_rule_on_one_line_and_exits_1(toy, tmp_path):
    broken = tmp_path / "src"
    shutil.copytree(toy, broken)
    entries = broken / "medprobe_toy" / "entries.py"
    text = entries.read_text().replace(
        'switch=True, default=False),),\n    citations=("toy-benchmark",)',
        'switch=True, default=True),),\n    citations=("nobody-2020",)',
    )
    entries.write_text(text)
    install(broken, tmp_path / "site")
    done = medprobe(with_path(tmp_path / "site"), "plugin", "check", "medprobe-toy")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines() == [
        "prober toy_order: breaks prober-option-defaults (each option's default is the default of the keyword it passes): "
        "--reverse: the entry shows True, the code uses False",
        "prober toy_order: breaks prober-citations (its citations are BibTeX keys medprobe can print): no BibTeX entry for "
        "nobody-2020 in hub_cards/citations.bib or a plugin's BibTeX file; known: "
        + done.stderr.split("; known: ", 1)[1].splitlines()[0],
        "medprobe-toy 0.1.0: 2 rule(s) broken",
    ]


def test_plugin_check_of_what_is_no_plugin_exits_2(capsys):
    assert main(["plugin", "check", "no-such-distribution"]) == 2
    assert capsys.readouterr().err == (
        "medprobe: error: no distribution 'no-such-distribution' is installed here; pip install it "
        "(pip install -e FOLDER) and check again\n"
    )
    assert main(["plugin", "check", "pytest"]) == 2
    assert "declares no entry point in medprobe.tasks or medprobe.probers" in capsys.readouterr().err


def help_of(*argv: str, capsys) -> str:
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    assert exited.value.code == 0
    return capsys.readouterr().out


def test_the_plugin_shows_in_every_help(toy_registry, capsys):
    with using(toy_registry):
        probe = help_of("probe", "--help", capsys=capsys)
        assert re.search(r"^  toy_order +ranks the candidates in alphabetical order.*tasks: medlama, toy$", probe, re.M)
        assert re.search(r"^  toy +toy: rank the answer space", probe, re.M)
        own = help_of("probe", "--prober", "toy_order", "--help", capsys=capsys)
        assert "--reverse" in own and "--limit N" in own and "--num-masks" not in own
        assert "toy" in help_of("build", "--help", capsys=capsys)
        profile = help_of("profile", "--help", capsys=capsys)
        assert "disknE, toy; default: all" in profile and "toy (facts): encoder: toy_order, each with a floor run" in profile
        export = help_of("export", "lm-eval", "--help", capsys=capsys)
        assert "toy: one multiple_choice task (medprobe_toy_facts)" in export
    # and nowhere without it
    assert "toy_order" not in help_of("probe", "--help", capsys=capsys)


def test_a_plugin_benchmark_builds_probes_profiles_exports_and_cites(toy_registry, tmp_path, monkeypatch, capsys):
    from datasets import load_dataset

    monkeypatch.chdir(tmp_path)
    with using(toy_registry):
        assert main(["build", "toy", "--out", "data"]) == 0
        card = (tmp_path / "data" / "README.md").read_text()
        assert "# toy" in card and "@misc{toy-benchmark," in card  # the plugin's card template and BibTeX
        assert load_dataset(str(tmp_path / "data"), "facts", split="test").num_rows == 7

        # a plugin's prober takes any --model (it reads it itself), as probe lets it
        assert main(["probe", "--prober", "toy_order", "--dataset", "data", "--model", "any"]) == 0
        record = json.loads((tmp_path / "results.json").read_text())
        assert (record["benchmark"], record["task"], record["prober"]) == ("toy", "toy", "toy_order")
        assert record["metrics"]["acc@1"] == pytest.approx(1 / 7)  # alphabetically first of 7 answers: bitter, for coffee
        assert record["chance"]["acc@1"]["value"] == pytest.approx(1 / 7) and record["intervals"]["acc@1"]["n"] == 7
        assert record["source"]["plugins"] == {"medprobe-toy": {"version": "0.1.0", "entries": ["task toy", "prober toy_order"]}}
        assert record["citations"] == ["toy-benchmark", "medprobe"]

        # and so does profile, told the model's kind
        argv = ["profile", "--model", "any", "--model-kind", "encoder", "--out", "profile", "--benchmarks", "toy", "--quick"]
        assert main(argv) == 0
        profile = json.loads((tmp_path / "profile" / "profile.json").read_text())
        assert [run["label"] for run in profile["runs"]] == ["toy-facts-toy_order", "toy-facts-toy_order-reverse"]
        assert profile["settings"]["quick_settings"]["toy"] == {"task": {"limit": 3}, "build": {"per_group": 2}}
        [row] = profile["headline"]
        assert (row["benchmark"], row["metric"], row["n"]) == ("toy", "acc@1", 3) and row["chance"] is not None
        assert row["floor_source"] == "the reverse alphabetical order (--reverse), run toy-facts-toy_order-reverse"
        assert "| toy | facts | toy_order | acc@1 |" in (tmp_path / "profile" / "profile.md").read_text()

        assert main(["export", "lm-eval", "toy", "--dataset", "data", "--out", "tasks"]) == 0
        assert sorted(p.name for p in (tmp_path / "tasks").iterdir()) == [
            "README.md",
            "_medprobe_toy.yaml",
            "medprobe_toy_facts.yaml",
            "utils.py",
        ]
        assert f'dataset_path: "{tmp_path / "data"}"' in (tmp_path / "tasks" / "medprobe_toy_facts.yaml").read_text()
        capsys.readouterr()
        assert main(["cite", "toy", "toy_order"]) == 0
        assert capsys.readouterr().out.startswith("@misc{toy-benchmark,\n    title = {The toy benchmark},")


def test_profile_without_a_model_kind_says_how_to_give_one(toy_registry, tmp_path, capsys):
    with using(toy_registry):
        assert main(["profile", "--model", "any", "--out", str(tmp_path / "p"), "--benchmarks", "toy"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("medprobe: error: --model 'any' is not a model folder")
    assert err.rstrip().endswith(
        "or give --model-kind (encoder, masked-lm, causal-lm, seq2seq) when a plugin's prober reads this model itself"
    )


# --- plugins that cannot be registered ------------------------------------------------------------


def write_distribution(site: Path, name: str, entry_points: str) -> None:
    """A distribution as importlib.metadata finds it: NAME-0.1.dist-info with its METADATA and entry points."""
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    (info / "RECORD").write_text("")


def test_a_name_taken_twice_is_an_error_naming_both_distributions(toy_site, tmp_path):
    site = tmp_path / "site"
    write_distribution(site, "other-medprobe", "[medprobe.tasks]\ntoy = medprobe_toy.entries:TASK\n")
    done = medprobe(with_path(site, toy_site), "--help")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert "two tasks are named 'toy': one of medprobe-toy 0.1.0 and one of other-medprobe 0.1" in done.stderr
    # a plugin cannot take a built-in name either
    clash = tmp_path / "clash"
    write_distribution(clash, "clash-medprobe", "[medprobe.probers]\ncontrastive = clash_entries:CONTRASTIVE\n")
    (clash / "clash_entries.py").write_text(
        "import dataclasses\nfrom medprobe_toy.entries import PROBER\n\nCONTRASTIVE = dataclasses.replace(PROBER, name='contrastive')\n"
    )
    done = medprobe(with_path(clash, toy_site), "probe", "--help")
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
    # but `plugin check` reports it as the one broken rule
    done = medprobe(env, "plugin", "check", "broken-medprobe")
    assert done.returncode == 1 and done.stderr.splitlines()[0].startswith(
        "distribution broken-medprobe 0.1: breaks entry-points (each entry point loads, names one entry of its group, "
        "is named after it, and takes a free name): entry point broken = no_such_module:ENTRY"
    )


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
    assert built.plugins_used("mst2", "contrastive") == {"": {"version": "", "entries": ["task mst2"]}}  # no distribution


# --- the registry object, and a plugin's own files --------------------------------------------------


def test_using_makes_a_registry_the_process_s_for_a_block_and_with_entries_replaces_by_name():
    before = registry()
    mst = before.tasks["mst"]
    smaller = dataclasses.replace(mst, description="another")
    changed = before.with_entries(smaller, MISNAMED)
    assert before.tasks["mst"] is mst and "mst2" not in before.tasks  # a registry is never edited
    with using(changed):
        assert registry() is changed and registry().tasks["mst"].description == "another"
        assert list(registry().tasks)[-1] == "mst2"
    assert registry() is before
    with pytest.raises(TypeError):
        before.tasks["mst2"] = MISNAMED  # read-only


def test_the_old_module_tables_are_the_registry_s_with_a_deprecation_warning():
    import medprobe.registry

    with pytest.warns(DeprecationWarning, match="medprobe.registry.TASKS is deprecated and goes in 0.3"):
        assert medprobe.registry.TASKS is registry().tasks
    with pytest.warns(DeprecationWarning, match="registry\\(\\).probers"):
        assert medprobe.registry.PROBERS is registry().probers


def test_a_plugin_file_that_is_not_there_is_one_error_naming_it(tmp_path, monkeypatch):
    from medprobe.contracts import UserError
    from medprobe.resources import metric_path, package_resource

    with pytest.raises(UserError, match="metric 'no_such_package:metrics/m': no package 'no_such_package' is installed"):
        metric_path("no_such_package:metrics/m")
    with pytest.raises(UserError, match="metric 'medprobe:metrics/m': .*metrics/m does not exist; list it in the package data"):
        metric_path("medprobe:metrics/m")
    with pytest.raises(UserError, match="metric 'medprobe:cli/plugin_kit': .*holds no plugin_kit.py"):
        metric_path("medprobe:cli/plugin_kit")
    with pytest.raises(UserError, match="BibTeX file 'citations.bib': expected 'package:relative/path'"):
        package_resource("citations.bib", "BibTeX file")


def test_a_plugin_bibtex_key_written_otherwise_than_medprobe_s_is_an_error_naming_both(tmp_path, monkeypatch):
    from medprobe.citations import bibtex, entries
    from medprobe.contracts import UserError

    package = tmp_path / "clashing_bib"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mine.bib").write_text(
        "@misc{mine-2025,\n    title = {Mine},\n}\n@misc{medprobe,\n    title = {Not medprobe},\n}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    prober = dataclasses.replace(registry().probers["causal-lm"], citations=("mine-2025",), bibtex="clashing_bib:mine.bib")
    with using(registry().with_entries(prober)):
        with pytest.raises(
            UserError,
            match="the BibTeX key 'medprobe' is in hub_cards/citations.bib and, written otherwise, in clashing_bib:mine.bib",
        ):
            entries()
    (package / "mine.bib").write_text("@misc{mine-2025,\n    title = {Mine},\n}\n")
    with using(registry().with_entries(dataclasses.replace(prober, bibtex="clashing_bib:mine2.bib"))):
        with pytest.raises(UserError, match="BibTeX file 'clashing_bib:mine2.bib': .* does not exist"):
            entries()
    (package / "mine2.bib").write_text("@misc{mine-2025,\n    title = {Mine},\n}\n")
    with using(registry().with_entries(dataclasses.replace(prober, bibtex="clashing_bib:mine2.bib"))):
        assert bibtex(["mine-2025"]) == "@misc{mine-2025,\n    title = {Mine},\n}"
