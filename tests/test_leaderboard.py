"""`medprobe leaderboard`: ranks and exact McNemar against hand-computed cases, every number from the runs' outcomes,
runs left out with the reason, a board of real runs opened in headless Chromium, and the round trip through a results
repo on a fake Hub giving the numbers of the local files."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest

from headless_chromium import chromium_binary, render
from hub_mock import serving
from medprobe.cli import main
from medprobe.leaderboard.build import build_leaderboard
from medprobe.leaderboard.pairs import pair_difference, scored
from medprobe.mcnemar import EXACT, PERMUTATION
from medprobe.official_data import OFFICIAL_DATA
from medprobe.provenance import dataset_fingerprint, files_digest
from medprobe.records import load_run
from medprobe.registry import load, task_entry
from medprobe.stats import Outcomes, paired
from synthetic_runs import write_medlama_run, write_profile, write_run

SAMPLE = Path(__file__).resolve().parents[1] / "medprobe" / "demo_data" / "medlama_sample"
ESTIMATORS = load(task_entry("medlama").target).estimators({"k": [1, 10]})
needs_chromium = pytest.mark.skipif(
    chromium_binary() is None,
    reason="headless Chromium is not installed (Debian: apt-get install -y chromium; .ci/run installs it where apt is available)",
)


def hits_run(path: Path, hits: list[int], **fields) -> Path:
    """A MedLAMA run of len(hits) queries over two relations: query i ranks a gold answer 1st when hits[i], else none."""
    ids = [f"{'may_treat' if i % 2 else 'may_prevent'}-{i:04d}" for i in range(len(hits))]
    groups = [item.rsplit("-", 1)[0] for item in ids]
    ranks = [1.0 if hit else float("nan") for hit in hits]
    return write_run(path, ids, groups, {"rank": ranks}, model=path.stem, **fields)


def board_json(site: Path) -> dict:
    return json.loads((site / "leaderboard.json").read_text())


# --- the statistics, by hand --------------------------------------------------------------------------


def test_one_discordant_item_is_a_tie_and_a_planted_difference_is_not(tmp_path, capsys):
    base = [1] * 50 + [0] * 50
    one_more = base[:50] + [1] + base[51:]  # one query more: one discordant item
    planted = [1] * 90 + [0] * 10  # 39 more than one_more, all one way
    paths = [
        hits_run(tmp_path / f"{name}.json", hits) for name, hits in (("base", base), ("one_more", one_more), ("planted", planted))
    ]
    assert main(["leaderboard", *map(str, paths), "--out", str(tmp_path / "site")]) == 0
    (board,) = board_json(tmp_path / "site")["boards"]
    ranks = [(row["run"], row["rank"]["best"], row["rank"]["worst"], row["letters"]) for row in board["rows"]]
    assert ranks == [("planted", 1, 1, ["a"]), ("one_more", 2, 3, ["b"]), ("base", 2, 3, ["b"])]
    top, tie = board["pairs"]
    assert (top["better"], top["worse"], tie["better"], tie["worse"]) == (39, 0, 1, 0)
    assert top["p_value"] == pytest.approx(2 * 0.5**39) and tie["p_value"] == 1.0 and top["test"] == tie["test"] == EXACT
    # Holm over the board's 3 pairs: planted vs base (40 vs 0) is the smallest p, times 3; then this one, times 2
    assert top["p_holm"] == pytest.approx(max(3 * 2 * 0.5**40, 2 * 2 * 0.5**39)) and tie["p_holm"] == 1.0
    assert top["separated"] and not tie["separated"]
    assert tie["difference"] == pytest.approx(0.01) and top["difference"] == pytest.approx(0.39)
    for row, path in zip(board["rows"], reversed(paths)):  # each row is its record's number, recomputed when read
        record = load_run(path).record
        assert (row["value"], row["low"], row["high"], row["n"]) == (
            record.metrics["acc@10"],
            record.intervals["acc@10"]["low"],
            record.intervals["acc@10"]["high"],
            100,
        )
    groups = {g["group"]: g for g in tie["groups"]}
    assert groups["may_prevent"]["better"] == 1 and groups["may_treat"]["better"] == 0  # query 50 is a may_prevent one


def test_a_board_shows_the_facets_its_runs_have_and_leaves_a_missing_one_empty(tmp_path):
    """issue 39 §6: above bias beside acc@10 where runs recorded the prompt-bias control, empty (not 0) for a run
    without it; the ranks stay those of the headline."""
    from synthetic_runs import MEDLAMA_SETTINGS

    control = {**MEDLAMA_SETTINGS, "control_placeholder": "X"}
    hits = {"best": [1] * 80 + [0] * 20, "middle": [1] * 60 + [0] * 40, "plain": [1] * 40 + [0] * 60}
    paths = []
    for name, row in hits.items():
        ids = [f"{'may_treat' if i % 2 else 'may_prevent'}-{i:04d}" for i in range(len(row))]
        columns = {"rank": [1.0 if hit else float("nan") for hit in row]}
        if name != "plain":  # the control gets the first 30 queries: above bias = acc@10 - 0.3
            columns["control_rank"] = [1.0 if i < 30 else float("nan") for i in range(len(row))]
        groups = [item.rsplit("-", 1)[0] for item in ids]
        paths.append(
            write_run(tmp_path / f"{name}.json", ids, groups, columns, model=name, settings=control if name != "plain" else None)
        )
    assert main(["leaderboard", *map(str, paths), "--out", str(tmp_path / "site")]) == 0
    (board,) = board_json(tmp_path / "site")["boards"]
    assert [row["run"] for row in board["rows"]] == ["best", "middle", "plain"]  # by acc@10, as without facets
    assert board["facet_columns"] == ["above_bias@10"]  # no run has variants or margins: no such column
    above = [row["facets"]["above_bias@10"] for row in board["rows"]]
    assert [found and round(found["value"], 6) for found in above] == [0.5, 0.3, None]
    assert above[0]["low"] < 0.5 < above[0]["high"]
    page = (tmp_path / "site" / "index.html").read_text()
    assert "<th>above_bias@10</th>" in page or ">above_bias@10<" in page
    plain = page[page.index(">plain</th>") :]
    assert plain[: plain.index("</tr>")].count("<td></td>") == 1  # the missing facet: an empty cell, not 0.00


def test_runs_verified_with_shared_bootstrap_draws_give_the_numbers_of_runs_verified_alone(tmp_path):
    from medprobe.stats import intervals, shared_draws

    outcomes = [random_outcomes(400, share, seed) for seed, share in enumerate((0.3, 0.5))]
    alone = [intervals(found, ESTIMATORS, resamples=300, seed=2) for found in outcomes]
    with shared_draws():
        shared = [intervals(found, ESTIMATORS, resamples=300, seed=2) for found in outcomes]
    assert shared == alone


def random_outcomes(n: int, share: float, seed: int) -> Outcomes:
    rng = np.random.default_rng(seed)
    ranks = np.where(rng.random(n) < share, rng.integers(1, 11, n).astype(float), np.nan)
    return Outcomes.build([f"q{i}" for i in range(n)], [f"r{i % 5}" for i in range(n)], {"rank": ranks})


def test_the_fast_paired_bootstrap_of_hits_agrees_with_resampling_the_items():
    upper, lower = random_outcomes(3000, 0.45, 1), random_outcomes(3000, 0.40, 2)
    fast = pair_difference(
        scored(upper, ESTIMATORS["acc@10"]), scored(lower, ESTIMATORS["acc@10"]), ESTIMATORS["acc@10"], 4000, 0
    )
    slow = paired(upper, lower, {"acc@10": ESTIMATORS["acc@10"]}, resamples=4000, seed=0)["acc@10"]
    assert fast.difference == slow["difference"] and fast.test == EXACT
    assert abs(fast.low - slow["low"]) < 0.004 and abs(fast.high - slow["high"]) < 0.004
    assert fast.p_value == pytest.approx(slow["p_value"], abs=0.01)  # the permutation p estimates the exact one


def test_a_macro_metric_goes_through_stats_paired_as_compare_does():
    upper, lower = random_outcomes(500, 0.45, 3), random_outcomes(500, 0.40, 4)
    macro = ESTIMATORS["macro_acc@10"]
    found = pair_difference(scored(upper, macro), scored(lower, macro), macro, 200, 3)
    expected = paired(upper, lower, {"m": macro}, resamples=200, seed=3)["m"]
    assert (found.difference, found.low, found.high, found.p_value) == (
        expected["difference"],
        expected["low"],
        expected["high"],
        expected["p_value"],
    )
    assert found.test == PERMUTATION and found.better is None and found.mde is not None


# --- what is left out, and what is refused --------------------------------------------------------------


def test_runs_left_out_are_listed_with_the_reason(tmp_path):
    good = [hits_run(tmp_path / f"good{i}.json", [1] * (40 + 5 * i) + [0] * (60 - 5 * i)) for i in range(2)]
    subset = hits_run(tmp_path / "subset.json", [1] * 10 + [0] * 10, subset_options={"per_relation": 10})
    sample = write_medlama_run(tmp_path / "sample.json", 0.5, seed=1)
    record = json.loads(sample.read_text())
    record["data_fingerprint"] = dataset_fingerprint(str(SAMPLE), [("hard", "test")])
    sample.write_text(json.dumps(record))
    edited = hits_run(tmp_path / "edited.json", [1] * 30 + [0] * 70)
    record = json.loads(edited.read_text())
    record["metrics"]["acc@10"] = 0.9
    edited.write_text(json.dumps(record))
    old = hits_run(tmp_path / "old.json", [1] * 30 + [0] * 70, data_fingerprint={})
    (tmp_path / "profile").mkdir()
    failed = {"benchmark": "medlama", "config": "hard", "prober": "contrastive", "failed": True}
    floor = {
        "benchmark": "mst",
        "config": None,
        "prober": "mlm-head",
        "floor_of": "mst",
        "writer": lambda p: hits_run(p, [1, 0] * 10),
    }
    profile = write_profile(tmp_path / "profile", {"failed": failed, "floor": floor})
    sources = [*good, subset, sample, edited, old, profile]
    data = build_leaderboard(sources, tmp_path / "site", print_fn=lambda line: None)
    reasons = {item["run"]: item["reason"] for item in data["excluded"]}
    assert reasons["subset"].startswith("a subset of its benchmark (first 10 queries per relation")
    assert (
        reasons["sample"].startswith("the sample of medlama shipped with medprobe") and "--include-samples" in reasons["sample"]
    )
    assert reasons["edited"].startswith("failed verification: ") and "acc@10 is 0.9 in the file" in reasons["edited"]
    assert reasons["old"].startswith("mismatched data: no data fingerprint recorded")
    listed = [(item["run"], item["where"], item["reason"]) for item in data["excluded"] if item["run"] == "profile"]
    assert listed == [
        ("profile", "medlama/hard contrastive", "the run failed in the profile"),
        ("profile", "mst/all mlm-head", "a floor of mst (random weights)"),
    ]
    (board,) = data["boards"]
    assert [row["run"] for row in board["rows"]] == ["good1", "good0"]
    assert board["excluded"] == [] and {item["board"] for item in data["excluded"]} == {None}  # none was on a board: listed once
    with_samples = build_leaderboard([*good, sample], tmp_path / "site2", include_samples=True, print_fn=lambda line: None)
    kinds = [board["data"]["kind"] for board in with_samples["boards"]]
    assert sorted(kinds) == ["other", "sample"]  # the sample on a board of its own, which says what it is


def test_runs_read_in_worker_processes_give_the_board_of_runs_read_here(tmp_path):
    from medprobe.leaderboard.sources import PARALLEL_FROM

    runs = [hits_run(tmp_path / f"m{i}.json", [1] * (10 + 3 * i) + [0] * (40 - 3 * i)) for i in range(PARALLEL_FROM)]
    here = build_leaderboard(runs, tmp_path / "here", workers=1, print_fn=lambda line: None)
    workers = build_leaderboard(runs, tmp_path / "workers", workers=2, print_fn=lambda line: None)
    assert workers["boards"] == here["boards"] and len(here["boards"][0]["rows"]) == PARALLEL_FROM


def test_bad_outputs_and_sources_are_one_line_errors(tmp_path, capsys):
    run = hits_run(tmp_path / "a.json", [1] * 10 + [0] * 10)
    (tmp_path / "file").write_text("x")
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "notes.txt").write_text("mine")
    (tmp_path / "empty").mkdir()
    cases = {
        ("leaderboard", str(run), "--out", str(tmp_path / "file")): "is a file",
        ("leaderboard", str(run), "--out", str(tmp_path / "theirs")): "holds files a leaderboard did not write (notes.txt)",
        ("leaderboard", str(tmp_path / "nope.json"), "--out", str(tmp_path / "s")): "no such results JSON, profile folder",
        ("leaderboard", str(tmp_path / "empty"), "--out", str(tmp_path / "s")): "holds no run",
        ("leaderboard", "hub:me", "--out", str(tmp_path / "s")): "expected hub:ORG/NAME",
    }
    for args, message in cases.items():
        capsys.readouterr()
        assert main(list(args)) == 2, args
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and message in error, error
    assert (tmp_path / "theirs" / "notes.txt").read_text() == "mine"
    assert main(["leaderboard", str(run), "--out", str(tmp_path / "site")]) == 0
    assert main(["leaderboard", str(run), "--out", str(tmp_path / "site")]) == 0  # its own site is replaced


# --- real runs, in a browser ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_runs(minilm_runs, tmp_path_factory) -> list[Path]:
    """Five real runs over two benchmarks: MiniLM on the shipped MedLAMA sample (all layers, --layers 3: conftest), a
    random-init tiny BERT on it, and mlm-head probes of MiniLM and the tiny BERT on a small MST (plumbing for the tiny
    model: it knows nothing)."""
    from medprobe.building.build import build
    from tiny_bert import save_tiny_bert

    folder = tmp_path_factory.mktemp("board_runs")
    tiny = save_tiny_bert(folder / "tiny-random-bert")
    common = ["probe", "--prober", "contrastive", "--dataset", str(SAMPLE), "--config", "hard", "--no-cache"]
    assert main([*common, "--model", str(tiny), "--out", str(folder / "tiny_random.json")]) == 0
    mst = folder / "mst"
    build("mst", mst, configs=["comparison", "sorting"], params={"train_size": 30, "validation_size": 3, "test_size": 20})
    head = ["probe", "--prober", "mlm-head", "--dataset", str(mst), "--seeds", "1", "--epochs", "1", "--device", "cpu"]
    assert main([*head, "--model", "minilm", "--out", str(folder / "mst_minilm.json")]) == 0
    assert main([*head, "--model", str(tiny), "--out", str(folder / "mst_tiny_random.json")]) == 0
    return [*minilm_runs, folder / "tiny_random.json", folder / "mst_minilm.json", folder / "mst_tiny_random.json"]


NUMBER_WITH_INTERVAL = re.compile(r"\d+\.\d\d \[\d+\.\d\d, \d+\.\d\d\]")


@needs_chromium
def test_a_board_of_real_runs_opens_offline_with_intervals_and_tie_groups(real_runs, tmp_path):
    site = tmp_path / "site"
    started = time.perf_counter()
    data = build_leaderboard(real_runs, site, include_samples=True, print_fn=lambda line: None)
    assert time.perf_counter() - started <= 5.0  # 5 real runs: the bound
    assert {board["benchmark"] for board in data["boards"]} == {"medlama", "mst"}
    assert sum(len(board["rows"]) for board in data["boards"]) == 5 and data["excluded"] == []
    page = render(site / "index.html")
    assert page.errors == [] and page.requests == [(site / "index.html").as_uri()]  # nothing fetched but the page
    assert len(NUMBER_WITH_INTERVAL.findall(page.dom)) >= 5 and page.dom.count('<td class="group">') == 5
    assert "the sample of medlama shipped with medprobe" in page.dom and "<svg" in page.dom
    medlama = next(board for board in data["boards"] if board["benchmark"] == "medlama")
    assert [row["run"] for row in medlama["rows"]][0] == "all"  # MiniLM with every layer first
    model = render(site / "models/minilm.html")  # its profile across both benchmarks, per-group bars
    assert model.errors == [] and model.requests == [(site / "models/minilm.html").as_uri()]
    assert model.dom.count("<svg") >= 2 and "mst · all configs" in model.dom and NUMBER_WITH_INTERVAL.search(model.dom)
    pair = (site / f"pairs/{medlama['id']}-1.html").read_text()
    assert "p (exact McNemar)" in pair and "detectable (80% power)" in pair and "medprobe compare " in pair


# --- the round trip through a results repo ---------------------------------------------------------------

HARD = {name: sha for name, sha in OFFICIAL_DATA["medlama"].files.items() if name.startswith("hard/")}


@pytest.fixture
def hub(monkeypatch, tmp_path):
    with serving(monkeypatch, tmp_path, "hf_LeaderboardTokenNeverPrinted0123456") as fake:
        yield fake


def test_publish_then_compare_and_leaderboard_from_the_hub_give_the_local_numbers(hub, tmp_path, capsys):
    fingerprint = {"sha256": files_digest(HARD), "files": HARD}
    runs = []
    for index, (name, share) in enumerate((("alpha", 0.62), ("beta", 0.55), ("gamma", 0.3))):
        identity = {"name": name, "weights_sha256": str(index) * 64}
        runs.append(
            write_medlama_run(
                tmp_path / "runs" / f"{name}.json",
                share,
                index,
                40,
                model=name,
                model_identity=identity,
                data_fingerprint=fingerprint,
            )
        )
    for run in runs:
        assert main(["publish", "results", str(run), "--results-repo", "me/results"]) == 0
    local = build_leaderboard(runs, tmp_path / "local", print_fn=lambda line: None)
    remote = build_leaderboard(["hub:me/results"], tmp_path / "remote", print_fn=lambda line: None)
    (board,) = local["boards"]
    (other,) = remote["boards"]
    assert board["data"]["kind"] == "official" and board["title"] == "medlama · hard · test · contrastive"

    def numbers(found: dict) -> tuple:
        rows = [{k: v for k, v in row.items() if k != "source"} for row in found["rows"]]
        return rows, [{k: v for k, v in pair.items() if k != "compare"} for pair in found["pairs"]]

    assert numbers(other) == numbers(board)
    assert other["rows"][0]["source"] == "hub:me/results/alpha/medlama/hard/contrastive"
    assert other["pairs"][0]["compare"] == (
        "medprobe compare hub:me/results/beta/medlama/hard/contrastive hub:me/results/alpha/medlama/hard/contrastive"
    )
    assert main(["compare", str(runs[1]), "hub:me/results/alpha/medlama/hard/contrastive", "--out", str(tmp_path / "cmp")]) == 0
    found = json.loads((tmp_path / "cmp" / "compare.json").read_text())["comparisons"][0]["differences"]["acc@10"]
    assert found["difference"] == pytest.approx(board["pairs"][0]["difference"])
