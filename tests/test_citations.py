"""Citations: the registry names what every benchmark and prober cites, `hub_cards/citations.bib`
holds the entries, `medprobe cite` prints them, every dataset card's Citation section holds its
benchmark's, and CITATION.cff cites medprobe with the same papers as references."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
import tomllib
import yaml

from medprobe.building.build import build
from medprobe.citations import MEDPROBE, benchmark_keys, bibtex, citable_names, citation_keys, entries
from medprobe.cli import main
from medprobe.contracts import UserError
from medprobe.registry import registry
from medprobe.resources import available, card_template
from synthetic_medlama import BUILD_PARAMS, write_release

REPO_ROOT = Path(__file__).resolve().parents[1]
REGISTRY = {
    **{f"prober {name}": entry for name, entry in registry().probers.items()},
    **{f"task {name}": entry for name, entry in registry().tasks.items()},
}


def field(entry: str, name: str) -> str:
    """A field's value in a BibTeX entry written as `name = "value",` (the .bib file's style)."""
    found = re.search(rf'^\s+{name} = "(.*)",$', entry, flags=re.M)
    assert found, f"no {name} in {entry.splitlines()[0]}"
    return found.group(1)


def plain(text: str) -> str:
    """A BibTeX or YAML title without braces, accents as letters, for comparing the two files."""
    return text.replace('{\\"u}', "ü").replace("{", "").replace("}", "").casefold()


# --- the registry and the .bib file ---------------------------------------------------------------------


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_registry_entry_cites_keys_of_the_bib_file(name):
    keys = REGISTRY[name].citations
    assert keys, f"{name} has no citations="
    assert set(keys) <= set(entries()), f"{name}: {sorted(set(keys) - set(entries()))} are not in hub_cards/citations.bib"


def test_every_bib_entry_is_cited_by_some_entry_and_has_title_authors_year():
    cited = {key for entry in REGISTRY.values() for key in entry.citations} | {MEDPROBE}
    assert set(entries()) == cited, "an entry of the .bib file that nothing cites, or a key cited twice under two names"
    for key, text in entries().items():
        assert text.startswith("@") and text.partition("{")[2].startswith(f"{key},") and text.endswith("\n}")
        assert field(text, "title") and field(text, "author") and re.fullmatch(r"\d{4}", field(text, "year"))


def test_citation_keys_are_the_tasks_then_the_probers_then_medprobe_each_once():
    assert citation_keys("medlama", "contrastive") == ["meng-etal-2022-rewire", "bodenreider-2004-unified", MEDPROBE]
    assert citation_keys("mst", "mlm-head") == ["park-etal-2022-language", MEDPROBE]
    assert citation_keys("context_variance", "causal-lm") == ["yao-etal-2023-context", "sung-etal-2021-language", MEDPROBE]
    assert citation_keys() == [MEDPROBE] and citation_keys(prober="causal-lm") == [MEDPROBE]
    with pytest.raises(KeyError, match="no task named 'medlamma'"):
        citation_keys("medlamma")


def test_bibtex_gives_the_entries_of_the_file_in_the_order_asked():
    text = bibtex(["park-etal-2022-language", MEDPROBE, "park-etal-2022-language"])
    assert text == entries()["park-etal-2022-language"] + "\n\n" + entries()[MEDPROBE]
    assert all(entry in card_template("citations.bib").read_text(encoding="utf-8") for entry in entries().values())
    with pytest.raises(
        UserError,
        match="no BibTeX entry for nobody-2020 in hub_cards/citations.bib or a plugin's BibTeX file; known: medprobe, meng-etal-",
    ):
        bibtex(["nobody-2020"])


def test_the_citation_module_imports_nothing_heavy():
    import subprocess
    import sys

    code = "import sys, medprobe.citations as c; c.bibtex(c.citation_keys('medlama', 'contrastive'));"
    code += "print(sorted(m for m in ('torch', 'transformers', 'datasets', 'evaluate') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


# --- medprobe cite ----------------------------------------------------------------------------------------


def test_cite_medlama_contrastive_prints_both_papers_and_medprobe_once(capsys):
    assert main(["cite", "medlama", "contrastive"]) == 0
    out = capsys.readouterr().out
    for key in ("meng-etal-2022-rewire", "bodenreider-2004-unified", MEDPROBE):
        assert out.count(entries()[key]) == 1
    assert out.count("@") == 3  # MedLAMA and Contrastive-Probe are one paper: printed once


def test_cite_without_a_name_prints_medprobe_and_lists_the_names_on_stderr(capsys):
    assert main(["cite"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == entries()[MEDPROBE]
    assert all(name in captured.err for name in [*registry().probers, *registry().tasks]) and captured.err.count("\n") == 1


def test_cite_unknown_names_exit_2_with_one_line_listing_the_known_ones(capsys):
    assert main(["cite", "medlama", "medlamma", "bert"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "'medlamma', 'bert'" in captured.err and all(name in captured.err for name in citable_names())


def test_cite_is_in_the_help_and_the_readme(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "cite" in capsys.readouterr().out
    assert "medprobe cite medlama contrastive" in (REPO_ROOT / "README.md").read_text(encoding="utf-8")


# --- dataset cards ----------------------------------------------------------------------------------------


def citation_section(text: str) -> str:
    head, sep, section = text.partition("\n## Citation\n")
    assert sep, "no Citation section"
    return section.split("\n## ", 1)[0]


@pytest.mark.parametrize("benchmark", available("datasets"))
def test_every_card_template_cites_its_benchmarks_keys_in_a_bibtex_block(benchmark):
    section = citation_section(card_template(f"{benchmark}.md").read_text(encoding="utf-8"))
    assert "```bibtex\n$citation\n```" in section
    filled = string.Template(section).safe_substitute(citation=bibtex(benchmark_keys(benchmark)))
    keys = benchmark_keys(benchmark)
    tasks_keys = {key for task in registry().tasks.values() if task.benchmark == benchmark for key in task.citations}
    assert keys[-1] == MEDPROBE and tasks_keys <= set(keys)
    for key in keys:
        assert entries()[key] in filled
    assert f"medprobe cite {benchmark}" in section


def built_card(benchmark: str, folder: Path, request) -> str:
    """The README.md of a small build of `benchmark` (DisKnE: the session's build, which needs ../shared/data)."""
    if benchmark == "disknE":
        return (request.getfixturevalue("built_disknE") / "README.md").read_text(encoding="utf-8")
    if benchmark == "medlama":
        build("medlama", folder, data_dir=str(write_release(folder.parent / "release")), params=BUILD_PARAMS)
    elif benchmark == "mst":
        build("mst", folder, configs=["comparison"], params={"train_size": 6, "validation_size": 3, "test_size": 6})
    else:
        build(benchmark, folder, configs=None if benchmark != "context_variance" else ["real-target"])
    return (folder / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("benchmark", available("datasets"))
def test_a_built_card_holds_exactly_its_benchmarks_entries(benchmark, tmp_path, request):
    section = citation_section(built_card(benchmark, tmp_path / "out", request))
    assert section.count("\n@") == len(benchmark_keys(benchmark)) >= 2
    for key in benchmark_keys(benchmark):
        assert entries()[key] in section


# --- CITATION.cff -----------------------------------------------------------------------------------------


def test_citation_cff_is_valid_cff_1_2_0_and_agrees_with_the_bib_file_and_pyproject():
    cff = yaml.safe_load((REPO_ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    # the keys CFF 1.2.0 requires, with the types its schema gives them
    assert cff["cff-version"] == "1.2.0" and isinstance(cff["message"], str) and cff["type"] == "software"
    assert cff["authors"] and all("name" in a or "family-names" in a for a in cff["authors"])
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", cff["date-released"])
    assert cff["version"] == version == field(entries()[MEDPROBE], "version")
    assert plain(cff["title"]) == plain(field(entries()[MEDPROBE], "title"))
    # every paper of the .bib file is a reference, with its title, year and first author
    references = {plain(ref["title"]): ref for ref in cff["references"]}
    assert len(references) == len(cff["references"]) == len(entries()) - 1
    for key, text in entries().items():
        if key == MEDPROBE:
            continue
        ref = references.get(plain(field(text, "title")))
        assert ref, f"{key} is not among CITATION.cff's references"
        assert ref["type"] in ("article", "conference-paper") and ref["year"] == int(field(text, "year"))
        first = field(text, "author").split(" and ")[0].split(",")[0]
        assert plain(ref["authors"][0]["family-names"]) == plain(first)
        assert all(set(author) == {"family-names", "given-names"} for author in ref["authors"])
