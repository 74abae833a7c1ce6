"""The DisKnE builder on the real annotation files with made-up MedNLI, MEDIQA-NLI and UMLS text."""

import csv
import re
from collections import Counter

import pytest
from datasets import load_dataset

from built_folder import data_file
from medprobe.building.build import build
from medprobe.cli import main
from medprobe.resources import load_builder_module
from medprobe.tasks.disknE_splits import DISKNE_FIELDS
from synthetic_disknE import spelling

disknE = load_builder_module("disknE")
VARIANTS = ("medical_similar", "medical_random", "terminological_similar", "terminological_random")
ARCHITECTURE_FIELDS = {"pair_id", *DISKNE_FIELDS}  # the contract, as the splits read it
DEFAULT_SOURCES = {"SNOMEDCT_US", "ICD10"}


def annotation_rows(annotation_dir, variant):
    with open(annotation_dir / f"DisknE_{variant}_annotation.csv", encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def mention_pattern(names: set[str]) -> re.Pattern:
    """Any of the names as whole words, in any case: written independently of the builder's matcher."""
    return re.compile("|".join(rf"(?<!\w){re.escape(name)}(?!\w)" for name in sorted(names)), re.IGNORECASE)


def disease_names(ds, synthetic) -> dict[str, set[str]]:
    """Every name of every disease of a variant that the splits must respect: UMLS synonyms of the
    default sources, the negative name, and the spellings in positive hypotheses."""
    names = {}
    for cui in set(ds["target_cui"]) | set(ds["disease_cui"]):
        concept = synthetic.concepts[cui]
        names[cui] = concept.names(DEFAULT_SOURCES) | {concept.negative_name}
    for hypothesis, cui, label in zip(ds["hypothesis"], ds["disease_cui"], ds["label"]):
        if label == 1:
            names[cui].add(hypothesis)
    return names


@pytest.fixture(scope="module")
def variants(built_disknE):
    return {v: load_dataset(str(built_disknE), v, split="test") for v in VARIANTS}


def test_row_counts_equal_the_annotation_files(variants, disknE_annotation_dir):
    expected = {"medical_similar": 4133, "medical_random": 4143, "terminological_similar": 2639, "terminological_random": 2629}
    for variant, ds in variants.items():
        rows = annotation_rows(disknE_annotation_dir, variant)
        assert ds.num_rows == len(rows) == expected[variant]
        assert Counter(ds["label"]) == Counter(int(r["label"] == "entailment") for r in rows)
        assert ds["annotation_row"] == list(range(1, len(rows) + 1))
        assert ds["target_cui"] == [r["original_cui"] for r in rows] and ds["disease_cui"] == [r["CUI"] for r in rows]
        assert ARCHITECTURE_FIELDS <= set(ds.column_names)
        if variant.startswith("medical"):
            assert ds["category"] == [r["category"] for r in rows]
        else:
            assert set(ds["category"]) == {None}


def test_default_config_is_medical_similar(built_disknE, variants):
    assert load_dataset(str(built_disknE), split="test")["annotation_row"] == variants["medical_similar"]["annotation_row"]


def test_positive_hypothesis_is_the_lower_cased_span(variants, disknE_annotation_dir):
    ds = variants["medical_similar"]
    rows = annotation_rows(disknE_annotation_dir, "medical_similar")
    for row, example in zip(rows, ds.to_list()):
        if row["label"] == "entailment":
            span = spelling(row["CUI"], int(row["end_index"]) - int(row["start_index"]) + 1)
            assert example["hypothesis"] == span.lower()
            start = int(row["start_index"])
            assert example["full_hypothesis"][start : start + len(span)].lower() == span.lower()


def test_negative_disease_name_comes_from_umls(variants, synthetic_disknE):
    fallbacks = 0
    for ds in variants.values():
        for example in ds.to_list():
            concept = synthetic_disknE.concepts[example["disease_cui"]]
            if example["label"] == 0:
                # the current SNOMED CT preferred term (not the obsolete one), else the UMLS preferred name
                assert example["hypothesis"] == concept.negative_name
                assert concept.negative_name in example["full_hypothesis"]
                fallbacks += concept.snomed_pt is None
            assert example["target_name"] == synthetic_disknE.concepts[example["target_cui"]].negative_name
    assert fallbacks > 0, "the synthetic UMLS has concepts without a SNOMED CT term; some negatives use them"


def test_negative_full_hypothesis_replaces_the_disease_span(variants):
    for variant in ("medical_random", "terminological_similar"):
        ds = variants[variant]
        examples = ds.to_list()
        positives = {(e["pair_id"], e["target_cui"]): e for e in examples if e["label"] == 1}
        by_pair = {e["pair_id"]: e for e in examples if e["label"] == 1}
        borrowed = 0
        for e in examples:
            if e["label"] == 0:
                # the release has 20 terminological negatives whose pair lacks a positive for their target
                positive = positives.get((e["pair_id"], e["target_cui"])) or by_pair[e["pair_id"]]
                borrowed += (e["pair_id"], e["target_cui"]) not in positives
                without_positive = positive["full_hypothesis"].lower().replace(positive["hypothesis"], "", 1)
                assert e["full_hypothesis"].lower().replace(e["hypothesis"], "", 1) == without_positive
        assert borrowed == (20 if variant.startswith("terminological") else 0)


def test_mentioned_cuis_are_whole_word_synonym_matches(variants, synthetic_disknE):
    for variant in ("medical_similar", "terminological_random"):
        ds = variants[variant]
        patterns = {cui: mention_pattern(names) for cui, names in disease_names(ds, synthetic_disknE).items()}
        premises = dict(zip(ds["premise"], ds["mentioned_cuis"]))
        assert sum(1 for found in premises.values() if found) > 25
        for premise, found in premises.items():
            assert found == sorted(cui for cui, pattern in patterns.items() if pattern.search(premise)), premise


def test_sources_targets_and_labels(variants, synthetic_disknE):
    for variant, ds in variants.items():
        assert Counter(ds["source"]).keys() == {"mednli_train", "mednli_dev", "mednli_test", "mediqa_nli_test"}
        assert all(synthetic_disknE.pair_sources[p] == s for p, s in zip(ds["pair_id"], ds["source"]))
        assert {label for label, s in zip(ds["source_label"], ds["source"]) if s == "mediqa_nli_test"} == {"entailment"}
        targets = set(disknE.annotations.variant_targets(variant))
        assert ds["in_target_list"] == [cui in targets for cui in ds["target_cui"]]
    assert len(disknE.annotations.MEDICAL_TARGETS) == 125 and len(disknE.annotations.TERMINOLOGICAL_TARGETS) == 116


def test_card_lists_targets_and_says_private(built_disknE):
    card = (built_disknE / "README.md").read_text(encoding="utf-8")
    assert "**private**" in card and "--private" in card and "PhysioNet" in card
    assert "| C0020538 |" in card and "positives: symptoms_diseases" in card
    assert "4,133 of the 4,133 annotation rows" in card


def test_rebuild_and_tsv_route_give_identical_parquet(built_disknE, synthetic_disknE, disknE_annotation_dir, tmp_path):
    # the TSV that `medprobe umls-names` extracts replaces MRCONSO.RRF and gives the same bytes
    data = tmp_path / "data"
    data.mkdir()
    for item in synthetic_disknE.data_dir.iterdir():
        if item.name != "META":
            (data / item.name).symlink_to(item)
    mrconso = synthetic_disknE.data_dir / "META" / "MRCONSO.RRF"
    assert (
        main(
            [
                "umls-names",
                str(mrconso),
                "--cuis-from",
                str(disknE_annotation_dir),
                "--out",
                str(data / "umls_names.tsv"),
                "--no-progress",
            ]
        )
        == 0
    )
    build("disknE", tmp_path / "hub", data_dir=str(data), configs=["medical_similar", "terminological_random"])
    for config in ("medical_similar", "terminological_random"):
        assert data_file(tmp_path / "hub", config).read_bytes() == data_file(built_disknE, config).read_bytes()


def test_mention_index_matches_whole_words_in_any_case():
    index = disknE.rows.MentionIndex({"C1": {"Heart failure", "CHF"}, "C2": {"MI"}, "C3": {"failure (finding)"}})
    assert index.mentioned("Hx of  HEART   failure, chf.") == ["C1"]
    assert index.mentioned("admitted with an mi") == ["C2"]
    assert index.mentioned("mild chfx; family history") == []
    assert index.mentioned("renal failure (finding) noted") == ["C3"]
    assert index.mentioned("") == []


def test_mrconso_is_read_once_for_all_configs_of_a_build(synthetic_disknE, tmp_path, monkeypatch):
    reads = []
    real = disknE.umls.read_mrconso
    monkeypatch.setattr(disknE.umls, "read_mrconso", lambda *a, **k: reads.append(a[0]) or real(*a, **k))
    build(
        "disknE", tmp_path / "hub", data_dir=str(synthetic_disknE.data_dir), configs=["medical_similar", "terminological_random"]
    )
    assert reads == [synthetic_disknE.data_dir / "META" / "MRCONSO.RRF"]
    # the names kept for the next config read back equal; a file that does not read is read again
    mrconso, cuis, cache = reads[0], set(synthetic_disknE.concepts), str(tmp_path / "cache")
    first = disknE.umls.umls_names(mrconso, cuis, cache)
    assert disknE.umls.umls_names(mrconso, cuis, cache) == first and len(reads) == 2
    (kept,) = (tmp_path / "cache" / "disknE_umls_names").glob("*.json")
    kept.write_text("[]", encoding="utf-8")  # JSON, but not the kept layout
    assert disknE.umls.umls_names(mrconso, cuis, cache) == first and len(reads) == 3
