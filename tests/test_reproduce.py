"""`medprobe reproduce`: the recipes (every cell names a known prober, task, config and a source), a
plumbing check of the command on tiny random models through --model-map (never a reproduction), what it
checks before anything runs, how a stored cell is verified and resumed, what its report says, and that
docs/reproducing.md states what the recipes run."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from pathlib import Path

import pytest

import medprobe
import medprobe.run
from medprobe.atomic_folder import out_lock
from medprobe.building.build import config_names
from medprobe.cli import main
from medprobe.contracts import UserError
from medprobe.registry import registry
from medprobe.reproduce.recipe import check_recipe, load_recipe, option_values, parse_recipe, recipe_paths
from medprobe.reproduce.runner import ReproduceOptions
from medprobe.reproduce.runner import reproduce as reproduce_api
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
        assert registry().tasks[cell.task].benchmark == recipe.benchmark
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
        assert row["delta"] is None and row["no_delta"].startswith("n/a (model mapped")  # a plumbing check has no Δ
        assert row["model_as_run"] == f"{tiny['mlm']} (--model-map, for {row['hub']})"
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
        assert row["delta"] is None and row["overrides"] == {"rewire_steps": 1, "rewire_batch_size": 4}
    assert "options overridden: --set rewire_steps=1 --set rewire_batch_size=4" in report["rows"][0]["verdict"]
    # measured before: the notes still said "150 steps" after --set rewire_steps=1, with no word of the override
    (steps,) = [note for note in report["notes"] if note.startswith("Rewiring steps")]
    assert steps.endswith("Not as run here: --set rewire_steps=1 (an override).")
    assert report["overrides"] == {"rewire_steps": 1, "rewire_batch_size": 4}


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


def test_list_says_why_a_cell_cannot_run_and_which_benchmark_has_no_recipe(capsys):
    assert main(["reproduce", "list"]) == 0
    listed = capsys.readouterr().out
    assert "[medlama: 1 cell, not runnable, 2 figures]" in listed and "1 cells" not in listed
    assert "not runnable: needs the paper's 15 sampled queries" in listed
    assert "\nmst                          no recipe: our copy of the MST paper (an excerpt) has no results table" in listed


# --- what reproduce checks, verifies and reports (issue 31) ---------------------------------------

SAMPLE = f"medlama={medprobe.sample('medlama')}"
WHOLE_SET = "Every figure is over the whole set: no --per-relation."


def small_recipe(folder: Path, **cell_changes) -> Path:
    """Table 4's mask-average BERT cell alone, with a note stating an option (per_relation: the whole set)."""
    raw = json.loads(recipe_paths()["medlama-table4"].read_text(encoding="utf-8"))
    (cell,) = [cell for cell in raw["cells"] if cell["id"] == "mask-average-bert"]
    raw.update(id="small", cells=[{**cell, **cell_changes}], notes=[{"text": WHOLE_SET, "options": {"per_relation": None}}])
    path = folder / "small.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


def one_cell(tiny: dict[str, str]) -> list[str]:
    return ["--model-map", f"*={tiny['mlm']}", "--set", "per_relation=2"]  # two queries per relation: fast


@pytest.fixture(scope="module")
def finished(tiny, tmp_path_factory) -> tuple[Path, Path]:
    """(the small recipe, an OUT it finished into); tests copy the OUT before changing it."""
    root = tmp_path_factory.mktemp("finished")
    recipe = small_recipe(root)
    assert reproduce(str(recipe), root / "out", *one_cell(tiny)) == 0
    return recipe, root / "out"


@pytest.fixture
def runs(monkeypatch) -> list[str]:
    """The results JSON of every run the run loop starts, by name."""
    real, started = medprobe.run.run, []

    def counted(request, **kwargs):
        started.append(Path(request.out).name)
        return real(request, **kwargs)

    monkeypatch.setattr(medprobe.run, "run", counted)
    return started


def refused(capsys, args: list[str]) -> str:
    """The one line a refused command prints (exit 2, no traceback)."""
    assert main(args) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and len(captured.err.splitlines()) == 1, captured.err
    return captured.err.rstrip("\n")


def copied(finished: tuple[Path, Path], tmp_path: Path) -> Path:
    return Path(shutil.copytree(finished[1], tmp_path / "out"))


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda cell: cell["runs"][0]["metrics"].update({"acc@10": 0.9}), "acc@10"),
        (lambda cell: cell["measured"]["acc@10"].update({"value": 0.9}), "measured acc@10"),
    ],
    ids=["run-metric", "measured"],
)
def test_a_hand_edited_cell_is_run_again_and_says_so(finished, tiny, tmp_path, capsys, runs, edit, named):
    """Measured before: a cells/*.json with acc@10 set to 0.9 was reused as it stood ("finished before (same
    request), not rerun") and the report showed 90.00 as measured."""
    out = copied(finished, tmp_path)
    edit_json(out / "cells" / "mask-average-bert.json", edit)
    capsys.readouterr()
    assert reproduce(str(finished[0]), out, *one_cell(tiny)) == 0
    said = capsys.readouterr().out.splitlines()
    cause = "its stored result disagrees with " + ("runs/mask-average-bert.json" if named == "acc@10" else "its run files")
    assert f"cell mask-average-bert: {cause} ({named}): run again" in said
    assert runs == ["mask-average-bert.json"]
    run_json = json.loads((out / "runs" / "mask-average-bert.json").read_text(encoding="utf-8"))
    row = json.loads((out / "report.json").read_text(encoding="utf-8"))["rows"][1]
    assert row["metric"] == "acc@10" and row["measured"]["value"] == pytest.approx(100 * run_json["metrics"]["acc@10"])
    assert run_json["metrics"]["acc@10"] != 0.9


def test_a_run_file_that_disagrees_with_its_outcomes_is_run_again(finished, tiny, tmp_path, capsys, runs):
    """Measured before: only the cell file's request key was compared; a results JSON under runs/ edited to
    acc@10 0.9 was never read again, and a swapped one would have stayed behind a cell file that names it."""
    out = copied(finished, tmp_path)
    edit_json(out / "runs" / "mask-average-bert.json", lambda record: record["metrics"].update({"acc@10": 0.9}))
    capsys.readouterr()
    assert reproduce(str(finished[0]), out, *one_cell(tiny)) == 0
    (said,) = [line for line in capsys.readouterr().out.splitlines() if "cannot be reused" in line]
    assert said.startswith("cell mask-average-bert: runs/mask-average-bert.json cannot be reused, run again: ")
    assert "acc@10 is 0.9 in the file" in said and runs == ["mask-average-bert.json"]


def test_a_finished_cell_whose_runs_verify_is_not_run_again(finished, tiny, tmp_path, capsys, runs):
    out = copied(finished, tmp_path)  # another OUT path: the cell file names its runs relative to OUT
    assert reproduce(str(finished[0]), out, *one_cell(tiny)) == 0
    assert "cell mask-average-bert: finished before (same request), not rerun" in capsys.readouterr().out and runs == []
    stored = json.loads((out / "cells" / "mask-average-bert.json").read_text(encoding="utf-8"))
    assert stored["runs"][0]["out"] == str(out / "runs" / "mask-average-bert.json")


def test_a_killed_repeat_cell_resumes_from_its_verified_runs(tiny, tmp_path, monkeypatch):
    """Measured before: a cell's file was written only after all its runs, so a reproduce killed during the
    third of four runs ran all four again."""
    recipe = small_recipe(tmp_path, repeat={"option": "per_relation", "values": [1, 2, 3, 4]})
    out = tmp_path / "out"
    options = ReproduceOptions(
        recipe=str(recipe), out=str(out), model_map={"*": tiny["mlm"]}, data_dirs={"medlama": SAMPLE[8:]}, device="cpu"
    )
    real, started = medprobe.run.run, []

    def killed_at_the_third(request, **kwargs):
        started.append(Path(request.out).name)
        if len(started) == 3:
            raise KeyboardInterrupt  # the kill, while the third run runs
        return real(request, **kwargs)

    monkeypatch.setattr(medprobe.run, "run", killed_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        reproduce_api(options, print_fn=lambda _text: None)
    stored = json.loads((out / "cells" / "mask-average-bert.json").read_text(encoding="utf-8"))
    assert stored["status"] == "partial" and [r["file"] for r in stored["runs"]] == [
        "runs/mask-average-bert-0.json",
        "runs/mask-average-bert-1.json",
    ]
    # the first run's results JSON edited since: it no longer verifies, so it runs again with the two never run
    edit_json(out / "runs" / "mask-average-bert-0.json", lambda record: record["metrics"].update({"acc@10": 0.9}))
    started.clear()
    monkeypatch.setattr(
        medprobe.run, "run", lambda request, **kwargs: started.append(Path(request.out).name) or real(request, **kwargs)
    )
    said: list[str] = []
    report = reproduce_api(options, print_fn=said.append)
    assert started == ["mask-average-bert-0.json", "mask-average-bert-2.json", "mask-average-bert-3.json"]
    assert "cell mask-average-bert: 1 of 4 runs finished before (same request), reused; running the other 3" in said
    assert any(line.startswith("cell mask-average-bert: runs/mask-average-bert-0.json cannot be reused") for line in said)
    assert [row["measured"]["runs"] for row in report["rows"]] == [4, 4]
    started.clear()
    reproduce_api(options, print_fn=lambda _text: None)
    assert started == []


def test_a_second_reproduce_into_the_same_out_stops_at_once_naming_the_first(tmp_path, capsys):
    """Measured before: reproduce took no lock: a second one into the same OUT ran beside the first (exit 0),
    leaving cells and report of one model beside runs of the other."""
    out = tmp_path / "out"
    with out_lock(out, "reproduce"):
        line = refused(capsys, ["reproduce", "medlama-expert", "--data-dir", SAMPLE, "--out", str(out)])
    assert f"another `medprobe reproduce` (pid {os.getpid()}) is writing this folder" in line
    assert not out.exists()


def test_an_unknown_model_map_id_is_refused_before_anything_runs(tiny, tmp_path, capsys, runs):
    """Measured before: `--model-map bret=...` was ignored; the cell ran the paper's model from the Hub (offline
    here: the cell failed, exit 1)."""
    line = refused(
        capsys,
        [
            "reproduce",
            "medlama-table4",
            "--data-dir",
            SAMPLE,
            "--out",
            str(tmp_path / "out"),
            "--model-map",
            f"bret={tiny['mlm']}",
        ],
    )
    names = ", ".join(load_recipe("medlama-table4").models)
    assert line == (
        f"medprobe: error: --model-map bret={tiny['mlm']}: 'bret' is not a model of recipe medlama-table4; its models: "
        f"{names} (or their Hub ids, or '*' for every model)"
    )
    assert runs == [] and not (tmp_path / "out").exists()


@pytest.mark.parametrize("option", ["--data-dir", "--corpus-dir"])
def test_a_missing_data_or_corpus_folder_is_refused_before_anything_runs(option, tiny, tmp_path, capsys, runs):
    """Measured before: reproduce started with a missing --data-dir (the cell failed when loading it, exit 1)
    and with a missing --corpus-dir (found only when a rewiring run opened its corpus)."""
    missing = tmp_path / "nowhere" / "medlama"
    given = (
        ["--data-dir", f"medlama={missing}"] if option == "--data-dir" else ["--data-dir", SAMPLE, "--corpus-dir", str(missing)]
    )
    args = ["reproduce", "medlama-table4", "--cells", "mask-average-bert", "--out", str(tmp_path / "out"), *one_cell(tiny)]
    line = refused(capsys, [*args, *given])
    shown = f"medlama={missing}" if option == "--data-dir" else str(missing)
    assert line == f"medprobe: error: {option} {shown}: {missing} does not exist (the nearest existing folder is {tmp_path})"
    assert runs == [] and not (tmp_path / "out").exists()


def test_a_set_option_no_chosen_cell_has_is_refused(tiny, tmp_path, capsys, runs):
    """Measured before: `--set rewire_step=2` (a typo) was ignored without a word and the cell ran the recipe's options."""
    args = ["reproduce", "medlama-table4", "--cells", "mask-average-bert", "--data-dir", SAMPLE, "--out", str(tmp_path / "out")]
    line = refused(capsys, [*args, "--model-map", f"*={tiny['mlm']}", "--set", "rewire_step=2"])
    assert line.startswith(
        "medprobe: error: --set rewire_step: no chosen cell has the option 'rewire_step', so it would change nothing; "
    )
    assert runs == []


@pytest.fixture
def read_only(tmp_path, monkeypatch) -> Path:
    """A folder in which creating a file or a folder fails as on a read-only mount (EROFS), for root too."""
    folder = tmp_path / "ro"
    folder.mkdir()
    real_open, real_mkdir = os.open, os.mkdir

    def inside(path) -> bool:
        return Path(os.fsdecode(path)).parent == folder

    def refusing_open(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and inside(path):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
        return real_open(path, flags, *args, **kwargs)

    def refusing_mkdir(path, *args, **kwargs):
        if inside(path):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    monkeypatch.setattr(os, "mkdir", refusing_mkdir)
    return folder


def test_an_out_that_is_a_file_is_one_line(tmp_path, capsys):
    """Measured before: `FileExistsError: [Errno 17] File exists` traceback (exit 1)."""
    out = tmp_path / "afile"
    out.write_text("mine", encoding="utf-8")
    line = refused(capsys, ["reproduce", "medlama-expert", "--data-dir", SAMPLE, "--out", str(out)])
    assert line == f"medprobe: error: --out {out} is a file; give a folder"


def test_an_out_under_a_read_only_parent_is_one_line_before_anything_runs(read_only, capsys):
    """Measured before: nothing was checked before the cells ran; the read-only parent showed only when the report
    was written (a traceback for a permission error), saying "the outputs there before are as they were"."""
    out = read_only / "OUT"
    line = refused(capsys, ["reproduce", "medlama-expert", "--data-dir", SAMPLE, "--out", str(out)])
    assert line == f"medprobe: error: --out {out}: cannot write in {read_only} (Read-only file system); choose another path"


def test_an_out_that_is_a_mount_point_is_one_line(tmp_path, monkeypatch, capsys):
    """Measured before: written into without the check every other command makes (exit 0)."""
    out = tmp_path / "mnt"
    out.mkdir()
    real = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda path: Path(path) == out or real(path))
    line = refused(capsys, ["reproduce", "medlama-expert", "--data-dir", SAMPLE, "--out", str(out)])
    assert line.startswith(f"medprobe: error: --out {out} is a mount point") and list(out.iterdir()) == []


def test_files_reproduce_did_not_write_are_refused_unless_overwrite(tmp_path, capsys):
    """Measured before: reproduce wrote its report beside a user's files, and replaced a user's own report.md
    without a word."""
    out = tmp_path / "out"
    (out / "data").mkdir(parents=True)
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    args = ["reproduce", "medlama-expert", "--data-dir", SAMPLE, "--out", str(out)]
    line = refused(capsys, args)
    assert line.startswith(f"medprobe: error: --out {out} holds files `medprobe reproduce` did not write: data/, notes.txt; ")
    assert "pass --overwrite" in line and sorted(p.name for p in out.iterdir()) == ["data", "notes.txt"]
    assert main([*args, "--overwrite"]) == 0
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine" and (out / "report.json").is_file()
    (out / "notes.txt").unlink()
    (out / "data").rmdir()
    assert main(args) == 0  # its own folder: report.*, cells/, runs/
    other = tmp_path / "other"
    other.mkdir()
    (other / "report.md").write_text("my report", encoding="utf-8")  # no reproduce report.json beside it: the user's
    line = refused(capsys, ["reproduce", "medlama-expert", "--data-dir", SAMPLE, "--out", str(other)])
    assert "did not write: report.md; " in line and (other / "report.md").read_text(encoding="utf-8") == "my report"


def test_the_report_says_what_ran_and_gives_no_delta_for_a_plumbing_check(finished, tiny):
    """Measured before: the mapped model and the --set overrides were only in cells/*.json; report.md showed a Δ for
    mapped runs and the notes as the recipe wrote them after an override of an option they state."""
    report = json.loads((finished[1] / "report.json").read_text(encoding="utf-8"))
    markdown = (finished[1] / "report.md").read_text(encoding="utf-8")
    assert report["model_map"] == {"*": tiny["mlm"]} and report["overrides"] == {"per_relation": 2}
    assert report["notes"] == [f"{WHOLE_SET} Not as run here: --set per_relation=2 (an override)."]
    assert (
        f"ran other models than the paper's (--model-map *={tiny['mlm']}) and other options than the recipe's "
        "(--set per_relation=2)" in markdown
    )
    why = "n/a (model mapped: plumbing check; options overridden: --set per_relation=2; subset of the data)"
    for row in report["rows"]:
        assert row["delta"] is None and row["within_tolerance"] is None and row["verdict"] == why
        assert (
            row["overrides"] == {"per_relation": 2}
            and row["model_as_run"] == f"{tiny['mlm']} (--model-map, for bert-base-uncased)"
        )
        assert (
            f"| {row['cell']} | {row['source']['table']}, {row['source']['row']}, {row['source']['column']} | {row['model_as_run']} |"
            in markdown
        )
    table = [line for line in markdown.splitlines() if line.startswith("| mask-average-bert |")]
    assert len(table) == 2 and all(line.split(" | ")[-2] == "—" for line in table)  # the Δ column


def test_report_png_shows_the_title_and_the_banner_whole(finished):
    """Rendered and measured with matplotlib's renderer. Measured before: the title and banner were one line of
    703 px (x from -42 to 661) in a 600 px wide figure, so report.png showed "...PLUMBING CHECK, NOT A REPR"."""
    import matplotlib.image
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    from medprobe.reproduce.report import PLUMBING, figure, plumbing_what

    report = json.loads((finished[1] / "report.json").read_text(encoding="utf-8"))
    fig = figure(report)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    for text in texts:
        box = text.get_window_extent(renderer)
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height, text.get_text()
    shown = {" ".join(t.get_text().split()) for t in texts}
    assert f"{PLUMBING}: {plumbing_what(report)}".replace(" ", "") in {text.replace(" ", "") for text in shown}
    assert report["title"] in shown
    height, width = matplotlib.image.imread(finished[1] / "report.png").shape[:2]
    assert (width, height) == (round(fig.bbox.width), round(fig.bbox.height))  # the measured figure is the one saved
    plt.close(fig)


def test_a_note_that_states_an_option_is_checked_against_the_cells():
    raw = json.loads(recipe_paths()["medlama-table5"].read_text(encoding="utf-8"))
    (note,) = [note for note in raw["notes"] if isinstance(note, dict) and "rewire_steps" in note["options"]]
    note["options"]["rewire_steps"] = 200
    with pytest.raises(UserError, match="a note states rewire_steps=200, cell contrastive-bert-full runs 150"):
        check_recipe(parse_recipe(raw))


# --- docs/reproducing.md states what the recipes run ------------------------------------------------

PAGE_SECTIONS = {"MedLAMA": "medlama-table5", "DisKnE": "disknE-tables2-7", "Context variance": "context-variance-tables2-3"}
CORPUS = re.compile(r"(?:pubmed|wiki)_sents_no_punkt_10k[\w.$]*")
METRIC = re.compile(r"(?<![\w@])(macro_|micro_|weighted_)?(acc@\d+|f1|understand|confuse|misunderstand)(?![\w@])")


def page_sections() -> dict[str, str]:
    text = (Path(__file__).resolve().parents[1] / "docs" / "reproducing.md").read_text(encoding="utf-8")
    sections = {}
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        title, _, body = part.partition("\n")
        for name, recipe in PAGE_SECTIONS.items():
            if title.startswith(name):
                sections[recipe] = body
    assert set(sections) == set(PAGE_SECTIONS.values())
    return sections


def code_of(body: str) -> str:
    """The commands and backticked text of a section, and its table rows: what it states as settings."""
    blocks = re.findall(r"```\w*\n(.*?)```", body, flags=re.S)
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", body, flags=re.S))
    rows = [line for line in body.splitlines() if line.startswith("|")]
    return "\n".join([*blocks, *spans, *rows])


def page_models(body: str) -> set[str]:
    """Model ids the section names: in --model, model=, `for model in`, backticks, and every *cased* token."""
    code = code_of(body)
    found = set(re.findall(r"--model (?!\$)(\S+)", code)) | set(re.findall(r"\bmodel=(\S+)", code))
    for loop in re.findall(r"for model in ([^;]+);", code):
        found |= set(loop.split())
    found |= {span for span in re.findall(r"`([\w.-]+/[\w.-]+)`", body)}
    found |= set(re.findall(r"[\w.-]*(?:/[\w.-]+)?[-_](?:un)?cased\b[\w.-]*", body))
    return found


def recipe_claims(name: str) -> dict:
    recipe = load_recipe(name)
    cells = [cell for cell in recipe.cells if cell.runnable]
    corpora = {v for c in cells if c.repeat and c.repeat["option"] == "rewire_corpus" for v in c.repeat["values"]}
    corpora |= {c.options["rewire_corpus"] for c in cells if "rewire_corpus" in c.options}
    metrics = {(m.group(2), m.group(1) or "") for c in cells for f in c.figures if (m := METRIC.fullmatch(f.metric))}
    return {
        "models": {m.hub for m in recipe.models.values() if m.hub},
        "corpora": corpora,
        "similarity": {option_values(c)["similarity"] for c in cells if c.prober == "contrastive"},
        "metrics": metrics,
    }


def page_claims(body: str) -> dict:
    code = code_of(body)
    corpora = set()
    for token in CORPUS.findall(body):
        corpora |= {token.replace("$i", str(i)) for i in range(10)} if "$i" in token else {token}
    probes = [line for line in re.split(r"(?<!\\)\n", code) if "--prober contrastive" in line]
    similarity = {(re.findall(r"--similarity (\w+)", line) or ["cos"])[0] for line in probes}
    wikipedia = [line for line in code.splitlines() if "Wikipedia" in line]
    return {
        "models": page_models(body),
        "corpora": corpora | ({"Wikipedia"} if wikipedia else set()),
        "similarity": similarity,
        "metrics": {(m.group(2), m.group(1) or "") for m in METRIC.finditer(code)},
    }


@pytest.mark.parametrize("name", sorted(PAGE_SECTIONS.values()))
def test_the_reproducing_page_states_what_the_recipe_runs(name):
    """Corpora, similarity, micro vs macro and cased vs uncased models, read from docs/reproducing.md and from the
    recipe. Measured before: the page's MedLAMA commands printed macro acc@k (the recipe compares micro), told BERT to
    rewire on Wikipedia (the recipe runs the ten PubMed sets) and searched by l2 (the recipe ran cos); its DisKnE and
    context variance commands ran bert-base-uncased, scibert_scivocab_uncased and biobert-v1.1 where the recipes
    run the cased models."""
    page, recipe = page_claims(page_sections()[name]), recipe_claims(name)
    bare = {hub.rsplit("/", 1)[-1] for hub in recipe["models"]}
    assert page["models"] and not {m for m in page["models"] if m not in recipe["models"] | bare}, (
        "models the recipe does not run"
    )
    assert page["corpora"] == recipe["corpora"]
    assert page["similarity"] == recipe["similarity"]
    bases = {base for base, _ in page["metrics"]}  # each averaging the page states of a metric is the recipe's, and back
    assert page["metrics"] == {(base, kind) for base, kind in recipe["metrics"] if base in bases} and (
        {base for base, _ in recipe["metrics"]} <= bases
    )
