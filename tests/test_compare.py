"""`medprobe compare`: runs and profiles paired on identical items, what it refuses, and how it writes.

Two real MiniLM runs of the MedLAMA-format sample (all layers vs --layers 3) check the command end to
end; made-up runs (tests/synthetic_runs.py: outcomes, metrics and intervals as a run writes them)
check the refusals, --intersect, profiles and the outputs without a model.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

import medprobe
import medprobe.comparison.report
from medprobe.cli import main
from medprobe.mcnemar import mcnemar_p
from medprobe.records import load_record_file, read_run_outcomes
from medprobe.records.outcomes import outcomes_path
from medprobe.registry import load, task_entry
from medprobe.stats import holm, item_digest, paired
from synthetic_runs import medlama_ranks, write_medlama_run, write_mst_run, write_profile, write_run


def compare_json(folder: Path) -> dict:
    return json.loads((folder / "compare.json").read_text())


def test_minilm_with_3_layers_is_said_to_rank_by_rounding_and_with_all_layers_is_not(minilm_runs):
    """Why the docs' --layers 3 figures moved between machines (issue 38 §7): MiniLM's first three layers give every
    text nearly the same [CLS] vector, so float rounding, which differs between CPUs' matrix kernels, picks every
    query's top 10 (acc@10 4.72 on one CPU, 11.32 on another, same code); the run records how many queries that was."""
    every, first3 = (load_record_file(path) for path in minilm_runs)
    assert every.timings["queries_ranked_below_float32_resolution"] == 0
    # every query the prober ranked: the 106 items' and their relations' prompt-bias control queries (one template
    # per relation in MedLAMA: one control query each)
    assert first3.subset["items"] == 106
    assert first3.timings["queries_ranked_below_float32_resolution"] == 106 + len(first3.per_group)


def test_two_minilm_runs_of_the_same_data_print_the_difference_with_its_interval(minilm_runs, tmp_path, capsys):
    first, second = minilm_runs
    capsys.readouterr()
    assert main(["compare", str(first), str(second), "--out", str(tmp_path / "cmp")]) == 0
    printed = capsys.readouterr().out
    a, b = load_record_file(first), load_record_file(second)
    difference = b.metrics["acc@10"] - a.metrics["acc@10"]
    found = compare_json(tmp_path / "cmp")["comparisons"][0]
    diff = found["differences"]["acc@10"]
    assert math.isclose(diff["difference"], difference) and diff["low"] <= difference <= diff["high"]
    row = (
        f"| layers3.json - all.json | medlama/hard | acc@10 | {a.subset['items']} | {100 * a.metrics['acc@10']:.2f} "
        f"[{100 * a.intervals['acc@10']['low']:.2f}, {100 * a.intervals['acc@10']['high']:.2f}] | {100 * b.metrics['acc@10']:.2f} "
    )
    assert row in printed
    assert f"| {100 * difference:+.2f} | [{100 * diff['low']:+.2f}, {100 * diff['high']:+.2f}] |" in printed
    assert "What differs: layers not given in all.json, 3 in layers3.json" in printed
    assert "acc@10 per relation" in printed and "p (Holm)" in printed
    assert (tmp_path / "cmp" / "compare.md").read_text().rstrip("\n") in printed


def test_compare_json_numbers_equal_stats_paired_on_the_read_outcomes(minilm_runs, tmp_path):
    first, second = minilm_runs
    assert main(["compare", str(first), str(second), "--out", str(tmp_path), "--resamples", "300", "--seed", "7"]) == 0
    found = compare_json(tmp_path)["comparisons"][0]
    a, b = load_record_file(first), load_record_file(second)
    reference, run = read_run_outcomes(a, first), read_run_outcomes(b, second)
    estimators = load(task_entry("medlama").target).estimators(a.settings)
    expected = paired(run, reference, estimators, resamples=300, seed=7)
    for metric, values in expected.items():
        got = found["differences"][metric]
        assert (got["run"], got["reference"], got["n"]) == (values["a"], values["b"], values["n"])
        for key in ("difference", "low", "high"):
            assert got[key] == values[key], (metric, key)
        if metric.startswith("macro"):  # not a mean of 0/1 item scores: the permutation test
            assert (got["p_value"], got["test"]) == (values["p_value"], "paired permutation"), metric
        elif metric.startswith("acc@"):  # acc@k: each query a hit or not, the exact test of the discordant queries
            hits = [(outcomes.columns["rank"] <= int(metric.split("@")[1])) for outcomes in (run, reference)]
            better, worse = int(np.sum(hits[0] & ~hits[1])), int(np.sum(hits[1] & ~hits[0]))
            assert (got["better"], got["worse"], got["test"]) == (better, worse, "exact McNemar"), metric
            assert got["p_value"] == mcnemar_p(better, worse), metric
    # per relation: the headline on that relation's queries alone, Holm over the relations
    relation = found["groups"][0]["group"]
    ids = [item for item, group in zip(reference.ids, reference.groups) if group == relation]
    alone = paired(run.select(ids), reference.select(ids), {"acc@10": estimators["acc@10"]}, resamples=300, seed=7)["acc@10"]
    assert found["groups"][0]["difference"] == alone["difference"] and found["groups"][0]["test"] == "exact McNemar"
    adjusted = holm({row["group"]: row["p_value"] for row in found["groups"]})
    assert [row["p_holm"] for row in found["groups"]] == list(adjusted.values())


def test_the_report_says_when_and_on_what_data_it_was_made(tmp_path, capsys):
    from medprobe.comparison.report import html_page

    a = write_medlama_run(tmp_path / "a.json", 0.5, seed=1)
    b = write_medlama_run(tmp_path / "b.json", 0.3, seed=2)
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 0
    created = json.loads(a.read_text())["created"][:10]
    digest = json.loads(a.read_text())["data_fingerprint"]["sha256"][:12]
    said = f"Made by medprobe {medprobe.__version__} from 2 runs made {created}, on made-up test, data sha256 {digest}…"
    assert said in (tmp_path / "cmp" / "compare.md").read_text() and said in capsys.readouterr().out
    page = html_page(compare_json(tmp_path / "cmp"), made="2026-11-25 14:03 UTC")
    assert f"Made 2026-11-25 14:03 UTC by medprobe {medprobe.__version__} from 2 runs made {created}, on made-up test" in page


def test_the_same_seed_gives_the_same_bytes(tmp_path):
    write_medlama_run(tmp_path / "a.json", 0.5, seed=1)
    write_medlama_run(tmp_path / "b.json", 0.3, seed=2)
    for out in ("x", "y"):
        assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--out", str(tmp_path / out)]) == 0
    assert (tmp_path / "x" / "compare.json").read_bytes() == (tmp_path / "y" / "compare.json").read_bytes()


# --- what is refused ----------------------------------------------------------------------------------


def refused(capsys, *args: str) -> str:
    capsys.readouterr()
    assert main(["compare", *map(str, args)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1, error  # one line
    return error


def test_different_fingerprints_configs_and_subsets_exit_2_naming_what_differs(tmp_path, capsys):
    a = write_medlama_run(tmp_path / "a.json", 0.5, seed=1, fingerprint="1a2b" + "0" * 60)
    b = write_medlama_run(tmp_path / "b.json", 0.5, seed=2, fingerprint="3c4d" + "0" * 60)
    error = refused(capsys, a, b)
    assert "the runs probed different data: a.json fingerprint 1a2b0000… (hard), b.json 3c4d0000… (hard)" in error
    assert "pass --intersect" in error
    full = write_medlama_run(tmp_path / "full.json", 0.5, seed=2, fingerprint="5e6f" + "0" * 60, config="full")
    assert "a.json fingerprint 1a2b0000… (hard), full.json 5e6f0000… (full)" in refused(capsys, a, full)
    subset = write_medlama_run(
        tmp_path / "sub.json",
        0.5,
        seed=2,
        queries_per_relation=5,
        fingerprint="1a2b" + "0" * 60,
        subset_options={"per_relation": 5},
    )
    error = refused(capsys, a, subset)
    assert (
        "the runs probed different items: a.json 60 queries (ids" in error and "sub.json 15 queries (per_relation 5, ids" in error
    )


def test_different_tasks_splits_and_meaning_settings_are_refused_even_with_intersect(tmp_path, capsys):
    a = write_medlama_run(tmp_path / "a.json", 0.5, seed=1)
    mst = write_mst_run(tmp_path / "mst.json", seeds=1, accuracy=0.6, rng_seed=0)
    assert "the runs ran different tasks: a.json medlama, mst.json mst" in refused(capsys, a, mst, "--intersect")
    validation = write_medlama_run(tmp_path / "v.json", 0.5, seed=1, split="validation")
    assert "different splits: a.json test, v.json validation" in refused(capsys, a, validation, "--intersect")
    relation = write_medlama_run(
        tmp_path / "rel.json", 0.5, seed=1, settings={**json.loads(a.read_text())["settings"], "candidates": "relation"}
    )
    error = refused(capsys, a, relation, "--intersect")
    assert "settings that change what the medlama metrics mean (candidates 'set' in a.json, 'relation' in rel.json)" in error


def test_every_paired_setting_is_an_option_its_task_records():
    from medprobe.registry import registry

    for name, entry in registry().tasks.items():
        assert set(entry.paired_settings) <= {option.dest for option in entry.options}, name
    assert registry().tasks["medlama"].paired_settings == ("candidates", "exclude_head")


def test_an_outcomes_file_that_no_longer_matches_its_sha256_is_refused(tmp_path, capsys):
    a = write_medlama_run(tmp_path / "a.json", 0.5, seed=1)
    b = write_medlama_run(tmp_path / "b.json", 0.4, seed=2)
    text = outcomes_path(b).read_text()
    assert '"rank": null' in text
    outcomes_path(b).write_text(text.replace('"rank": null', '"rank": 1', 1))  # one miss made a hit
    error = refused(capsys, a, b)
    assert f"{outcomes_path(b)} is not the outcomes file {b} was written with (its sha256 differs)" in error


def test_a_record_without_outcomes_is_one_clear_error(tmp_path, capsys):
    a = write_medlama_run(tmp_path / "a.json", 0.5, seed=1)
    old = write_medlama_run(tmp_path / "old.json", 0.5, seed=2)
    data = json.loads(old.read_text())
    data["outcomes"] = None
    old.write_text(json.dumps(data))
    assert "old.json records no per-item outcomes" in refused(capsys, a, old)
    assert f"{tmp_path / 'none.json'} does not exist" in refused(capsys, a, tmp_path / "none.json")
    assert "at least two" in refused(capsys, a)


def test_intersect_pairs_the_common_items_and_says_how_many(tmp_path, capsys):
    full = write_medlama_run(tmp_path / "full.json", 0.5, seed=1, config="full", fingerprint="f" * 64)
    ids, groups = [], []
    reference = read_run_outcomes(load_record_file(full), full)
    keep = [item for item in reference.ids if int(item[-4:]) % 3 == 0]  # a "hard" subset of the same ids
    rng = np.random.default_rng(5)
    ids, groups = keep, [item.rsplit("-", 1)[0] for item in keep]
    hard = write_run(tmp_path / "hard.json", ids, groups, {"rank": rng.integers(1, 11, len(ids)).astype(float)}, config="hard")
    capsys.readouterr()
    error = refused(capsys, full, hard, "--intersect")  # MedLAMA full and hard: each set ranks its own answer space
    assert "the runs ranked among different candidates (the answer space of the run's set" in error
    assert "full.json (full), hard.json (hard)); a difference on their common items measures the data" in error
    assert "--allow-different-candidates" in error
    args = ["compare", str(full), str(hard), "--intersect", "--allow-different-candidates", "--out", str(tmp_path / "cmp")]
    assert main(args) == 0
    printed = capsys.readouterr().out
    found = compare_json(tmp_path / "cmp")["comparisons"][0]
    assert found["items"] == {"compared": len(keep), "other_content": 0, "full.json": 60, "hard.json": len(keep)}
    assert found["intersected"]
    assert (
        f"--intersect: {len(keep)} common queries ({len(keep)} of full.json's 60, {len(keep)} of hard.json's {len(keep)})"
        in printed
    )
    assert "the runs probed different data; an item pairs only where both runs hold its id with the same content" in printed
    assert "compared under --allow-different-candidates: the difference measures the data (which candidates compete)" in printed
    assert "they ranked among different candidates" in printed and found["different_candidates"]
    estimators = load(task_entry("medlama").target).estimators(load_record_file(full).settings)
    run = read_run_outcomes(load_record_file(hard), hard)
    expected = paired(run, reference.select(keep), estimators)["acc@10"]
    assert found["differences"]["acc@10"]["difference"] == expected["difference"]
    assert found["values"]["full.json"]["acc@10"]["interval"] == "recomputed on the compared items"
    assert found["values"]["full.json"]["acc@10"]["n"] == len(keep)


def test_intersect_pairs_an_id_only_where_it_names_the_same_question_in_both_runs(tmp_path, capsys):
    """Measured before: MedLAMA hard against the shipped sample's full config under --intersect paired 91 queries that
    share an id (may_treat-0000: "Metformin might treat [Y]" in one, "tropatepine might treat [Y]" in the other)."""
    ids, groups, ranks = medlama_ranks(20, 0.5, seed=3)
    ours = [item_digest("ours", item) for item in ids]
    theirs = [item_digest("theirs", item) for item in ids]  # the same ids, other questions
    first = write_run(tmp_path / "a.json", ids, groups, {"rank": ranks}, contents=ours, fingerprint="a" * 64)
    second = write_run(tmp_path / "b.json", ids, groups, {"rank": ranks}, contents=theirs, fingerprint="b" * 64)
    capsys.readouterr()
    assert main(["compare", str(first), str(second), "--intersect", "--allow-different-candidates"]) == 2
    err = capsys.readouterr().err
    assert "--intersect cannot pair a.json and b.json: 60 of the 60 ids both hold name other questions in each" in err
    # 45 of the 60 ids ask the same question in both: those pair, the 15 others are left out and counted
    mixed = ours[:45] + theirs[45:]
    third = write_run(tmp_path / "c.json", ids, groups, {"rank": ranks}, contents=mixed, fingerprint="c" * 64)
    args = ["compare", str(first), str(third), "--intersect", "--allow-different-candidates", "--out", str(tmp_path / "cmp")]
    assert main(args) == 0
    printed = capsys.readouterr().out
    found = compare_json(tmp_path / "cmp")["comparisons"][0]
    assert found["items"] == {"compared": 45, "other_content": 15, "a.json": 60, "c.json": 60}
    assert "15 ids are in both runs with other content (another question under the same id): left out" in printed
    # without --intersect, runs of different data are refused before any pairing
    assert main(["compare", str(first), str(third)]) == 2
    assert "probed different data" in capsys.readouterr().err


def test_mst_runs_with_one_seed_and_three_pair_but_three_and_two_do_not(tmp_path, capsys):
    one = write_mst_run(tmp_path / "one.json", seeds=1, accuracy=0.5, rng_seed=0)
    three = write_mst_run(tmp_path / "three.json", seeds=3, accuracy=0.8, rng_seed=1)
    two = write_mst_run(tmp_path / "two.json", seeds=2, accuracy=0.8, rng_seed=2)
    assert main(["compare", str(one), str(three), "--out", str(tmp_path / "cmp")]) == 0
    found = compare_json(tmp_path / "cmp")["comparisons"][0]
    assert math.isclose(
        found["differences"]["accuracy"]["difference"],
        load_record_file(three).metrics["accuracy"] - load_record_file(one).metrics["accuracy"],
    )
    assert [row["group"] for row in found["groups"]] == ["comparison", "sorting"]
    assert "three.json has 3 values per item in 'prediction' (e.g. seeds), two.json 2" in refused(capsys, three, two)


def test_a_group_without_a_value_gets_no_p_value_and_stays_out_of_holm(tmp_path):
    """Context variance: a relation with no UCM step has no share; its difference is not 'significant'."""
    ids = [f"t{i}" for i in range(12)]
    groups = ["r1"] * 8 + ["r2"] * 4
    steps = [1.0] * 8 + [0.0] * 4

    def columns(understand):
        return {
            "understand": understand,
            "confuse": [s - u for s, u in zip(steps, understand)],
            "misunderstand": [0.0] * 12,
            "steps": steps,
            "rank_without_context": [1.0] * 12,
            "rank_with_context": [2.0] * 12,
        }

    options = {"task": "context_variance", "config": "real-target", "settings": {"k": [1], "per_relation": None}}
    a = write_run(tmp_path / "a.json", ids, groups, columns([1.0] * 4 + [0.0] * 8), **options)
    b = write_run(tmp_path / "b.json", ids, groups, columns([0.0] * 12), **options)
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 0
    rows = {row["group"]: row for row in compare_json(tmp_path / "cmp")["comparisons"][0]["groups"]}
    assert rows["r2"]["difference"] is None and rows["r2"]["p_value"] is None and rows["r2"]["p_holm"] is None
    assert rows["r1"]["p_holm"] == rows["r1"]["p_value"]  # a family of one test


# --- profiles -----------------------------------------------------------------------------------------


def profile_runs(hit_share: float, seed: int, only: str | None = None, failed: bool = False) -> dict:
    runs = {
        "medlama-full-contrastive": {
            "benchmark": "medlama",
            "config": "full",
            "prober": "contrastive",
            "writer": lambda p: write_medlama_run(p, hit_share, seed, config="full", fingerprint="f" * 64),
        },
        "medlama-hard-contrastive": {
            "benchmark": "medlama",
            "config": "hard",
            "prober": "contrastive",
            "writer": lambda p: write_medlama_run(p, hit_share, seed + 1),
            "failed": failed,
        },
        "mst-mlm-head": {
            "benchmark": "mst",
            "config": None,
            "prober": "mlm-head",
            "writer": lambda p: write_mst_run(p, 1, hit_share, seed),
        },
        "mst-mlm-head-scratch": {
            "benchmark": "mst",
            "config": None,
            "prober": "mlm-head",
            "floor_of": "mst-mlm-head",
            "writer": lambda p: write_mst_run(p, 1, 0.5, seed),
        },
    }
    if only:
        runs[only] = {
            "benchmark": "medlama",
            "config": "hard",
            "prober": "mask-average",
            "writer": lambda p: write_medlama_run(p, hit_share, seed, prober="mask-average"),
        }
    return runs


def test_profiles_compare_per_benchmark_config_and_prober(tmp_path, capsys):
    first = write_profile(tmp_path / "model-a", profile_runs(0.6, 1))
    second = write_profile(tmp_path / "model-b", profile_runs(0.3, 11, only="medlama-hard-mask-average", failed=True))
    capsys.readouterr()
    assert main(["compare", str(first), str(second), "--out", str(tmp_path / "cmp")]) == 0
    printed = capsys.readouterr().out
    result = compare_json(tmp_path / "cmp")
    assert [found["title"] for found in result["comparisons"]] == ["medlama/full contrastive", "mst/all mlm-head"]
    assert "| model-b - model-a | medlama/full contrastive | acc@10 | 60 |" in printed
    assert "| model-b - model-a | mst/all mlm-head | accuracy | 60 |" in printed
    notes = "\n".join(result["notes"])
    assert "model-a: mst/all mlm-head is the floor of mst-mlm-head, not compared" in notes
    assert "model-b: medlama/hard contrastive failed in the profile, not compared" in notes
    assert "medlama/hard mask-average: in model-b, not in model-a; not compared" in notes
    medlama = result["comparisons"][0]
    a = load_record_file(first / "runs" / "medlama-full-contrastive.json")
    b = load_record_file(second / "runs" / "medlama-full-contrastive.json")
    assert math.isclose(medlama["differences"]["acc@10"]["difference"], b.metrics["acc@10"] - a.metrics["acc@10"])


def test_a_moved_profile_finds_its_runs_in_its_own_folder(tmp_path, capsys):
    first = write_profile(tmp_path / "a", profile_runs(0.6, 1), recorded_root=tmp_path / "gone")
    second = write_profile(tmp_path / "b", profile_runs(0.3, 11))
    moved = tmp_path / "elsewhere"
    shutil.move(str(second), str(moved))
    assert main(["compare", str(first), str(moved / "profile.json")]) == 0
    assert "| elsewhere - a | medlama/full contrastive | acc@10 |" in capsys.readouterr().out
    # a results JSON in runs/ that is not the one the profile recorded is refused
    write_medlama_run(moved / "runs" / "mst-mlm-head.json", 0.9, seed=99)
    assert "is not the run" in refused(capsys, first, moved)
    assert "compare runs with runs, or profiles with profiles" in refused(
        capsys, first, moved / "runs" / "medlama-full-contrastive.json"
    )


def test_profiles_with_a_mismatched_row_exit_2_naming_the_row(tmp_path, capsys):
    first = write_profile(tmp_path / "a", profile_runs(0.6, 1))
    runs = profile_runs(0.3, 11)
    runs["medlama-full-contrastive"]["writer"] = lambda p: write_medlama_run(p, 0.3, 11, config="full", fingerprint="e" * 64)
    second = write_profile(tmp_path / "b", runs)
    assert refused(capsys, first, second).startswith("medprobe: error: medlama/full contrastive: the runs probed different data")


# --- outputs ------------------------------------------------------------------------------------------


def test_outputs_are_written_all_or_nothing(tmp_path, monkeypatch, capsys):
    a = write_medlama_run(tmp_path / "a.json", 0.5, seed=1)
    b = write_medlama_run(tmp_path / "b.json", 0.3, seed=2)
    out = tmp_path / "cmp"
    out.mkdir()
    (out / "compare.json").write_text("before\n")

    def failing(comparison, path, fmt="png"):
        Path(path).write_bytes(b"half a plot")
        raise RuntimeError("the plot failed")

    monkeypatch.setattr(medprobe.comparison.report, "draw_forest", failing)
    with pytest.raises(RuntimeError, match="the plot failed"):
        main(
            [
                *("compare", str(a), str(b), "--out", str(out), "--overwrite"),  # compare.json is not a comparison
                *("--plot", str(tmp_path / "f.png"), "--html", str(tmp_path / "r.html")),
            ]
        )
    assert sorted(p.name for p in out.iterdir()) == ["compare.json"] and (out / "compare.json").read_text() == "before\n"
    assert not (tmp_path / "f.png").exists() and not (tmp_path / "r.html").exists()
    monkeypatch.undo()
    assert "matplotlib cannot write .xyz" in refused(capsys, a, b, "--plot", tmp_path / "f.xyz")
    (tmp_path / "file").write_text("")
    assert f"--out {tmp_path / 'file'} is a file; give a folder" in refused(capsys, a, b, "--out", tmp_path / "file")
    assert not (tmp_path / "f.xyz").exists()


def test_plot_and_html_are_written_with_the_tables(tmp_path, capsys):
    a = write_medlama_run(tmp_path / "a.json", 0.5, seed=1)
    b = write_medlama_run(tmp_path / "b.json", 0.3, seed=2)
    assert main(["compare", str(a), str(b), "--plot", str(tmp_path / "forest.png"), "--html", str(tmp_path / "r.html")]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {tmp_path / 'forest.png'}" in printed and not (tmp_path / "compare.json").exists()
    assert (tmp_path / "forest.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (tmp_path / "r.html").read_text()
    assert '<figure class="chart">' in page and "<script" not in page and "http" not in page.replace("http-equiv", "")
    assert page.count("<table>") == 4  # headline, runs, metrics, per relation


def test_the_documented_compare_commands_parse():
    import re

    from medprobe.cli import build_parser

    root = Path(__file__).resolve().parents[1]
    pages = "\n".join(path.read_text(encoding="utf-8") for path in (root / "README.md", root / "docs" / "compare.md"))
    commands = [
        line.split(" #", 1)[0].split()
        for block in re.findall(r"```bash\n(.*?)```", pages, flags=re.S)
        for line in block.splitlines()
        if line.startswith("medprobe compare ")
    ]
    assert len(commands) >= 2
    for command in commands:
        args = build_parser().parse_args(command[1:])
        assert len(args.inputs) >= 2 and args.func.__name__ == "run_compare_command"


def test_an_item_in_different_groups_in_the_two_runs_is_refused(tmp_path, capsys):
    a = write_run(tmp_path / "a.json", ["q1", "q2"], ["r1", "r2"], {"rank": [1.0, 2.0]})
    b = write_run(tmp_path / "b.json", ["q1", "q2"], ["r1", "r1"], {"rank": [1.0, 2.0]})
    assert "b.json and a.json" not in (error := refused(capsys, a, b))
    assert "a.json and b.json cannot be paired: item 'q2' is in group 'r2' in one run and 'r1' in the other" in error


def test_compare_help_imports_no_numpy():
    import subprocess
    import sys

    script = (
        "import sys\nfrom medprobe.cli import main\ntry:\n    main(['compare', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('numpy', 'medprobe.comparison', 'medprobe.stats') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "RUN_OR_PROFILE" in done.stdout, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_compare_out_refuses_a_users_compare_files_unless_overwrite_and_replaces_its_own(tmp_path, capsys):
    """Measured before: `compare --out D` replaced a user's D/compare.md without a word."""
    first = write_medlama_run(tmp_path / "a.json", 0.5, seed=1)
    second = write_medlama_run(tmp_path / "b.json", 0.6, seed=2)
    out = tmp_path / "D"
    out.mkdir()
    (out / "compare.md").write_text("my notes\n")
    (out / "other.txt").write_text("left alone\n")  # compare writes two names: other files are not its business
    capsys.readouterr()
    assert main(["compare", str(first), str(second), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "holds files it did not write (compare.md)" in err and "--overwrite" in err
    assert (out / "compare.md").read_text() == "my notes\n" and not (out / "compare.json").exists()
    assert main(["compare", str(first), str(second), "--out", str(out), "--overwrite"]) == 0
    assert main(["compare", str(first), str(second), "--out", str(out)]) == 0  # its own files: replaced
    (out / "compare.md").write_text("edited since\n")
    assert main(["compare", str(first), str(second), "--out", str(out)]) == 2
    assert "changed since it wrote them (compare.md)" in capsys.readouterr().err
    assert (out / "other.txt").read_text() == "left alone\n"


def test_runs_of_the_same_data_pair_when_one_named_the_config_and_the_other_took_the_default(tmp_path, capsys):
    """Measured before: `--config facts` against no --config on the same files was refused as "probed different data"."""
    named = write_medlama_run(tmp_path / "named.json", 0.5, seed=1, config="facts", fingerprint="f" * 64)
    default = write_medlama_run(tmp_path / "default.json", 0.6, seed=2, config=None, fingerprint="f" * 64)
    capsys.readouterr()
    assert main(["compare", str(named), str(default)]) == 0
    other = write_medlama_run(tmp_path / "other.json", 0.6, seed=2, config=None, fingerprint="e" * 64)
    assert main(["compare", str(named), str(other)]) == 2  # other files: other data, whatever the config says
    assert "probed different data" in capsys.readouterr().err


def test_compare_and_the_leaderboards_pair_page_give_one_test_one_p(tmp_path, capsys):
    """Issue 38 §3: compare used a 1,000-draw permutation p (Holm floor 3/1,001 over three relations) where the pair
    page used the exact McNemar test, so they flagged different relations. Now both give the exact test's p, named."""
    from medprobe.leaderboard.build import build_leaderboard

    hits = {"upper": {"r0": range(0, 30), "r1": range(0, 20), "r2": range(0, 25)}}
    hits["lower"] = {"r0": range(0, 10), "r1": range(5, 28), "r2": range(0, 25)}
    paths = []
    for name, where in hits.items():
        ids = [f"{relation}-{row:03d}" for relation in ("r0", "r1", "r2") for row in range(60)]
        ranks = [1.0 if int(item[-3:]) in where[item[:2]] else float("nan") for item in ids]
        paths.append(write_run(tmp_path / f"{name}.json", ids, [item[:2] for item in ids], {"rank": ranks}, model=name))
    assert main(["compare", str(paths[1]), str(paths[0]), "--out", str(tmp_path / "cmp")]) == 0  # upper - lower
    printed = capsys.readouterr().out
    compared = {row["group"]: row for row in compare_json(tmp_path / "cmp")["comparisons"][0]["groups"]}
    (board,) = build_leaderboard(paths, tmp_path / "site", print_fn=lambda line: None)["boards"]
    paged = {row["group"]: row for row in board["pairs"][0]["groups"]}
    for relation in ("r0", "r1", "r2"):
        assert compared[relation]["test"] == paged[relation]["test"] == "exact McNemar"
        assert compared[relation]["p_value"] == paged[relation]["p_value"]
        assert compared[relation]["p_holm"] == paged[relation]["p_holm"]
    assert (compared["r0"]["better"], compared["r0"]["worse"]) == (20, 0)
    assert compared["r0"]["p_holm"] == pytest.approx(3 * 2 * 0.5**20) and compared["r0"]["p_holm"] < 1e-3  # no 3/1,001 floor
    assert "exact McNemar (20 vs 0 discordant)" in printed and "| p | test |" in printed


def test_the_facets_are_paired_and_grouped_under_their_names(tmp_path):
    """issue 39 §6: compare pairs each validity facet as it pairs acc@k, and its table shows the facets' rows together
    under their names (a count whole, never in %), after the task's own metrics."""
    ids, groups, ranks = medlama_ranks(20, 0.5, seed=1)
    settings = {**synthetic_settings(), "control_placeholder": "X"}
    paths = []
    for name, control_share in (("a", 0.1), ("b", 0.4)):
        _, _, control = medlama_ranks(20, control_share, seed=2)
        paths.append(
            write_run(tmp_path / f"{name}.json", ids, groups, {"rank": ranks, "control_rank": control}, settings=settings)
        )
    assert main(["compare", *map(str, paths), "--out", str(tmp_path / "cmp")]) == 0
    found = compare_json(tmp_path / "cmp")["comparisons"][0]
    assert {"control_acc@10", "above_bias@10", "answerable_from_template@10"} <= set(found["differences"])
    assert found["facets"]["above_bias@10"] == "prompt bias" and found["scales"]["answerable_from_template@10"] == "count"
    table = (tmp_path / "cmp" / "compare.md").read_text()
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines() if line.startswith("| ")]
    facets = [row[0] for row in rows if row[1].startswith(("acc@", "macro_acc@", "control_", "above_", "answerable"))]
    assert facets == ["task", "", "", "", "prompt bias", "", "", "", "", ""]
    a, b = (load_record_file(path) for path in paths)
    count = b.metrics["answerable_from_template@10"] - a.metrics["answerable_from_template@10"]
    assert f"| answerable_from_template@{10} | {a.metrics['answerable_from_template@10']:,.0f} [" in table
    assert f"| {count:+,.0f} | [" in table  # the difference in items, not in points


def synthetic_settings() -> dict:
    from synthetic_runs import MEDLAMA_SETTINGS

    return dict(MEDLAMA_SETTINGS)
