"""What a board may say from its tests (issue 38): every pair tested with Holm over all of them, rank intervals and
letters that never hide a real difference, boards of equal runs that claim no separation in more than 5% of boards,
and detectable differences that the exact McNemar test detects four times in five (checked by simulation)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from medprobe.cli import main
from medprobe.leaderboard.build import build_leaderboard
from medprobe.leaderboard.ranks import letters, rank_intervals
from medprobe.mcnemar import critical_count, detectable_difference, discordant_counts, mcnemar_p
from medprobe.stats import holm, holm_array
from synthetic_runs import write_run

RELATIONS = ("may_treat", "may_prevent")


def hits_run(path: Path, hits: np.ndarray, groups: list[str] | None = None) -> Path:
    """A MedLAMA run whose query i ranks a gold answer 1st when hits[i], else none (default: queries alternate two
    relations)."""
    groups = groups or [RELATIONS[i % 2] for i in range(len(hits))]
    ids = [f"{group}-{i:04d}" for i, group in enumerate(groups)]
    ranks = [1.0 if hit else float("nan") for hit in hits]
    return write_run(path, ids, groups, {"rank": ranks}, model=path.stem)


def chain(models: int, items: int, gain: int, loss: int) -> np.ndarray:
    """models x items hits: each model gets `gain` queries more than the one below it and misses `loss` that it got,
    all different ones, so that neighbours differ by gain vs loss discordant queries and models two apart by twice that."""
    hits = np.zeros((models, items), dtype=bool)
    hits[-1, :100] = True
    fresh, lost = 100, 0
    for model in range(models - 2, -1, -1):
        hits[model] = hits[model + 1]
        hits[model, fresh : fresh + gain] = True
        hits[model, lost : lost + loss] = False
        fresh, lost = fresh + gain, lost + loss
    return hits


def board_of(tmp_path: Path, hits: np.ndarray, groups: list[str] | None = None) -> dict:
    paths = [hits_run(tmp_path / f"m{index}.json", row, groups) for index, row in enumerate(hits)]
    assert main(["leaderboard", *map(str, paths), "--out", str(tmp_path / "site")]) == 0
    (board,) = json.loads((tmp_path / "site" / "leaderboard.json").read_text())["boards"]
    return board


# --- §1: a shared letter never hides a real difference ----------------------------------------------------


def test_two_runs_that_differ_never_share_a_letter_nor_a_rank_on_a_chained_board(tmp_path, capsys):
    """6 models, each 8 queries better and 1 worse than the next: no neighbour differs after Holm (p 0.039 each), so
    adjacent chaining put all six in group 1, although models two apart differ at p = 0.0013."""
    hits = chain(6, 300, gain=8, loss=1)
    board = board_of(tmp_path, hits)
    rows, tests = board["rows"], {(t["upper"], t["lower"]): t for t in board["tests"]}
    for (i, j), test in tests.items():  # every stated number recomputed: counts from the outcomes, p from the counts
        assert (test["better"], test["worse"]) == (
            int(np.sum(hits[i - 1] & ~hits[j - 1])),
            int(np.sum(hits[j - 1] & ~hits[i - 1])),
        )
        assert test["p"] == mcnemar_p(test["better"], test["worse"])
    assert [t["p_holm"] for t in tests.values()] == list(holm({str(k): t["p"] for k, t in tests.items()}).values())
    for pair in board["pairs"]:
        assert pair["mde"] == detectable_difference(pair["better"], pair["worse"], pair["n"])
    assert len(tests) == 15 and [row["run"] for row in rows] == [f"m{i}" for i in range(6)]
    two_apart = tests[(1, 3)]
    assert (two_apart["better"], two_apart["worse"]) == (16, 2) and two_apart["test"] == "exact McNemar"
    assert two_apart["p"] == pytest.approx(0.0013123, rel=1e-4) and two_apart["p_holm"] < 0.05  # Holm over all 15
    assert all(t["p"] == pytest.approx(0.0390625) and not t["separated"] for (i, j), t in tests.items() if j == i + 1)
    for (i, j), test in tests.items():  # the rule, pair by pair
        shared = set(rows[i - 1]["letters"]) & set(rows[j - 1]["letters"])
        assert bool(shared) == (not test["separated"]), (i, j)
    assert [row["letters"] for row in rows] == [["a"], ["a", "b"], ["b", "c"], ["c", "d"], ["d", "e"], ["e"]]
    assert [(row["rank"]["best"], row["rank"]["worst"]) for row in rows] == [(1, 2), (1, 3), (2, 4), (3, 5), (4, 6), (5, 6)]
    assert board["pairs"][0]["p_holm"] == tests[(1, 2)]["p_holm"]  # the pair page's p is the family of all pairs'
    page = (tmp_path / "site" / "index.html").read_text()
    assert "Holm over all 15 pairs" in page and "share a letter only when" in page


def test_rank_intervals_and_letters_by_hand():
    separated = np.zeros((4, 4), dtype=bool)
    separated[0, 2:] = separated[2:, 0] = True  # run 1 beats runs 3 and 4, nothing else differs
    difference = np.arange(4, 0, -1)[:, None] - np.arange(4, 0, -1)[None, :]
    best, worst = rank_intervals(separated & (difference > 0))
    assert (best, worst) == ([1, 1, 2, 2], [2, 4, 4, 4])
    assert letters(separated) == [["a"], ["a", "b"], ["b"], ["b"]]
    assert letters(np.zeros((3, 3), dtype=bool)) == [["a"]] * 3


def test_letters_are_shared_exactly_by_the_pairs_not_separated():
    rng = np.random.default_rng(3)
    for _ in range(300):
        runs = int(rng.integers(2, 12))
        upper = np.triu(rng.random((runs, runs)) < rng.random(), 1)
        separated = upper | upper.T
        found = [set(names) for names in letters(separated)]
        assert all(found)  # every run has a letter
        for i in range(runs):
            for j in range(i + 1, runs):
                assert bool(found[i] & found[j]) == (not separated[i, j])


def test_all_pairs_come_from_one_matrix_product_and_one_vectorised_exact_test():
    rng = np.random.default_rng(4)
    hits = rng.random((7, 500)) < np.linspace(0.3, 0.6, 7)[:, None]
    counts = discordant_counts(hits)
    for i in range(7):
        for j in range(7):
            assert counts[i, j] == int(np.sum(hits[i] & ~hits[j]))
    better, worse = rng.integers(0, 3000, 400), rng.integers(0, 3000, 400)
    together = mcnemar_p(better, worse)
    one_by_one = [mcnemar_p(int(b), int(w)) for b, w in zip(better, worse)]
    assert isinstance(one_by_one[0], float) and together == pytest.approx(one_by_one, rel=1e-12, abs=1e-300)


def test_exact_mcnemar_by_hand():
    assert mcnemar_p(1, 0) == 1.0 and mcnemar_p(0, 0) == 1.0 and mcnemar_p(10, 10) == 1.0
    assert mcnemar_p(7, 2) == pytest.approx(2 * (1 + 9 + 36) / 2**9)  # C(9,0) + C(9,1) + C(9,2) of 512
    assert mcnemar_p(2, 7) == mcnemar_p(7, 2) and mcnemar_p(40, 0) == pytest.approx(2 * 0.5**40)
    assert mcnemar_p(5, 0) == 0.0625 and mcnemar_p(6, 0) == pytest.approx(0.03125)  # 6 discordant: the fewest that can
    assert mcnemar_p(600, 400) == pytest.approx(2.728464e-10, rel=1e-5)  # large counts stay exact in log space
    assert mcnemar_p(7000, 6000) == pytest.approx(float(mcnemar_p(np.array([7000]), np.array([6000]))[0]))


def test_holm_of_many_families_at_once_is_holm_of_each():
    rng = np.random.default_rng(5)
    families = rng.random((50, 7)) ** 3
    for row, adjusted in zip(families, holm_array(families)):
        assert list(adjusted) == list(holm({str(i): p for i, p in enumerate(row)}).values())


def test_boards_of_equal_models_claim_a_separation_in_at_most_5_percent_of_them():
    """1,000 boards of 6 equal models (i.i.d. hits, p 0.4, 300 queries): the share claiming any separation stays within
    0.05 + 3 simulation standard errors, as Holm over all 15 pairs promises. All boards at once."""
    boards, runs, items = 1000, 6, 300
    hits = np.random.default_rng(6).random((boards, runs, items)) < 0.4
    counts = discordant_counts(hits)
    upper = np.triu_indices(runs, 1)
    p = mcnemar_p(counts[:, upper[0], upper[1]], counts[:, upper[1], upper[0]])
    claims = (holm_array(p) < 0.05).any(axis=1).mean()
    assert claims <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / boards), claims


# --- §2: a detectable difference the test detects --------------------------------------------------------


def simulated_power(better: int, worse: int, n: int, draws: int, rng: np.random.Generator) -> float:
    """The share of `draws` pairs whose exact McNemar p < 0.05 when the true difference is the stated detectable one,
    given the pair's number of discordant items (the conditioning the stated value holds under)."""
    m = better + worse
    q = 0.5 + detectable_difference(better, worse, n) * n / (2 * m)
    b = rng.binomial(m, q, size=draws)
    return float(np.mean(mcnemar_p(b, m - b) < 0.05))


@pytest.mark.parametrize(("discordant", "n"), [(6, 100), (9, 300), (40, 500), (311, 15329), (4200, 15329)])
def test_the_stated_detectable_difference_is_detected_four_times_in_five(discordant, n):
    power = simulated_power(discordant // 2, discordant - discordant // 2, n, 8000, np.random.default_rng(discordant))
    assert power == pytest.approx(0.80, abs=0.03)


def test_too_few_discordant_items_detect_nothing_and_say_so():
    assert [critical_count(m) for m in (5, 6, 8, 9, 12)] == [-1, 0, 0, 1, 2]
    assert detectable_difference(3, 2, 1000) is None and detectable_difference(0, 0, 1000) is None
    assert detectable_difference(6, 0, 1000) == pytest.approx(detectable_difference(0, 6, 1000))


def test_a_board_states_detectable_differences_the_exact_test_detects(tmp_path):
    """Every stated value of a board (each adjacent pair and each of its relations) has simulated power 0.80 ± 0.03;
    a relation with fewer than 6 discordant queries states none, with the reason, where it stated a number before."""
    rng = np.random.default_rng(7)
    hits = rng.random((3, 400)) < np.array([[0.6], [0.5], [0.4]])
    hits[:, :8] = [1, 1, 1, 1, 0, 0, 0, 0]  # a small relation where neighbours differ on 2 queries only
    hits[0, 0], hits[1, 4], hits[2, 5] = False, True, True
    groups = ["rare_relation"] * 8 + [RELATIONS[i % 2] for i in range(392)]
    board = board_of(tmp_path, hits, groups)
    assert [row["run"] for row in board["rows"]] == ["m0", "m1", "m2"]
    stated = [board["pairs"][0], *board["pairs"][0]["groups"], board["pairs"][1], *board["pairs"][1]["groups"]]
    checked = 0
    for found in stated:
        if found["better"] + found["worse"] < 6:
            assert found["mde"] is None and "exact McNemar" in found["mde_method"]
            continue
        assert simulated_power(found["better"], found["worse"], found["n"], 8000, rng) == pytest.approx(0.80, abs=0.03)
        checked += 1
    assert checked >= 4 and any(found["mde"] is None for found in stated)
    page = (tmp_path / "site" / "pairs" / f"{board['id']}-1.html").read_text()
    assert "not detectable at n=" in page


def test_the_leaderboard_prints_its_rule_in_one_line(tmp_path):
    lines = []
    paths = [hits_run(tmp_path / f"m{index}.json", row) for index, row in enumerate(chain(3, 200, gain=8, loss=1))]
    data = build_leaderboard(paths, tmp_path / "site", print_fn=lines.append)
    assert data["rule"] in lines and "3 pair(s) tested" not in lines[0]
    assert lines[0].endswith("data: " + data["boards"][0]["data"]["text"]) and "of 3 pair(s) separated" in lines[0]


def test_the_power_table_in_the_docs_is_the_scripts():
    """docs/leaderboard.md's power table is what scripts/leaderboard_power.py writes: every line there, and the lines of
    500 queries recomputed here (each line has its own seed; the larger ones take the script's half minute)."""
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("leaderboard_power", root / "scripts" / "leaderboard_power.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    text = (root / "docs" / "leaderboard.md").read_text(encoding="utf-8")
    written = text.split(script.BEGIN, 1)[1].split(script.END, 1)[0].strip().splitlines()
    assert written[:2] == script.HEADER and len(written) == 2 + len(script.GAPS) * len(script.QUERIES)
    for gap in script.GAPS:
        assert script.row(gap, 500) in written, gap


def test_a_metric_of_other_scores_is_tested_by_permutation_for_every_pair():
    """A macro average is no mean of 0/1 item scores: every pair gets stats.paired's permutation p, named so, with no
    discordant counts, and the same p as that pair's own comparison (one seed, one draw)."""
    from medprobe.leaderboard.pairs import pair_difference, scored
    from medprobe.leaderboard.ranks import all_pairs
    from medprobe.registry import load, task_entry
    from medprobe.stats import Outcomes

    macro = load(task_entry("medlama").target).estimators({"k": [1, 10]})["macro_acc@10"]
    rng = np.random.default_rng(8)
    runs = []
    for share in (0.6, 0.45, 0.3):
        ranks = np.where(rng.random(120) < share, 1.0, np.nan)
        runs.append(
            scored(Outcomes.build([f"q{i}" for i in range(120)], [f"r{i % 3}" for i in range(120)], {"rank": ranks}), macro)
        )
    tests = all_pairs(runs, [0.6, 0.45, 0.3], macro, 200, 0)
    rows = tests.rows()
    assert [row["test"] for row in rows] == ["paired permutation"] * 3 and all(row["better"] is None for row in rows)
    assert rows[0]["p"] == pair_difference(runs[0], runs[1], macro, 200, 0).p_value
    assert [row["p_holm"] for row in rows] == list(holm({str(i): row["p"] for i, row in enumerate(rows)}).values())
