"""`medprobe review export|import` (issue 26 §1) on a made-up ranking run and made-up raters.

The raters' ratings are drawn with a known relation to gold (gold answers rated 5, other
predictions 1-4, with planted exceptions), and every figure of the review record is compared with
the same figure counted here by plain loops from the manifest and the ratings.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from medprobe.cli import main
from medprobe.contracts import UserError
from medprobe.review.agreement import interval_alpha, quadratic_kappa
from medprobe.review.report import import_ratings, review_line, review_path
from medprobe.review.sheets import export, rater_names
from synthetic_runs import write_run

RELATIONS = ("may_treat", "may_prevent")
QUERIES = 8  # per relation
TOP = 4  # predictions kept per query


def write_data(folder: Path) -> dict[str, dict]:
    """A ranking dataset folder (config hard, split test) that `load_dataset` reads: id, relation, query, answers."""
    rows = {}
    for relation in RELATIONS:
        for index in range(QUERIES):
            item = f"{relation}-{index}"
            rows[item] = {
                "id": item,
                "relation": relation,
                "query": f"Drug {index} {relation} [Y] .",
                "answers": [f"gold{index}a", f"gold{index}b"],
            }
    (folder / "hard").mkdir(parents=True)
    (folder / "hard" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows.values()))
    (folder / "README.md").write_text(
        "---\nconfigs:\n- config_name: hard\n  data_files:\n  - split: test\n    path: hard/test.jsonl\n---\nmade-up\n"
    )
    return rows


def predictions_of(item: str, index: int) -> list[str]:
    """Query i's top 4: the gold answer `a` at rank i % 6 + 1 (none when that is over 4), `b` at rank 3 when 4 divides i."""
    names = [f"{item}-wrong{r}" for r in range(1, TOP + 1)]
    if index % 6 < TOP:
        names[index % 6] = f"gold{index}a"
    if index % 4 == 0 and index % 6 != 2:
        names[2] = f"gold{index}b"
    return names


@pytest.fixture()
def run(tmp_path) -> Path:
    data = tmp_path / "data"
    rows = write_data(data)
    ids, groups, ranks, lines = [], [], [], []
    for item, row in rows.items():
        names = predictions_of(item, int(item.rsplit("-", 1)[1]))
        gold_ranks = [rank for rank, name in enumerate(names, start=1) if name in row["answers"]]
        ids.append(item), groups.append(row["relation"]), ranks.append(float(min(gold_ranks)) if gold_ranks else np.nan)
        lines.append(json.dumps({"id": item, "predictions": names}) + "\n")
    path = write_run(tmp_path / "run" / "results.json", ids, groups, {"rank": ranks})
    (tmp_path / "run" / "predictions.jsonl").write_text("".join(lines))
    return path


def do_export(run: Path, out: Path, **options) -> dict[str, str]:
    settings = {"sample": 6, "top_k": 3, "raters": ["ana", "ben"], "seed": 10, "dataset": str(run.parent.parent / "data")}
    return export(run, out, **{**settings, **options})


def sheet(path: Path) -> list[dict]:
    return list(csv.DictReader(path.read_text(encoding="utf-8-sig").splitlines()))


def write_sheet(path: Path, rows: list[dict], ratings: dict[str, int]) -> None:
    header = list(rows[0])
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, header)
        writer.writeheader()
        writer.writerows([{**row, "rating": ratings[row["item"]]} for row in rows])


def rate(manifest: dict) -> dict[str, dict[str, int]]:
    """Ratings with a known relation to gold: gold 5, others drawn from 1-4; planted: one non-gold
    prediction both rate 5 (an erratum candidate), one gold answer both rate 2, one item the raters differ on."""
    rng = np.random.default_rng(11)
    items = manifest["items"]
    ana = {i["item"]: 5 if i["in_gold"] else int(rng.integers(1, 5)) for i in items}
    ben = dict(ana)
    planted_new = next(i["item"] for i in items if not i["in_gold"])
    planted_bad = next(i["item"] for i in items if i["in_gold"])
    ana[planted_new] = ben[planted_new] = 5
    ana[planted_bad] = ben[planted_bad] = 2
    differ = next(i["item"] for i in items if not i["in_gold"] and i["item"] != planted_new)
    ben[differ] = 1 if ana[differ] > 1 else 4
    return {"ana": ana, "ben": ben}


def fill(out: Path, ratings: dict[str, dict[str, int]]) -> list[str]:
    files = []
    for rater, found in ratings.items():
        path = out / f"{rater}-filled.csv"
        write_sheet(path, sheet(out / "raters" / f"{rater}.csv"), found)
        files.append(str(path))
    return files


# --- export ---------------------------------------------------------------------------------------------


def test_export_writes_blinded_sheets_tied_to_the_run_by_hashes(run, tmp_path):
    out = tmp_path / "review"
    do_export(run, out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "label-studio-config.xml",
        "manifest.json",
        "raters/ana.csv",
        "raters/ana.label-studio.json",
        "raters/ben.csv",
        "raters/ben.label-studio.json",
        "scale.md",
    ]
    assert manifest["run"]["sha256"] == hashlib.sha256(run.read_bytes()).hexdigest()
    assert manifest["run"]["predictions"]["sha256"] == hashlib.sha256((run.parent / "predictions.jsonl").read_bytes()).hexdigest()
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest, name
    assert len(manifest["queries"]) == 6 and len(manifest["items"]) == 18
    # each item is one of its query's top 3, and in_gold says whether the data's answers hold it
    data = {
        json.loads(line)["id"]: json.loads(line) for line in (run.parent.parent / "data/hard/test.jsonl").read_text().splitlines()
    }
    queries = {q["query"]: q for q in manifest["queries"]}
    for item in manifest["items"]:
        query = queries[item["query"]]
        names = predictions_of(query["id"], int(query["id"].rsplit("-", 1)[1]))
        assert names[item["rank"] - 1] == item["prediction"]
        assert item["in_gold"] == (item["prediction"] in data[query["id"]]["answers"])
    rows = sheet(out / "raters" / "ana.csv")
    # blinded: no gold column; the export's id on every row
    assert list(rows[0]) == ["export", "item", "rater", "query", "relation", "prediction", "rating"]
    assert len(rows) == 18 and all(row["rating"] == "" and row["rater"] == "ana" for row in rows)
    assert {row["item"] for row in rows} == {row["item"] for row in sheet(out / "raters" / "ben.csv")}
    # shuffled: the sheet's order within a query is not the model's ranking everywhere
    ranks = {i["item"]: i["rank"] for i in manifest["items"]}
    assert [ranks[row["item"]] for row in rows] != sorted((ranks[r["item"]] for r in rows), key=lambda r: r)
    tasks = json.loads((out / "raters" / "ben.label-studio.json").read_text())
    assert len(tasks) == 18 and set(tasks[0]["data"]) == {"export", "item", "rater", "query", "relation", "prediction"}


def test_export_is_seeded_and_show_gold_adds_the_gold_column(run, tmp_path):
    first, again = do_export(run, tmp_path / "a"), do_export(run, tmp_path / "b")
    assert {k: v for k, v in first.items() if k != "manifest.json"} == {k: v for k, v in again.items() if k != "manifest.json"}
    other = do_export(run, tmp_path / "c", seed=8)
    assert other["raters/ana.csv"] != first["raters/ana.csv"]
    shown = do_export(run, tmp_path / "d", show_gold=True)
    rows = sheet(tmp_path / "d" / "raters" / "ana.csv")
    manifest = json.loads(shown["manifest.json"])
    gold = {i["item"]: i["in_gold"] for i in manifest["items"]}
    assert all(row["gold"] == ("yes" if gold[row["item"]] else "no") for row in rows)
    assert "gold" in json.loads(shown["raters/ana.label-studio.json"])[0]["data"]


def test_label_studio_config_has_the_scale_with_its_definitions(run, tmp_path):
    files = do_export(run, tmp_path / "out")
    root = ET.fromstring(files["label-studio-config.xml"])
    choices = root.find("Choices")
    assert choices.get("name") == "rating" and choices.get("toName") == "prediction" and choices.get("required") == "true"
    assert [(c.get("value"), c.get("hint")) for c in choices] == [
        ("5", "perfectly answers the query"),
        ("4", "similar to the gold answer, could somehow be the answer"),
        ("3", "related to the query but not correct"),
        ("2", "same domain or slight relation"),
        ("1", "completely unrelated"),
    ]
    variables = {e.get("value") for e in root.iter() if (e.get("value") or "").startswith("$")}
    assert variables <= {"$query", "$prediction", "$relation"}  # every one is a key of the tasks' data


def test_export_refusals(run, tmp_path):
    with pytest.raises(UserError, match="--sample 99: the run has only 16 queries"):
        do_export(run, tmp_path / "x", sample=99)
    with pytest.raises(UserError, match="--top-k 5: the run kept only 4"):
        do_export(run, tmp_path / "x", top_k=5)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "ana-filled.csv").write_text("work")
    with pytest.raises(UserError, match="not empty"):
        do_export(run, tmp_path / "full")
    # predictions that are not the run's: their gold ranks differ from the outcomes file's
    (run.parent / "predictions.jsonl").write_text(
        "".join(
            json.dumps({"id": f"{r}-{i}", "predictions": ["x", "y", "z", "w"]}) + "\n" for r in RELATIONS for i in range(QUERIES)
        )
    )
    with pytest.raises(UserError, match="not the run's"):
        do_export(run, tmp_path / "y")
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
    assert rater_names("3") == ["rater1", "rater2", "rater3"] and rater_names("ana,ben") == ["ana", "ben"]
    with pytest.raises(UserError, match="twice"):
        rater_names("ana,ana")


# --- import: the figures ---------------------------------------------------------------------------------


def hand_figures(manifest: dict, ratings: dict[str, dict[str, int]], accept: int) -> dict:
    """Every figure of the record by plain loops."""
    raters = list(ratings)
    medians = {i["item"]: sorted(r[i["item"]] for r in ratings.values()) for i in manifest["items"]}
    median = {item: (v[0] + v[1]) / 2 for item, v in medians.items()}  # two raters
    acc = {}
    for key in ("gold", "expert", "gold_or_expert"):
        for k in (1, 3):
            hits = 0
            for query in manifest["queries"]:
                for item in manifest["items"]:
                    if item["query"] == query["query"] and item["rank"] <= k:
                        gold, expert = item["in_gold"], median[item["item"]] >= accept
                        right = {"gold": gold, "expert": expert, "gold_or_expert": gold or expert}[key]
                        if right:
                            hits += 1
                            break
            acc[(key, k)] = hits / len(manifest["queries"])
    counts = {v: [0, 0] for v in (5, 4, 3, 2, 1)}
    for item in manifest["items"]:
        for rater in raters:
            counts[ratings[rater][item["item"]]][0 if item["in_gold"] else 1] += 1
    new = [i["prediction"] for i in manifest["items"] if not i["in_gold"] and median[i["item"]] >= 5]
    bad = [i["prediction"] for i in manifest["items"] if i["in_gold"] and median[i["item"]] <= 3]
    return {"acc": acc, "counts": [counts[v] for v in (5, 4, 3, 2, 1)], "new": new, "bad": bad}


def hand_kappa(a: list[int], b: list[int]) -> float:
    n = len(a)
    observed = sum((x - y) ** 2 for x, y in zip(a, b)) / n
    expected = sum((x - y) ** 2 for x in a for y in b) / n**2  # = sum over the marginals' product
    return 1 - observed / expected


def test_import_figures_equal_hand_computed(run, tmp_path):
    out = tmp_path / "review"
    do_export(run, out)
    manifest = json.loads((out / "manifest.json").read_text())
    ratings = rate(manifest)
    record = import_ratings(out, fill(out, ratings), resamples=200, seed=1)
    assert json.loads((out / "review.json").read_text()) == json.loads(json.dumps(record))
    assert (out / "review.md").read_text().startswith("# Expert review") and (out / "review.heatmap.svg").read_text().startswith(
        "<svg"
    )
    hand = hand_figures(manifest, ratings, accept=5)
    for (key, k), value in hand["acc"].items():
        found = record["acc"][key][f"acc@{k}"]
        assert found["value"] == pytest.approx(value), (key, k)
        assert found["n"] == 6 and found["low"] <= found["value"] <= found["high"]
    # the planted non-gold 5 answers a query the gold misses in its top 3: gold or expert gains it
    assert hand["acc"][("gold", 3)] == 0.5 and hand["acc"][("gold_or_expert", 3)] == pytest.approx(4 / 6)
    assert record["confusion"]["counts"] == hand["counts"] and record["confusion"]["rows"] == [5, 4, 3, 2, 1]
    assert [e["prediction"] for e in record["erratum"]["rated_5_not_in_gold"]] == hand["new"] and len(hand["new"]) == 1
    assert [e["prediction"] for e in record["erratum"]["gold_rated_at_most_3"]] == hand["bad"] and len(hand["bad"]) == 1
    items = [i["item"] for i in manifest["items"]]
    kappa = hand_kappa([ratings["ana"][i] for i in items], [ratings["ben"][i] for i in items])
    found = record["agreement"]
    assert found["coefficient"] == "quadratic-weighted Cohen's kappa" and found["value"] == pytest.approx(kappa)
    assert found["n"] == 18 and found["low"] <= found["value"] <= found["high"]
    # a lower acceptance bar accepts the 4s too: expert acc can only grow
    lower = import_ratings(out, fill(out, ratings), accept=4, out=tmp_path / "r4.json", resamples=50)
    assert lower["acc"]["expert"]["acc@3"]["value"] >= record["acc"]["expert"]["acc@3"]["value"]


def test_kappa_and_alpha_on_hand_worked_examples():
    # kappa: observed 1/80, expected 23/80 (weights (i-j)^2/16): 1 - 1/23
    kappa = quadratic_kappa(np.array([[[1, 1], [2, 2], [3, 3], [4, 5], [5, 5]]], dtype=float))
    assert kappa[0] == pytest.approx(22 / 23)
    # alpha (interval): D_o = (4/2 + 4/2) / 6 = 2/3; D_e = 2*6*18 / (6*5) = 7.2; 1 - (2/3)/7.2 = 49/54
    alpha = interval_alpha(np.array([[[1, 1, 2], [4, 5, 5]]], dtype=float))
    assert alpha[0] == pytest.approx(49 / 54)
    assert np.isnan(quadratic_kappa(np.full((1, 3, 2), 4.0)))[0]  # one value throughout: undefined, not 1 or 0


def test_three_raters_give_alpha(run, tmp_path):
    out = tmp_path / "review"
    do_export(run, out, raters=["a", "b", "c"])
    manifest = json.loads((out / "manifest.json").read_text())
    base = rate(manifest)["ana"]
    ratings = {"a": base, "b": base, "c": {k: max(1, v - 1) for k, v in base.items()}}
    record = import_ratings(out, fill(out, ratings), resamples=50)
    items = [i["item"] for i in manifest["items"]]
    matrix = np.array([[ratings[r][i] for r in "abc"] for i in items], dtype=float)
    assert record["agreement"]["coefficient"].startswith("Krippendorff's alpha")
    assert record["agreement"]["value"] == pytest.approx(interval_alpha(matrix[None])[0])


def test_label_studio_export_gives_the_same_record_as_the_sheets(run, tmp_path):
    """Label Studio's JSON export (tasks with data and annotations[].result[].value.choices) of the exported tasks."""
    out = tmp_path / "review"
    do_export(run, out)
    manifest = json.loads((out / "manifest.json").read_text())
    ratings = rate(manifest)
    tasks = json.loads((out / "raters" / "ben.label-studio.json").read_text())
    for number, task in enumerate(tasks, start=1):
        task["id"] = number
        value = {"choices": [str(ratings["ben"][task["data"]["item"]])]}
        task["annotations"] = [
            {
                "id": number,
                "completed_by": 1,
                "was_cancelled": False,
                "result": [{"from_name": "rating", "to_name": "prediction", "type": "choices", "value": value}],
            },
            {"id": 1000 + number, "was_cancelled": True, "result": []},  # skipped: cancelled
        ]
    export_json = tmp_path / "project-1-at-2025.json"
    export_json.write_text(json.dumps(tasks))
    sheets = fill(out, ratings)
    from_sheets = import_ratings(out, sheets, out=tmp_path / "a.json", resamples=50)
    mixed = import_ratings(out, [sheets[0], str(export_json)], out=tmp_path / "b.json", resamples=50)
    assert mixed["acc"] == from_sheets["acc"] and mixed["agreement"] == from_sheets["agreement"]
    # a Rating tag's value.rating is read too
    for task in tasks:
        task["annotations"][0]["result"] = [
            {"from_name": "stars", "type": "rating", "value": {"rating": ratings["ben"][task["data"]["item"]]}}
        ]
    export_json.write_text(json.dumps(tasks))
    assert import_ratings(out, [sheets[0], str(export_json)], out=tmp_path / "c.json", resamples=50)["acc"] == from_sheets["acc"]


# --- import: bad ratings -----------------------------------------------------------------------------------


def spoil(kind: str, rows: list[dict]) -> tuple[list[dict], str]:
    """A filled sheet made bad one way, and what the error must say (row numbers as a spreadsheet shows them)."""
    rows = [dict(row) for row in rows]
    if kind == "duplicate":
        rows.append(dict(rows[0]))
        return rows, f"row {len(rows) + 1}: item {rows[0]['item']} rated a second time by ana (first at"
    if kind == "missing":
        return rows[:-1], f"rater ana has no rating for 1 item(s), e.g. {rows[-1]['item']}"
    if kind == "value6":
        rows[4]["rating"] = "6"
        return rows, "row 6 (item " + rows[4]["item"] + "): rating '6' is not on the 1-5 scale"
    if kind == "unknown":
        rows[2]["item"] = "Q9-9"
        return rows, "row 4: item 'Q9-9' is not in the export's manifest"
    if kind == "empty":
        rows[1]["rating"] = ""
        return rows, "row 3 (item " + rows[1]["item"] + "): no rating"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["duplicate", "missing", "value6", "unknown", "empty", "header"])
def test_a_bad_ratings_file_is_one_error_naming_file_and_row_and_nothing_is_written(run, tmp_path, kind, capsys):
    out = tmp_path / "review"
    do_export(run, out)
    manifest = json.loads((out / "manifest.json").read_text())
    ratings = rate(manifest)
    good = fill(out, ratings)
    bad = out / "ana-filled.csv"
    if kind == "header":
        text = bad.read_text().replace("prediction,rating", "prediction,score", 1)
        bad.write_text(text)
        expected = "row 1: the header is"
    else:
        rows, expected = spoil(kind, sheet(bad))
        with open(bad, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    before = sorted(p.name for p in out.iterdir())
    assert main(["review", "import", str(out), *good, "--resamples", "20"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(bad) in err and expected in err, err
    assert sorted(p.name for p in out.iterdir()) == before  # nothing written, no temporary left


def test_label_studio_errors_name_the_task(run, tmp_path):
    out = tmp_path / "review"
    do_export(run, out)
    tasks = json.loads((out / "raters" / "ana.label-studio.json").read_text())
    for task in tasks:
        task["annotations"] = [{"result": [{"from_name": "rating", "value": {"choices": ["3"]}}]}]
    tasks[2]["annotations"] *= 2
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks))
    with pytest.raises(UserError, match=rf"{path}, task 3 \(item .*\): 2 annotations"):
        import_ratings(out, [str(path)], resamples=10)


# --- the CLI, and compare / publish showing a review beside a run ------------------------------------------


def test_cli_round_trip_and_the_review_beside_a_run_is_shown_by_compare(run, tmp_path, capsys):
    out = tmp_path / "review"
    data = str(run.parent.parent / "data")
    args = ["review", "export", str(run), "--sample", "5", "--top-k", "2", "--raters", "2", "--out", str(out), "--dataset", data]
    assert main(args) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    ratings = {r: {i["item"]: 5 if i["in_gold"] else 2 for i in manifest["items"]} for r in ("rater1", "rater2")}
    files = fill(out, ratings)
    beside = review_path(run)
    assert beside == run.parent / "results.review.json"
    assert main(["review", "import", str(out), *files, "--out", str(beside), "--resamples", "20"]) == 0
    printed = capsys.readouterr().out
    assert "expert review (5 queries, 2 rater(s), accept >= 5)" in printed
    line = review_line(run)
    assert line.startswith("expert review") and "acc@2" in line  # gold == expert here: the same figure thrice
    other = write_run(tmp_path / "other" / "results.json", *ids_groups_ranks(run))
    assert main(["compare", str(run), str(other), "--out", str(tmp_path / "cmp"), "--resamples", "20"]) == 0
    assert "expert review (5 queries" in (tmp_path / "cmp" / "compare.md").read_text()
    run.write_text(run.read_text().replace('"seed": null', '"seed": 1'))  # the run changed since the review
    assert "reviews another version" in review_line(run)


def ids_groups_ranks(run: Path) -> tuple[list, list, dict]:
    lines = [json.loads(line) for line in (run.parent / "results.outcomes.jsonl").read_text().splitlines()]
    return (
        [r["id"] for r in lines],
        [r["group"] for r in lines],
        {"rank": [np.nan if r["rank"] is None else r["rank"] for r in lines]},
    )


def test_publish_card_block_gets_the_review_line(run, tmp_path):
    from medprobe.hub.publish_results import with_review

    assert with_review("block", str(run)) == "block"
    review_path(run).write_text(json.dumps({"format": "medprobe-review-record/1", "run": {"sha256": "0" * 64}}))
    assert "reviews another version" in with_review("block", str(run))


# --- sheets carry their export's id (issue 31 §4) ----------------------------------------------------------


def label_studio_export(out: Path, rater: str, ratings: dict[str, int], path: Path) -> str:
    """Label Studio's JSON export of a rater's exported tasks, each annotated with its rating."""
    tasks = json.loads((out / "raters" / f"{rater}.label-studio.json").read_text())
    for number, task in enumerate(tasks, start=1):
        value = {"choices": [str(ratings[task["data"]["item"]])]}
        task["id"] = number
        task["annotations"] = [{"id": number, "result": [{"from_name": "rating", "type": "choices", "value": value}]}]
    path.write_text(json.dumps(tasks))
    return str(path)


@pytest.fixture()
def two_exports(run, tmp_path) -> tuple[Path, Path]:
    """Two exports of one run with the same item ids (Q1-1 ... Q6-3) but other queries (another seed)."""
    first, second = tmp_path / "first", tmp_path / "second"
    do_export(run, first, seed=10)
    do_export(run, second, seed=3)
    a, b = (json.loads((out / "manifest.json").read_text()) for out in (first, second))
    assert [i["item"] for i in a["items"]] == [i["item"] for i in b["items"]]
    assert [q["id"] for q in a["queries"]] != [q["id"] for q in b["queries"]]
    return first, second


def test_every_sheet_carries_the_export_id_of_its_manifest(run, tmp_path, two_exports):
    first, second = two_exports
    ids = [json.loads((out / "manifest.json").read_text())["export_id"] for out in two_exports]
    assert ids[0] != ids[1]  # other queries, another export
    for out, export_id in zip(two_exports, ids):
        for rater in ("ana", "ben"):
            rows = sheet(out / "raters" / f"{rater}.csv")
            assert list(rows[0])[0] == "export" and {row["export"] for row in rows} == {export_id}
            tasks = json.loads((out / "raters" / f"{rater}.label-studio.json").read_text())
            assert {task["data"]["export"] for task in tasks} == {export_id}
    with pytest.raises(ValueError):
        float(ids[0])  # a spreadsheet keeps it as text (a hex digest alone can read as 1.2E+50)
    # the id is what the sheets ask: the same export again gets the same id and the same sheets
    again = do_export(run, tmp_path / "again", seed=10)
    assert json.loads(again["manifest.json"])["export_id"] == ids[0]


@pytest.mark.parametrize("kind", ["csv", "label-studio"])
def test_import_refuses_the_filled_sheets_of_another_export_with_the_same_item_ids(two_exports, tmp_path, kind, capsys):
    """Measured before: the first export's sheets imported into the second's folder, exit 0, a review of queries
    nobody rated (the item ids match, the queries do not)."""
    first, second = two_exports
    ratings = rate(json.loads((first / "manifest.json").read_text()))
    files = fill(first, ratings)
    if kind == "label-studio":
        files[1] = label_studio_export(first, "ben", ratings["ben"], tmp_path / "ben-project.json")
    first_id, second_id = (json.loads((out / "manifest.json").read_text())["export_id"] for out in two_exports)
    assert main(["review", "import", str(second), *files, "--resamples", "20"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert files[0] in err and f"export {first_id}" in err and f"{second / 'manifest.json'} is export {second_id}" in err, err
    assert not (second / "review.json").exists()
    # the sheets go with their own folder
    assert main(["review", "import", str(first), *files, "--resamples", "20"]) == 0


def rewrite_export(files: list[str], export_id: str) -> None:
    """The forger's edit: every row's export cell (or task's data.export) set to another export's id."""
    for name in files:
        path = Path(name)
        if path.suffix == ".json":
            tasks = json.loads(path.read_text())
            path.write_text(json.dumps([{**t, "data": {**t["data"], "export": export_id}} for t in tasks]))
        else:
            rows = sheet(path)
            write_sheet(path, [{**row, "export": export_id} for row in rows], {row["item"]: row["rating"] for row in rows})


@pytest.mark.parametrize("kind", ["csv", "label-studio"])
def test_import_refuses_sheets_of_another_export_whose_export_cells_were_rewritten(two_exports, tmp_path, kind, capsys):
    """Issue 37 §4, measured before: the first export's filled sheets with their export column rewritten to the second's
    id imported into the second's folder, exit 0, each rating attached to another question. Each row's query and
    prediction must be those the manifest pins for its item (its digest): the first row that is not is one line
    naming the sheet, the row, and what differs; nothing is written."""
    first, second = two_exports
    files = fill(first, rate(json.loads((first / "manifest.json").read_text())))
    if kind == "label-studio":
        ratings = {row["item"]: int(row["rating"]) for row in sheet(Path(files[0]))}
        files[0] = label_studio_export(first, "ana", ratings, tmp_path / "ana-project.json")
    target = json.loads((second / "manifest.json").read_text())
    rewrite_export(files, target["export_id"])
    assert main(["review", "import", str(second), *files, "--resamples", "20"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    where = "row 2" if kind == "csv" else "task 1"
    shown = (
        sheet(first / "raters" / "ana.csv")[0]
        if kind == "csv"
        else json.loads((first / "raters" / "ana.label-studio.json").read_text())[0]["data"]
    )
    item = next(i for i in target["items"] if i["item"] == shown["item"])
    asked = {"query": next(q["text"] for q in target["queries"] if q["query"] == item["query"]), "prediction": item["prediction"]}
    assert err.startswith(
        f"medprobe: error: {files[0]}, {where} (item {shown['item']}) does not show what export {target['export_id']} "
        f"({second / 'manifest.json'}) asks there: "
    ), err
    differs = [field for field in ("query", "prediction") if shown[field] != asked[field]]
    assert differs, "the two exports must ask something else under this item id"
    for field in differs:
        assert f"{field} {shown[field]!r} on the sheet, {asked[field]!r} in the manifest" in err, err
    assert "import each sheet with the folder its export wrote" in err
    assert not (second / "review.json").exists() and not (second / "review.md").exists()


def test_the_command_refuses_a_rewritten_sheet_in_one_line_and_writes_nothing(two_exports):
    """The same forgery through `python -m medprobe review import`, as a user runs it."""
    import subprocess
    import sys

    from conftest import REPO_ROOT

    first, second = two_exports
    files = fill(first, rate(json.loads((first / "manifest.json").read_text())))
    rewrite_export(files, json.loads((second / "manifest.json").read_text())["export_id"])
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    argv = [sys.executable, "-m", "medprobe", "review", "import", str(second), *files, "--resamples", "20"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"medprobe: error: {files[0]}, row 2 (item ") and "on the sheet" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert sorted(path.name for path in second.iterdir()) == ["label-studio-config.xml", "manifest.json", "raters", "scale.md"]


def test_an_edited_prediction_cell_is_refused_naming_the_row_and_what_differs(run, tmp_path, capsys):
    """A row whose prediction was retyped (Diazepam rated where Pancreatitis was asked) rates what nobody asked."""
    out, files = filled(run, tmp_path)
    rows = sheet(Path(files[1]))
    asked = rows[4]["prediction"]
    rows[4]["prediction"] = "Diazepam"
    write_sheet(Path(files[1]), rows, {row["item"]: row["rating"] for row in rows})
    export_id = json.loads((out / "manifest.json").read_text())["export_id"]
    assert main(["review", "import", str(out), *files, "--resamples", "20"]) == 2
    expected = (
        f"{files[1]}, row 6 (item {rows[4]['item']}) does not show what export {export_id} ({out / 'manifest.json'}) "
        f"asks there: prediction 'Diazepam' on the sheet, {asked!r} in the manifest"
    )
    err = capsys.readouterr().err
    assert err.startswith(f"medprobe: error: {expected}: ") and len(err.splitlines()) == 1, err
    assert not (out / "review.json").exists()


def test_the_manifest_pins_each_rows_content_and_an_edited_manifest_is_refused(run, tmp_path, capsys):
    from medprobe.digests import json_digest

    out, files = filled(run, tmp_path)
    manifest = json.loads((out / "manifest.json").read_text())
    texts = {q["query"]: q["text"] for q in manifest["queries"]}
    for item in manifest["items"]:
        assert item["digest"] == json_digest(
            {"query": texts[item["query"]], "prediction": item["prediction"], "rank": item["rank"]}
        )
    manifest["items"][2]["rank"] = manifest["items"][2]["rank"] % 3 + 1  # a rank changed by hand: acc@k would change
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert main(["review", "import", str(out), *files, "--resamples", "20"]) == 2
    err = capsys.readouterr().err
    item = manifest["items"][2]["item"]
    assert err.startswith(f"medprobe: error: {out / 'manifest.json'}, item {item}: its digest is not that of its query"), err
    assert not (out / "review.json").exists()


def test_an_export_written_before_row_digests_is_checked_by_its_text(two_exports, capsys):
    """Decided: such an export's sheets still import (no rater redoes a sheet), each row checked against the item's
    query and prediction text, which the manifest holds, with a note; a rewritten sheet of another export is refused."""
    first, second = two_exports
    for out in two_exports:
        manifest = json.loads((out / "manifest.json").read_text())
        manifest["items"] = [{k: v for k, v in item.items() if k != "digest"} for item in manifest["items"]]
        (out / "manifest.json").write_text(json.dumps(manifest))
    files = fill(first, rate(json.loads((first / "manifest.json").read_text())))
    assert main(["review", "import", str(first), *files, "--resamples", "20"]) == 0
    assert "exported before row digests; each row was checked against the manifest's query and prediction text" in (
        capsys.readouterr().out
    )
    rewrite_export(files, json.loads((second / "manifest.json").read_text())["export_id"])
    assert main(["review", "import", str(second), *files, "--resamples", "20"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"{files[0]}, row 2 (item " in err and "on the sheet" in err, err
    assert not (second / "review.json").exists()


def test_a_cleared_export_cell_is_one_line_naming_the_row(run, tmp_path, capsys):
    out, files = filled(run, tmp_path)
    rows = sheet(Path(files[0]))
    rows[3]["export"] = ""
    write_sheet(Path(files[0]), rows, {row["item"]: row["rating"] for row in rows})
    export_id = json.loads((out / "manifest.json").read_text())["export_id"]
    assert main(["review", "import", str(out), *files, "--resamples", "20"]) == 2
    err = capsys.readouterr().err
    expected = f"{files[0]}, row 5: the export cell is empty; the exported sheet has {export_id} there ({out / 'manifest.json'})"
    assert err == f"medprobe: error: {expected}\n"


def test_import_out_that_is_a_folder_names_a_review_file(run, tmp_path, capsys):
    out, files = filled(run, tmp_path)
    assert main(["review", "import", str(out), *files, "--out", str(out), "--resamples", "20"]) == 2
    assert capsys.readouterr().err == f"medprobe: error: --out {out} is a folder; give a file path, e.g. {out / 'review.json'}\n"


def make_legacy(out: Path) -> None:
    """The export as written before export ids: no export column, no data.export, no export_id."""
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["export_id"]
    manifest["csv_header"].remove("export")
    (out / "manifest.json").write_text(json.dumps(manifest))
    for path in (out / "raters").glob("*.csv"):
        rows = sheet(path)
        write_sheet(path, [{k: v for k, v in row.items() if k != "export"} for row in rows], {r["item"]: "" for r in rows})
    for path in (out / "raters").glob("*.label-studio.json"):
        tasks = json.loads(path.read_text())
        path.write_text(json.dumps([{"data": {k: v for k, v in t["data"].items() if k != "export"}} for t in tasks]))


def test_sheets_of_an_export_written_before_export_ids(two_exports, capsys):
    """An old export's own sheets still import (matched to its manifest by query and prediction text); an old
    sheet given with another old export, or with a new one, is one line saying which folder it goes with.
    Measured before: the other old export's sheets were accepted (exit 0)."""
    first, second = two_exports
    for out in two_exports:
        make_legacy(out)
    ratings = rate(json.loads((first / "manifest.json").read_text()))
    files = fill(first, ratings)
    assert main(["review", "import", str(first), *files, "--resamples", "20"]) == 0
    assert "matched to the manifest by query and prediction text" in capsys.readouterr().out
    assert main(["review", "import", str(second), *files, "--resamples", "20"]) == 2
    err = capsys.readouterr().err
    assert (
        len(err.splitlines()) == 1 and files[0] in err and "another export" in err and "with the folder its export wrote" in err
    )
    assert not (second / "review.json").exists()


def test_an_old_sheet_given_with_a_new_export_says_what_to_do(run, two_exports, tmp_path, capsys):
    """Measured before (an old sheet is one without the export column): `the header is ..., expected ...`, which
    does not say the sheet is of another export."""
    first, second = two_exports
    make_legacy(first)
    files = fill(first, rate(json.loads((first / "manifest.json").read_text())))
    second_id = json.loads((second / "manifest.json").read_text())["export_id"]
    assert main(["review", "import", str(second), *files, "--resamples", "20"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and files[0] in err and "no export column" in err and second_id in err, err
    assert "import it with the folder its export wrote" in err


# --- review outputs refuse files review did not write (issue 31 §4) -----------------------------------------


def filled(run: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    out = tmp_path / "review"
    do_export(run, out)
    return out, fill(out, rate(json.loads((out / "manifest.json").read_text())))


def test_import_refuses_to_replace_the_runs_results_json_given_as_out(run, tmp_path, capsys):
    """Measured before: `--out RUN.json` replaced the run's results JSON with the review record, exit 0."""
    out, files = filled(run, tmp_path)
    before = run.read_bytes()
    assert main(["review", "import", str(out), *files, "--out", str(run), "--resamples", "20"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"medprobe: error: --out {run}: a file `medprobe review import` did not write (not a review record); "
        "the import would replace it: pass --overwrite to replace it, or choose another --out\n"
    )
    assert run.read_bytes() == before and not run.with_suffix(".md").exists()


@pytest.mark.parametrize("case", ["users-notes", "hand-edited", "no-record-beside"])
def test_import_refuses_to_replace_a_markdown_or_heatmap_it_did_not_write(run, tmp_path, case, capsys):
    """Measured before: DIR/review.md (a user's notes, or the review's markdown edited by hand) replaced, exit 0."""
    out, files = filled(run, tmp_path)
    md = out / "review.md"
    if case == "users-notes":
        md.write_text("# my notes on the raters\n")
    else:
        assert main(["review", "import", str(out), *files, "--resamples", "20"]) == 0
        if case == "hand-edited":
            md.write_text(md.read_text() + "\nadded by hand\n")
        else:
            (out / "review.json").unlink()
    capsys.readouterr()
    kept = md.read_bytes()
    assert main(["review", "import", str(out), *files, "--resamples", "20"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and str(md) in err and "pass --overwrite" in err and "Traceback" not in err, err
    assert md.read_bytes() == kept
    assert main(["review", "import", str(out), *files, "--resamples", "20", "--overwrite"]) == 0
    assert md.read_text().startswith("# Expert review")


def test_import_replaces_its_own_outputs_without_overwrite(run, tmp_path):
    out, files = filled(run, tmp_path)
    assert main(["review", "import", str(out), *files, "--resamples", "20"]) == 0
    first = (out / "review.json").read_bytes()
    assert main(["review", "import", str(out), *files, "--resamples", "20", "--accept", "4"]) == 0
    assert (out / "review.json").read_bytes() != first
    record = json.loads((out / "review.json").read_text())
    for role, name in (("markdown", "review.md"), ("heatmap", "review.heatmap.svg")):
        assert record["outputs"][role] == hashlib.sha256((out / name).read_bytes()).hexdigest()


@pytest.fixture()
def immutable():
    """chattr +i on a path (undone at teardown); skipped where chattr is not permitted."""
    import shutil
    import subprocess

    made = []

    def make(path: Path) -> Path:
        if not shutil.which("chattr") or subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
            pytest.skip("chattr +i is not permitted here")
        made.append(path)
        return path

    yield make
    for path in made:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@pytest.fixture()
def no_work(monkeypatch):
    """Call it, and the review's work (reading the run, reading the ratings) fails the test if it starts."""
    import medprobe.review.ratings
    import medprobe.review.sheets

    def started(*args, **kwargs):
        raise AssertionError("the work started before the output was checked")

    def forbid() -> None:
        monkeypatch.setattr(medprobe.review.sheets, "load_run", started)
        monkeypatch.setattr(medprobe.review.ratings, "read_all", started)

    return forbid


def test_import_out_that_is_immutable_is_one_line_before_any_work(run, tmp_path, immutable, no_work, capsys):
    """Measured before: the ratings were read and the review computed, then os.replace failed on the immutable
    file: `[Errno 1] Operation not permitted: '.../.review-tmp-PID.json' -> ...` (a temporary name)."""
    out, files = filled(run, tmp_path)
    target = tmp_path / "kept.review.json"
    assert import_ratings(out, files, out=target, resamples=20)
    immutable(target)
    no_work()
    assert main(["review", "import", str(out), *files, "--out", str(target), "--resamples", "20"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"medprobe: error: --out {target}: cannot be replaced (") and len(err.splitlines()) == 1, err
    assert "immutable" in err and "-tmp-" not in err


def test_import_out_that_is_a_mount_point_is_one_line_before_any_work(run, tmp_path, no_work, monkeypatch, capsys):
    """Measured before (mount point simulated): not checked, the import ran to the end (a real one then fails the
    rename over it with EBUSY, by reading the code: after the work)."""
    out, files = filled(run, tmp_path)
    target = tmp_path / "mounted.json"
    target.write_text(json.dumps({"format": "medprobe-review-record/1"}))
    real = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda path: Path(path) == target or real(path))
    no_work()
    assert main(["review", "import", str(out), *files, "--out", str(target), "--resamples", "20"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"medprobe: error: --out {target} is a mount point") and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("case", ["immutable", "mount-point"])
def test_export_out_that_cannot_be_replaced_is_one_line_before_any_work(
    run, tmp_path, immutable, no_work, monkeypatch, case, capsys
):
    """Measured before: an empty OUT folder that is immutable or a mount point passed the first check; the run was
    read and the sheets built before the swap refused it."""
    out = tmp_path / "sheets"
    out.mkdir()
    if case == "immutable":
        immutable(out)
        expected = f"medprobe: error: --out {out}: cannot write in it ("
    else:
        real = os.path.ismount
        monkeypatch.setattr(os.path, "ismount", lambda path: Path(path) == out or real(path))
        expected = f"medprobe: error: --out {out} is a mount point"
    args = ["review", "export", str(run), "--sample", "2", "--top-k", "2", "--raters", "1", "--out", str(out)]
    no_work()
    args += ["--dataset", str(run.parent.parent / "data")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(expected) and len(err.splitlines()) == 1, err
    assert list(out.iterdir()) == []
