"""The MedLAMA builder's `variants` config: each item asked with the release's other prompt and, from a UMLS release,
with subject synonyms; `full` and `hard` keep the paper's protocol (their rows, fields and bytes).

The real release's bytes are checked by tests/test_official_data.py (full and hard have the sha256 they had before
the variants config existed); here the synthetic release (tests/synthetic_medlama.py) and the made-up UMLS release
(tests/synthetic_umls.py), whose MRCONSO is read back independently of the builder.
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from datasets import load_dataset

from built_folder import data_file
from medprobe.building.build import build
from medprobe.cli import main
from medprobe.resources import load_builder_module
from synthetic_medlama import BUILD_PARAMS, write_release
from synthetic_umls import RELATIONS, write_meta, write_prompts

medlama = load_builder_module("medlama")
PER_RELATION = 8

# The fields of full and hard, as they were before the variants config (the paper's rows, unchanged).
OLD_SCHEMA = {
    "id": "string",
    "relation": "string",
    "head_cui": "string",
    "head_name": "string",
    "answers": "list<element: string>",
    "answer_cuis": "list<element: string>",
    "template": "string",
    "query": "string",
    "avg_match": "double",
    "avg_rouge_l": "double",
}


def schema_of(folder: Path, config: str) -> dict[str, str]:
    return {field.name: str(field.type) for field in pq.read_schema(data_file(folder, config))}


def prompts_of(folder: Path) -> dict[str, tuple[str, str]]:
    with open(folder / "prompts.csv", encoding="utf-8", newline="") as handle:
        return {row["pid"]: (row["default_prompt"], row["human_prompt"]) for row in csv.DictReader(handle)}


# --- from the release files --------------------------------------------------------------------------


def test_full_and_hard_keep_the_old_schema_and_variants_pairs_with_full_row_for_row(synthetic_medlama_hub, tmp_path):
    hub = synthetic_medlama_hub
    for config in ("full", "hard"):
        assert schema_of(hub, config) == OLD_SCHEMA, config
    full = load_dataset(str(hub), "full", split="test")
    variants = load_dataset(str(hub), "variants", split="test")
    prompts = prompts_of(write_release(tmp_path / "release"))
    assert variants.num_rows == full.num_rows  # the synthetic release: one default-prompt variant per item
    assert variants["id"] == full["id"] and set(variants["variant"]) == {"default_prompt"}
    for item, variant in zip(full, variants):
        for field in ("relation", "head_cui", "head_name", "answers", "answer_cuis"):
            assert variant[field] == item[field], field
        default, human = prompts[item["relation"]]
        assert item["template"] == human and variant["template"] == default and variant["subject"] == item["head_name"]
        assert variant["query"] == default.replace("[X]", item["head_name"])


def test_default_prompts_are_normalised_and_one_equal_to_the_human_prompt_gives_no_variant(tmp_path):
    release = write_release(tmp_path / "release")
    rows = list(csv.reader((release / "prompts.csv").read_text(encoding="utf-8").splitlines()))
    for row in rows[1:]:
        if row[0] == "associated_morphology_of":
            row[1] = "  [X] associated morphology of  [Y] .\t"  # the release's double space, and more
        if row[0] == "occurs_after":
            row[1] = row[2]  # as in the release: the same prompt twice
    with open(release / "prompts.csv", "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    build("medlama", tmp_path / "hub", data_dir=str(release), params=BUILD_PARAMS)
    variants = load_dataset(str(tmp_path / "hub"), "variants", split="test")
    templates = dict(zip(variants["relation"], variants["template"]))
    assert templates["associated_morphology_of"] == "[X] associated morphology of [Y] ."
    assert "occurs_after" not in templates and variants.num_rows == 18 * 3
    full = load_dataset(str(tmp_path / "hub"), "full", split="test")
    assert set(zip(full["relation"], full["template"])) == {(r, prompts_of(release)[r][1]) for r in full["relation"]}
    card = (tmp_path / "hub" / "README.md").read_text(encoding="utf-8")
    assert "| `occurs_after` | [X] is related to [Y] by occurs_after . | the same text: no template variant |" in card
    assert "carry **no subject synonyms**" in card


def test_a_prompts_file_without_default_prompts_names_the_column_and_how_to_build_without_variants(tmp_path):
    release = write_release(tmp_path / "release")
    lines = (release / "prompts.csv").read_text(encoding="utf-8").splitlines()
    rows = [row[0:1] + row[2:] for row in csv.reader(lines)]  # pid, human_prompt
    with open(release / "prompts.csv", "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    with pytest.raises(ValueError, match=r"missing column\(s\) default_prompt.*build --config full --config hard"):
        build("medlama", tmp_path / "hub", data_dir=str(release), params=BUILD_PARAMS)
    build("medlama", tmp_path / "hub", data_dir=str(release), params=BUILD_PARAMS, configs=["full", "hard"])


def test_synonyms_need_a_umls_release(tmp_path):
    with pytest.raises(ValueError, match="synonyms only applies to a build from your own UMLS release: add --umls-dir"):
        build(
            "medlama", tmp_path / "hub", data_dir=str(write_release(tmp_path / "release")), params={**BUILD_PARAMS, "synonyms": 2}
        )


# --- from a UMLS release: subject synonyms ---------------------------------------------------------------


@pytest.fixture(scope="module")
def umls(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("umls") / "2031AB"
    write_meta(root)
    return root / "META", write_prompts(tmp_path_factory.mktemp("prompts"))


def build_variants(umls: tuple[Path, Path], out: Path, configs: list[str] | None = ["variants"], **params) -> Path:  # noqa: B006
    meta, prompts = umls
    build(
        "medlama",
        out,
        data_dir=str(prompts),
        configs=configs,
        params={"umls_dir": str(meta), "per_relation": PER_RELATION, **params},
    )
    return out


def english_unsuppressed_names(meta: Path) -> dict[str, set[str]]:
    """CUI -> its MRCONSO strings with LAT=ENG and SUPPRESS=N, read here from the file's columns."""
    names: dict[str, set[str]] = {}
    for line in (meta / "MRCONSO.RRF").read_text(encoding="utf-8").splitlines():
        fields = line.split("|")
        if fields[1] == "ENG" and fields[16] == "N":
            names.setdefault(fields[0], set()).add(fields[14])
    return names


@pytest.fixture(scope="module")
def three(umls, tmp_path_factory) -> Path:
    return build_variants(umls, tmp_path_factory.mktemp("three"))


def test_synonyms_are_english_unsuppressed_names_of_the_head_other_than_its_name(umls, three):
    allowed = english_unsuppressed_names(umls[0])
    variants = load_dataset(str(three), "variants", split="test")
    prompts = {r: f"[X] is linked by {r} to [Y] ." for r in RELATIONS}
    per_item: dict[str, list[str]] = {}
    for row in variants:
        if row["variant"] == "default_prompt":
            assert row["subject"] == row["head_name"] and row["template"] == f"[X] {row['relation']} [Y] ."
            continue
        assert row["variant"] == f"synonym_{len(per_item.get(row['id'], [])) + 1}"  # in order, from 1
        assert row["subject"] in allowed[row["head_cui"]], row
        assert row["subject"].casefold() != row["head_name"].casefold()
        assert row["template"] == prompts[row["relation"]] and row["query"] == row["template"].replace("[X]", row["subject"])
        per_item.setdefault(row["id"], []).append(row["subject"])
    subjects = [name for names in per_item.values() for name in names]
    assert subjects and not any(("Obsolete" in s) or ("français" in s) or ("español" in s) for s in subjects)
    full = load_dataset(str(build_variants(umls, three.parent / "with_full", configs=None)), "full", split="test")
    for item in full:  # as many as the pool allows, up to 3, distinct after case folding
        pool = {n.casefold() for n in allowed.get(item["head_cui"], ())} - {item["head_name"].casefold()}
        drawn = per_item.get(item["id"], [])
        assert len(drawn) == min(3, len(pool)) == len({n.casefold() for n in drawn}), item["id"]


def test_same_seed_same_bytes_a_larger_n_keeps_the_first_draws_and_another_seed_draws_others(umls, three, tmp_path):
    again = build_variants(umls, tmp_path / "again")
    digest = lambda folder: hashlib.sha256(data_file(folder, "variants").read_bytes()).hexdigest()  # noqa: E731
    assert digest(again) == digest(three)

    def synonyms(folder: Path) -> dict[tuple[str, str], str]:
        rows = load_dataset(str(folder), "variants", split="test")
        return {(r["id"], r["variant"]): r["subject"] for r in rows if r["variant"] != "default_prompt"}

    one = synonyms(build_variants(umls, tmp_path / "one", synonyms=1))
    assert one and all(variant == "synonym_1" for _, variant in one) and one.items() <= synonyms(three).items()
    assert not synonyms(build_variants(umls, tmp_path / "none", synonyms=0))
    other = synonyms(build_variants(umls, tmp_path / "other", seed=7))
    assert other != synonyms(three)


def test_the_draw_is_seeded_by_the_head_and_ignores_the_order_of_mrconso():
    names = ["Beta", "alpha", "Gamma", "delta", "ALPHA"]
    first = medlama.variants.synonym_draw(names, "C1", "Head", 3, 2021)
    assert first == medlama.variants.synonym_draw(list(reversed(names)), "C1", "Head", 3, 2021)
    assert len(first) == 3 and len({n.casefold() for n in first}) == 3
    assert medlama.variants.synonym_draw(names, "C1", "alpha", 9, 2021).count("alpha") == 0  # the head's own name
    assert medlama.variants.synonym_draw(names, "C1", "Head", 9, 2021)[:3] == first  # a permutation's head


def test_build_help_lists_the_synonyms_option(capsys):
    with pytest.raises(SystemExit):
        main(["build", "--help"])
    out = capsys.readouterr().out
    assert "--synonyms N" in out and "medlama: with --umls-dir: up to N subject synonyms" in " ".join(out.split())
