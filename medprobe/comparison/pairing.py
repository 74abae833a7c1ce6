"""Which runs pair, on which items, and why not: one line naming what differs (UserError, exit 2).

A pair is the reference run and another run of the same benchmark/config/prober. They must share the
task and split and the settings that change what a metric means; their data and items must be the
same unless --intersect. Items pair by identity: the same id with the same content digest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from medprobe.comparison.inputs import Input, Run, key_title
from medprobe.contracts import UserError
from medprobe.records.record import RunRecord
from medprobe.registry import load, registry, task_entry
from medprobe.stats import VARIANT_COLUMN_PREFIX, Estimator, Outcomes, aligned, plural


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


def check_pair(pair: Pair, intersect: bool, allow_different_candidates: bool = False) -> None:
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
        refuse_other_candidates(pair, allow_different_candidates)
        return
    data_a, data_b = ra.data_fingerprint.get("sha256"), rb.data_fingerprint.get("sha256")
    # the fingerprint names the files of the config a run resolved: equal, the data are the same whether one run
    # named the config (`--config facts`) and the other took the default
    if data_a != data_b or data_a is None:
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


ALLOW_CANDIDATES = "--allow-different-candidates"


def other_candidates(pair: Pair) -> str | None:
    """How the runs' candidate sets differ, when their task ranks among candidates drawn from the data
    (`TaskEntry.candidate_space`, e.g. MedLAMA's answer space of a set): runs that ranked among other numbers of
    candidates, or runs of other data (fingerprints: config names are not compared, a default config is one) that did
    not record how many; None when they rank among the same ones (or the items carry their own)."""
    ra, rb = pair.reference.record, pair.run.record
    space = task_entry(ra.task).candidate_space  # an installed task: check_pair asked before
    counts = ra.counts.get("candidates"), rb.counts.get("candidates")
    other_data = ra.data_fingerprint.get("sha256") != rb.data_fingerprint.get("sha256")
    if not space or not ((None not in counts and counts[0] != counts[1]) or (None in counts and other_data)):
        return None
    shown = [
        f"{run.label} {count:,} ({run.record.config or 'all'})"
        if isinstance(count, int)
        else f"{run.label} ({run.record.config or 'all'})"
        for run, count in zip((pair.reference, pair.run), counts)
    ]
    return f"{space}: {', '.join(shown)}"


def refuse_other_candidates(pair: Pair, allow: bool) -> None:
    """--intersect pairs the common items of runs on other data; where the candidates come from the data, those items
    were ranked among other candidates, and the difference would measure the data: refused unless told."""
    found = other_candidates(pair)
    if found and not allow:
        where = f"{pair.title}: " if pair.profile else ""
        raise UserError(
            f"{where}the runs ranked among different candidates ({found}); a difference on their common items measures the "
            f"data (which candidates compete), not the model: compare runs of one config, or pass {ALLOW_CANDIDATES} to "
            "compare them anyway (the report then says so)"
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
    return registry().task(task).paired_settings


def task_class(task: str | None) -> Any:
    tasks = registry().tasks
    if task not in tasks:
        raise UserError(f"task {task!r} is not installed here (known: {', '.join(tasks)}); install the package that provides it")
    return load(tasks[task].target)


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
        if wa != wb and name.startswith(VARIANT_COLUMN_PREFIX):  # slots of the data's variants, not seeds
            raise UserError(
                f"{pair.title}: {pair.reference.label} asked {wa[0]} variant slots per item ({name!r}), "
                f"{pair.run.label} {wb[0]}: their data's variants config differs (e.g. another --synonyms N); compare "
                "runs of one build, or runs without --variants"
            )
        if wa != wb and 1 not in (wa[:1] + wb[:1]):
            raise UserError(
                f"{pair.title}: {pair.reference.label} has {wa[0]} values per item in {name!r} (e.g. seeds), "
                f"{pair.run.label} {wb[0]}; rerun one with as many seeds as the other, or with one"
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
