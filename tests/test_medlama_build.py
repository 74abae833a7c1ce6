"""The MedLAMA builder and `medprobe build medlama` on the real release files (../shared/data)."""

import hashlib
from collections import Counter

import pytest
import yaml
from datasets import load_dataset

from built_folder import data_file
from medprobe.building.build import build
from medprobe.resources import load_builder_module

medlama = load_builder_module("medlama")


@pytest.fixture(scope="module")
def full(built_medlama):
    return load_dataset(str(built_medlama), split="test")


@pytest.fixture(scope="module")
def hard(built_medlama):
    return load_dataset(str(built_medlama), "hard", split="test")


def answer_space(ds) -> set[str]:
    names = set(ds["head_name"])
    for answers in ds["answers"]:
        names.update(answers)
    return names


def test_full_and_hard_sizes_match_the_release(full, hard, medlama_release_dir):
    assert full.num_rows == 19_000 and hard.num_rows == 15_329
    full_counts, hard_counts = Counter(full["relation"]), Counter(hard["relation"])
    assert len(full_counts) == 19
    for relation, hard_size in medlama.HARD_SIZES.items():
        assert full_counts[relation] == 1000
        assert hard_counts[relation] == hard_size
        assert (medlama_release_dir / "2021AA" / f"{relation}_{hard_size}_hard.csv").is_file()


def test_answer_space_sizes(full, hard):
    assert len(answer_space(full)) == 22_923
    assert len(answer_space(hard)) == 17_532


def test_hard_is_a_subset_of_full_with_the_same_ids_and_the_rule_holds(full, hard):
    full_by_id = {row["id"]: row for row in full}
    for row in hard:
        assert row == full_by_id[row["id"]]
        assert row["avg_match"] < 0.1 and row["avg_rouge_l"] < 0.1
    hard_ids = set(hard["id"])
    easy = [r for r in full if r["id"] not in hard_ids]
    assert all(r["avg_match"] >= 0.1 or r["avg_rouge_l"] >= 0.1 for r in easy)


def test_utf8_names_keep_their_spelling(full):
    names = answer_space(full)
    assert "Waldenström macroglobulinemia" in names
    assert not any("WaldenstrÃ" in n for n in names)  # no latin-1 mojibake


def test_fields_queries_and_answers(full):
    assert set(medlama.FEATURES) <= set(full.features)
    for row in full.select(range(0, 19_000, 997)):
        assert "[X]" in row["template"] and "[Y]" in row["template"]
        assert row["query"] == row["template"].replace("[X]", row["head_name"])
        assert "[Y]" in row["query"]
        assert len(row["answers"]) == len(set(row["answers"])) == len(row["answer_cuis"]) >= 1


def test_answers_deduplicated_in_release_order(full):
    # the release's tail_names_list repeats names; answers keep the first occurrence order
    row = next(r for r in full if r["head_name"] == "Trichoepithelioma")
    assert row["answers"][:3] == ["Trichoblastoma", "Trichoepithelioma", "Desmoplastic trichoepithelioma"]


def test_card_yaml_makes_default_and_named_configs_loadable(built_medlama):
    text = (built_medlama / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(text.split("---\n")[1])
    assert [c["config_name"] for c in meta["configs"]] == ["full", "hard", "variants"]
    assert meta["configs"][0].get("default") is True
    assert "extra_gated_prompt" in meta and meta["license"] == "other"
    for relation in medlama.RELATIONS:
        assert f"`{relation}`" in text
    assert "UMLS Metathesaurus License" in text and "@inproceedings{meng-etal-2022-rewire" in text
    assert "$" not in text.split("---\n", 2)[2]  # every placeholder filled
    assert "Row check: every full release file held exactly 1,000 distinct rows" in text and "relaxed" not in text


def test_features_are_stored_in_the_parquet_files(built_medlama):
    import pyarrow.parquet as pq

    schema = pq.read_schema(data_file(built_medlama, "hard"))
    assert b"huggingface" in schema.metadata
    assert b'"answers"' in schema.metadata[b"huggingface"]


def test_rebuild_gives_byte_identical_parquet(built_medlama, medlama_release_dir, tmp_path):
    build("medlama", tmp_path, data_dir=str(medlama_release_dir))
    for config in ("full", "hard"):
        name = data_file(built_medlama, config).relative_to(built_medlama)
        assert data_file(tmp_path, config).relative_to(tmp_path) == name  # named by content: the same name
        first = hashlib.sha256((built_medlama / name).read_bytes()).hexdigest()
        again = hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
        assert first == again, f"{name} differs between two builds of the same input"


def test_hard_rule_reproduces_released_hard_membership_row_by_row(medlama_release_dir):
    # the rule recomputed from names, relation by relation, selects exactly the released rows
    for relation, size in medlama.HARD_SIZES.items():
        rows = medlama.release.read_relation_rows(str(medlama_release_dir / "2021AA" / f"{relation}_1000.csv"), relation)
        selected = 0
        for row in rows:
            raw = row["raw"]
            row["avg_match"] = medlama.hardness.avg_match(raw["head_name"], raw["tail_names"])
            row["avg_rouge_l"] = medlama.hardness.avg_rouge_l(raw["head_name"], raw["tail_names"])
            row["hard"] = medlama.hardness.is_hard(row["avg_match"], row["avg_rouge_l"])
            selected += row["hard"]
        assert selected == size
        hard_file = medlama_release_dir / "2021AA" / f"{relation}_{size}_hard.csv"
        medlama.hardness.check_hard_rows(relation, "full.csv", str(hard_file), rows)  # raises on any difference


def test_release_rows_are_distinct_though_21_head_cuis_repeat(full):
    # duplicates are whole rows: 21 head CUIs appear twice in one relation with another head
    # name, and the build (which refuses duplicated rows) keeps both
    pairs = Counter(zip(full["relation"], full["head_cui"]))
    assert sum(1 for n in pairs.values() if n == 2) == 21 and max(pairs.values()) == 2
    assert len(set(zip(full["relation"], full["head_cui"], full["head_name"]))) == 19_000
