"""MedLAMA regenerated from a UMLS release (`medprobe build medlama --umls-dir META`).

UMLS is licensed and not here: the tests write a made-up META folder (tests/synthetic_umls.py)
whose generator knows, by construction, what each MRREL row must give; the expected rows are
computed from that knowledge here, independently of the builder. Two tests check the sampling
and answer rules against the real 2021AA release files (skipped where they are absent).
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from datasets import load_dataset

from built_folder import data_file
from medprobe.building.build import build
from medprobe.cli import main
from medprobe.contracts import UserError
from medprobe.resources import load_builder_module
from synthetic_medlama import BUILD_PARAMS, write_release
from synthetic_umls import RELATIONS, SHORT_RELATION, VERSION, Truth, write_meta, write_prompts

medlama = load_builder_module("medlama")
PER_RELATION = 8


# --- what the rows must be, from the generator's truth ----------------------------------------------


def expected_rows(
    truth: Truth, *, per_relation: int = PER_RELATION, seed: int = 2021, names: str = "atom", drop_suppressed: bool = False
) -> dict[str, list[dict]]:
    """Per relation, the drawn rows in order: head, answers (first-seen order), CUI of each answer's last row."""
    result = {}
    for relation in RELATIONS:
        groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for edge in truth.edges:
            if edge.relation != relation or (drop_suppressed and edge.suppressed):
                continue
            if names == "atom":
                head, tail = edge.head_name, edge.tail_name
            else:
                head, tail = truth.concepts[edge.head_cui].preferred, truth.concepts[edge.tail_cui].preferred
            if head is not None and tail is not None:
                groups.setdefault((edge.head_cui, head), []).append((edge.tail_cui, tail))
        frame = []
        for (head_cui, head_name), tails in sorted(groups.items()):
            answers: list[str] = []
            last_cui: dict[str, str] = {}
            for cui, name in tails:
                if name not in answers:
                    answers.append(name)
                last_cui[name] = cui
            if len(answers) <= 10:
                frame.append(
                    {
                        "head_cui": head_cui,
                        "head_name": head_name,
                        "answers": answers,
                        "answer_cuis": [last_cui[a] for a in answers],
                    }
                )
        # pandas' sample(n, random_state=seed): the head of a RandomState(seed) permutation
        drawn = np.random.RandomState(seed).permutation(len(frame))[:per_relation]
        result[relation] = [frame[i] for i in drawn]
    return result


def check_rows(dataset, expected: dict[str, list[dict]], prompts: dict[str, str]) -> None:
    by_id = {row["id"]: row for row in dataset}
    assert len(by_id) == dataset.num_rows == sum(len(rows) for rows in expected.values())
    for relation, rows in expected.items():
        for index, want in enumerate(rows):
            got = by_id[f"{relation}-{index:04d}"]
            assert {k: got[k] for k in want} == want, f"{relation}-{index:04d}"
            assert got["relation"] == relation and got["template"] == prompts[relation]
            assert got["query"] == prompts[relation].replace("[X]", want["head_name"])
            tail_names = " || ".join(want["answers"])
            assert got["avg_match"] == medlama.hardness.avg_match(want["head_name"], tail_names)
            assert got["avg_rouge_l"] == medlama.hardness.avg_rouge_l(want["head_name"], tail_names)


def read_prompts(folder: Path) -> dict[str, str]:
    with open(folder / "prompts.csv", encoding="utf-8") as handle:
        return {row["pid"]: row["human_prompt"] for row in csv.DictReader(handle)}


def parquet_digest(folder: Path, config: str) -> str:
    return hashlib.sha256(data_file(folder, config).read_bytes()).hexdigest()


# --- fixtures ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> tuple[Path, Truth]:
    root = tmp_path_factory.mktemp("umls") / "2031AB"
    return root, write_meta(root)


@pytest.fixture(scope="module")
def prompts_dir(tmp_path_factory) -> Path:
    return write_prompts(tmp_path_factory.mktemp("prompts"))


@pytest.fixture(scope="module")
def hub(release, prompts_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("umls_hub")
    build("medlama", out, data_dir=str(prompts_dir), params={"umls_dir": str(release[0] / "META"), "per_relation": PER_RELATION})
    return out


def build_umls(release_root: Path, prompts_dir: Path, out: Path, configs=("full",), **params):
    params = {"umls_dir": str(release_root / "META"), "per_relation": PER_RELATION, **params}
    build("medlama", out, data_dir=str(prompts_dir), configs=list(configs), params=params)
    return load_dataset(str(out), configs[0], split="test")


def copy_release(release_root: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "2031AB"
    shutil.copytree(release_root, copy)
    return copy


# --- the rows ----------------------------------------------------------------------------------------


def test_full_rows_are_what_the_generated_truth_says(hub, release, prompts_dir):
    full = load_dataset(str(hub), split="test")
    check_rows(full, expected_rows(release[1]), read_prompts(prompts_dir))
    assert set(medlama.FEATURES) == set(full.features)


def test_hard_is_the_published_rule_on_the_drawn_rows_with_their_full_ids(hub):
    full = {row["id"]: row for row in load_dataset(str(hub), "full", split="test")}
    hard = load_dataset(str(hub), "hard", split="test")
    assert 0 < hard.num_rows < len(full)
    for row in hard:
        assert row == full[row["id"]]
    hard_ids = set(hard["id"])
    for row_id, row in full.items():
        assert (row_id in hard_ids) == medlama.hardness.is_hard(row["avg_match"], row["avg_rouge_l"])


def test_head_is_cui2_and_answer_cui1_of_the_mrrel_row(hub, release):
    pairs = set()
    with open(release[0] / "META" / "MRREL.RRF", encoding="utf-8") as handle:
        for line in handle:
            fields = line.split("|")
            pairs.add((fields[4], fields[7], fields[0]))  # (CUI2, RELA, CUI1)
    for row in load_dataset(str(hub), split="test"):
        for answer_cui in row["answer_cuis"]:
            assert (row["head_cui"], row["relation"], answer_cui) in pairs


def test_no_french_spanish_suppressed_or_lower_ranked_name_is_used(hub):
    full = load_dataset(str(hub), split="test")
    names = set(full["head_name"]) | {a for answers in full["answers"] for a in answers}
    bad = [
        n
        for n in names
        if n.startswith(("nom français", "nombre español", "Obsolete name")) or n.endswith((", variant", ", not ISPREF"))
    ]
    assert bad == []


def test_a_concept_two_sources_name_differently_gives_two_queries(release):
    truth = release[1]
    queries = {(e.relation, e.head_cui, e.head_name) for e in truth.edges if e.head_name}
    heads = [(r, cui) for r, cui, _ in queries]
    assert any(heads.count(h) > 1 for h in heads)  # the generator made such heads: the rule must keep them apart
    rows = [row for rows in expected_rows(truth, per_relation=100).values() for row in rows]
    per_head = [(row["head_cui"]) for row in rows]
    assert len(per_head) > len(set(per_head))


def test_a_name_two_answer_concepts_share_is_one_answer_with_the_last_cui(release, prompts_dir, tmp_path):
    full = build_umls(release[0], prompts_dir, tmp_path, per_relation=100)
    row = next(
        r for r in full if r["head_cui"] == "C9000004" and r["relation"] == RELATIONS[0] and "Shared twin name" in r["answers"]
    )
    twin_rows = [
        e
        for e in release[1].edges
        if (e.relation, e.head_name, e.tail_name) == (RELATIONS[0], row["head_name"], "Shared twin name")
    ]
    assert {e.tail_cui for e in twin_rows} == {"C9000002", "C9000003"}  # two concepts, one name
    assert row["answers"].count("Shared twin name") == 1
    assert row["answer_cuis"][row["answers"].index("Shared twin name")] == twin_rows[-1].tail_cui  # the last in MRREL


def test_names_preferred_gives_one_query_per_head_concept(release, prompts_dir, tmp_path):
    full = build_umls(release[0], prompts_dir, tmp_path, names="preferred", per_relation=100)
    check_rows(full, expected_rows(release[1], per_relation=100, names="preferred"), read_prompts(prompts_dir))
    for relation in RELATIONS:
        heads = [r["head_cui"] for r in full if r["relation"] == relation]
        assert len(heads) == len(set(heads))


def test_drop_suppressed_leaves_the_suppressed_mrrel_rows_out(release, prompts_dir, tmp_path):
    full = build_umls(release[0], prompts_dir, tmp_path, drop_suppressed=True, per_relation=100)
    expected = expected_rows(release[1], per_relation=100, drop_suppressed=True)
    assert expected != expected_rows(release[1], per_relation=100)  # the generator wrote suppressed rows that matter
    check_rows(full, expected, read_prompts(prompts_dir))


# --- determinism ---------------------------------------------------------------------------------------


def test_same_seed_and_meta_give_byte_identical_parquet(hub, release, prompts_dir, tmp_path):
    again = tmp_path / "again"
    build(
        "medlama", again, data_dir=str(prompts_dir), params={"umls_dir": str(release[0] / "META"), "per_relation": PER_RELATION}
    )
    for config in ("full", "hard"):
        assert parquet_digest(hub, config) == parquet_digest(again, config)


def test_another_seed_draws_another_sample(hub, release, prompts_dir, tmp_path):
    other = build_umls(release[0], prompts_dir, tmp_path, seed=7)
    check_rows(other, expected_rows(release[1], seed=7), read_prompts(prompts_dir))
    first = load_dataset(str(hub), split="test")
    assert list(zip(other["id"], other["head_name"])) != list(zip(first["id"], first["head_name"]))


def test_mrrel_and_mrconso_are_read_once_for_both_configs(release, prompts_dir, tmp_path, monkeypatch):
    calls = []
    for name in ("read_mrrel", "read_concept_names"):
        real = getattr(medlama.umls_queries, name)
        monkeypatch.setattr(
            medlama.umls_queries, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k)
        )
    build_umls(release[0], prompts_dir, tmp_path, configs=("full", "hard"))
    assert calls == ["read_mrrel", "read_concept_names"]


def test_the_extraction_kept_for_the_next_config_reads_back_equal_and_one_that_does_not_read_is_redone(
    release, tmp_path, monkeypatch
):
    queries = medlama.umls_queries
    settings = medlama.umls_inputs.umls_settings(medlama.MedlamaConfig(umls_dir=str(release[0] / "META")))
    source = medlama.umls_inputs.umls_source(settings)
    first = queries.extract_queries(source, settings, str(tmp_path), progress=False)
    (kept,) = (tmp_path / "medlama_umls_extraction").glob("*.json")
    reads = []
    real = queries.read_mrrel
    monkeypatch.setattr(queries, "read_mrrel", lambda *a, **k: reads.append(a[0]) or real(*a, **k))
    assert queries.extract_queries(source, settings, str(tmp_path), progress=False) == first
    assert reads == []
    kept.write_text('{"queries": ', encoding="utf-8")  # a file that does not read: the files are read again
    again = queries.extract_queries(source, settings, str(tmp_path), progress=False)
    assert dataclasses.replace(again, mrrel=first.mrrel, mrconso=first.mrconso) == first  # all but the timings
    assert reads == [source.mrrel]
    other = medlama.umls_inputs.umls_settings(medlama.MedlamaConfig(umls_dir=str(release[0] / "META"), max_answers=3))
    assert queries.extract_queries(source, other, str(tmp_path), progress=False) != first  # other parameters, other key
    assert reads == [source.mrrel] * 2 and len(list(kept.parent.glob("*.json"))) == 1  # one extraction kept at most


def test_the_card_of_a_umls_build_needs_the_statistics_of_that_build(hub, release):
    built = {"full": load_dataset(str(hub), "full")}
    params = {"umls_dir": str(release[0] / "META"), "per_relation": PER_RELATION}
    with pytest.raises(ValueError, match="must hand its statistics to card_context"):
        medlama.card_context(built, params)  # it would otherwise describe the official release files


# --- a relation with too few heads, and bad input -------------------------------------------------------


def test_a_short_relation_is_built_whole_with_a_warning_naming_it(hub, release, caplog):
    full = load_dataset(str(hub), split="test")
    expected = expected_rows(release[1])
    assert 0 < len(expected[SHORT_RELATION]) < PER_RELATION
    assert full["relation"].count(SHORT_RELATION) == len(expected[SHORT_RELATION])
    card = (hub / "README.md").read_text(encoding="utf-8")
    assert f"`{SHORT_RELATION}`: {len(expected[SHORT_RELATION])} queries (of {PER_RELATION} asked)" in card


def test_the_short_relation_warning_names_relation_and_counts(release, prompts_dir, tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    build_umls(release[0], prompts_dir, tmp_path)
    available = len(expected_rows(release[1], per_relation=10_000)[SHORT_RELATION])
    assert any(
        SHORT_RELATION in r.getMessage()
        and f"{available} queries" in r.getMessage()
        and f"per_relation={PER_RELATION}" in r.getMessage()
        for r in caplog.records
    )


def test_allow_fewer_false_stops_on_the_short_relation(release, prompts_dir, tmp_path):
    with pytest.raises(ValueError, match=f"{SHORT_RELATION}: .* fewer than per_relation={PER_RELATION}"):
        build_umls(release[0], prompts_dir, tmp_path, allow_fewer=False)


@pytest.mark.parametrize("missing", ["MRREL.RRF", "MRCONSO.RRF"])
def test_a_meta_folder_missing_a_file_is_named(release, prompts_dir, tmp_path, missing):
    copy = copy_release(release[0], tmp_path)
    (copy / "META" / missing).unlink()
    with pytest.raises(FileNotFoundError, match=f"META is missing {missing}"):
        build_umls(copy, prompts_dir, tmp_path / "out")


def test_an_mrrel_line_with_a_missing_field_is_named_by_file_and_line(release, prompts_dir, tmp_path):
    copy = copy_release(release[0], tmp_path)
    path = copy / "META" / "MRREL.RRF"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    fields = lines[36].split("|")
    lines[36] = "|".join(fields[:5] + fields[6:])  # AUI2 dropped: 15 fields
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(UserError, match=r"MRREL\.RRF, line 37: expected 16 fields, each ended by '\|'.*found 15 '\|'") as err:
        build_umls(copy, prompts_dir, tmp_path / "out")
    assert isinstance(err.value.__cause__, medlama.umls_inputs.UmlsInputError)  # the builder's own error, one line for the CLI


def test_an_mrrel_line_without_its_last_separator_is_named(release, prompts_dir, tmp_path):
    copy = copy_release(release[0], tmp_path)
    path = copy / "META" / "MRREL.RRF"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[-1] = lines[-1].rstrip("|\n") + "|extra\n"  # 17 parts, but text after the last '|'
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(UserError, match=rf"MRREL\.RRF, line {len(lines)}: expected 16 fields"):
        build_umls(copy, prompts_dir, tmp_path / "out")


def test_an_mrconso_line_with_a_wrong_field_count_is_named(release, prompts_dir, tmp_path):
    copy = copy_release(release[0], tmp_path)
    path = copy / "META" / "MRCONSO.RRF"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[9] = lines[9].replace("|", "||", 1)
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(UserError, match=r"MRCONSO\.RRF, line 10: expected 18 fields"):
        build_umls(copy, prompts_dir, tmp_path / "out")


def test_a_relation_absent_from_the_release_stops_naming_it(release, prompts_dir, tmp_path):
    copy = copy_release(release[0], tmp_path)
    path = copy / "META" / "MRREL.RRF"
    absent, msh_only = RELATIONS[3], RELATIONS[4]
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        fields = line.split("|")
        if fields[7] == absent or (fields[7] == msh_only and fields[10] != "MSH"):
            continue
        kept.append(line)
    path.write_text("".join(kept), encoding="utf-8")
    with pytest.raises(
        UserError, match=rf"absent from this release.*{absent} \(no row at all\); {msh_only} \(3 rows with SAB MSH\)"
    ) as err:
        build_umls(copy, prompts_dir, tmp_path / "out")
    assert "--set relations=" in str(err.value)
    full = build_umls(
        copy, prompts_dir, tmp_path / "out", relations=",".join(r for r in RELATIONS if r not in (absent, msh_only))
    )
    assert sorted(set(full["relation"])) == sorted(r for r in RELATIONS if r not in (absent, msh_only))


def test_a_chosen_sab_that_gives_no_row_is_named(release, prompts_dir, tmp_path):
    with pytest.raises(UserError, match="sabs SNOMEDCT_UK give no row"):
        build_umls(release[0], prompts_dir, tmp_path, sabs="SNOMEDCT_US,NCI,MED-RT,SNOMEDCT_UK")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"relations": "may_treat,may_cure"}, "unknown relation.*may_cure"),
        ({"relations": "may_treat,may_treat"}, "relations lists may_treat more than once"),
        ({"per_relation": 0}, "per_relation must be a whole number at least 1, got 0"),
        ({"per_relation": 2.5}, "per_relation must be a whole number"),
        ({"seed": -1}, "seed must be a whole number between 0 and 4294967295"),
        ({"names": "shortest"}, "names must be one of atom, preferred"),
        ({"drop_suppressed": 1}, "drop_suppressed must be true or false, got 1"),
        ({"sabs": "NCI,,MED-RT"}, "sabs has an empty entry"),
        ({"per_relaton": 5}, "unknown parameter.*per_relaton.*known: rows_per_relation, umls_dir"),
    ],
)
def test_bad_parameters_are_named(release, prompts_dir, tmp_path, params, message):
    with pytest.raises(ValueError, match=message):
        build_umls(release[0], prompts_dir, tmp_path, **params)


def test_umls_parameters_without_umls_dir_are_refused(tmp_path):
    release_dir = write_release(tmp_path / "release")
    with pytest.raises(ValueError, match="per_relation, seed only apply to a build from your own UMLS release: add --umls-dir"):
        build("medlama", tmp_path / "out", data_dir=str(release_dir), params={"per_relation": 5, "seed": 3})


# --- the UMLS version -----------------------------------------------------------------------------------


def test_version_is_read_from_mrdoc_without_release_dat(prompts_dir, tmp_path):
    root = tmp_path / "rel"
    write_meta(root, release_dat=False)
    build_umls(root, prompts_dir, tmp_path / "out")
    assert f"release **{VERSION}** (the name MRDOC.RRF gives)" in (tmp_path / "out" / "README.md").read_text(encoding="utf-8")


def test_version_parameter_must_agree_with_the_files(release, prompts_dir, tmp_path):
    with pytest.raises(ValueError, match=f"umls_version=2025AA but .*release.dat says {VERSION}"):
        build_umls(release[0], prompts_dir, tmp_path, umls_version="2025AA")


def test_unknown_version_asks_for_the_parameter_and_takes_it(prompts_dir, tmp_path):
    root = tmp_path / "rel"
    write_meta(root, release_dat=False, mrdoc=False)
    with pytest.raises(ValueError, match="cannot tell the UMLS version.*--set umls_version=2025AA"):
        build_umls(root, prompts_dir, tmp_path / "out")
    build_umls(root, prompts_dir, tmp_path / "out", umls_version="2025AA")
    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert "release **2025AA** (the name the umls_version parameter gives)" in card
    assert "--set umls_version=2025AA" in card


def test_the_release_folder_above_meta_is_accepted(release, prompts_dir, tmp_path):
    build(
        "medlama", tmp_path, data_dir=str(prompts_dir), configs=["full"], params={"umls_dir": str(release[0]), "per_relation": 3}
    )
    assert load_dataset(str(tmp_path), split="test").num_rows == 3 * len(RELATIONS)


def test_prompts_are_downloaded_when_no_data_dir_and_offline_says_what_to_do(release, tmp_path):
    with pytest.raises(ConnectionError, match="prompts.csv.*--data-dir"):
        build("medlama", tmp_path, configs=["full"], params={"umls_dir": str(release[0] / "META"), "per_relation": 3})


# --- the command line and the card ------------------------------------------------------------------------


def test_cli_builds_a_gated_loadable_folder_whose_card_names_version_parameters_and_counts(
    release, prompts_dir, tmp_path, capsys
):
    out = tmp_path / "hub"
    code = main(
        [
            "build",
            "medlama",
            "--umls-dir",
            str(release[0] / "META"),
            "--data-dir",
            str(prompts_dir),
            "--out",
            str(out),
            "--set",
            "per_relation=5",
            "--set",
            "seed=11",
        ]
    )
    assert code == 0, capsys.readouterr().err
    hard = load_dataset(str(out), "hard", split="test")
    assert 0 < hard.num_rows <= 5 * len(RELATIONS)
    text = (out / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["medprobe_licence"] == "umls" and VERSION in meta["extra_gated_prompt"]
    body = text.split("---\n", 2)[2]
    assert "$" not in body and str(tmp_path) not in text  # every placeholder filled; no local path
    assert "`medprobe build medlama --umls-dir <META folder> --data-dir <data folder> --set per_relation=5 --set seed=11`" in body
    assert f"UMLS Metathesaurus release **{VERSION}**" in body
    assert "| `per_relation` | 5 | 1000 |" in body and "| `seed` | 11 | 2021 (`random_state`) |" in body
    truth = release[1]
    relation = RELATIONS[0]
    counted = sum(e.relation == relation for e in truth.edges)
    assert f"| `{relation}` | {truth.rela_rows[relation]} | {counted} |" in body  # MRREL rows, in sabs
    assert "no semantic-type filter (MRSTY.RRF is not read)" in body


def test_a_release_build_after_a_umls_build_gets_the_release_card(hub, tmp_path):
    release_dir = write_release(tmp_path / "release")
    build("medlama", tmp_path / "out", data_dir=str(release_dir), params=BUILD_PARAMS)
    text = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert "official release files at commit" in text and "licensed copy of the UMLS" not in text
    assert "UMLS Metathesaurus 2021AA (SNOMED CT, NCI, MED-RT)" in text


# --- the rules, checked against the real 2021AA release ---------------------------------------------------

# Queries per relation before sampling, as the notebook printed them for UMLS 2021AA.
NOTEBOOK_FRAME_SIZES = {
    "associated_morphology_of": 1943,
    "disease_has_abnormal_cell": 11942,
    "disease_has_associated_anatomic_site": 14322,
    "disease_has_normal_cell_origin": 10199,
    "disease_has_normal_tissue_origin": 10916,
    "disease_mapped_to_gene": 2856,
    "disease_may_have_associated_disease": 1309,
    "disease_may_have_finding": 5138,
    "disease_may_have_molecular_abnormality": 3096,
    "gene_associated_with_disease": 1360,
    "gene_encodes_gene_product": 5367,
    "gene_product_encoded_by_gene": 6187,
    "gene_product_has_associated_anatomy": 3695,
    "gene_product_has_biochemical_function": 3402,
    "gene_product_plays_role_in_biological_process": 5913,
    "has_physiologic_effect": 4819,
    "may_prevent": 1747,
    "may_treat": 3864,
    "occurs_after": 5831,
}


def release_rows(folder: Path, relation: str) -> list[dict[str, str]]:
    with open(folder / "2021AA" / f"{relation}_1000.csv", encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_the_sampling_rule_reproduces_the_row_order_of_the_release(medlama_release_dir):
    """Drawn positions ranked = release rows ranked by (head CUI, head name), for every relation:
    the frame was sorted that way and the draw is sample_indices (pandas' sample) with seed 2021."""
    for relation, frame_size in NOTEBOOK_FRAME_SIZES.items():
        keys = [(row["head_cui"], row["head_name"]) for row in release_rows(medlama_release_dir, relation)]
        drawn = medlama.umls_queries.sample_indices(frame_size, 1000, 2021)
        assert sorted(range(1000), key=lambda i: keys[i]) == sorted(range(1000), key=lambda i: drawn[i]), relation


def test_query_answers_reproduce_the_release_answer_columns(medlama_release_dir):
    import ast

    for relation in RELATIONS:
        for row in release_rows(medlama_release_dir, relation):
            tails = list(zip(ast.literal_eval(row["tail_cuis_list"]), ast.literal_eval(row["tail_names_list"])))
            answers, answer_cuis = medlama.umls_queries.query_answers(tails)
            assert " || ".join(answers) == row["tail_names"] and " || ".join(answer_cuis) == row["tail_cuis"]
            assert len(answers) == int(row["tail_names_len"]) <= 10


def test_a_failed_umls_build_leaves_the_previous_folder_byte_for_byte(hub, release, prompts_dir, tmp_path):
    out = tmp_path / "hub"
    shutil.copytree(hub, out)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    copy = copy_release(release[0], tmp_path)
    with open(copy / "META" / "MRREL.RRF", "a", encoding="utf-8") as handle:
        handle.write("C9000001|A1|SCUI|RO|C9000002|\n")  # a truncated last line
    with pytest.raises(UserError, match=r"MRREL\.RRF, line \d+: expected 16 fields"):
        build("medlama", out, data_dir=str(prompts_dir), params={"umls_dir": str(copy / "META"), "per_relation": PER_RELATION})
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_build_help_names_the_umls_dir_option(capsys):
    with pytest.raises(SystemExit):
        main(["build", "--help"])
    assert "--umls-dir META" in capsys.readouterr().out
