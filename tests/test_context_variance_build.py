"""The context-variance builder: the paper's segmentation (Figure 1), matching rules, contexts, bad input."""

import json
from pathlib import Path

import pytest

from built_folder import data_file
from medprobe.building.build import build
from medprobe.resources import load_builder_module

cv = load_builder_module("context_variance")
SAMPLE = cv.SAMPLE_DIR
NOTE = "notes/ent_clinic_nasal_polyp.txt"
NASAL_POLYP = "mp:nasal_polyp-has_symptom"


@pytest.fixture(scope="module")
def sample():
    triples = cv.inputs.read_triples([SAMPLE / "triples.jsonl"])
    return {
        "triples": triples,
        "prompts": cv.inputs.read_prompts(SAMPLE / "prompts.jsonl"),
        "pools": cv.inputs.build_pools(triples, cv.inputs.read_entities(SAMPLE / "entities.jsonl")),
        "documents": cv.inputs.read_corpus(SAMPLE / "corpus"),
    }


def rows_for(sample, context_kind="real", target_kind="target", **kwargs):
    return list(
        cv.instances.generate_rows(
            sample["triples"], sample["prompts"], sample["pools"], sample["documents"], context_kind, target_kind, **kwargs
        )
    )


def figure1_rows(sample, context_kind="real"):
    instance = f"{NASAL_POLYP}|discolored nasal discharge|{NOTE}"
    return [r for r in rows_for(sample, context_kind) if r["instance_id"] == instance]


# --- Figure 1 of the paper, with our own note text ---------------------------------------------------


def test_figure1_segments_come_out_in_the_papers_order_and_content(sample):
    rows = figure1_rows(sample)
    assert [r["step"] for r in rows] == list(range(11)) and rows[0]["num_steps"] == 10
    assert [r["added_object"] for r in rows[1:]] == [
        "discolored nasal discharge",  # S1 holds the target
        "sick feeling",  # S2 left
        "postnasal drip",  # S3 right
        "heartburn",  # S4 left
        "nasal stuffiness",  # S5 right, to the end of the note: the right side is exhausted
        "hemoptysis",
        "chest tightness",
        "chest pain",
        "wheeze",
        "shortness of breath",  # S6..S10 all left
    ]
    segments = {f"S{r['step']}": r["segment"] for r in rows[1:]}
    # S1: left edge just after "sick feeling", right edge just before "postnasal drip"
    assert (
        segments["S1"]
        == "since the weekend and now notices discolored nasal discharge, mostly in the mornings. She also describes"
    )
    assert segments["S2"] == "after late meals. She has had a general sick feeling"
    assert segments["S3"] == "postnasal drip that keeps her clearing her throat, and persistent"
    assert segments["S4"] == ". Occasional heartburn"
    assert segments["S5"].startswith("nasal stuffiness on the left side.") and segments["S5"].endswith("review in four weeks.")
    assert segments["S6"] == "after climbing stairs. No hemoptysis"
    assert segments["S10"] == "ENT clinic note. The patient reports shortness of breath"  # with the start of the note
    # the ten segments tile the whole note
    note = " ".join((SAMPLE / "corpus" / NOTE).read_text().split())
    in_document_order = ["S10", "S9", "S8", "S7", "S6", "S4", "S2", "S1", "S3", "S5"]
    assert " ".join(segments[s] for s in in_document_order).replace(" .", ".") == note


def test_figure1_inputs_place_the_segments_in_document_order_before_the_prompt(sample):
    rows = figure1_rows(sample)
    segments = {r["step"]: r["segment"] for r in rows[1:]}
    prompt = "nasal polyp has symptoms such as [MASK] ."
    assert rows[0]["text"] == prompt  # input0 = the prompt alone
    assert rows[4]["text"] == " ".join([segments[4], segments[2], segments[1], segments[3], prompt])  # input4 = S4 S2 S1 S3
    assert rows[5]["text"] == " ".join([segments[4], segments[2], segments[1], segments[3], segments[5], prompt])


def test_figure1_objects_in_context_are_split_into_correct_and_incorrect(sample):
    rows = figure1_rows(sample)
    assert rows[1]["added_is_correct"] and rows[3]["added_is_correct"] and rows[5]["added_is_correct"]
    assert not rows[2]["added_is_correct"] and not rows[4]["added_is_correct"]
    assert rows[4]["correct_objects"] == ["postnasal drip"]
    assert rows[4]["incorrect_objects"] == ["sick feeling", "heartburn"]
    assert rows[5]["correct_objects"] == ["postnasal drip", "nasal stuffiness"]
    assert rows[5]["target"] == "discolored nasal discharge" and "nasal stuffiness" in rows[5]["gold_objects"]
    assert set(rows[0]["candidates"]) >= {"heartburn", "wheeze", "discolored nasal discharge"}
    assert "nasal polyp" not in rows[0]["candidates"]  # the pool is the target's type (symptoms)


def test_knowledge_contexts_keep_only_the_entities(sample):
    by_kind = {kind: figure1_rows(sample, kind)[5]["text"] for kind in cv.CONTEXT_KINDS}
    prompt = " nasal polyp has symptoms such as [MASK] ."
    assert (
        by_kind["knowledge_only"]
        == "heartburn, sick feeling, discolored nasal discharge, postnasal drip, nasal stuffiness." + prompt
    )
    assert (
        by_kind["knowledge_sorted"]
        == "discolored nasal discharge, sick feeling, postnasal drip, heartburn, nasal stuffiness." + prompt
    )
    random_entities = by_kind["knowledge_random"].removesuffix(prompt).rstrip(".").split(", ")
    assert random_entities[0] == "discolored nasal discharge"  # S1 first
    assert sorted(random_entities[1:]) == ["heartburn", "nasal stuffiness", "postnasal drip", "sick feeling"]


def test_knowledge_random_is_seeded_and_keeps_earlier_order_between_steps(sample):
    def orders(seed):
        instance = f"{NASAL_POLYP}|discolored nasal discharge|{NOTE}"
        rows = [r for r in rows_for(sample, "knowledge_random", seed=seed) if r["instance_id"] == instance]
        return [r["text"] for r in rows]

    assert orders(0) == orders(0)
    assert orders(0) != orders(1)
    steps = [text.split(" nasal polyp has")[0].rstrip(".").split(", ") for text in orders(3)[1:]]
    for before, after in zip(steps, steps[1:]):
        assert [e for e in after if e in before] == before  # a new entity is inserted, the others keep their order


def test_negative_target_is_centred_on_the_nearest_incorrect_entity(sample):
    rows = [r for r in rows_for(sample, "real", "negative") if r["triple_id"] == NASAL_POLYP and r["document_id"] == NOTE]
    assert {r["instance_id"] for r in rows} == {f"{NASAL_POLYP}|sick feeling|{NOTE}"}  # sick feeling is nearest, left
    assert rows[1]["added_object"] == "sick feeling" and not rows[1]["added_is_correct"]
    assert rows[0]["target"] == "sick feeling" and "sick feeling" not in rows[3]["incorrect_objects"]
    # growth continues around the new centre: heartburn (left), then the true target (right)
    assert [r["added_object"] for r in rows[2:4]] == ["heartburn", "discolored nasal discharge"]
    assert rows[3]["added_is_correct"] and rows[3]["correct_objects"] == ["discolored nasal discharge"]


def test_growth_order_switches_side_when_one_runs_out():
    assert cv.segmentation.growth_order(10, 7) == [7, 6, 8, 5, 9, 4, 3, 2, 1, 0]
    assert cv.segmentation.growth_order(4, 0) == [0, 1, 2, 3]
    assert cv.segmentation.growth_order(4, 3) == [3, 2, 1, 0]
    assert cv.segmentation.growth_order(1, 0) == [0]


def test_matching_is_case_insensitive_whole_word_longest_first_with_aliases():
    matcher = cv.segmentation.EntityMatcher(
        {
            "nasal discharge": ["nasal discharge"],
            "discolored nasal discharge": ["discolored nasal discharge", "purulent nasal discharge"],
            "pain": ["pain"],
            "chest pain": ["chest pain"],
            "shortness of breath": ["shortness of breath", "dyspnoea"],
        }
    )
    text = "Purulent nasal discharge, Chest  Pain and painful knees; DYSPNOEA.\nShortness of\nbreath, nasal discharge, pain."
    found = [(m.entity, m.surface) for m in matcher.find(text)]
    assert found == [
        ("discolored nasal discharge", "Purulent nasal discharge"),  # alias, longest first
        ("chest pain", "Chest  Pain"),  # case and white space do not matter; "pain" alone is not taken
        ("shortness of breath", "DYSPNOEA"),  # "painful" is not the whole word "pain"
        ("shortness of breath", "Shortness of\nbreath"),
        ("nasal discharge", "nasal discharge"),
        ("pain", "pain"),
    ]


def test_longest_match_wins_over_an_earlier_shorter_overlap():
    matcher = cv.segmentation.EntityMatcher(
        {"sick": ["sick"], "sick feeling": ["sick feeling"], "feeling unwell today": ["feeling unwell today"]}
    )
    assert [m.entity for m in matcher.find("a sick feeling unwell today")] == ["sick", "feeling unwell today"]


# --- counted skips and errors ------------------------------------------------------------------------


def test_skips_are_counted_and_reported(sample):
    stats = cv.instances.BuildStats()
    rows = rows_for(sample, stats=stats)
    assert stats.triples_objects_not_in_corpus == ["mp:tuberculosis-has_symptom"]  # night sweats, weight loss never occur
    assert stats.triples_without_subject_document == ["mp:warfarin-may_treat"]  # pulmonary embolism occurs, warfarin never
    assert stats.pairs_without_subject > 0  # e.g. the asthma symptoms in the nasal-polyp note
    assert not any(r["triple_id"] in ("mp:tuberculosis-has_symptom", "mp:warfarin-may_treat") for r in rows)
    assert stats.rows == len(rows) and stats.instances == len({r["instance_id"] for r in rows})
    summary = stats.summary("real-target")
    assert "1 triple(s) skipped because no object occurs in the corpus (mp:tuberculosis-has_symptom)" in summary
    assert "the document lacks the subject" in summary


def test_documents_without_the_subject_give_no_rows(sample):
    documents = {"no_subject": "Wheeze and shortness of breath at night, chest tightness on exertion."}
    stats = cv.instances.BuildStats()
    rows = list(
        cv.instances.generate_rows(
            sample["triples"], sample["prompts"], sample["pools"], documents, "real", "target", stats=stats
        )
    )
    assert rows == [] and stats.pairs_without_subject >= 3


def write_inputs(root: Path, triples=None, prompts=None, entities=None, documents=None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    triples = triples or [
        {"uuid": "t1", "predicate_id": "has_symptom", "sub_label": "asthma", "obj_labels": ["wheeze"], "obj_types": ["symptom"]}
    ]
    (root / "triples.jsonl").write_text("".join(json.dumps(t) + "\n" for t in triples))
    prompts = prompts or [{"relation": "has_symptom", "template": "[X] has symptoms such as [Y] ."}]
    (root / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in prompts))
    if entities is not None:
        (root / "entities.jsonl").write_text(entities)
    (root / "corpus").mkdir(exist_ok=True)
    for name, text in (documents or {"a.txt": "Asthma with wheeze and fever."}).items():
        (root / "corpus" / name).write_text(text)
    return root


def test_prompt_without_answer_slot_is_an_error(tmp_path):
    root = write_inputs(tmp_path, prompts=[{"relation": "has_symptom", "template": "[X] has symptoms such as fever ."}])
    with pytest.raises(
        ValueError, match=r"prompts.jsonl, line 1: the template of 'has_symptom' must contain \[X\] and exactly one \[Y\]"
    ):
        build("context_variance", tmp_path / "out", data_dir=str(root), configs=["real-target"])


def test_relation_without_prompt_is_an_error(tmp_path):
    root = write_inputs(tmp_path, prompts=[{"relation": "may_treat", "template": "[X] treats [Y] ."}])
    with pytest.raises(ValueError, match="no prompt for relation.s. has_symptom"):
        build("context_variance", tmp_path / "out", data_dir=str(root), configs=["real-target"])


def test_empty_entity_file_is_an_error(tmp_path):
    root = write_inputs(tmp_path, entities="")
    with pytest.raises(ValueError, match="entities.jsonl: the entity file is empty"):
        build("context_variance", tmp_path / "out", data_dir=str(root), configs=["real-target"])


def test_triple_without_objects_is_an_error_naming_file_and_line(tmp_path):
    root = write_inputs(
        tmp_path, triples=[{"uuid": "t1", "predicate_id": "has_symptom", "sub_label": "asthma", "obj_labels": []}]
    )
    with pytest.raises(ValueError, match=r"triples.jsonl, line 1: missing or empty 'obj_labels'"):
        build("context_variance", tmp_path / "out", data_dir=str(root), configs=["real-target"])


def test_nothing_to_build_is_an_error_with_the_counts(tmp_path):
    root = write_inputs(tmp_path, documents={"a.txt": "Fever and cough only."})
    with pytest.raises(
        ValueError, match=r"nothing to build: .*1 triple\(s\) skipped because no object occurs in the corpus \(t1\)"
    ):
        build("context_variance", tmp_path / "out", data_dir=str(root), configs=["real-target"])


def test_missing_input_names_the_path_and_the_parameter(tmp_path):
    root = write_inputs(tmp_path)
    (root / "prompts.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match=r"no prompts input at .*prompts.jsonl.*--set prompts=PATH"):
        build("context_variance", tmp_path / "out", data_dir=str(root), configs=["real-target"])


# --- the Hub folder ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built_sample(tmp_path_factory):
    out = tmp_path_factory.mktemp("cv") / "hub"
    report = build("context_variance", out, configs=["real-target", "real-negative", "knowledge_random-target"])
    return out, report


def test_sample_builds_a_loadable_hub_folder_with_a_card(built_sample):
    from datasets import load_dataset

    out, report = built_sample
    assert report.rows["real-target"]["test"] > 500 and report.rows["real-negative"]["test"] > 100
    ds = load_dataset(str(out), "real-target", split="test")
    assert set(cv.FEATURES) <= set(ds.column_names)
    assert load_dataset(str(out), split="test").num_rows == ds.num_rows  # real-target is the default
    card = (out / "README.md").read_text()
    assert "must be published gated or private" in card and "extra_gated_prompt" in card
    assert "mp:tuberculosis-has_symptom" in card  # the skipped triple is reported in the card
    assert "$" not in card.split("---", 2)[2].replace("$ ", "")  # every placeholder was filled


def test_same_seed_gives_the_same_bytes(built_sample, tmp_path):
    out, _ = built_sample
    again = tmp_path / "again"
    build("context_variance", again, configs=["knowledge_random-target"])
    config = "knowledge_random-target"
    assert data_file(again, config).read_bytes() == data_file(out, config).read_bytes()
    build("context_variance", tmp_path / "seed1", configs=[config], params={"seed": 1})
    assert data_file(tmp_path / "seed1", config).read_bytes() != data_file(out, config).read_bytes()


def test_config_and_split_names_follow_the_hub_rules():
    import re

    names = [c.name for c in cv.ContextVariance.BUILDER_CONFIGS]
    assert len(names) == 8 and "data" not in names and "real-target" in names and "knowledge_random-negative" in names
    assert re.fullmatch(r"^\w+(\.\w+)*$", "test")


def test_empty_corpus_and_duplicate_document_ids_are_errors(tmp_path):
    with pytest.raises(ValueError, match="no documents"):
        cv.inputs.read_corpus(Path(tmp_path))
    (tmp_path / "docs.jsonl").write_text('{"id": "d1", "text": "a"}\n{"id": "d1", "text": "b"}\n')
    with pytest.raises(ValueError, match=r"docs.jsonl, line 2: document id 'd1' occurs twice"):
        cv.inputs.read_corpus(Path(tmp_path))


def test_licence_marker_follows_the_inputs(tmp_path):
    """The shipped sample is open; a user's corpus is credentialed unless the user declares otherwise."""
    import yaml

    from medprobe.building.build import build
    from medprobe.resources import dataset_folder

    def marker(out):
        return yaml.safe_load((out / "README.md").read_text(encoding="utf-8").split("---\n")[1])["medprobe_licence"]

    build("context_variance", tmp_path / "sample", configs=["real-target"])
    assert marker(tmp_path / "sample") == "open"
    user_data = str(dataset_folder("context_variance") / "sample")  # any folder passed as data_dir is "the user's"
    build("context_variance", tmp_path / "user", data_dir=user_data, configs=["real-target"])
    assert marker(tmp_path / "user") == "credentialed"
    build("context_variance", tmp_path / "umls", data_dir=user_data, configs=["real-target"], params={"licence": "umls"})
    assert marker(tmp_path / "umls") == "umls"
    with pytest.raises(ValueError, match="licence must be one of"):
        build("context_variance", tmp_path / "bad", data_dir=user_data, configs=["real-target"], params={"licence": "cc0"})


def test_the_card_states_what_the_configs_built_now_read_and_skipped(sample, tmp_path):
    """The coverage line comes from the statistics of this build; a config kept from an earlier build
    (here built from a user folder with the umls marker) does not lend the card its own."""
    from medprobe.resources import dataset_folder

    user_data = str(dataset_folder("context_variance") / "sample")
    build("context_variance", tmp_path, data_dir=user_data, configs=["real-target"], params={"licence": "umls"})
    card = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert f"Built from a user data folder: {len(sample['triples'])} triples, {len(sample['documents'])} documents" in card
    assert "medprobe_licence: umls" in card
    build("context_variance", tmp_path, data_dir=user_data, configs=["real-negative"], params={"licence": "umls"})
    card = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "The build statistics were not recorded" not in card and "medprobe_licence: umls" in card
    assert "`real-target`" in card and "`real-negative`" in card  # the kept config is still in the card
