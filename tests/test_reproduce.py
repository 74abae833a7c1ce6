"""`medprobe reproduce`: the recipes (every cell names a known prober, task, config and a source), and
a plumbing check of the command on tiny random models through --model-map (never a reproduction)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import medprobe
from medprobe.api import UserError
from medprobe.building.build import config_names
from medprobe.cli import main
from medprobe.registry import TASKS
from medprobe.reproduce.recipe import check_recipe, load_recipe, parse_recipe, recipe_paths
from tiny_bert import save_tiny_bert
from tiny_models import SENTENCES, tiny_random_bert_mlm

RECIPES = sorted(recipe_paths())


def test_the_issue_s_tables_all_have_recipes_and_mst_has_none():
    assert set(RECIPES) >= {
        "medlama-table4",
        "medlama-table5",
        "medlama-expert",
        "disknE-tables2-7",
        "context-variance-tables2-3",
    }
    assert not [name for name in RECIPES if "mst" in name.lower()]  # our MST tables are our own: no paper figures


@pytest.mark.parametrize("name", RECIPES)
def test_every_cell_names_a_known_prober_task_config_and_a_source(name):
    recipe = load_recipe(name)  # checks probers, tasks, options, sources, tolerances against the registry
    configs = set(config_names(recipe.benchmark))
    assert recipe.cells
    for cell in recipe.cells:
        assert TASKS[cell.task].benchmark == recipe.benchmark
        assert cell.config in configs, f"{cell.id}: config {cell.config} is not one of {sorted(configs)}"
        model = recipe.models[cell.model]
        assert model.revision and (model.revision_pinned or "unpinned" in model.note), cell.id
        for figure in cell.figures:
            assert all(figure.source[field] for field in ("paper", "table", "row", "column"))


def test_the_loader_refuses_an_unknown_prober_and_a_figure_without_its_source():
    raw = json.loads(recipe_paths()["medlama-table4"].read_text(encoding="utf-8"))
    raw["cells"][0]["prober"] = "no-such-prober"
    del raw["cells"][1]["figures"][0]["source"]["column"]
    with pytest.raises(UserError, match="unknown prober 'no-such-prober'.*lacks column"):
        check_recipe(parse_recipe(raw))


def figure(recipe: str, cell: str, metric: str) -> tuple[float, float | None]:
    found = next(f for f in load_recipe(recipe).cell(cell).figures if f.metric == metric)
    return found.paper, found.paper_std


def test_the_figures_are_the_papers_own():
    """Spot checks against the papers (../shared/papers), one per table."""
    assert figure("medlama-table5", "contrastive-pubmedbert-full", "acc@10") == (24.31, 1.29)
    assert figure("medlama-table5", "contrastive-sapbert-hard", "acc@1") == (5.15, 0.27)
    assert figure("medlama-table4", "mask-average-biobert", "acc@10") == (3.03, None)
    assert figure("medlama-table4", "x-factr-confidence-bluebert", "acc@1") == (0.74, None)
    assert figure("disknE-tables2-7", "procedures-scibert", "macro_f1") == (62, 3.9)
    assert figure("disknE-tables2-7", "table7-terminological-hyp-only-can", "weighted_f1") == (22, 0.4)
    assert figure("context-variance-tables2-3", "table2-clinicalbert", "macro_understand") == (0.302, None)
    assert figure("context-variance-tables2-3", "table3-bluebert-base-pm-m3-target", "understand") == (0.407, None)
    assert not load_recipe("medlama-expert").cells[0].runnable


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("reproduce")
    model, tokenizer = tiny_random_bert_mlm(max_position_embeddings=256)
    model.save_pretrained(root / "mlm")
    tokenizer.save_pretrained(root / "mlm")
    corpora = root / "release" / "elicit_corpora"
    corpora.mkdir(parents=True)
    for index in range(10):
        (corpora / f"pubmed_sents_no_punkt_10k_{index}").write_text("\n".join(SENTENCES * 2) + "\n", encoding="utf-8")
    return {"mlm": str(root / "mlm"), "encoder": str(save_tiny_bert(root / "encoder")), "release": str(root / "release")}


def reproduce(recipe: str, out: Path, *extra: str) -> int:
    data = f"medlama={medprobe.sample('medlama')}"
    return main(["reproduce", recipe, "--data-dir", data, "--out", str(out), "--device", "cpu", *extra])


def test_tiny_model_map_run_is_a_plumbing_check_of_the_table_not_a_reproduction(tiny, tmp_path, capsys):
    out = tmp_path / "t4"
    cells = ["--cells", "mask-average-bert,mask-average-biobert"]
    assert reproduce("medlama-table4", out, *cells, "--model-map", f"*={tiny['mlm']}") == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["model_mapped"] and report["plumbing_check"] and report["summary"]["reproduced"] == 0
    assert "mask-average-biobert: finished before" in capsys.readouterr().out  # '*' made it the same request: run once
    assert [(r["cell"], r["metric"]) for r in report["rows"]] == [
        ("mask-average-bert", "acc@1"),
        ("mask-average-bert", "acc@10"),
        ("mask-average-biobert", "acc@1"),
        ("mask-average-biobert", "acc@10"),
    ]
    stored = json.loads((out / "cells" / "mask-average-bert.json").read_text(encoding="utf-8"))
    run_json = json.loads(Path(stored["runs"][0]["out"]).read_text(encoding="utf-8"))
    for row in report["rows"]:
        assert row["within_tolerance"] is None and row["reproduced"] is False and row["verdict"].startswith("n/a (model mapped")
        found = row["measured"]
        assert found["low"] <= found["value"] <= found["high"] and found["n"] == 108  # the sample's 108 facts
        assert row["delta"] == pytest.approx(found["value"] - row["paper"])
    assert report["rows"][1]["measured"]["value"] == pytest.approx(100 * run_json["metrics"]["acc@10"])
    assert stored["runs"][0]["data_fingerprint"] == run_json["data_fingerprint"] and stored["runs"][0]["data_fingerprint"]
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "PLUMBING CHECK, NOT A REPRODUCTION" in markdown and "| mask-average-bert | Table 4, Mask average, BERT" in markdown
    assert (out / "report.png").read_bytes()[:4] == b"\x89PNG"

    # resumable: the finished cells keep their files and are not rerun; a changed request runs again
    before = (out / "cells" / "mask-average-bert.json").stat().st_mtime_ns
    assert reproduce("medlama-table4", out, *cells, "--model-map", f"*={tiny['mlm']}") == 0
    assert capsys.readouterr().out.count("finished before (same request), not rerun") == 2
    assert (out / "cells" / "mask-average-bert.json").stat().st_mtime_ns == before
    assert reproduce("medlama-table4", out, "--cells", "mask-average-bert", "--model-map", f"bert={tiny['encoder']}") == 1
    row = json.loads((out / "report.json").read_text(encoding="utf-8"))["rows"][0]  # an encoder has no MLM head
    assert row["status"] == "failed" and row["reason"] and row["measured"] is None


def test_tiny_rewiring_repeat_reports_mean_and_std_over_the_ten_corpora(tiny, tmp_path):
    out = tmp_path / "t5"
    overrides = ["--set", "rewire_steps=1", "--set", "rewire_batch_size=4"]
    args = ["--cells", "contrastive-pubmedbert-hard", "--model-map", f"*={tiny['encoder']}", "--corpus-dir", tiny["release"]]
    assert reproduce("medlama-table5", out, *args, *overrides) == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    stored = json.loads((out / "cells" / "contrastive-pubmedbert-hard.json").read_text(encoding="utf-8"))
    assert [Path(r["repeat_value"]).name for r in stored["runs"]] == [f"pubmed_sents_no_punkt_10k_{i}" for i in range(10)]
    assert stored["overrides"] == {"rewire_steps": 1, "rewire_batch_size": 4}
    for row in report["rows"]:
        assert row["measured"]["runs"] == 10 and row["measured"]["std"] >= 0 and not row["reproduced"]
    assert "options overridden" in report["rows"][0]["verdict"]


def test_unrunnable_cells_and_missing_data_are_said_not_guessed(tmp_path, capsys):
    out = tmp_path / "expert"
    assert reproduce("medlama-expert", out) == 0
    row = json.loads((out / "report.json").read_text(encoding="utf-8"))["rows"][0]
    assert row["status"] == "not runnable" and row["measured"] is None and not row["reproduced"]
    assert main(["reproduce", "disknE-tables2-7", "--out", str(tmp_path / "d")]) == 2
    assert "needs --data-dir disknE=PATH" in capsys.readouterr().err


def test_list_names_every_recipe(capsys):
    assert main(["reproduce", "list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in RECIPES)
