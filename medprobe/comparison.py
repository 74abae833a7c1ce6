"""`medprobe compare`: two or more runs (or profiles) side by side, paired on identical items.

    inputs = read_inputs(["a.json", "b.json"])    # results JSONs or profile folders (medprobe.compare_inputs)
    comparison = compare(inputs, intersect=False, resamples=1000, seed=0)
    print(markdown(comparison))                   # medprobe.compare_report

The first input is the reference; every other input is compared with it, and a difference is
always `run - reference` (positive: the run scores higher). Each comparison pairs the per-item
outcomes the two runs wrote beside their results JSONs (`.outcomes.jsonl`, checked against the
sha256 the JSON names) with `medprobe.stats.paired`: the difference of every overall metric both
runs report, its paired-bootstrap 95% interval and a two-sided paired permutation p-value; then,
for the task's headline metric, the same for each group (relation, disease, task) on that
group's items alone, with Holm-adjusted p-values over the groups of the comparison.

Profiles (folders with profile.json) are compared run by run: one comparison per
benchmark/config/prober that both profiles ran; floors (MST's scratch run) and failed runs are
left out and listed.

Runs are paired on identical items only. Refused (UserError, exit 2, one line saying what
differs): different tasks or splits; settings that change what a metric means (a task's
`paired_settings` in medprobe.registry, e.g. MedLAMA's candidate set); different data (config or
content fingerprint) or different items (the subset's id digest) unless `intersect`, which pairs
the items whose ids both runs hold and says how many of each run's that is.

Imports (docs/architecture.md, layer uses of runs): any layer but the commands; never cli/.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medprobe.api import UserError
from medprobe.compare_inputs import Input, Run, key_title, read_inputs
from medprobe.registry import TASKS, load, task_entry
from medprobe.results import RunRecord
from medprobe.stats import RESAMPLES, SEED, Estimator, Outcomes, aligned, estimate, holm, intervals, paired, plural

# --- which runs pair, and why not -----------------------------------------------------------------------


@dataclass
class Pair:
    """The reference run and one other run of the same benchmark/config/prober (or two single runs)."""

    title: str  # e.g. "medlama/hard contrastive" (a profile row) or "medlama/hard" (two runs)
    reference: Run
    run: Run
    profile: bool = False  # a row of two profiles: messages name the row


def pairs_of(inputs: list[Input]) -> tuple[list[Pair], list[str]]:
    """Every other input against the first; profiles row by row (what only one side has is listed, not compared)."""
    reference, others = inputs[0], inputs[1:]
    pairs, notes = [], [note for item in inputs for note in item.left_out]
    if reference.kind == "run":
        (ref_run,) = reference.runs.values()
        for other in others:
            (run,) = other.runs.values()
            pairs.append(Pair(f"{ref_run.record.benchmark}/{ref_run.record.config or 'all'}", ref_run, run))
        return pairs, notes
    for other in others:
        for key, ref_run in reference.runs.items():
            if key in other.runs:
                pairs.append(Pair(key_title(key), ref_run, other.runs[key], profile=True))
            else:
                notes.append(f"{key_title(key)}: in {reference.label}, not in {other.label}; not compared")
        notes += [
            f"{key_title(key)}: in {other.label}, not in {reference.label}; not compared"
            for key in other.runs
            if key not in reference.runs
        ]
    if not pairs:
        raise UserError(f"the profiles share no benchmark/config/prober run: {', '.join(item.label for item in inputs)}")
    return pairs, notes


def short(digest: str | None) -> str:
    return f"{digest[:8]}…" if digest else "none recorded"


def check_pair(pair: Pair, intersect: bool) -> None:
    """Refuse a pair that cannot be compared item by item; one line naming what differs."""
    a, b = pair.reference, pair.run
    ra, rb = a.record, b.record
    where = f"{pair.title}: " if pair.profile else ""
    if ra.task != rb.task:
        raise UserError(
            f"{where}the runs ran different tasks: {a.label} {ra.task}, {b.label} {rb.task}; only runs of one task pair"
        )
    if ra.split != rb.split:
        raise UserError(
            f"{where}the runs probed different splits: {a.label} {ra.split}, {b.label} {rb.split}; "
            "items of different splits never pair"
        )
    differing = [name for name in paired_settings(ra.task) if ra.settings.get(name) != rb.settings.get(name)]
    if differing:
        shown = "; ".join(
            f"{name} {ra.settings.get(name)!r} in {a.label}, {rb.settings.get(name)!r} in {b.label}" for name in differing
        )
        raise UserError(
            f"{where}the runs differ in settings that change what the {ra.task} metrics mean ({shown}); "
            "compare runs with the same settings"
        )
    if intersect:
        return
    data_a, data_b = ra.data_fingerprint.get("sha256"), rb.data_fingerprint.get("sha256")
    if ra.config != rb.config or data_a != data_b or data_a is None:
        raise UserError(
            f"{where}the runs probed different data: {a.label} fingerprint {short(data_a)} ({ra.config or 'all configs'}), "
            f"{b.label} {short(data_b)} ({rb.config or 'all configs'}); pass --intersect to compare their common items"
        )
    items_a, items_b = ra.subset.get("item_ids_sha256"), rb.subset.get("item_ids_sha256")
    if items_a != items_b or items_a is None:
        raise UserError(
            f"{where}the runs probed different items: {a.label} {subset_text(ra)}, {b.label} {subset_text(rb)}; "
            "pass --intersect to compare their common items"
        )


def subset_text(record: RunRecord) -> str:
    """e.g. `106 queries (ids 9f7620cf…)` or `90 queries (per_relation 10, ids ab12cd34…)`."""
    unit = (record.outcomes or {}).get("unit", "item")
    options = ", ".join(f"{name} {value}" for name, value in (record.subset.get("options") or {}).items())
    items = record.subset.get("items")
    count = f"{items:,} {plural(unit)}" if isinstance(items, int) else "items"
    return f"{count} ({options + ', ' if options else ''}ids {short(record.subset.get('item_ids_sha256'))})"


def paired_settings(task: str | None) -> tuple[str, ...]:
    """The settings of `task` that two runs must share (they change what its metrics mean; medprobe.registry)."""
    task_class(task)  # an installed task
    return task_entry(task).paired_settings


def task_class(task: str | None) -> Any:
    if task not in TASKS:
        raise UserError(f"task {task!r} is not installed here (known: {', '.join(TASKS)}); install the package that provides it")
    return load(task_entry(task).target)


# --- comparing one pair ---------------------------------------------------------------------------------


def common_estimators(pair: Pair) -> dict[str, Estimator]:
    """The overall metrics both runs report that the task's estimators recompute, in the reference's order
    (e.g. acc@1 and acc@10 of two MedLAMA runs, also when one of them recorded acc@5 too)."""
    cls = task_class(pair.reference.record.task)
    ours, theirs = cls.estimators(pair.reference.record.settings), cls.estimators(pair.run.record.settings)
    metrics_a, metrics_b = pair.reference.record.metrics, pair.run.record.metrics
    common = {
        name: estimator
        for name, estimator in ours.items()
        if name in theirs and is_number(metrics_a.get(name)) and is_number(metrics_b.get(name))
    }
    if not common:
        raise UserError(
            f"{pair.title}: {pair.reference.label} and {pair.run.label} report no metric in common "
            f"({', '.join(ours)} vs {', '.join(theirs)})"
        )
    return common


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


MIN_PAIRED = 10  # --intersect: fewer common items than this give no paired interval worth reading


def common_items(pair: Pair, a: Outcomes, b: Outcomes, intersect: bool) -> tuple[Outcomes, Outcomes, dict]:
    """Both runs' outcomes on the items they share (all of them unless `intersect`), and how many that is.

    An item is shared when both runs hold its id with the same content digest (the question asked); an id
    both hold with other content is another question in each run and never pairs. Runs that record no
    digests (an older medprobe) pair by id only when they probed the same data (equal fingerprints)."""
    ref, run = pair.reference, pair.run
    held = set(b.ids)
    common = [item for item in a.ids if item in held]
    if a.contents and b.contents:
        content_b = dict(zip(b.ids, b.contents))
        shared = [item for item, content in zip(a.ids, a.contents) if item in held and content_b[item] == content]
    elif same_data(ref.record, run.record):
        shared = common  # ids of one dataset's files name the same items
    else:
        older = ref if not a.contents else run
        raise UserError(
            f"{pair.title}: {older.label} records no item contents (written by an older medprobe), so nothing shows that "
            "an id names the same question in both runs of different data; run the probe again"
        )
    counts = {"compared": len(shared), "other_content": len(common) - len(shared), ref.label: len(a), run.label: len(b)}
    if not common:
        raise UserError(f"{pair.title}: {ref.label} and {run.label} share no item id; nothing to pair")
    if len(shared) < len(a) or len(shared) < len(b):
        if not intersect:  # the data and subset digests agreed, so the files themselves disagree with their records
            raise UserError(f"{pair.title}: the outcomes files of {ref.label} and {run.label} hold different items")
        refuse_thin_intersection(pair, counts)
        a, b = a.select(shared), b.select(shared)
    try:
        a, b = aligned(a, b)
    except ValueError as err:  # an item in one group in one run and in another in the other
        raise UserError(f"{pair.title}: {ref.label} and {run.label} cannot be paired: {err}") from None
    check_columns(pair, a, b)
    return a, b, counts


def same_data(a: RunRecord, b: RunRecord) -> bool:
    """Both runs recorded the same data fingerprint and config."""
    digest = a.data_fingerprint.get("sha256")
    return digest is not None and digest == b.data_fingerprint.get("sha256") and a.config == b.config


def refuse_thin_intersection(pair: Pair, counts: dict) -> None:
    """--intersect pairs what both runs asked; it refuses when that is nothing, fewer than MIN_PAIRED items, or
    fewer than the ids both hold with other content (then the two datasets use their ids for other questions)."""
    compared, other = counts["compared"], counts["other_content"]
    if compared >= MIN_PAIRED and compared >= other:
        return
    why = (
        f"{other:,} of the {compared + other:,} ids both hold name other questions in each (same id, other content)"
        if other > compared
        else f"only {compared:,} items are the same question in both (at least {MIN_PAIRED} are needed)"
    )
    raise UserError(
        f"{pair.title}: --intersect cannot pair {pair.reference.label} and {pair.run.label}: {why}; the runs probed "
        "different questions: compare runs of the same benchmark data"
    )


def check_columns(pair: Pair, a: Outcomes, b: Outcomes) -> None:
    """The permutation test swaps each item's outcomes between the runs: per-item widths must agree (or one be 1,
    e.g. one seed against three: its value stands for every seed)."""
    for name in a.columns.keys() & b.columns.keys():
        wa, wb = a.columns[name].shape[1:], b.columns[name].shape[1:]
        if wa != wb and 1 not in (wa[:1] + wb[:1]):
            raise UserError(
                f"{pair.title}: {pair.reference.label} has {wa[0]} values per item in {name!r} (e.g. seeds), "
                f"{pair.run.label} {wb[0]}; rerun one with as many seeds as the other, or with one"
            )


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
    result.update({key: value for key, value in found.items() if key not in ("a", "b")})
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
    for group in differences_by_group(b, a):
        found = paired_result(
            paired(group[1], group[2], {headline: estimators[headline]}, resamples=resamples, seed=seed)[headline]
        )
        groups.append({"group": group[0], **found})
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
            "same_weights": same_weights(ref.record, run.record),
            "headline": headline,
            "group_by": getattr(task_class(ref.record.task), "GROUP_BY", "") or "group",
            "values": {
                ref.label: run_values(ref, a, estimators, recompute, resamples, seed),
                run.label: run_values(run, b, estimators, recompute, resamples, seed),
            },
            "differences": {name: paired_result(found) for name, found in differences.items()},
            "groups": groups,
        }
    )


def differing_settings(a: RunRecord, b: RunRecord) -> dict[str, list]:
    """What differs between two runs' models, probers and settings: `{name: [reference's, run's]}`
    (e.g. `{"layers": [None, 3]}`, `{"weights sha256": [...]}` for one model name with other weights), so a
    reader sees what the difference is a difference of."""
    first = {"prober": a.prober, "model": a.model, **a.settings}
    second = {"prober": b.prober, "model": b.model, **b.settings}
    weights = a.model_identity.get("weights_sha256"), b.model_identity.get("weights_sha256")
    if all(weights) and weights[0] != weights[1]:
        first["weights sha256"], second["weights sha256"] = weights
    names = dict.fromkeys([*first, *second])
    return {name: [first.get(name), second.get(name)] for name in names if first.get(name) != second.get(name)}


def same_weights(a: RunRecord, b: RunRecord) -> str | None:
    """The weights digest both runs' models recorded, when it is the same (None: not recorded by both, or different)."""
    first, second = a.model_identity.get("weights_sha256"), b.model_identity.get("weights_sha256")
    return first if first and first == second else None


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
    if len(set(found["data"].values())) > 1:
        notes.append(
            f"{found['title']}: the runs probed different data; an item pairs only where both runs hold its id with the "
            "same content (question and gold answers), so each pair is one question asked of both"
        )
    return notes


def compare(inputs: list[Input], *, intersect: bool = False, resamples: int = RESAMPLES, seed: int = SEED) -> dict:
    """The whole comparison, as written to compare.json: every pair checked first, then compared."""
    from medprobe import __version__

    if resamples < 1:
        raise UserError(f"--resamples must be a positive integer, got {resamples}")
    pairs, notes = pairs_of(inputs)
    for pair in pairs:  # every refusal before any work
        check_pair(pair, intersect)
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
        "method": "paired percentile bootstrap over items (within groups for macro metrics); two-sided p from a paired "
        "permutation test; per-group p-values Holm-adjusted within each comparison",
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


# --- the command ----------------------------------------------------------------------------------------


@dataclass
class Outputs:
    out: str | None = None  # a folder for compare.json and compare.md
    plot: str | None = None  # the forest plot (any format matplotlib writes)
    html: str | None = None  # the self-contained HTML report
    overwrite: bool = False  # replace a compare.json / compare.md in --out that an earlier compare did not write


OUT_FILES = ("compare.json", "compare.md")


def previous_comparison(out: Path) -> dict[str, str]:
    """What an earlier `medprobe compare --out` recorded writing into `out` (compare.json names compare.md's sha256),
    or {} when its compare.json is not one (absent, a user's file, another tool's)."""
    from medprobe.records.verify import RecordError, read_json_object

    try:
        data = read_json_object(out / "compare.json", "a comparison")
    except RecordError:
        return {}
    files = data.get("files")
    if "comparisons" not in data or "medprobe" not in data or not isinstance(files, dict):
        return {}
    return {"compare.json": "", **{name: digest for name, digest in files.items() if name in OUT_FILES}}


def check_outputs(outputs: Outputs) -> None:
    """Every output can be written (and --plot's format drawn) before any outcome is read."""
    from medprobe.atomic import check_distinct_outputs, check_writable, refuse_unrecorded
    from medprobe.atomic_folder import check_output_folder
    from medprobe.results import plot_format

    named: dict[str, str | Path | None] = {"--plot": outputs.plot, "--html": outputs.html}
    if outputs.out:
        out = Path(outputs.out)
        if out.exists() and not out.is_dir():
            raise UserError(f"--out {out} is a file; give a folder for compare.json and compare.md")
        check_output_folder(out)
        if not outputs.overwrite:
            refuse_unrecorded(out, previous_comparison(out), command="compare", only=OUT_FILES)
        named.update({"--out": out / "compare.json", "--out (compare.md)": out / "compare.md"})
    for option, path in named.items():
        if path:
            check_writable(path, option.split(" ")[0])
    check_distinct_outputs(named)
    if outputs.plot:
        plot_format(outputs.plot)


def html_figure(comparison: dict) -> tuple[bytes | None, str]:
    """The forest plot as PNG bytes for the HTML page, or why it is left out (no matplotlib)."""
    from medprobe.compare_report import forest_png

    try:
        return forest_png(comparison), ""
    except UserError:
        return None, "The forest plot is left out: matplotlib is not installed (pip install matplotlib)."


def write_outputs(comparison: dict, outputs: Outputs) -> list[Path]:
    """compare.json, compare.md, the plot and the HTML page: all written, or none (medprobe.atomic)."""
    from medprobe.atomic import write_all_atomically
    from medprobe.compare_report import draw_forest, html_page, markdown
    from medprobe.digests import sha256_text
    from medprobe.results import plot_format

    out = Path(outputs.out) if outputs.out else None
    table = markdown(comparison)
    recorded = {**comparison, "files": {"compare.md": sha256_text(table)}}  # what a later compare --out may replace
    text = json.dumps(recorded, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    writers = [
        (out and out / "compare.md", lambda temp: temp.write_text(table, encoding="utf-8")),
        (out and out / "compare.json", lambda temp: temp.write_text(text, encoding="utf-8")),
        (outputs.plot, lambda temp: draw_forest(comparison, temp, plot_format(outputs.plot))),
        (outputs.html, lambda temp: temp.write_text(html_page(comparison, *html_figure(comparison)), encoding="utf-8")),
    ]
    return write_all_atomically(writers)


def run_compare(
    paths: Sequence[str],
    outputs: Outputs,
    *,
    intersect: bool = False,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    print_fn: Any = print,
) -> dict:
    """`medprobe compare`: check, compare, write the outputs (all or nothing), print the tables."""
    from medprobe.compare_report import markdown

    check_outputs(outputs)
    comparison = compare(read_inputs(paths), intersect=intersect, resamples=resamples, seed=seed)
    written = write_outputs(comparison, outputs)  # compare.md renamed before compare.json, which names its sha256
    print_fn(markdown(comparison).rstrip("\n"))
    for path in sorted(written, key=lambda path: path.name != "compare.json"):
        print_fn(f"wrote {path}")
    return comparison
