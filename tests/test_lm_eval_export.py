"""`medprobe export lm-eval`: the YAMLs, utils.py and the errors; with lm-eval installed, its own
TaskManager loads them, and a tiny random GPT-2 gives the same choice log-likelihoods through
lm_eval.simple_evaluate as medprobe's CausalLMProbe(length_normalization="none")."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from medprobe.cli import main
from medprobe.contracts import UserError
from medprobe.export.lm_eval import export_lm_eval
from medprobe.tasks.lm_eval_utils import medlama_results, mst_choices, mst_text
from medprobe.tasks.mst_lm_eval import MST_CONFIGS

REPO_ROOT = Path(__file__).resolve().parents[1]
MEDLAMA_SAMPLE = REPO_ROOT / "medprobe" / "demo_data" / "medlama_sample"
SMALL_MST = {"train_size": 6, "validation_size": 3, "test_size": 6}


@pytest.fixture(scope="module")
def mst_folder(tmp_path_factory) -> Path:
    from medprobe.building.build import build

    out = tmp_path_factory.mktemp("mst") / "mst"
    build("mst", out, params=SMALL_MST)
    return out


def lm_eval_or_skip():
    return pytest.importorskip("lm_eval", reason="lm-eval is not installed (pip install 'medprobe[lm-eval]')")


def leaf_tasks(task_dict: dict) -> dict:
    """{task name: task} of a get_task_dict result (groups hold dicts of their tasks)."""
    leaves = {}
    for key, value in task_dict.items():
        if isinstance(value, dict):
            leaves.update(leaf_tasks(value))
        else:
            leaves[key if isinstance(key, str) else key.group] = value
    return leaves


def test_mst_export_writes_a_task_per_config_a_group_and_utils(mst_folder, tmp_path, capsys):
    out = tmp_path / "tasks"
    assert main(["export", "lm-eval", "mst", "--dataset", str(mst_folder), "--out", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        ["README.md", "utils.py", "_medprobe_mst.yaml", "_medprobe_mst_template_yaml"]
        + [f"medprobe_mst_{c}.yaml" for c in MST_CONFIGS]
    )
    template = (out / "_medprobe_mst_template_yaml").read_text()
    assert f'dataset_path: "{mst_folder.resolve()}"' in template  # absolute: lm_eval runs from any folder
    assert "doc_to_text: !function utils.mst_text" in template and 'target_delimiter: ""' in template
    utils = (out / "utils.py").read_text()
    assert utils.startswith((REPO_ROOT / "medprobe" / "tasks" / "lm_eval_utils.py").read_text())
    assert "def process_docs_sorting(dataset):" in utils and "EXPORTED['medprobe_mst_sorting'] = ('test', '" in utils
    assert 'dataset_name: "sorting"' in (out / "medprobe_mst_sorting.yaml").read_text()
    assert "weight_by_size: false" in (out / "_medprobe_mst.yaml").read_text()
    printed = capsys.readouterr().out
    assert "medprobe_mst" in printed and "comparison 12" in printed  # 6 rows x 2 choices


def test_mst_choices_are_the_rest_of_the_sentence_with_each_choice():
    doc = {"id": "c-1", "text": "0.33 cm is [MASK] than 0.834 mm.", "choices": ["larger", "smaller"], "label": 0}
    assert mst_text(doc) == "0.33 cm is"
    assert mst_choices(doc) == [" larger than 0.834 mm.", " smaller than 0.834 mm."]
    # the space between the slot and a final mark is dropped, as CausalLMProbe does by default
    assert mst_choices({"text": "a and b are [MASK] .", "choices": ["equal"]}) == [" equal."]
    with pytest.raises(ValueError, match="c-2"):
        mst_text({"id": "c-2", "text": "no slot here", "choices": []})


def test_medlama_results_count_any_gold_and_break_ties_by_candidate_order():
    doc = {"answers": ["b", "c"], "candidates": ["a", "b", "c"]}
    assert medlama_results(doc, [(-1.0, False), (-2.0, False), (-3.0, False)]) == {"acc_at_1": 0.0, "acc_at_10": 1.0}
    assert medlama_results(doc, [(-9.0, False), (-9.0, False), (-1.0, False)]) == {"acc_at_1": 1.0, "acc_at_10": 1.0}
    tie = {"answers": ["b"], "candidates": ["a", "b"]}  # equal scores: "a" ranks first
    assert medlama_results(tie, [(-1.0, False), (-1.0, False)])["acc_at_1"] == 0.0
    many = {"answers": ["z"], "candidates": [f"n{i}" for i in range(11)] + ["z"]}
    assert medlama_results(many, [(0.0, False)] * 12)["acc_at_10"] == 0.0  # 12th of 12 ties


def test_bad_dataset_and_out_are_user_errors_that_name_them(mst_folder, tmp_path):
    missing = tmp_path / "no_such_folder"
    with pytest.raises(UserError, match="no_such_folder"):
        export_lm_eval("mst", str(missing), tmp_path / "a")
    with pytest.raises(UserError, match="medlama_sample.*none of the configs"):
        export_lm_eval("mst", str(MEDLAMA_SAMPLE), tmp_path / "b")  # a MedLAMA folder is not MST
    with pytest.raises(UserError, match="mst.*none of the configs"):
        export_lm_eval("medlama", str(mst_folder), tmp_path / "c")
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "data.csv").write_text("x\n")
    with pytest.raises(UserError, match="raw has none of the configs.*it has default"):
        export_lm_eval("mst", str(raw), tmp_path / "d")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="notes.txt"):
        export_lm_eval("mst", str(mst_folder), busy)
    assert (busy / "notes.txt").read_text() == "mine"
    assert main(["export", "lm-eval", "mst", "--dataset", str(missing), "--out", str(tmp_path / "e")]) == 2
    assert not (tmp_path / "e").exists()


def test_a_previous_export_is_replaced_whole(mst_folder, tmp_path):
    out = tmp_path / "tasks"
    export_lm_eval("medlama", str(MEDLAMA_SAMPLE), out)
    assert any(p.name.startswith("medprobe_medlama_hard_") for p in out.iterdir())
    export_lm_eval("mst", str(mst_folder), out)
    assert not any("medlama" in p.name for p in out.iterdir())  # no stale task left for --include_path to find
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging folder or lock left


def test_medlama_export_writes_per_relation_tasks_and_macro_and_micro_groups(tmp_path):
    out = tmp_path / "tasks"
    report = export_lm_eval("medlama", str(MEDLAMA_SAMPLE), out)
    assert report.groups == [
        "medprobe_medlama_full",
        "medprobe_medlama_full_micro",
        "medprobe_medlama_hard",
        "medprobe_medlama_hard_micro",
    ]
    assert "medprobe_medlama_hard_may_treat" in report.tasks
    assert "weight_by_size: true" in (out / "_medprobe_medlama_hard_micro.yaml").read_text()
    assert "def process_docs_hard_may_treat(dataset):" in (out / "utils.py").read_text()
    # requests = rows x the size of their relation's candidate list, summed
    import datasets

    from medprobe.tasks.medlama import relation_answer_spaces

    hard = datasets.load_dataset(str(MEDLAMA_SAMPLE), "hard", split="test")
    spaces = relation_answer_spaces(hard)
    assert report.requests["hard"] == sum(len(spaces[r]) for r in hard["relation"])


def test_exported_yamls_load_through_lm_evals_task_manager(mst_folder, tmp_path):
    lm_eval_or_skip()
    from lm_eval.tasks import TaskManager, get_task_dict

    from medprobe.tasks.medlama import relation_answer_spaces

    mst_out, medlama_out = tmp_path / "mst_tasks", tmp_path / "medlama_tasks"
    export_lm_eval("mst", str(mst_folder), mst_out)
    export_lm_eval("medlama", str(MEDLAMA_SAMPLE), medlama_out)
    manager = TaskManager(include_path=[str(mst_out), str(medlama_out)], include_defaults=False)
    assert {"medprobe_mst", "medprobe_medlama_hard", "medprobe_medlama_full_micro"} <= set(manager.all_groups)
    tasks = leaf_tasks(get_task_dict(["medprobe_mst", "medprobe_medlama_hard"], manager))
    assert {f"medprobe_mst_{c}" for c in MST_CONFIGS} <= set(tasks)
    doc = tasks["medprobe_mst_comparison"].test_docs()[0]
    filled = tasks["medprobe_mst_comparison"].doc_to_text(doc) + tasks["medprobe_mst_comparison"].doc_to_choice(doc)[doc["label"]]
    assert filled == doc["text"].replace("[MASK]", doc["choices"][doc["label"]])
    assert tasks["medprobe_mst_comparison"].test_docs().num_rows == SMALL_MST["test_size"]
    treat = tasks["medprobe_medlama_hard_may_treat"]
    docs = treat.test_docs()
    spaces = relation_answer_spaces(__import__("datasets").load_dataset(str(MEDLAMA_SAMPLE), "hard", split="test"))
    assert set(docs["relation"]) == {"may_treat"} and docs[0]["candidates"] == spaces["may_treat"]
    assert docs[0]["candidates"][treat.doc_to_target(docs[0])] == docs[0]["answers"][0]


@pytest.fixture
def tiny_gpt2_on_disk(tmp_path):
    """(folder, model, tokenizer) of a tiny random GPT-2 saved to disk, for lm-eval's `hf` model."""
    lm_eval_or_skip()
    if importlib.util.find_spec("sqlitedict") is None:
        pytest.skip("lm-eval is installed without its dependencies (sqlitedict)")
    from tiny_models import byte_bpe_tokenizer, tiny_random_gpt2

    tokenizer = byte_bpe_tokenizer()
    model = tiny_random_gpt2(tokenizer, n_positions=256)
    folder = tmp_path / "tiny_gpt2"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, model, tokenizer


@pytest.mark.slow
def test_simple_evaluate_on_a_tiny_gpt2_matches_causal_lm_probe(mst_folder, tmp_path, tiny_gpt2_on_disk):
    """lm-eval's per-choice log-likelihoods on MST rows equal CausalLMProbe(length_normalization="none")'s."""
    import datasets
    import lm_eval
    from lm_eval.tasks import TaskManager

    from medprobe.lm.causal_lm import CausalLMProbe

    model_dir, model, tokenizer = tiny_gpt2_on_disk
    out = tmp_path / "tasks"
    export_lm_eval("mst", str(mst_folder), out)
    limit = 4
    results = lm_eval.simple_evaluate(
        model="hf",
        model_args={"pretrained": str(model_dir)},
        tasks=["medprobe_mst"],
        device="cpu",
        batch_size=4,
        limit=limit,
        log_samples=True,
        task_manager=TaskManager(include_path=str(out), include_defaults=False),
    )
    probe = CausalLMProbe(model, tokenizer, length_normalization="none", progress=False)
    accuracies = []
    for config in MST_CONFIGS:
        rows = datasets.load_dataset(str(mst_folder), config, split="test").select(range(limit))
        ours = probe.score_candidates([t.replace("[MASK]", "[Y]") for t in rows["text"]], rows["choices"])
        samples = sorted(results["samples"][f"medprobe_mst_{config}"], key=lambda s: s["doc_id"])
        assert [s["doc_id"] for s in samples] == list(range(limit))
        for sample, scores in zip(samples, ours):
            theirs = np.array([float(r[0]) for r in sample["filtered_resps"]])
            np.testing.assert_allclose(theirs, scores, atol=1e-3, rtol=1e-4)
            assert int(np.argmax(theirs)) == int(np.argmax(scores))
        accuracy = float(np.mean([int(np.argmax(s)) == label for s, label in zip(ours, rows["label"])]))
        assert results["results"][f"medprobe_mst_{config}"]["acc,none"] == pytest.approx(accuracy)
        accuracies.append(accuracy)
    assert results["results"]["medprobe_mst"]["acc,none"] == pytest.approx(np.mean(accuracies))  # macro over tasks


@pytest.mark.slow
def test_medlama_acc_at_k_through_lm_eval_equals_medprobes_task(tmp_path, tiny_gpt2_on_disk):
    """The exported MedLAMA hard tasks on the demo sample give medprobe's per-relation acc@1/acc@10
    and macro figure (MedLAMATask with --candidates relation and causal-lm --length-normalization none)."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    from medprobe.lm.causal_lm import CausalLMProbe
    from medprobe.tasks.medlama import MedLAMATask

    model_dir, model, tokenizer = tiny_gpt2_on_disk
    out = tmp_path / "tasks"
    export_lm_eval("medlama", str(MEDLAMA_SAMPLE), out)
    results = lm_eval.simple_evaluate(
        model="hf",
        model_args={"pretrained": str(model_dir)},
        tasks=["medprobe_medlama_hard"],
        device="cpu",
        batch_size=16,
        task_manager=TaskManager(include_path=str(out), include_defaults=False),
    )["results"]
    task = MedLAMATask(candidates="relation")
    data = task.load(str(MEDLAMA_SAMPLE), "hard", "test")
    probe = CausalLMProbe(model, tokenizer, length_normalization="none", progress=False)
    scored = task.score(data, task.predict(probe, data))
    for relation, values in scored.per_group.items():
        for k in (1, 10):
            assert results[f"medprobe_medlama_hard_{relation}"][f"acc_at_{k},none"] == pytest.approx(values[f"acc@{k}"]), relation
    for k in (1, 10):
        assert results["medprobe_medlama_hard"][f"acc_at_{k},none"] == pytest.approx(scored.metrics[f"macro_acc@{k}"])


def test_relations_that_would_share_a_task_name_are_refused(tmp_path):
    import json
    import shutil

    sample = tmp_path / "sample"
    shutil.copytree(MEDLAMA_SAMPLE, sample)
    rows = [json.loads(line) for line in (sample / "hard" / "test.jsonl").read_text().splitlines()]
    rows[0]["relation"] = rows[0]["relation"].replace("_", "-")  # may-treat beside may_treat
    (sample / "hard" / "test.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(UserError, match="relations 'may_treat' and 'may-treat'|relations 'may-treat' and 'may_treat'"):
        export_lm_eval("medlama", str(sample), tmp_path / "out")
    assert not (tmp_path / "out").exists()
