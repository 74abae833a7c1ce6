"""One comparison per pair: each run's metrics with intervals, their paired differences (medprobe.stats.paired),
the headline metric's difference per group with Holm-adjusted p-values, and the whole comparison as
written to compare.json.

One question gets one test, here as on the leaderboard's pages: a metric whose items score 0 or 1 in both runs
(micro acc@k) is tested by the exact McNemar test of the discordant items (medprobe.mcnemar: exact, no floor),
any other (macro averages, F1, shares) by the paired permutation test; each p carries the name of its test.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from medprobe.comparison.inputs import Input, Run, key_title
from medprobe.comparison.pairing import (
    Pair,
    check_pair,
    common_estimators,
    common_items,
    differing_settings,
    other_candidates,
    pairs_of,
    same_weights,
    task_class,
)
from medprobe.mcnemar import one_test
from medprobe.options import RESAMPLES_OPTION, check_positive
from medprobe.registry import task_entry
from medprobe.stats import RESAMPLES, SEED, Estimator, Outcomes, estimate, holm, intervals, paired, plural


def clean(value: Any) -> Any:
    """JSON-safe numbers: NaN (no value, e.g. a group without scored steps) as None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: clean(item) for key, item in value.items()}
    if isinstance(value, list):
        return [clean(item) for item in value]
    return value


def run_values(
    run: Run, outcomes: Outcomes, estimators: Mapping[str, Estimator], recompute: bool, resamples: int, seed: int
) -> dict:
    """Each metric of one run with its 95% interval: the record's own, or recomputed on the compared items."""
    if recompute:
        found = intervals(outcomes, estimators, resamples=resamples, seed=seed)
        return {
            name: {
                "value": estimate(outcomes, estimators[name]),
                "low": found[name]["low"],
                "high": found[name]["high"],
                "n": found[name]["n"],
                "interval": "recomputed on the compared items",
            }
            for name in estimators
        }
    values = {}
    for name in estimators:
        interval = run.record.intervals.get(name) or {}
        values[name] = {
            "value": run.record.metrics[name],
            "low": interval.get("low"),
            "high": interval.get("high"),
            "n": interval.get("n", len(outcomes)),
            "interval": "the run's own",
        }
    return values


def paired_result(found: dict) -> dict:
    """stats.paired's entry of one metric for `paired(run, reference)`, its two values named by run. A
    difference without a value (NaN: e.g. a group without scored steps) has no p-value (stats gives None)
    and stays out of Holm's family."""
    result = {"reference": found["b"], "run": found["a"]}
    result.update({key: value for key, value in found.items() if key not in ("a", "b", "null_spread")})
    return result


def compare_pair(pair: Pair, intersect: bool, resamples: int, seed: int) -> dict:
    """Every common metric of both runs, their differences (run - reference) and the per-group headline differences."""
    estimators = common_estimators(pair)
    ref, run = pair.reference, pair.run
    a, b, counts = common_items(pair, ref.outcomes, run.outcomes, intersect)
    entry = task_entry(ref.record.task)
    headline = entry.headline if entry.headline in estimators else next(iter(estimators))
    recompute = counts["compared"] < max(counts[ref.label], counts[run.label])
    differences = paired(b, a, estimators, resamples=resamples, seed=seed)  # run - reference, on the same resamples
    groups = []
    for name, run_items, reference_items in differences_by_group(b, a):
        found = paired(run_items, reference_items, {headline: estimators[headline]}, resamples=resamples, seed=seed)[headline]
        groups.append({"group": name, **one_test(paired_result(found), run_items, reference_items, estimators[headline])})
    tested = {row["group"]: row["p_value"] for row in groups if row["p_value"] is not None}
    adjusted = holm(tested)
    for row in groups:
        row["p_holm"] = adjusted.get(row["group"])
    unit = (ref.record.outcomes or {}).get("unit", "item")
    return clean(
        {
            "title": pair.title,
            "task": ref.record.task,
            "benchmark": ref.record.benchmark,
            "config": ref.record.config,
            "split": ref.record.split,
            "reference": ref.label,
            "run": run.label,
            "unit": unit,
            "units": plural(unit),
            "items": counts,
            "intersected": recompute,
            "data": {ref.label: ref.record.data_fingerprint.get("sha256"), run.label: run.record.data_fingerprint.get("sha256")},
            "differing": differing_settings(ref.record, run.record),
            "different_candidates": other_candidates(pair),
            "same_weights": same_weights(ref.record, run.record),
            "headline": headline,
            "group_by": getattr(task_class(ref.record.task), "GROUP_BY", "") or "group",
            "values": {
                ref.label: run_values(ref, a, estimators, recompute, resamples, seed),
                run.label: run_values(run, b, estimators, recompute, resamples, seed),
            },
            "differences": {name: one_test(paired_result(found), b, a, estimators[name]) for name, found in differences.items()},
            # the validity facet each metric belongs to (issue 39) and how it reads: "" a share, "count", "score"
            "facets": {name: (ref.record.intervals.get(name) or {}).get("facet") for name in estimators},
            "scales": {name: (ref.record.intervals.get(name) or {}).get("scale", "") for name in estimators},
            "groups": groups,
        }
    )


def run_summary(run: Run) -> dict:
    record = run.record
    return {
        "results": str(run.path),
        "benchmark": record.benchmark,
        "config": record.config,
        "prober": record.prober,
        "model": record.model,
        "items": (record.outcomes or {}).get("items"),
        "command": record.command,
        # what data, and when: the report says on what the runs were made (the dates are the runs', so the same
        # runs and seed still give the same compare.json, byte for byte)
        "dataset": record.dataset,
        "split": record.split,
        "data_sha256": record.data_fingerprint.get("sha256"),
        "data_revision": record.data_fingerprint.get("revision"),
        "created": record.created,
    }


def differences_by_group(b: Outcomes, a: Outcomes) -> list[tuple[str, Outcomes, Outcomes]]:
    """(group, run's outcomes, reference's outcomes) on each group's items alone, groups in the reference's order."""
    rows = []
    for group in a.group_names:
        ids = [item for item, name in zip(a.ids, a.groups) if name == group]
        rows.append((group, b.select(ids), a.select(ids)))
    return rows


def intersect_notes(found: dict) -> list[str]:
    """What --intersect did to one comparison: how many items of each run it kept, how many ids it left out because
    they name other questions in the two runs, and on what the items of runs of different data were paired."""
    notes = []
    items, ref, run = found["items"], found["reference"], found["run"]
    if found["intersected"]:
        notes.append(
            f"{found['title']}: --intersect: {items['compared']:,} common {found['units']} ({items['compared']:,} of "
            f"{ref}'s {items[ref]:,}, {items['compared']:,} of {run}'s {items[run]:,})"
        )
    if items.get("other_content"):
        notes.append(
            f"{found['title']}: {items['other_content']:,} ids are in both runs with other content (another question under "
            "the same id): left out"
        )
    if found.get("different_candidates"):
        notes.append(
            f"{found['title']}: the runs ranked among different candidates ({found['different_candidates']}), compared "
            "under --allow-different-candidates: the difference measures the data (which candidates compete), not the model"
        )
    if len(set(found["data"].values())) > 1:
        notes.append(
            f"{found['title']}: the runs probed different data; an item pairs only where both runs hold its id with the "
            "same content (question and gold answers), so each pair is one question asked of both"
        )
    return notes


def compare(
    inputs: list[Input],
    *,
    intersect: bool = False,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    allow_different_candidates: bool = False,
) -> dict:
    """The whole comparison, as written to compare.json: every pair checked first, then compared."""
    from medprobe import __version__

    check_positive(RESAMPLES_OPTION, resamples)
    pairs, notes = pairs_of(inputs)
    for pair in pairs:  # every refusal before any work
        check_pair(pair, intersect, allow_different_candidates)
    comparisons = []
    for pair in pairs:
        comparisons.append(compare_pair(pair, intersect, resamples, seed))
    for found in comparisons:
        notes += intersect_notes(found)
    notes += review_notes(inputs)
    return {
        "inputs": [
            {
                "label": item.label,
                "path": str(item.path),
                "kind": item.kind,
                "runs": {key_title(key): run_summary(run) for key, run in item.runs.items()},
            }
            for item in inputs
        ],
        "reference": inputs[0].label,
        "difference": "run - reference (the first input), in the metric's units",
        "method": "paired percentile bootstrap over items (within groups for macro metrics); two-sided p from the exact "
        "McNemar test where both runs score each item 0 or 1 (acc@k), else from a paired permutation test, its name beside "
        "it; per-group p-values Holm-adjusted within each comparison",
        "level": 0.95,
        "resamples": resamples,
        "seed": seed,
        "intersect": intersect,
        "comparisons": comparisons,
        "notes": notes,
        "medprobe": __version__,
    }


def review_notes(inputs: list[Input]) -> list[str]:
    """One note per run with an expert review beside its results JSON (`medprobe review import --out RESULTS.review.json`)."""
    from medprobe.review.report import review_line

    return [f"{run.label}: {line}" for item in inputs for run in item.runs.values() if (line := review_line(run.path))]
