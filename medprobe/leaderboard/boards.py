"""The boards: runs grouped by what makes them comparable, ranked by the headline, every pair tested, rank intervals.

    data = leaderboard_data(runs, excluded, resamples=1000, seed=0)   # what SITE/leaderboard.json holds

A board holds the runs of one task, benchmark config, split and prober, with the settings that change
what its metric means (`paired_settings` in the registry) and one data fingerprint: a board ranks only
runs on the same data, and runs on other data go on a board of their own, headed by what their data is
(medprobe.hub.official). A run whose items are not the board's (same fingerprint, other item ids or
contents) is left out as mismatched data.

Rows are ordered by the headline, each with its value, 95% interval and n (the record's, recomputed
from its outcomes when it was read), and the chance level its record states with the null in words.
Every pair of runs is tested on their common items, Holm over all of the board's pairs
(medprobe.leaderboard.ranks), which gives each row its rank interval and letters; `tests` keeps every
pair's discordant counts, p and adjusted p. Each adjacent pair also gets its paired difference with an
interval (medprobe.leaderboard.pairs), its per-group differences (Holm over the groups) and the smallest
difference its test detects; each run its headline per group with a 95% interval.

Is it knowledge? A board of runs that record validity facets (issue 39) shows, beside the headline, the facets of
`FACET_COLUMNS` at the headline's k (above prompt bias, robust acc, consistency, AURC), each with the record's 95%
interval: `facet_columns` names those some row has, and a row without one has None there (shown empty, never 0).
The rank, letters and pairs stay on the headline alone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medprobe.hub.published import name_part
from medprobe.leaderboard.labels import describe, run_settings
from medprobe.leaderboard.pairs import ALPHA, LEVEL, Difference, Scored, pair_difference, scored, value_interval
from medprobe.leaderboard.ranks import RULE, PairTests, all_pairs, letters, rank_intervals
from medprobe.leaderboard.sources import BoardRun, Excluded, where_of
from medprobe.registry import load, task_entry
from medprobe.stats import RESAMPLES, SEED, Estimator, Outcomes, holm

METHOD = (
    "Rows ordered by the headline metric with its 95% percentile-bootstrap interval (the record's, recomputed from the "
    "run's per-item outcomes). Every pair of runs is compared on their common items: for a metric of 0/1 item scores "
    "(acc@k) by the exact McNemar test of the discordant items, otherwise by a paired permutation test; the p-values of "
    "all the board's pairs are Holm-adjusted together. A run's rank interval runs from 1 + the runs significantly better "
    "to the runs minus those significantly worse; two runs share a letter only when they are not separated. Adjacent "
    "rows also get the paired difference with a 95% paired-bootstrap interval, per-group differences (Holm over the "
    "groups) and the smallest difference the test detects with 80% power."
)


def model_name(record: Any) -> str:
    """How a board names a run's model: its Hub id, a local folder's name, or the name given; a run with the model's
    architecture and random weights (a prober's --scratch) says so."""
    identity = record.model_identity or {}
    model = record.model or "unnamed model"
    name = identity.get("hub_id") or (Path(model).name if ("/" in model or "\\" in model) else model)
    return f"{name} (random weights)" if record.settings.get("scratch") else name


def board_key(run: BoardRun) -> tuple:
    record = run.record
    paired = task_entry(record.task).paired_settings  # a loaded run's task is installed (medprobe.records checks it)
    settings = json.dumps({name: record.settings.get(name) for name in paired}, sort_keys=True, default=str)
    return (record.task, record.benchmark, record.config, record.split, record.prober, settings, run.status.fingerprint)


def items_key(outcomes: Outcomes) -> tuple:
    return (outcomes.ids, outcomes.contents)


def aligned_pair(upper: Outcomes, lower: Outcomes) -> tuple[Outcomes, Outcomes]:
    """Both runs on the same items in the same order (runs of one board hold the same items)."""
    if items_key(upper) == items_key(lower):
        return upper, lower
    return upper, lower.select(upper.ids)


def group_rows(run: Scored, estimator: Estimator, resamples: int, seed: int) -> list[dict]:
    """The headline of each group's items alone, with its 95% interval."""
    return [{"group": name, **value_interval(run.group(name), estimator, resamples, seed)} for name in run.outcomes.group_names]


def difference_dict(found: Difference) -> dict:
    return {
        "upper_value": found.upper,
        "lower_value": found.lower,
        "difference": found.difference,
        "low": found.low,
        "high": found.high,
        "p_value": found.p_value,
        "test": found.test,
        "better": found.better,
        "worse": found.worse,
        "n": found.n,
        "mde": found.mde,
        "mde_method": found.mde_method,
        "method": found.method,
    }


def pair_groups(upper: Scored, lower: Scored, estimator: Estimator, resamples: int, seed: int) -> list[dict]:
    """The headline difference on each group's items alone, Holm-adjusted over the groups of the pair."""
    rows = []
    for name in upper.outcomes.group_names:
        found = pair_difference(upper.group(name), lower.group(name), estimator, resamples, seed)
        rows.append({"group": name, "n": found.n, **difference_dict(found)})
    adjusted = holm({row["group"]: row["p_value"] for row in rows if row["p_value"] is not None})
    for row in rows:
        row["p_holm"] = adjusted.get(row["group"])
    return rows


def split_mismatched(runs: list[BoardRun]) -> tuple[list[BoardRun], list[Excluded]]:
    """The runs holding the board's items (the items most of its runs hold), and the others left out."""
    counts: dict[tuple, int] = {}
    for run in runs:
        counts[items_key(run.outcomes)] = counts.get(items_key(run.outcomes), 0) + 1
    common = max(counts, key=lambda key: (counts[key], len(key[0])))
    kept, excluded = [], []
    for run in runs:
        if items_key(run.outcomes) == common:
            kept.append(run)
        else:
            reason = (
                f"mismatched data: the same data fingerprint as the board's other runs but other items "
                f"({len(run.outcomes):,} against {len(common[0]):,}, or other ids or contents)"
            )
            excluded.append(
                Excluded(run.label, run.source, reason, where_of(run.record.benchmark, run.record.config, run.record.prober))
            )
    return kept, excluded


FACET_COLUMNS = ("above_bias@{k}", "robust_acc@{k}", "consistency@{k}", "aurc")  # the board's validity columns


def facet_columns(metric: str) -> list[str]:
    """The validity columns of a board ranked by `metric`, at its k (acc@10 -> above_bias@10, ...)."""
    k = metric.rpartition("@")[2] if "@" in metric else None
    return [name.format(k=k) for name in FACET_COLUMNS if k is not None or "{k}" not in name]


def facet_values(record: Any, columns: list[str]) -> dict[str, dict | None]:
    """Each validity column's value and 95% interval as the run recorded them (recomputed when it was read); None
    where the run has no such facet (a run without --variants has no consistency)."""
    found: dict[str, dict | None] = {}
    for name in columns:
        interval = (record.intervals or {}).get(name) or {}
        value = record.metrics.get(name)
        found[name] = None if value is None else {"value": value, "low": interval.get("low"), "high": interval.get("high")}
    return found


def row_value(run: BoardRun, scores: Scored, metric: str, estimator: Estimator, resamples: int, seed: int) -> dict:
    """The run's headline with its interval and n: the record's (recomputed when it was read), else computed here."""
    interval = (run.record.intervals or {}).get(metric) or {}
    if interval.get("low") is not None and interval.get("n") == len(run.outcomes):
        return {"value": run.record.metrics[metric], "low": interval["low"], "high": interval["high"], "n": interval["n"]}
    return value_interval(scores, estimator, resamples, seed)


def sortable(value: Any) -> float:
    """A value to rank by: a missing one (None, NaN) last."""
    return value if isinstance(value, (int, float)) and value == value else float("-inf")


def board_title(record: Any, status_kind: str) -> str:
    where = f"{record.benchmark} · {record.config or 'all configs'} · {record.split} · {record.prober}"
    return where if status_kind == "official" else f"{where} · {status_kind} data"


def usable(runs: list[BoardRun], metric: str) -> tuple[list[BoardRun], list[Excluded]]:
    """The runs that hold the board's items and its metric, and the others left out with the reason."""
    runs, excluded = split_mismatched(runs)
    for run in runs:
        if metric not in run.record.metrics:
            where = where_of(run.record.benchmark, run.record.config, run.record.prober)
            excluded.append(Excluded(run.label, run.source, f"records no {metric}", where))
    return [run for run in runs if metric in run.record.metrics], excluded


def row_dict(
    run: BoardRun,
    position: int,
    rank: dict,
    value: dict,
    scores: Scored,
    metric: str,
    estimator: Estimator,
    resamples: int,
    seed: int,
) -> dict:
    chance = (run.record.chance or {}).get(metric) or {}
    return {
        "position": position,
        **rank,
        "run": run.label,
        "model": model_name(run.record),
        **value,
        "chance": chance.get("value"),
        "chance_null": chance.get("method"),
        "source": run.source,
        "command": run.record.command,
        "settings": run_settings(run.record),
        "groups": group_rows(scores, estimator, resamples, seed),
        "facets": facet_values(run.record, facet_columns(metric)),
    }


def pair_dict(upper: BoardRun, lower: BoardRun, found: Difference, per_group: list[dict], adjusted: float | None) -> dict:
    """An adjacent pair: its difference in full, `p_holm` from the family of all the board's pairs."""
    adjusted = None if adjusted is None or adjusted != adjusted else float(adjusted)
    return {
        "upper": upper.label,
        "lower": lower.label,
        **difference_dict(found),
        "p_holm": adjusted,
        "separated": adjusted is not None and adjusted < ALPHA,
        "groups": per_group,
        "compare": f"medprobe compare {lower.source} {upper.source}",
    }


def board_head(first: Any, entry: Any, status: Any) -> dict:
    """What a board is: its data, task, config, prober, metric and the settings its runs share."""
    return {
        "title": board_title(first, status.kind),
        "task": first.task,
        "benchmark": first.benchmark,
        "config": first.config,
        "split": first.split,
        "prober": first.prober,
        "metric": entry.headline,
        "unit": (first.outcomes or {}).get("unit", "item"),
        "group_by": getattr(load(entry.target), "GROUP_BY", "") or "group",
        "settings": {name: first.settings.get(name) for name in entry.paired_settings},
        "data": {"kind": status.kind, "text": status.text, "fingerprint": status.fingerprint},
    }


def ranks(tests: PairTests) -> list[dict]:
    """Each row's rank interval and letters, from the board's tests of all pairs."""
    best, worst = rank_intervals(tests.above())
    return [{"rank": {"best": b, "worst": w}, "letters": found} for b, w, found in zip(best, worst, letters(tests.separated()))]


def one_board(runs: list[BoardRun], resamples: int, seed: int) -> tuple[dict | None, list[Excluded]]:
    """A board of runs that share its key: rows ranked, every pair tested, adjacent pairs in full (None: no run is left)."""
    entry = task_entry(runs[0].record.task)
    metric = entry.headline
    runs, excluded = usable(runs, metric)
    if not runs:
        return None, excluded
    estimator = load(entry.target).estimators(runs[0].record.settings)[metric]
    scores = {id(run): scored(aligned_pair(runs[0].outcomes, run.outcomes)[1], estimator) for run in runs}  # one item order
    values = {id(run): row_value(run, scores[id(run)], metric, estimator, resamples, seed) for run in runs}
    runs.sort(key=lambda run: (-sortable(values[id(run)]["value"]), run.label))
    ordered = [scores[id(run)] for run in runs]
    tests = all_pairs(ordered, [values[id(run)]["value"] for run in runs], estimator, resamples, seed)
    board = board_head(runs[0].record, entry, runs[0].status)
    board["rows"] = [
        row_dict(run, position, rank, values[id(run)], scores[id(run)], metric, estimator, resamples, seed)
        for position, (run, rank) in enumerate(zip(runs, ranks(tests)), start=1)
    ]
    board["pairs"] = [
        pair_dict(
            upper,
            lower,
            pair_difference(a, b, estimator, resamples, seed),
            pair_groups(a, b, estimator, resamples, seed),
            tests.p_holm[index, index + 1],
        )
        for index, (upper, lower, a, b) in enumerate(zip(runs, runs[1:], ordered, ordered[1:]))
    ]
    board["tests"] = tests.rows()
    board["facet_columns"] = [name for name in facet_columns(metric) if any(row["facets"][name] for row in board["rows"])]
    return board, excluded


def board_ids(boards: list[dict]) -> None:
    """A short unique id per board (its page anchor and pair pages' prefix)."""
    taken: dict[str, int] = {}
    for board in boards:
        base = name_part(f"{board['benchmark']}-{board['config'] or 'all'}-{board['prober']}-{board['data']['kind']}").lower()
        taken[base] = taken.get(base, 0) + 1
        board["id"] = base if taken[base] == 1 else f"{base}_{taken[base]}"


def leaderboard_data(
    runs: list[BoardRun], excluded: list[Excluded], *, resamples: int = RESAMPLES, seed: int = SEED, sources: Sequence[str] = ()
) -> dict:
    """Every board and every run left out, as SITE/leaderboard.json holds them."""
    from medprobe import __version__

    grouped: dict[tuple, list[BoardRun]] = {}
    for run in runs:
        grouped.setdefault(board_key(run), []).append(run)
    boards, listed = [], [{**item.as_dict(), "board": None} for item in excluded]
    for key in sorted(grouped, key=lambda k: (k[1], str(k[2]), k[4], k[3], k[6] is None, str(k[6]))):
        board, left = one_board(grouped[key], resamples, seed)
        left_out = [{**item.as_dict(), "board": None} for item in left]  # a run left out of this board is listed on it
        listed += left_out
        if board:
            board["excluded"] = left_out
            boards.append(board)
    # the official data's board first among boards of one benchmark/config/prober
    boards.sort(key=lambda b: (b["benchmark"], str(b["config"]), b["prober"], b["split"], b["data"]["kind"] != "official"))
    board_ids(boards)
    describe(boards)
    for board in boards:
        for item in board["excluded"]:
            item["board"] = board["id"]
    return {
        "medprobe": __version__,
        "level": LEVEL,
        "alpha": ALPHA,
        "resamples": resamples,
        "seed": seed,
        "method": METHOD,
        "rule": RULE,
        "sources": list(sources),
        "boards": boards,
        "excluded": listed,
    }
